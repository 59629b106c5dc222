"""Derivatives of whole functions, PyTorch's torch.autograd.functional (also reachable as
`tinyattn.autograd.functional`), and `gradcheck` / `gradgradcheck` under PyTorch's names.

For f: inputs -> outputs, with J its Jacobian and H the Hessian of a scalar f:

    vjp(f, x, v)     v^T J      one backward pass
    jvp(f, x, v)     J v        two backward passes: the vjp u -> u^T J is linear in u, so its
                                gradient with respect to u, taken against v, is J v
    jacobian(f, x)   J          one backward pass per output element
    hessian(f, x)    H          the jacobian of the gradient (create_graph=True)
    hvp(f, x, v)     H v        and vhp(f, x, v) = v^T H: the same for the symmetric H

Everything past the first derivative records the backward pass (autograd.grad with
create_graph=True): every op's backward is differentiable
(autograd.Function.differentiable_backward); a Function without it raises naming itself.
"""
from . import autograd
from . import dtypes as _dt
from .creation import rand, zeros, zeros_like
from .ops.layout import stack
from .random import Generator
from .tensor import Tensor
from .testing import gradcheck as _gradcheck

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "gradcheck", "gradgradcheck"]

_float64 = _dt.float64


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepared(inputs):
    """Inputs cut from any graph of the caller's, each requiring grad: f is differentiated here."""
    return tuple(t.detach().requires_grad_(True) for t in _tuple(inputs))


def _shaped(like, values):
    return values[0] if isinstance(like, Tensor) else tuple(values)


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad with zeros for the inputs an output does not depend on (PyTorch's strict=False)."""
    gs = autograd.grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
                       allow_unused=True)
    return tuple(zeros_like(x) if g is None else g for x, g in zip(inputs, gs))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    xs = _prepared(inputs)
    out = func(*xs)
    outs = _tuple(out)
    vs = (None,) * len(outs) if v is None else _tuple(v)
    g = _grads(outs, xs, vs, create_graph)
    return _detached(out, create_graph), _shaped(inputs, [_detached(t, create_graph) for t in g])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vjp."""
    xs = _prepared(inputs)
    out = func(*xs)
    outs = _tuple(out)
    us = tuple(zeros_like(o).requires_grad_(True) for o in outs)
    g = _grads(outs, xs, us, create_graph=True)                   # u^T J, linear in u
    vs = tuple(x.new_ones(x.shape) for x in xs) if v is None else _tuple(v)
    jv = _grads(g, us, vs, create_graph)
    return _detached(out, create_graph), _shaped(out, [_detached(t, create_graph) for t in jv])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """J: for one input and one output a tensor of shape out.shape + x.shape; tuples of them
    (outputs first, then inputs) otherwise, as in PyTorch."""
    if strategy != "reverse-mode" or vectorize:
        raise NotImplementedError("jacobian: only strategy='reverse-mode' without vectorize")
    xs = _prepared(inputs)
    out = func(*xs)
    outs = _tuple(out)
    rows = []
    for o in outs:
        per_input = [[] for _ in xs]
        flat = o.reshape(-1)
        for k in range(flat.numel()):
            for i, g in enumerate(_grads((flat[k],), xs, None, create_graph)):
                per_input[i].append(_detached(g, create_graph))
        rows.append(tuple(_stacked(parts, o.shape, x.shape) for parts, x in zip(per_input, xs)))
    if isinstance(inputs, Tensor):
        rows = [r[0] for r in rows]
    return rows[0] if isinstance(out, Tensor) else tuple(rows)


def _stacked(parts, out_shape, in_shape):
    """The rows d out[k] / d x, stacked to shape out_shape + in_shape."""
    if not parts:
        return zeros(tuple(out_shape) + tuple(in_shape), dtype=_float64)
    return stack(parts).reshape(tuple(out_shape) + tuple(in_shape))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """H of a scalar func: the jacobian of its gradient."""
    def gradient(*xs):
        out = func(*xs)
        return _shaped(inputs, _grads((out,), xs, None, create_graph=True))
    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    xs = _prepared(inputs)
    out = func(*xs)
    g = _grads((out,), xs, None, create_graph=True)
    vs = tuple(x.new_ones(x.shape) for x in xs) if v is None else _tuple(v)
    hv = _grads(g, xs, vs, create_graph)
    return _detached(out, create_graph), _shaped(inputs, [_detached(t, create_graph) for t in hv])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func: H is symmetric, so this is vhp."""
    return vhp(func, inputs, v, create_graph, strict)


def _detached(t, keep):
    """t cut from the graph, unless the caller asked for it (create_graph=True)."""
    if keep:
        return t
    return t.detach() if isinstance(t, Tensor) else tuple(x.detach() for x in t)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_):
    """testing.gradcheck under PyTorch's name and keywords (torch.autograd.gradcheck); the
    options of PyTorch's check that have no meaning here (fast_mode, check_*) are accepted."""
    try:
        return _gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol)
    except AssertionError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_):
    """Second derivatives of `func` against finite differences of its first derivatives
    (PyTorch's name): gradcheck of (x, v) -> grad(func(x), x, v, create_graph=True). Without
    grad_outputs, v is random (seeded) and checked too, as in PyTorch: so the derivatives of each
    backward with respect to its upstream gradient are checked as well as those in x."""
    inputs = _tuple(inputs)
    n = len(inputs)
    extra = ()
    if grad_outputs is None:
        with autograd.no_grad():
            outs = [o for o in _tuple(func(*inputs)) if o.dtype.is_floating_point]
        gen = Generator().manual_seed(0)
        extra = tuple(rand(o.shape, dtype=o.dtype, generator=gen, low=-1.0).requires_grad_()
                      for o in outs)

    def first_derivatives(*args):
        with autograd.enable_grad():     # gradcheck evaluates its function under no_grad
            outs = [o for o in _tuple(func(*args[:n])) if o.dtype.is_floating_point]
            vs = args[n:] if grad_outputs is None else _tuple(grad_outputs)
            wanted = [x for x in args[:n] if isinstance(x, Tensor) and x.requires_grad]
            return _grads(outs, wanted, vs, create_graph=True)

    try:
        return _gradcheck(first_derivatives, inputs + extra, eps=eps, atol=atol, rtol=rtol)
    except AssertionError:
        if raise_exception:
            raise
        return False
