"""Helpers shared by the attention, positional and transformer tests (torch parity, comparisons).

Tensors cross between the libraries as nested lists (`.tolist()`), never through NumPy."""
import math

import tinyattn


def flat(x):
    """A flat list of floats from a tinyattn tensor, a torch tensor or nested lists."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    out = []
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(float(v))
    return out


def assert_close(ours, theirs, atol=1e-6, rtol=1e-5, what=""):
    """Same shape and every element within atol + rtol * |theirs| (NaN nowhere)."""
    assert tuple(ours.shape) == tuple(theirs.shape), \
        f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    a, b = flat(ours), flat(theirs)
    for i, (x, y) in enumerate(zip(a, b)):
        assert not math.isnan(x), f"{what}: NaN at flat index {i}"
        assert abs(x - y) <= atol + rtol * abs(y), f"{what}: element {i}: {x} vs {y}"


def to_torch(torch, t, requires_grad=False):
    """A torch tensor with the values and dtype of tinyattn tensor t."""
    dtypes = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
              "bool": torch.bool}
    out = torch.tensor(t.tolist(), dtype=dtypes[t.dtype.name])
    return out.requires_grad_(requires_grad)


def upstream_loss(out):
    """A loss whose gradient differs from element to element: ((out + 1) ** 2).mean()."""
    return ((out + 1) ** 2).mean()


def rand(*shape, dtype=tinyattn.float64, requires_grad=True):
    return tinyattn.randn(*shape, dtype=dtype, requires_grad=requires_grad)


def compare_module_grads(ours, theirs, atol=1e-6, rtol=1e-5):
    """Every parameter's gradient in our module equals the one of the same name in torch's."""
    theirs = dict(theirs.named_parameters())
    names = [n for n, _ in ours.named_parameters()]
    assert sorted(names) == sorted(theirs), "parameter names differ"
    for name, p in ours.named_parameters():
        tp = theirs[name]
        assert p.grad is not None, f"no gradient for {name}"
        assert_close(p.grad, tp.grad, atol, rtol, what=f"grad of {name}")
