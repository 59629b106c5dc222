"""Reductions: sum, mean, var, max / min (values and indices), amax, logsumexp, all / any.

    Sum       out = sum of x over dims;   dx = g broadcast back over the summed dims
    MaxAlong  (values, indices) over one dim;  dx = g scattered to the chosen positions
    Amax      max over dims;  ties share the gradient equally (as torch.amax)

The kernels (kernels/reduce.py) see x as (O, R, I): O outer rows, R reduced, I inner, so one loop
reduces any run of adjacent dims; several runs are reduced one after another, last run first.
`sum_to(g, shape)` is the reduction every broadcasting op's backward needs: the gradient of an
input that was broadcast is summed over the broadcast dims.

Composed reductions (mean, var, std, logsumexp, all, any) are written with Tensor methods and
operators, so their gradients come from the primitives. The p-norm is with the normalisations
(ops/norm.py), prod with cumprod (ops/product.py).

Chapters 1 and 2 of the tour (docs/01-autograd.md, docs/02-kernels.md) walk through this file.
"""
import builtins
import math
from collections import namedtuple

from .. import _shapes
from .. import dtypes as _dt
from ..autograd import UnaryFunction, is_grad_enabled, no_grad
from .. import backend
from ..storage import TensorBase as Tensor, _empty, _make, _zeros
from ._launch import check_tensor, copy, packed, shape_arg, tensor_from_scalar
from ._recorded import adjoint
from .convert import to_dtype

_float64, _int64 = _dt.float64, _dt.int64


