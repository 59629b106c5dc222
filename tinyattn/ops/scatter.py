"""Scatter-like ops (the reverse of gather / index_select), and unique (kernels/scatter.py).

    scatter(x, d, index, src)        out = x;  out[..., index[i], ...]_d = src[i]     (i over index)
    scatter_add(x, d, index, src)    out = x;  out[..., index[i], ...]_d += src[i]
    scatter_reduce(x, d, index, src, reduce)   'sum', 'prod', 'mean', 'amax', 'amin' of x's entry
                                     (include_self=True) and every src entry sent to it
    index_add(x, d, index, source, alpha)
                           out = x;  out.select(d, index[k]) += alpha * source.select(d, k)
    index_fill(x, d, index, value)   out = x;  out.select(d, index[k]) = value

For dim d = 1 of a 3-d tensor, scatter is  out[i][index[i][j][k]][k] = src[i][j][k]: index has
x's number of dims, and is no larger than src anywhere and no larger than x outside dim d;
only the src entries inside index's shape are used.

All of them are one kernel loop, "combine values[j] into out[positions[j]]" with flat positions
into a packed copy of x: the op layer turns (dim, index) into those positions (`_positions`),
checking every index in Python first (kernels do not bounds-check).

Gradients (g is the gradient of out, positions p_j):
    scatter       dx = g with the scattered positions set to 0 (they were overwritten);
                  dsrc = g.gather(d, index) (zero outside index's shape)
    scatter_add   dx = g;  dsrc = g.gather(d, index)
    index_add     dx = g;  dsource = alpha * g.index_select(d, index)
    index_fill    dx = g with the filled positions set to 0;  dvalue (a 0-d tensor) = their sum
    scatter_reduce  sum: as scatter_add; mean: g / count; amax/amin: g split evenly among the
                  entries equal to the result; prod: g * (product of the other entries)

unique(x) sorts the flattened x and keeps the first of each run of equal values
(unique_consecutive keeps runs without sorting); it has no gradient, as in PyTorch.
unique(x, dim=d) does the same with the slices x.select(d, i): (n, m) rows once d is moved first,
ordered lexicographically by stable argsorts of the columns from the last to the first (radix
style), a new run wherever a row differs from the one before it.

uint8 and int32 tensors are combined in int64 and wrapped back (dtypes.py); bool sums are `or`.
"""
import math
from array import array
from itertools import accumulate

from .. import _shapes
from .. import dtypes as _dt
from ..autograd import Function, is_grad_enabled, no_grad
from .. import backend
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import check_tensor, copy, packed, tensor_from_scalar
from .arithmetic import div, floor_divide, mul
from .compare import eq, ne, where
from .indexing import IndexRows, checked_index, index_select, int_range, movedim_front
from .inplace import _inplace
from .layout import expand, reshape, view
from .reduce import any as reduce_any
from .sort import argsort
from .convert import to_dtype

_int64, _bool = _dt.int64, _dt.bool


# ---------------------------------------------------------------------------- the primitive


def _take(g, positions):
    """g's elements at flat positions (differentiable: IndexRows scatter-adds back)."""
    flat = reshape(g, (g.numel(), 1))
    return reshape(IndexRows.apply(flat, positions), (positions.numel(),))


def _scattered(x, values, positions, mode):
    """A packed copy of x with values[j] combined (mode) into its flat position positions[j]."""
    out = copy(x)
    n = positions.numel()
    if n:
        backend.scatter.scatter_flat(positions._data, packed(values)._data, out._data, n, mode)
    return out


