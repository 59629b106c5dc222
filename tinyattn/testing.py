"""Tools for testing ops and layers: `gradcheck`, gradients against central finite differences.

Chapter 1 of the tour (docs/01-autograd.md) explains the check; chapter 6 uses it on a new op.
"""
from .autograd import enable_grad, no_grad
from .creation import rand
from .random import Generator
from .tensor import Tensor


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0):
    """Check the gradients of `fn` at `inputs` against central finite differences, in float64.

    fn(*inputs) returns a Tensor (or a tuple of Tensors). Rather than build the whole Jacobian, the
    outputs are reduced to one scalar L = sum_k <w_k, out_k> with fixed random weights w_k (so every
    output element matters, with a different weight), and for every element x_i of every input that
    requires grad

        analytic  dL/dx_i  (one backward pass)
        numeric   (L(x_i + eps) - L(x_i - eps)) / (2 eps)

    must agree within atol + rtol * |numeric|. Returns True, or raises AssertionError naming the
    input, the element and both values."""
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True")
    for i in checked:
        if inputs[i].dtype.name != "float64":
            raise TypeError(f"gradcheck: input {i} is {inputs[i].dtype}; finite differences need "
                            f"float64 inputs (use .double())")

    def outputs():
        out = fn(*inputs)
        return out if isinstance(out, (tuple, list)) else (out,)

    gen = Generator(seed)
    weights = [rand(o.shape, dtype=o.dtype, generator=gen) + 0.5 if o.dtype.is_floating_point
               else None for o in outputs()]

    def scalar(outs):
        total = 0.0
        for o, w in zip(outs, weights):
            if w is not None:
                total += float((o.detach() * w).sum().item())
        return total

    for t in inputs:
        if isinstance(t, Tensor):
            t.grad = None
    with enable_grad():
        outs = outputs()
        loss = None
        for o, w in zip(outs, weights):
            if w is not None and o.requires_grad:
                term = (o * w).sum()
                loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    with no_grad():
        for i in checked:
            x = inputs[i]
            analytic = x.grad.contiguous().tolist_flat() if x.grad is not None else [0.0] * x.numel()
            for j, pos in enumerate(x._positions()):
                orig = x._data[pos]
                x._data[pos] = orig + eps
                plus = scalar(outputs())
                x._data[pos] = orig - eps
                minus = scalar(outputs())
                x._data[pos] = orig
                numeric = (plus - minus) / (2 * eps)
                a = analytic[j]
                if not abs(a - numeric) <= atol + rtol * abs(numeric):
                    index = x._unravel(j)
                    raise AssertionError(
                        f"gradcheck: gradient of input {i} (shape {tuple(x.shape)}) at element "
                        f"{index} is wrong: analytic {a!r} vs numeric {numeric!r} "
                        f"(difference {abs(a - numeric):.3g} > atol {atol} + rtol {rtol} * |numeric|)")
    return True