def sum_to(g, shape):
    """Sum g over the dimensions along which a tensor of `shape` was broadcast to g.shape: for
    backward formulas, so with no graph unless one is being built (create_graph=True)."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    if g._requires_grad and is_grad_enabled():      # create_graph=True: a recorded sum
        return Sum.apply(g, dims, True).reshape(shape) if dims else g.reshape(shape)
    s = _sum(g, dims, keepdim=True) if dims else g
    return _make(s._data, shape, s.dtype) if s.shape != shape else s


def sum_to_size(x, *shape):
    """x summed down to `shape` (the inverse of broadcasting x to x.shape), with a gradient."""
    shape = shape_arg(shape)
    if x.shape == shape and x.ndim:  # nothing to sum: x itself (PyTorch)
        return x
    if not x.dtype.is_floating_point:   # sums of bools and ints count in int64 (PyTorch)
        x = to_dtype(x, _int64)
    if x.shape == shape:  # a 0-d tensor summed to (): new memory, as PyTorch's
        return Sum.apply(x, (), True)
    lead = x.ndim - len(shape)
    # builtins.any: this module defines the tensor reductions sum / max / min / all / any
    if lead < 0 or builtins.any(n != 1 and n != x.shape[lead + i] for i, n in enumerate(shape)):
        raise ValueError(f"sum_to_size: size {shape} is not expandable to the tensor's size "
                         f"{tuple(x.shape)}")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    return Sum.apply(x, dims, True).reshape(shape)



def _runs(dims):
    """Group sorted dims into runs of adjacent dims: (0, 1, 3) -> [(0, 2), (3, 4)]."""
    runs = []
    for d in dims:
        if runs and runs[-1][1] == d:
            runs[-1][1] = d + 1
        else:
            runs.append([d, d + 1])
    return runs


def _reduce_runs(x, dims, kernel_call):
    """Apply an (O, R, I) reduction kernel to each run of adjacent dims, last run first.
    Returns a packed tensor with the reduced dims kept as size 1."""
    if not dims:  # a reduction over no dims (a 0-d tensor's): a copy, not x, as PyTorch's
        return copy(x)
    x = packed(x)
    shape = list(x.shape)
    for start, stop in reversed(_runs(dims)):
        O = _shapes.numel(shape[:start])
        R = _shapes.numel(shape[start:stop])
        I = _shapes.numel(shape[stop:])
        shape[start:stop] = [1] * (stop - start)
        x = kernel_call(x, O, R, I, tuple(shape))
    return x


def _sum_kernel(x, O, R, I, shape):
    if R == 0:  # an empty sum is 0
        return _zeros(shape, x.dtype)
    out = _empty(shape, x.dtype)
    if not x.dtype.is_floating_point:
        # The kernel accumulates in float64; interpreted (NUMBA_DISABLE_JIT=1) Python cannot store
        # that float into an int64 buffer, so integers are summed into float64 and converted back
        # (exact below 2**53).
        acc = _empty(shape, _float64)
        backend.reduce.sum_dim(x._data, acc._data, O, R, I)
        return copy(acc, x.dtype)
    backend.reduce.sum_dim(x._data, out._data, O, R, I)
    return out


def _sum(x, dims, keepdim):
    """Raw sum over sorted `dims` (no graph)."""
    out = _reduce_runs(x, dims, _sum_kernel)
    if not keepdim:
        out = _make(out._data, tuple(n for i, n in enumerate(out.shape) if i not in dims), out.dtype)
    return out


class Sum(UnaryFunction):
    """out = sum of x over `dims`;  dx = g broadcast back over the summed dims (a stride-0 view)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        return _sum(x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        x, dims, keepdim = ctx.inputs
        if not keepdim:
            g = g.view(tuple(1 if i in dims else n for i, n in enumerate(x.shape)))
        return g.expand(x.shape), None, None


# Its backward formula is recorded ops, differentiable again (create_graph=True).
Sum.differentiable_backward = True


def sum(x, dim=None, keepdim=False, dtype=None):  # noqa: A001 - PyTorch's name
    check_tensor("sum", x)
    dims = _shapes.reduction_dims("sum", dim, x.ndim)
    if dtype is not None:
        x = x.to(_dt.get(dtype))
    elif not x.dtype.is_floating_point:
        x = x.to(_int64)  # bool and int sums count in int64, as in PyTorch
    return Sum.apply(x, dims, keepdim)


def mean(x, dim=None, keepdim=False):
    check_tensor("mean", x)
    if not x.dtype.is_floating_point:
        raise TypeError(f"mean: expected a floating-point tensor, got {x.dtype} "
                        f"(use .float() first, as in PyTorch)")
    dims = _shapes.reduction_dims("mean", dim, x.ndim)
    n = _shapes.numel(x.shape[d] for d in dims)
    s = Sum.apply(x, dims, keepdim)
    return s * (1.0 / n if n else math.nan)


def var(x, dim=None, unbiased=None, keepdim=False, correction=None):
    """Variance over dim; `correction` = 1 (default, Bessel) divides by n - 1, 0 by n.
    var(x, False) is PyTorch's var(input, unbiased) overload: the bool is `unbiased`, not a dim."""
    check_tensor("var", x)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _shapes.reduction_dims("var", dim, x.ndim)
    n = _shapes.numel(x.shape[d] for d in dims)
    centered = x - mean(x, dims, keepdim=True)
    s = sum(centered * centered, dims, keepdim)
    denom = n - correction
    return s * (1.0 / denom if denom > 0 else math.nan)


def std(x, dim=None, unbiased=None, keepdim=False, correction=None):
    return var(x, dim, unbiased, keepdim, correction).sqrt()


def _max_kernel(x, O, R, I, shape, want_min):
    if R == 0:
        raise IndexError(f"{'min' if want_min else 'max'}: cannot reduce over a dimension of size 0")
    values = _empty(shape, x.dtype)
    indices = _empty(shape, _int64)
    backend.reduce.max_dim_forward(x._data, values._data, indices._data, O, R, I, want_min)
    return values, indices


class MaxAlong(UnaryFunction):
    """(values, indices) of max (or min) over one dim; dx = g scattered to the chosen positions."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, want_min, indices_out):
        xp = packed(x)
        shape = list(x.shape)
        O, R, I = _shapes.numel(shape[:dim]), shape[dim], _shapes.numel(shape[dim + 1:])
        shape[dim] = 1
        values, indices = _max_kernel(xp, O, R, I, tuple(shape), want_min)
        if not keepdim:
            shape.pop(dim)
            values = _make(values._data, tuple(shape), values.dtype)
            indices = _make(indices._data, tuple(shape), _int64)
        indices_out.append(indices)
        ctx.op_name = "Min" if want_min else "Max"
        ctx.indices, ctx.layout = indices, (O, R, I)
        return values

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        O, R, I = ctx.layout
        out = _make(_dt.zeros_buffer(g.dtype, x.numel()), x.shape, g.dtype)
        backend.reduce.max_dim_backward(packed(g)._data, ctx.indices._data, out._data, O, R, I)
        return out, None, None, None, None


def _pick(ctx, u):
    """u (x's shape) at the positions MaxAlong chose: L of its backward, recorded."""
    _, dim, keepdim, _, _ = ctx.inputs
    idx = ctx.indices if keepdim else ctx.indices.unsqueeze(dim)
    out = u.gather(dim, idx)
    return out if keepdim else out.squeeze(dim)


class Amax(UnaryFunction):
    """max over `dims`; the gradient is shared equally among tied maxima (as torch.amax)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, want_min):
        ctx.op_name = "Amin" if want_min else "Amax"
        out = _reduce_runs(x, dims, lambda t, O, R, I, s: _max_kernel(t, O, R, I, s, want_min)[0])
        ctx.save_for_backward(x, out.detach())
        if not keepdim:
            out = _make(out._data, tuple(n for i, n in enumerate(out.shape) if i not in dims),
                        out.dtype)
        return out

    @staticmethod
    def backward(ctx, g):
        x, m = ctx.saved_tensors
        _, dims, keepdim, _ = ctx.inputs
        if not keepdim:
            g = g.view(m.shape)
        hit = (x == m).to(g.dtype)
        return hit * (g / _sum(hit, dims, keepdim=True)), None, None, None


# Their backward formulas are recorded ops when create_graph=True (Amax's shares are constants).
MaxAlong.differentiable_backward = adjoint(_pick)
Amax.differentiable_backward = True


MaxResult = namedtuple("max", ["values", "indices"])


def _max_or_min(x, dim, keepdim, other, want_min):
    name = "min" if want_min else "max"
    if isinstance(dim, Tensor) or other is not None:  # torch.max(a, b) is maximum
        other = dim if other is None else other
        return x.minimum(other) if want_min else x.maximum(other)
    check_tensor(name, x)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{name}: cannot reduce an empty tensor with no dim given")
        return _amax(x, tuple(range(x.ndim)), False, want_min)
    d = _shapes.normalize_dim(name, dim, x.ndim)
    if x.ndim == 0:
        return MaxResult(x.clone(), tensor_from_scalar(0, _int64))  # new memory, as PyTorch's
    if x.dtype is _dt.bool or _dt.computes_in_int64(x.dtype):
        # bool on 0 / 1, uint8 / int32 as int64 (dtypes.py); given back in x's dtype (PyTorch's)
        values, indices = _max_or_min(to_dtype(x, _int64), d, keepdim, None, want_min)
        return MaxResult(to_dtype(values, x.dtype), indices)
    holder = []
    values = MaxAlong.apply(x, d, keepdim, want_min, holder)
    return MaxResult(values, holder[0])


def max(x, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """max() -> the largest element; max(dim) -> (values, indices); max(other) -> maximum."""
    return _max_or_min(x, dim, keepdim, other, False)


def min(x, dim=None, keepdim=False, *, other=None):  # noqa: A001
    return _max_or_min(x, dim, keepdim, other, True)


def _amax(x, dims, keepdim, want_min):
    if _dt.computes_in_int64(x.dtype):     # uint8 / int32: in int64, given back (dtypes.py)
        return to_dtype(Amax.apply(to_dtype(x, _int64), dims, keepdim, want_min), x.dtype)
    return Amax.apply(x, dims, keepdim, want_min)


def amax(x, dim=(), keepdim=False):
    check_tensor("amax", x)
    dims = _shapes.reduction_dims("amax", None if dim == () else dim, x.ndim)
    return _amax(x, dims, keepdim, False)


def amin(x, dim=(), keepdim=False):
    check_tensor("amin", x)
    dims = _shapes.reduction_dims("amin", None if dim == () else dim, x.ndim)
    return _amax(x, dims, keepdim, True)


def _arg(x, dim, keepdim, want_min, name):
    check_tensor(name, x)
    if dim is None:
        x, dim = x.reshape(-1), 0
        keepdim = False
    d = _shapes.normalize_dim(name, dim, x.ndim)
    if x.ndim == 0:  # dim 0 of a 0-d tensor: its one element is at index 0
        return _arg(x.reshape(1), 0, False, want_min, name).reshape(())
    if _dt.computes_in_int64(x.dtype):
        x = to_dtype(x, _int64)
    holder = []
    with no_grad():
        MaxAlong.apply(x, d, keepdim, want_min, holder)
    return holder[0]


def argmax(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, False, "argmax")


def argmin(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, True, "argmin")


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over dim, computed as m + log(sum(exp(x - m))) to avoid overflow.
    Integer and bool inputs are computed in float32, as in PyTorch."""
    check_tensor("logsumexp", x)
    if not x.dtype.is_floating_point:
        x = to_dtype(x, _dt.float32)
    dims = _shapes.reduction_dims("logsumexp", dim, x.ndim)
    if builtins.any(x.shape[d] == 0 for d in dims):  # log(sum of nothing) = log(0) = -inf
        out = sum(x, dims, keepdim) + -math.inf
        return out
    m = amax(x, dims, keepdim=True).detach()
    m = m.masked_fill(~m.isfinite(), 0.0)  # an all -inf row: log(sum(exp(-inf))) = -inf, not NaN
    out = sum((x - m).exp(), dims, keepdim=True).log() + m
    if not keepdim:
        out = out.view(tuple(n for i, n in enumerate(out.shape) if i not in dims))
    return out


def all(x, dim=None, keepdim=False):  # noqa: A001
    """True where every element is non-zero; bool, or uint8 for a uint8 x (PyTorch's rule)."""
    out = sum(x != 0, dim, keepdim) == _shapes.numel(
        x.shape[d] for d in _shapes.reduction_dims("all", dim, x.ndim))
    return out.to(_dt.uint8) if x.dtype is _dt.uint8 else out


def any(x, dim=None, keepdim=False):  # noqa: A001
    """True where some element is non-zero; bool, or uint8 for a uint8 x (PyTorch's rule)."""
    out = sum(x != 0, dim, keepdim) > 0
    return out.to(_dt.uint8) if x.dtype is _dt.uint8 else out


def sum_of_squares(x):
    """sum(x * x) over all elements, as a Python float accumulated in float64 (no graph): the
    squared 2-norm that gradient clipping needs, in one pass."""
    x = packed(x)
    return backend.reduce.sum_of_squares(x._data, x.numel())