class Scatter(Function):
    """out = x with out.flat[positions[j]] = values[j] (mode ASSIGN) or += values[j] (mode ADD).

    x: any shape; values, positions: 1-d of n (positions flat offsets into packed x).
    ASSIGN:  dx = g with g.flat[positions] = 0,  dvalues = g.flat[positions]
    ADD:     dx = g,                              dvalues = g.flat[positions]"""

    reads_inputs = False

    @staticmethod
    def forward(ctx, x, values, positions, mode):
        return _scattered(x, values, positions, mode)

    @staticmethod
    def backward(ctx, g):
        x, values, positions, mode = ctx.inputs
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = g if mode == backend.scatter.ADD else Scatter.apply(
                g, expand(tensor_from_scalar(0, g.dtype), values.shape), positions,
                backend.scatter.ASSIGN)
        if ctx.needs_input_grad[1]:
            gv = _take(g, positions)
        return gx, gv, None, None


Scatter.differentiable_backward = True


def _positions(shape, d, along, vshape):
    """Flat offsets into a packed tensor of `shape` of the elements (i_0, ..., i_k) of a tensor of
    shape vshape, with coordinate d replaced by `along` (an int64 tensor broadcast to vshape):
    sum_{k != d} i_k * stride_k + along * stride_d. A packed 1-d int64 tensor."""
    strides = _shapes.contiguous_strides(tuple(shape))
    with no_grad():
        pos = mul(along, strides[d]) if strides[d] != 1 else along
        for k, n in enumerate(vshape):
            if k != d and n > 1:
                view_shape = [1] * len(vshape)
                view_shape[k] = n
                pos = pos + view(mul(int_range(n), strides[k]), tuple(view_shape))
        if pos.shape != tuple(vshape):
            pos = expand(pos, tuple(vshape))
        return reshape(packed(pos), (_shapes.numel(vshape),))


def _index_tensor(op, index, int32_too=True):
    """PyTorch's rule: int64 or int32 indices (index_fill: int64 only)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}: index must be an int64 tensor, got {type(index).__name__}")
    if index.dtype is not _int64 and not (int32_too and index.dtype is _dt.int32):
        raise TypeError(f"{op}: expected dtype int64 for index{' (or int32)' if int32_too else ''}"
                        f", got {index.dtype}")
    return index


def _same_dtype(op, x, src, name="src"):
    if src.dtype is not x.dtype:
        raise TypeError(f"{op}: expected self.dtype to be equal to {name}.dtype, got {x.dtype} "
                        f"and {src.dtype}")


def _scatter_args(op, input, dim, index, src):  # noqa: A002
    """Checks PyTorch's rules; returns (x, d, index, src region as 1-d values or None,
    positions, a function giving the result its final shape)."""
    check_tensor(op, input)
    _index_tensor(op, index)
    x, restore = input, (lambda t: t)
    if x.ndim == 0:       # a 0-d tensor scatters like a 1-element vector
        x, restore = reshape(x, (1,)), (lambda t: reshape(t, ()))
        if index.ndim == 0:
            index = reshape(index, (1,))
        if isinstance(src, Tensor) and src.ndim == 0:
            src = reshape(src, (1,))
    d = _shapes.normalize_dim(op, dim, x.ndim)
    if isinstance(src, Tensor):
        _same_dtype(op, input, src)
    if index.numel() == 0:
        return x, d, index, None, None, restore
    if index.ndim != x.ndim:
        raise ValueError(f"{op}: index must have the same number of dims as self, got index "
                         f"shape {tuple(index.shape)} and self shape {tuple(input.shape)}")
    if isinstance(src, Tensor) and src.ndim != index.ndim:
        raise ValueError(f"{op}: index must have the same number of dims as src, got index "
                         f"shape {tuple(index.shape)} and src shape {tuple(src.shape)}")
    for k, n in enumerate(index.shape):
        if (k != d and n > x.shape[k]) or (isinstance(src, Tensor) and n > src.shape[k]):
            raise ValueError(
                f"{op}: index shape {tuple(index.shape)} must be no larger than self shape "
                f"{tuple(x.shape)} apart from dim {d}, and no larger than src shape "
                + (f"{tuple(src.shape)}" if isinstance(src, Tensor) else "(a number)")
                + f" (dim {k})")
    idx = checked_index(op, index, x.shape[d], d, allow_negative=False)
    positions = _positions(x.shape, d, idx, index.shape)
    return x, d, index, src, positions, restore


def _values(src, index_shape, n, dtype):
    """The src entries inside index's shape (or the number src, repeated) as a 1-d tensor."""
    if isinstance(src, Tensor):
        if src.shape != index_shape:
            src = src[tuple(slice(0, m) for m in index_shape)]
        return reshape(src, (n,))
    return expand(_scalar(src, dtype), (n,))


