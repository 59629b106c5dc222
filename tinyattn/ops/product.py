"""Products along a dim: prod and cumprod, composed of elementwise multiplications.

    prod(x, d)      pairs of halves multiplied until one is left: log2(n) products
    cumprod(x, d)   y_j = x_0 x_1 ... x_j, one product per position

No kernel of their own: the gradients are autograd's, through the products, which stays exact
where an element is 0 (the textbook gradient prod / x_i would divide by zero there). Integers and
bools multiply in int64, as in PyTorch.
"""
import builtins

from .. import _shapes
from .. import dtypes as _dt
from ._launch import check_tensor
from .convert import to_dtype
from .arithmetic import add, mul
from .reduce import sum  # noqa: A004
from .layout import cat, narrow, reshape


def prod(x, dim=None, keepdim=False, dtype=None):
    """The product of the elements (along dim): pairs of halves multiplied until one is left,
    log2(n) elementwise products whose gradients are autograd's (exact with zeros too, where
    prod / x would divide by zero). Integers and bools multiply in int64, as in PyTorch."""
    check_tensor("prod", x)
    if dtype is not None:
        x = to_dtype(x, _dt.get(dtype))
    elif not x.dtype.is_floating_point and x.dtype is not _dt.int64:
        x = to_dtype(x, _dt.int64)
    if dim is None:
        x, d = reshape(x, (-1,)), 0
        keepdim = False
    else:
        d = _shapes.normalize_dim("prod", dim, builtins.max(x.ndim, 1))
        if x.ndim == 0:
            return x.clone()
    n = x.shape[d]
    if n == 0:   # the empty product is 1: an empty sum plus 1 keeps the graph (a zero gradient)
        return add(sum(x, d, keepdim=keepdim), 1)
    if n == 1:  # nothing to multiply: still new memory, as PyTorch's
        x = x.clone()
    while n > 1:
        half = n // 2
        paired = mul(narrow(x, d, 0, half), narrow(x, d, half, half))
        x = paired if n % 2 == 0 else cat([paired, narrow(x, d, n - 1, 1)], d)
        n = x.shape[d]
    out = x if keepdim else reshape(x, x.shape[:d] + x.shape[d + 1:])
    return out


def cumprod(input, dim, dtype=None):  # noqa: A002
    """Running products along dim: one product per position (exact gradients with zeros)."""
    check_tensor("cumprod", input)
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.to(_dt.int64)      # integer and bool products in int64, as PyTorch
    if input.ndim == 0:
        return input.clone()
    d = _shapes.normalize_dim("cumprod", dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        return input.clone()
    acc = narrow(input, d, 0, 1)
    outs = [acc]
    for i in range(1, n):
        acc = mul(acc, narrow(input, d, i, 1))
        outs.append(acc)
    return cat(outs, d)
