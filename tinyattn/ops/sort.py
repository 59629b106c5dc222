"""Ordering: sort, argsort, topk, and the running sum cumsum (kernels/sort.py).

    sort(x, dim)   values, indices with values = gather(x, dim, indices): the gradient of the
                   values goes back through gather, to the positions they came from
    topk(x, k)     the first k of sort(x, descending=largest)
    cumsum(x, d)   y_j = sum_{i <= j} x_i;   dx_i = sum_{j >= i} g_j  (a cumsum of g from the end)

Each works on rows: the dim moves last, the kernel runs over (rows, n), the result moves back.
Sorting is stable (equal values keep their order) and puts NaN after every number, as PyTorch
does; `stable=` is accepted and always true here.
"""
from collections import namedtuple

from .. import _shapes
from .. import dtypes as _dt
from ..autograd import UnaryFunction
from .. import backend
from ..storage import _empty
from ._launch import check_tensor, packed
from ._recorded import adjoint
from .convert import to_dtype
from .indexing import flip, gather
from .layout import contiguous, narrow, reshape, transpose

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])


def _as_rows(x, d):
    """x with dim d last, packed, and its (rows, n)."""
    t = x if d == x.ndim - 1 else transpose(x, d, -1)
    t = packed(t.detach())
    n = t.shape[-1]
    return t, (t.numel() // n if n else 0), n


def _back(t, d, ndim):
    return t if d == ndim - 1 else contiguous(transpose(t, d, -1))


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """The int64 positions that sort `input` along dim (see the module docstring)."""
    check_tensor("argsort", input)
    if input.ndim == 0:
        return _empty((), _dt.int64).zero_()
    d = _shapes.normalize_dim("argsort", dim, input.ndim)
    x = input   # bool, uint8, int32 are sorted as int64 (the same order)
    if input.dtype is _dt.bool or _dt.computes_in_int64(input.dtype):
        x = to_dtype(input.detach(), _dt.int64)
    t, rows, n = _as_rows(x, d)
    idx = _empty(t.shape, _dt.int64)
    if rows and n:
        backend.sort.argsort_rows(t._data, rows, n, idx._data, _empty(t.shape, _dt.int64)._data,
                                  bool(descending))
    return _back(idx, d, input.ndim)


def sort(input, dim=-1, descending=False, *, stable=False):  # noqa: A002
    """(values, indices): input sorted along dim; values carry the gradient (through gather)."""
    check_tensor("sort", input)
    if input.ndim == 0:
        return SortResult(input.clone(), _empty((), _dt.int64).zero_())
    d = _shapes.normalize_dim("sort", dim, input.ndim)
    idx = argsort(input, d, descending)
    return SortResult(gather(input, d, idx), idx)


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (largest=False: smallest) entries along dim, in order."""
    check_tensor("topk", input)
    n = input.shape[dim] if input.ndim else 1
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k={k!r}, the dimension has "
                           f"{n} entries)")
    if input.ndim == 0:
        return TopkResult(input.clone(), _empty((), _dt.int64).zero_())
    d = _shapes.normalize_dim("topk", dim, input.ndim)
    idx = contiguous(narrow(argsort(input, d, descending=largest), d, 0, k))
    return TopkResult(gather(input, d, idx), idx)


class CumSum(UnaryFunction):
    """y = cumsum(x) along the last dim of a packed (rows, n) view;  dx = flip(cumsum(flip(g)))."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, x, rows, n):
        out = _empty(x.shape, x.dtype)
        if rows and n:
            backend.sort.cumsum_rows(x._data, rows, n, out._data)
        return out

    @staticmethod
    def backward(ctx, g):
        _, rows, n = ctx.inputs
        g = packed(flip(g, (-1,)))
        out = _empty(g.shape, g.dtype)
        if rows and n:
            backend.sort.cumsum_rows(g._data, rows, n, out._data)
        return flip(out, (-1,)), None, None


CumSum.differentiable_backward = adjoint(
    lambda ctx, u: CumSum.apply(contiguous(u), *ctx.inputs[1:]))


def cumsum(input, dim, dtype=None):  # noqa: A002
    """Running sums along dim; integer and bool inputs sum in int64 (PyTorch's rule)."""
    check_tensor("cumsum", input)
    if dtype is not None and _dt.computes_in_int64(_dt.get(dtype)):  # summed in int64, wrapped
        return to_dtype(cumsum(to_dtype(input, _dt.int64), dim), _dt.get(dtype))
    if dtype is not None:
        input = to_dtype(input, _dt.get(dtype))
    elif not input.dtype.is_floating_point:
        input = to_dtype(input, _dt.int64)
    if input.ndim == 0:
        return input.clone()
    d = _shapes.normalize_dim("cumsum", dim, input.ndim)
    t = input if d == input.ndim - 1 else transpose(input, d, -1)
    shape = t.shape
    n = shape[-1]
    rows = t.numel() // n if n else 0
    flat = reshape(t, (rows, n)) if rows else t
    out = CumSum.apply(contiguous(flat), rows, n)
    out = reshape(out, shape)
    return out if d == input.ndim - 1 else transpose(out, d, -1)