def _scalar(value, dtype, op="scatter"):
    """A Python number as a 0-d tensor of dtype (2.7 -> 2 for int64, as PyTorch casts it; a
    value uint8 / int32 cannot hold raises, as PyTorch)."""
    if dtype is _bool:
        value = value != 0
    elif not dtype.is_floating_point:
        value = int(_dt.checked(dtype, value, op))
    return tensor_from_scalar(value, dtype)


def _in_int64(dt):
    """bool (sums are `or`), uint8 and int32 (arithmetic wraps: dtypes.py) combine in int64."""
    return dt is _bool or _dt.computes_in_int64(dt)


def _as_int(x):
    return to_dtype(x, _int64) if _in_int64(x.dtype) else x


def _back_to(out, dt):
    """An int64 result back in dt: `!= 0` for bool, wrapped for uint8 / int32."""
    return ne(out, 0) if dt is _bool else to_dtype(out, dt)


def _scatter(op, input, dim, index, src, mode):  # noqa: A002
    x, d, index, src, positions, restore = _scatter_args(op, input, dim, index, src)
    if positions is None:
        return restore(input.clone() if input.ndim else reshape(x.clone(), ()))
    values = _values(src, index.shape, positions.numel(), x.dtype)
    if _in_int64(x.dtype) and (mode == backend.scatter.ADD or x.dtype is not _bool):
        # bool + bool is `or`; uint8 / int32 sums wrap (as PyTorch)
        out = Scatter.apply(_as_int(x), _as_int(values), positions, mode)
        return restore(_back_to(out, x.dtype))
    return restore(Scatter.apply(x, values, positions, mode))


def scatter(input, dim, index, src=None, value=None, *, reduce=None):  # noqa: A002
    """out = input with out[..., index[i], ...] = src[i] along dim (module docstring), or the number
    `value` (src may also be a number, as in PyTorch's positional form).

    input (*), index int64 with input's ndim, src like index or larger. An index is in
    [0, input.size(dim)); a position written twice keeps the last write (PyTorch leaves it
    unspecified). reduce='add' / 'multiply' combine instead of writing (as scatter_reduce 'sum' /
    'prod' with include_self=True)."""
    if src is None and value is None:
        raise TypeError("scatter: expected src (a tensor) or value (a number)")
    if src is not None and value is not None:
        raise TypeError("scatter: give src or value, not both")
    src = value if src is None else src
    if not isinstance(src, Tensor) and not isinstance(src, (int, float, bool)):
        raise TypeError(f"scatter: src must be a tensor or a number, got {type(src).__name__}")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise ValueError(f"scatter: reduce argument must be either 'add' or 'multiply', "
                             f"got {reduce!r}")
        if not isinstance(src, Tensor):
            check_tensor("scatter", input)
            src = expand(_scalar(src, input.dtype), index.shape)
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    return _scatter("scatter", input, dim, index, src, backend.scatter.ASSIGN)


def scatter_add(input, dim, index, src):  # noqa: A002
    """out = input with src[i] added into out[..., index[i], ...] along dim (repeated indices add
    up). Shapes as scatter; src must be a tensor of input's dtype."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: src must be a tensor, got {type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, backend.scatter.ADD)


# ---------------------------------------------------------------------------- scatter_reduce


class ScatterReduce(Function):
    """out = x with out.flat[p] = reduce(x.flat[p], values[j] for every j with positions[j] = p),
    reduce in prod (mode MUL), amax (MAX), amin (MIN). (sum and mean are Scatter ADD.)

    amax / amin:  the gradient of out[p] goes to the entries equal to it, split evenly
    prod:         d out[p] / d v = the product of the other entries sent to p (exact with zeros)"""

    reads_inputs = True

    @staticmethod
    def forward(ctx, x, values, positions, mode):
        out = _scattered(x, values, positions, mode)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x.detach(), values.detach(), out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        x, values, out = ctx.saved_tensors
        _, _, positions, mode = ctx.inputs
        n = positions.numel()
        if mode == backend.scatter.MUL:
            if is_grad_enabled():   # create_graph=True: the products from x's and values' graph
                x, values = ctx.inputs[0], ctx.inputs[1]
            zero_x, zero_v = eq(x, 0), eq(values, 0)
            one = tensor_from_scalar(1, x.dtype)
            nonzero_prod = ScatterReduce.apply(where(zero_x, one, x), where(zero_v, one, values),
                                               positions, backend.scatter.MUL)
            zeros = Scatter.apply(to_dtype(zero_x, x.dtype), to_dtype(zero_v, x.dtype), positions,
                                  backend.scatter.ADD)   # how many zeros went into each output
            # the product of the others: P / v where v != 0 and no zero went in; P where v is the
            # only zero; else 0
            gx = mul(g, where(zero_x, where(eq(zeros, 1), nonzero_prod, 0.0),
                              where(eq(zeros, 0), div(nonzero_prod, where(zero_x, one, x)), 0.0)))
            zp, pp = _take(zeros, positions), _take(nonzero_prod, positions)
            gv = mul(_take(g, positions),
                     where(zero_v, where(eq(zp, 1), pp, 0.0),
                           where(eq(zp, 0), div(pp, where(zero_v, one, values)), 0.0)))
        else:
            tie_x = to_dtype(eq(x, out), g.dtype)
            tie_v = to_dtype(eq(values, _take(out, positions)), g.dtype)
            count = Scatter.apply(tie_x, tie_v, positions, backend.scatter.ADD)
            share = div(g, where(eq(count, 0), tensor_from_scalar(1, g.dtype), count))
            gx = mul(share, tie_x)
            gv = mul(_take(share, positions), tie_v) if n else values
        return (gx if ctx.needs_input_grad[0] else None,
                gv if ctx.needs_input_grad[1] else None, None, None)


# Recorded ops under create_graph=True (amax / amin: the shares of g are constants). prod: at an
# entry exactly 0 the second derivative lacks the terms through that zero (tests use no zeros).
ScatterReduce.differentiable_backward = True


_IDENTITY = {"sum": 0, "mean": 0, "prod": 1}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """out = input with every src[i] reduced into out[..., index[i], ...] along dim, by reduce in
    'sum', 'prod', 'mean', 'amax', 'amin'; include_self=False leaves input's own value out of
    each position that receives something. 'mean' divides by the number of values reduced
    (rounding down for integers, as PyTorch). Shapes as scatter."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise ValueError(f"scatter_reduce: reduce argument must be one of 'sum', 'prod', 'mean', "
                         f"'amax', 'amin', got {reduce!r}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce: src must be a tensor, got {type(src).__name__}")
    x, d, index, src, positions, restore = _scatter_args("scatter_reduce", input, dim, index, src)
    if positions is None:
        return restore(input.clone() if input.ndim else reshape(x.clone(), ()))
    n = positions.numel()
    values = _values(src, index.shape, n, x.dtype)
    dt = x.dtype
    if _in_int64(dt):
        x, values = _as_int(x), _as_int(values)
    if not include_self:   # the positions that receive something start from the identity
        if reduce in _IDENTITY:
            start = _IDENTITY[reduce]
        elif x.dtype.is_floating_point:
            start = -math.inf if reduce == "amax" else math.inf
        else:
            start = -2 ** 63 if reduce == "amax" else 2 ** 63 - 1
        x = Scatter.apply(x, expand(tensor_from_scalar(start, x.dtype), (n,)), positions,
                          backend.scatter.ASSIGN)
    if reduce in ("sum", "mean"):
        out = Scatter.apply(x, values, positions, backend.scatter.ADD)
        if reduce == "mean":
            with no_grad():
                ones = expand(tensor_from_scalar(1, x.dtype), (n,))
                count = Scatter.apply(_empty(x.shape, x.dtype).fill_(1 if include_self else 0),
                                      ones, positions, backend.scatter.ADD)
                count = where(eq(count, 0), tensor_from_scalar(1, x.dtype), count)
            out = div(out, count) if x.dtype.is_floating_point else floor_divide(out, count)
    else:
        mode = {"prod": backend.scatter.MUL, "amax": backend.scatter.MAX,
                "amin": backend.scatter.MIN}[reduce]
        out = ScatterReduce.apply(x, values, positions, mode)
    if _in_int64(dt):
        out = _back_to(out, dt)
    return restore(out)


# ---------------------------------------------------------------------------- index_add, index_fill


def _index_vector(op, index):
    if op == "index_fill" and isinstance(index, Tensor) and index.dtype is _dt.int32:
        raise IndexError("index_fill: expected dtype int64 for index, got tinyattn.int32 (as "
                         "PyTorch; index_select, gather, scatter and index_add take int32 too)")
    _index_tensor(op, index)
    if index.ndim > 1:
        raise ValueError(f"{op}: index must be a vector (at most 1 dim), got shape "
                         f"{tuple(index.shape)}")
    return reshape(index, (index.numel(),))


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """out = input with alpha * source.select(dim, k) added into out.select(dim, index[k]) for
    every k (repeated indices add up). index: int64 of len source.size(dim), each in
    [0, input.size(dim)); source has input's shape apart from dim."""
    op = "index_add"
    check_tensor(op, input)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}: source must be a tensor, got {type(source).__name__}")
    index = _index_vector(op, index)
    _same_dtype(op, input, source, "source")
    x, restore = input, (lambda t: t)
    if x.ndim == 0:
        x, restore = reshape(x, (1,)), (lambda t: reshape(t, ()))
    if source.ndim == 0:
        source = reshape(source, (1,))
    d = _shapes.normalize_dim(op, dim, x.ndim)
    if source.ndim != x.ndim:
        raise ValueError(f"{op}: source must have the same number of dims as self, got "
                         f"{tuple(source.shape)} and {tuple(input.shape)}")
    if index.numel() != source.shape[d]:
        raise ValueError(f"{op}: the number of indices ({index.numel()}) must equal "
                         f"source.size({d}) ({source.shape[d]})")
    for k, (m, n) in enumerate(zip(source.shape, x.shape)):
        if k != d and m != n:
            raise ValueError(f"{op}: source shape {tuple(source.shape)} must equal self shape "
                             f"{tuple(x.shape)} apart from dim {d} (dim {k})")
    if index.numel() == 0 or source.numel() == 0:
        return restore(x.clone())
    if isinstance(alpha, float) and not x.dtype.is_floating_point:
        if alpha != int(alpha):
            alpha = int(alpha)   # PyTorch truncates too
    if alpha != 1:
        source = mul(source, alpha)
        if source.dtype is not x.dtype:
            source = to_dtype(source, x.dtype)
    idx = checked_index(op, index, x.shape[d], d, allow_negative=False)
    along = view(idx, tuple(-1 if k == d else 1 for k in range(x.ndim)))
    positions = _positions(x.shape, d, along, source.shape)
    values = reshape(source, (positions.numel(),))
    if _in_int64(x.dtype):
        return restore(_back_to(Scatter.apply(_as_int(x), _as_int(values), positions,
                                              backend.scatter.ADD), x.dtype))
    return restore(Scatter.apply(x, values, positions, backend.scatter.ADD))


def index_fill(input, dim, index, value):  # noqa: A002
    """out = input with every entry of out.select(dim, index[k]) set to value (a number or a 0-d
    tensor, which then receives the sum of their gradients). Negative indices count from the
    end, as in PyTorch."""
    op = "index_fill"
    check_tensor(op, input)
    index = _index_vector(op, index)
    x, restore = input, (lambda t: t)
    if x.ndim == 0:
        x, restore = reshape(x, (1,)), (lambda t: reshape(t, ()))
    d = _shapes.normalize_dim(op, dim, x.ndim)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"{op}: only a 0-d value tensor is supported, got shape "
                             f"{tuple(value.shape)}")
        if value.dtype is not x.dtype:
            value = to_dtype(value, x.dtype)
    elif not isinstance(value, (int, float, bool)):
        raise TypeError(f"{op}: value must be a number or a 0-d tensor, got "
                        f"{type(value).__name__}")
    else:
        value = _scalar(value, x.dtype, op)
    if index.numel() == 0:
        return restore(x.clone())
    # each position once: a repeated index fills the same entries, and value's gradient is the
    # sum of the filled entries' gradients, each counted once (as PyTorch)
    idx = unique(checked_index(op, index, x.shape[d], d, allow_negative=True))
    vshape = tuple(idx.numel() if k == d else n for k, n in enumerate(x.shape))
    along = view(idx, tuple(-1 if k == d else 1 for k in range(x.ndim)))
    positions = _positions(x.shape, d, along, vshape)
    return restore(Scatter.apply(x, expand(value, (positions.numel(),)), positions,
                                 backend.scatter.ASSIGN))


# ---------------------------------------------------------------------------- in place

scatter_ = _inplace(scatter, "scatter_")
scatter_add_ = _inplace(scatter_add, "scatter_add_")
scatter_reduce_ = _inplace(scatter_reduce, "scatter_reduce_")
index_add_ = _inplace(index_add, "index_add_")
index_fill_ = _inplace(index_fill, "index_fill_")


# ---------------------------------------------------------------------------- unique


def _unique_result(values, inverse, counts, return_inverse, return_counts):
    if not (return_inverse or return_counts):
        return values
    out = (values,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out


def _runs(flat):
    """(first value of each run, run number of each element, run lengths) of a packed 1-d x."""
    n = flat.numel()
    first = _empty((n,), flat.dtype)
    group = _empty((n,), _int64)
    counts = _empty((n,), _int64)
    r = backend.scatter.runs(flat._data, n, first._data, group._data, counts._data) if n else 0
    return first[:r].clone(), group, counts[:r].clone()


def _slices(op, input, dim):
    """(x, d, rows): x = input detached, d = dim normalised, rows = x's slices along d, each
    flattened in row-major order, as the rows of a packed (x.shape[d], m) tensor."""
    x = input.detach()
    if x.ndim == 0:
        raise IndexError(f"{op}: dim {dim} is out of range for a 0-d tensor (it has no dims)")
    d = _shapes.normalize_dim(op, dim, x.ndim)
    n = x.shape[d]
    if n and _shapes.numel(x.shape) == 0:
        raise RuntimeError(f"{op}: a tensor of shape {tuple(x.shape)} has 0-sized dims other "
                           f"than dim {d}, so its slices along dim {d} cannot be compared (as "
                           f"PyTorch)")
    rows = reshape(packed(movedim_front(x, d)), (n, _shapes.numel(x.shape) // n if n else 0))
    return x, d, rows


def _slice_runs(x, d, rows, order, return_inverse, return_counts, scatter_inverse):
    """unique / unique_consecutive along dim d, given the order in which to walk the slices
    (rows: (n, m)): a slice starts a new run when it differs from the previous one in any
    element (NaN differs from everything, as PyTorch). Returns the op's result tuple."""
    n = rows.shape[0]
    walked = index_select(rows, 0, order)                               # (n, m)
    is_start = [True] + reduce_any(ne(walked[1:], walked[:-1]), 1).tolist()   # (n,)
    starts = [j for j in range(n) if is_start[j]]
    group = [k - 1 for k in accumulate(is_start)]          # the run each walked slice is in
    first = index_select(order, 0, _make(array("q", starts), (len(starts),), _int64))
    values = index_select(x, d, first)
    inverse = counts = None
    if return_inverse:
        g = _make(array("q", group), (n,), _int64)
        if scatter_inverse:      # inverse[order[j]] = group[j]
            inverse = _empty((n,), _int64)
            backend.scatter.scatter_flat(packed(order)._data, g._data, inverse._data, n,
                                         backend.scatter.ASSIGN)
        else:
            inverse = g
    if return_counts:
        ends = starts[1:] + [n]
        counts = _make(array("q", [e - b for b, e in zip(starts, ends)]), (len(starts),), _int64)
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


def _unique_dim(op, input, dim, sort, return_inverse, return_counts):
    x, d, rows = _slices(op, input, dim)
    n, m = rows.shape
    if n == 0:              # nothing to compare: empty results of the right shapes
        empty = _make(array("q"), (0,), _int64)
        return _unique_result(x.clone(), empty, empty.clone(), return_inverse, return_counts)
    with no_grad():
        order = int_range(n)
        if sort:   # lexicographic: stable sorts by the last element first, the first element last
            for c in range(m - 1, -1, -1):
                column = index_select(rows[:, c], 0, order)
                order = index_select(order, 0, argsort(column, 0, stable=True))
        return _slice_runs(x, d, rows, order, return_inverse, return_counts, sort)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values of input, flattened, in ascending order: output (U,), and optionally
    `inverse` (input's shape, int64: out[inverse] == input) and `counts` (U,) int64.

    dim=d: the distinct slices along d instead, sorted lexicographically (compared element by
    element, in row-major order, as PyTorch): for x of shape (A, B) and dim=0 the unique rows,
    output (U, B), `inverse` (A,) with out[inverse] == x, `counts` (U,).

    sorted=False gives them sorted too (PyTorch's order is then unspecified; on the CPU it also
    sorts). Each NaN is its own value. No gradient (PyTorch has none)."""
    check_tensor("unique", input)
    if dim is not None:
        return _unique_dim("unique", input, dim, True, return_inverse, return_counts)
    with no_grad():
        flat = reshape(packed(input.detach()), (input.numel(),))
        order = argsort(flat, 0, stable=True) if flat.numel() else int_range(0)
        first, group, counts = _runs(packed(flat[order]))
        inverse = None
        if return_inverse:
            inverse = _empty((flat.numel(),), _int64)
            if flat.numel():
                backend.scatter.scatter_flat(order._data, group._data, inverse._data,
                                             flat.numel(), backend.scatter.ASSIGN)
            inverse = reshape(inverse, input.shape)
    return _unique_result(first, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The first value of each run of equal neighbours in input, flattened (the values in
    order); `inverse` and `counts` as unique.

    dim=d: the first slice of each run of equal neighbouring slices along d: for x of shape
    (A, B) and dim=0, output (U, B) (consecutive duplicate rows dropped), `inverse` (A,),
    `counts` (U,)."""
    check_tensor("unique_consecutive", input)
    if dim is not None:
        return _unique_dim("unique_consecutive", input, dim, False, return_inverse,
                           return_counts)
    with no_grad():
        flat = reshape(packed(input.detach()), (input.numel(),))
        first, group, counts = _runs(packed(flat))
    return _unique_result(first, reshape(group, input.shape), counts, return_inverse,
                          return_counts)

