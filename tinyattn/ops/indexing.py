"""Indexing: x[...] and x[...] = v with NumPy/PyTorch semantics, gather, index_select, flip,
tril / triu, and the selections composed of them (take_along_dim, masked_select, nonzero,
repeat_interleave, diagonal, diag, trace). Embedding and one_hot are ops/embedding.py, F.pad is
ops/pad.py.

    IndexRows   out[j] = src[rows[j]] for a (R, L) src: the one gather every advanced index becomes
                dsrc = zeros with g[j] added into row rows[j] (a row picked twice gets both)

Basic indices -- ints, slices (positive steps), None, Ellipsis -- give a view (`Slice`, ops/layout.py):
only the offset, shape and strides change. Advanced indices -- integer tensors or lists, bool masks
-- copy:

    1. apply the basic part as a view, leaving each advanced dim in place;
    2. broadcast the integer indices together to a shape S (a bool mask becomes the integer
       positions of its True entries, one index tensor per masked dim);
    3. move the advanced dims to the front and read the view as a (rows, row_len) matrix, where a
       row is one combination of advanced indices: row = sum_k idx_k * prod(sizes after k);
    4. gather those rows (`IndexRows`, whose gradient scatter-adds rows back);
    5. reshape to S + remaining dims, and if the advanced dims were adjacent in the index, move S
       back to where they stood (NumPy's rule; separated advanced dims stay in front).

So `logp[arange(N), target]` (the cross-entropy gather) and `emb_weight[token_ids]` are both
one row gather. Every index is checked before a kernel sees it (kernels do not bounds-check).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import builtins
import warnings
from array import array

from .. import _numpy as _np
from .. import _shapes
from .. import dtypes as _dt
from ..autograd import Function, bump_version, no_grad
from .. import backend
from ..creation import arange, tensor, zeros
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import check_tensor, copy, copy_into, packed, tensor_from_scalar
from .compare import ge, le, lt, ne, where
from .convert import to_dtype
from ._recorded import adjoint
from .inplace import recorded
from .layout import Diagonal, Slice, alias, expand, permute, reshape, view
from .reduce import sum, sum_to  # noqa: A004

_int64 = _dt.int64


def int_range(start, stop=None, step=1):
    """An int64 tensor of range(start, stop, step), made directly (no graph, no kernel)."""
    r = range(start) if stop is None else range(start, stop, step)
    return _make(array("q", r), (len(r),), _int64)



class IndexRows(Function):
    """out[j] = src[rows[j]] for a (R, L) src;  dsrc = zeros with g[j] added into row rows[j]
    (rows that are picked twice receive both gradients)."""

    @staticmethod
    def forward(ctx, src, rows):
        n, L = rows.numel(), src.shape[1]
        out = _empty((n, L), src.dtype)
        backend.index.gather_rows(packed(src)._data, rows._data, out._data, n, L)
        return out

    @staticmethod
    def backward(ctx, g):
        src, rows = ctx.inputs
        out = _make(_dt.zeros_buffer(g.dtype, src.numel()), src.shape, g.dtype)
        backend.index.scatter_add_rows(packed(g)._data, rows._data, out._data, rows.numel(),
                                       src.shape[1])
        return out, None


IndexRows.differentiable_backward = adjoint(lambda ctx, u: IndexRows.apply(u, ctx.inputs[1]))


def checked_index(op, idx, size, dim, allow_negative=True, empty_any_dtype=False):
    """idx (int64 or int32, as PyTorch accepts) as a packed int64 tensor with negatives wrapped:
    every index kernel reads int64 buffers. IndexError names the bad value. empty_any_dtype: an
    empty index of any dtype is accepted (PyTorch's gather)."""
    if empty_any_dtype and idx.numel() == 0:
        return _empty(idx.shape, _int64)
    if idx.dtype is not _int64:
        if idx.dtype is not _dt.int32:
            raise TypeError(f"{op}: indices must be int64 or int32 tensors, got {idx.dtype}")
        idx = to_dtype(idx, _int64)
    n = idx.numel()
    out = _empty(idx.shape, _int64)
    if n:
        if idx._packed:
            bad = backend.index.wrap_indices(idx._data, 0, 1, n, size, out._data, allow_negative)
        else:
            p = packed(idx)
            bad = backend.index.wrap_indices(p._data, 0, 1, n, size, out._data, allow_negative)
            idx = p
        if bad >= 0:
            value = idx._data[bad] if idx._packed else idx.tolist_flat()[bad]
            raise IndexError(f"{op}: index {value} is out of bounds for dimension {dim} with "
                             f"size {size}")
    return out


def index_select(x, dim, index):
    """The entries of x at `index` (a 1-D int64 tensor) along dim."""
    check_tensor("index_select", x)
    d = _shapes.normalize_dim("index_select", dim, x.ndim)
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise TypeError("index_select: index must be a 1-D integer tensor")
    if x.ndim == 0:   # a scalar, as PyTorch: the one index must be 0, the result 0-d
        if index.numel() != 1:
            raise IndexError(f"index_select: the index into a 0-d tensor must have 1 value, "
                             f"got {index.numel()}")
        return index_select(x.reshape(1), 0, index.reshape(1)).reshape(())
    rows = checked_index("index_select", index, x.shape[d], d, allow_negative=False)
    moved = movedim_front(x, d)
    src = reshape(moved, (x.shape[d], _shapes.numel(moved.shape[1:])))
    out = IndexRows.apply(src, rows)
    out = reshape(out, (rows.numel(),) + moved.shape[1:])
    return movedim_back(out, d)


def movedim_front(x, d):
    return x if d == 0 else permute(x, (d,) + tuple(i for i in range(x.ndim) if i != d))


def movedim_back(x, d):
    if d == 0:
        return x
    dims = list(range(1, x.ndim))
    dims.insert(d, 0)
    return permute(x, tuple(dims))


def gather(x, dim, index):
    """out[i][j][k] = x[i][index[i][j][k]][k] for dim = 1 (as torch.gather): index has x's ndim."""
    check_tensor("gather", x)
    d = _shapes.normalize_dim("gather", dim, x.ndim)
    if isinstance(index, Tensor) and min(x.ndim, index.ndim) == 0 and max(x.ndim, index.ndim) <= 1:
        # PyTorch reads a 0-d input or index as 1-D (the result has index's shape)
        return gather(x.reshape(-1), 0, index.reshape(-1)).reshape(index.shape)
    if isinstance(index, Tensor) and index.numel() == 0:   # PyTorch checks nothing then
        return reshape(reshape(x, (-1,))[0:0], index.shape)
    if not isinstance(index, Tensor) or index.ndim != x.ndim:
        raise ValueError(f"gather: index must be an integer tensor with {x.ndim} dims")
    for i, (n, m) in enumerate(zip(index.shape, x.shape)):
        if i != d and n > m:
            raise ValueError(f"gather: index shape {tuple(index.shape)} is larger than the input "
                             f"shape {tuple(x.shape)} at dim {i}")
    idx = checked_index("gather", index, x.shape[d], d, allow_negative=False,
                        empty_any_dtype=True)
    grids = []
    for i, n in enumerate(index.shape):
        if i == d:
            grids.append(idx)
        else:
            shape = [1] * index.ndim
            shape[i] = n
            grids.append(view(int_range(n), tuple(shape)))
    return getitem(x, tuple(grids))


def flip(x, dims):
    """x with the order of the elements along each of `dims` reversed (a copy, as PyTorch)."""
    check_tensor("flip", x)
    dims = _shapes.normalize_dims("flip", dims, x.ndim)
    if x.numel() == 0 or not dims:  # nothing to reorder: still a copy, as PyTorch
        return x.clone()
    for d in dims:
        n = x.shape[d]
        x = index_select(x, d, int_range(n - 1, -1, -1))
    return x



def tril(x, diagonal=0):
    """Elements on and below the `diagonal`-th diagonal of the last two dims; the rest zero."""
    check_tensor("tril", x)
    return _triangle(x, diagonal, lower=True)


def triu(x, diagonal=0):
    check_tensor("triu", x)
    return _triangle(x, diagonal, lower=False)


def _triangle(x, diagonal, lower):
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'}: expected at least 2 dims, got shape "
                         f"{tuple(x.shape)}")
    r, c = x.shape[-2], x.shape[-1]
    rows = view(int_range(r), (r, 1))
    cols = view(int_range(c), (1, c))
    diff = cols - rows
    keep = le(diff, diagonal) if lower else ge(diff, diagonal)
    return where(keep, x, tensor_from_scalar(0, x.dtype))


# ---------------------------------------------------------------------------- x[...] and x[...] = v


def _normalize(x, index):
    """The index as a list with Ellipsis expanded; lists and bools of Python become tensors."""
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for it in index:
        if _np.is_integer_scalar(it):    # NumPy indices, as PyTorch takes them (not np.bool_)
            it = int(it)
        elif _np.is_numpy_array(it):
            it = tensor(it)
        if isinstance(it, (list, tuple)):
            it = tensor(it)
            if it.dtype.is_floating_point:
                raise IndexError("index: lists used as indices must hold ints or bools")
        elif isinstance(it, Tensor) and it.dtype.is_floating_point:
            raise IndexError(f"index: tensors used as indices must be int64 or bool (or int32, "
                             f"uint8), got {it.dtype}")
        elif isinstance(it, Tensor) and it.dtype is _dt.uint8:
            warnings.warn("indexing with dtype tinyattn.uint8 is now deprecated, please use a "
                          "dtype tinyattn.bool instead.", UserWarning, stacklevel=3)
            it = ne(it, 0)   # a uint8 index is a mask, as in PyTorch
        elif not (it is None or it is Ellipsis or isinstance(it, (int, slice, Tensor))):
            raise IndexError(f"index: unsupported index of type {type(it).__name__} (use ints, "
                             f"slices, None, ..., int64 or bool tensors)")
        items.append(it)
    consumed = builtins.sum(
        (it.ndim if isinstance(it, Tensor) and it.dtype is _dt.bool else 1)
        for it in items if it is not None and it is not Ellipsis)
    n_ell = builtins.sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        raise IndexError("index: an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"index: too many indices for a tensor of dimension {x.ndim} "
                         f"(shape {tuple(x.shape)})")
    if n_ell:
        i = items.index(Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - consumed)
    return items


def getitem(x, index):
    """x[index]: a view for basic indices, a row gather for advanced ones (module docstring)."""

    if isinstance(index, int) and x.ndim > 0:  # the common x[i]: skip the general parsing
        n = x.shape[0]
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        return Slice.apply(x, (index % n,) + tuple((0, 1, m) for m in x.shape[1:]), ())

    items = _normalize(x, index)
    recipe, new_axes, advanced = [], [], []  # advanced: (position in the view, index tensor)
    out_pos = 0
    dim = 0
    for it in items:
        if it is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        if isinstance(it, Tensor) and it.dtype is _dt.bool:
            if it.ndim == 0:
                raise IndexError("index: 0-d bool indices are not supported")
            covered = x.shape[dim:dim + it.ndim]
            if it.shape != covered:
                raise IndexError(f"index: the shape of the mask {tuple(it.shape)} does not match "
                                 f"the shape {tuple(covered)} of the indexed dims {dim}.."
                                 f"{dim + it.ndim - 1} of a tensor of shape {tuple(x.shape)}")
            for pos in _nonzero(it):
                recipe.append((0, 1, x.shape[dim]))
                advanced.append((out_pos, pos, dim))
                out_pos += 1
                dim += 1
            continue
        n = x.shape[dim]
        if isinstance(it, int):
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for dimension {dim} with size {n}")
            recipe.append(it % n)
        elif isinstance(it, slice):
            start, stop, step = it.indices(n)
            if step <= 0:
                raise ValueError(f"index: slice step must be positive, got {step}")
            length = builtins.max(0, (stop - start + step - 1) // step)
            recipe.append((start if length else 0, step, length))
            out_pos += 1
        else:  # integer tensor
            recipe.append((0, 1, n))
            advanced.append((out_pos, it, dim))
            out_pos += 1
        dim += 1
    while dim < x.ndim:
        recipe.append((0, 1, x.shape[dim]))
        dim += 1

    recipe = tuple(recipe)
    identity = not new_axes and builtins.all(
        r == (0, 1, m) for r, m in zip(recipe, x.shape) if not isinstance(r, int)) and \
        not builtins.any(isinstance(r, int) for r in recipe)
    v = x if identity else Slice.apply(x, recipe, tuple(new_axes))
    if not advanced:
        return alias(x) if identity else v  # x[:] and x[...] are views, never x itself

    positions = [p for p, _, _ in advanced]
    idx = [checked_index("index", t, v.shape[p], d) for p, t, d in advanced]
    S = _shapes.broadcast_shapes("index (the index tensors)", *(t.shape for t in idx))
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    rest = [i for i in range(v.ndim) if i not in positions]
    moved = permute(v, tuple(positions) + tuple(rest)) if positions != list(
        range(len(positions))) else v
    adv_sizes = [v.shape[p] for p in positions]
    rest_shape = tuple(v.shape[i] for i in rest)
    rows = _row_numbers(idx, adv_sizes, S)
    src = reshape(moved, (_shapes.numel(adv_sizes), _shapes.numel(rest_shape)))
    out = reshape(IndexRows.apply(src, rows), S + rest_shape)
    if adjacent and positions[0] > 0 and S and rest_shape:
        p, k = positions[0], len(S)
        r = len(rest_shape)
        dims = list(range(k, k + p)) + list(range(k)) + list(range(k + p, k + r))
        out = permute(out, tuple(dims))
    return out


def _row_numbers(idx, sizes, S):
    """row[j] = sum_k idx_k[j] * prod(sizes[k+1:]) over the broadcast shape S, as packed int64."""
    rows = None
    stride = 1
    for t, n in zip(reversed(idx), reversed(sizes)):
        term = t * stride if stride != 1 else t
        rows = term if rows is None else rows + term
        stride *= n
    if rows.shape != S:
        rows = expand(rows, S)
    return packed(rows)


def _nonzero(mask):
    """One int64 tensor per dim of `mask`: the coordinates of its True entries (row-major)."""
    m = packed(mask)
    flat = _dt.zeros_buffer(_dt.int64, m.numel())
    count = backend.index.nonzero_flat(m._data, m.numel(), flat) if m.numel() else 0
    flat = flat[:count]
    coords = []
    for n in reversed(mask.shape):
        coords.append([p % n for p in flat])
        flat = [p // n for p in flat]
    return [_make(array("q", c), (count,), _dt.int64) for c in reversed(coords)]


class CopySlices(Function):
    """x[index] = value, recorded: x's new grad_fn. Its inputs are x as it was (a stand-in
    tensor with x's old grad_fn) and value:  dx_old = g with the region set to 0 (those
    elements were overwritten),  dvalue = g[index] summed over value's broadcast dims.
    (PyTorch's CopySlices.) Only the region's positions are needed, never the values."""

    reads_inputs = False

    @staticmethod
    def backward(ctx, g):
        old, value = ctx.inputs
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = g.clone()
            setitem(gx, ctx.index, 0)
        if ctx.needs_input_grad[1]:
            gv = sum_to(getitem(g, ctx.index), value.shape)
            if gv.dtype is not value.dtype:
                gv = to_dtype(gv, value.dtype)
        return gx, gv


# Its backward is a clone, a write and an index: recorded ops under create_graph=True.
CopySlices.differentiable_backward = True


def _record_copy_slices(x, index, value):
    """After x[index] = value was written: make x's grad_fn a CopySlices node."""
    old = _make(x._data, x.shape, x.dtype, x._strides, x._offset, x._packed)
    old.grad_fn, old._requires_grad = x.grad_fn, x._requires_grad
    value_grad = isinstance(value, Tensor) and value._requires_grad
    node = CopySlices.__new__(CopySlices)
    node.inputs = (old, value)
    node.needs_input_grad = (x._requires_grad, value_grad)
    node._next = (x.grad_fn, value.grad_fn if value_grad else None)
    node.index = index
    x.grad_fn, x._requires_grad = node, True


def setitem(x, index, value):
    """x[index] = value (a number or a tensor broadcast to the indexed shape), in place.

    Autograd, as in PyTorch: the write is recorded when x is in the graph or value requires
    grad (x's grad_fn becomes a CopySlices node), so filling a buffer in a loop
    (`out[:, t] = h_t`) passes each h_t its gradient, and `scores[~mask] = -1e9` works on a
    tensor inside the graph. x's buffer goes up one version: an op that saved x's values for
    its backward then raises instead of using the new ones. A leaf that requires grad, or a view
    of a tensor in the graph, cannot be written (ops/inplace.py)."""
    for it in (index if isinstance(index, tuple) else (index,)):
        if isinstance(it, Tensor) and it.dtype is _dt.uint8:
            raise TypeError("setitem: a uint8 tensor as a mask is refused, as in PyTorch 2.x "
                            "(masked_fill_ only supports boolean masks); use mask.bool()")
    if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
        # PyTorch drops a value's leading size-1 dims before broadcasting it to the region, so a
        # (1, E) row fits an (E,) slot; broadcasting then puts back any the region has.
        lead = 0
        while lead < value.ndim and value.shape[lead] == 1:
            lead += 1
        value = reshape(value, value.shape[lead:])
    record = recorded(x, "setitem", value)
    _write(x, index, value)
    bump_version(x, record)
    if record:
        _record_copy_slices(x, index, value)


def _write(x, index, value):
    with no_grad():
        if _is_basic(index):
            # Ints, slices, None, ...: the region is a view of x's own buffer; copy into it.
            target = getitem(x, index)
            if target._data is x._data:
                _copy_to_view(target, value, x)
                return
        # Index a tensor of buffer positions the same way: it says where each target element is.
        if x._packed:
            pos = reshape(int_range(x.numel()), x.shape)
        else:
            pos = _make(array("q", x._positions()), x.shape, _dt.int64)
        target = getitem(pos, index)
        if isinstance(value, Tensor):
            if _shapes.broadcast_shapes("setitem", target.shape, value.shape) != target.shape:
                raise ValueError(f"setitem: a value of shape {tuple(value.shape)} cannot be "
                                 f"assigned to an indexed region of shape {tuple(target.shape)}")
            vals = copy(expand(value if value.dtype is x.dtype else copy(value, x.dtype),
                               target.shape))
        else:
            vals = copy(expand(tensor_from_scalar(_dt.checked(x.dtype, value, "setitem"),
                                                  x.dtype), target.shape))
        backend.index.put(copy(target)._data, vals._data, x._data, target.numel())


def _is_basic(index):
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, slice)
               or (isinstance(p, int) and not isinstance(p, bool)) for p in parts)


def _copy_to_view(target, value, x):
    """target[...] = value for a view `target` of x's buffer (value broadcast to its shape)."""
    if isinstance(value, Tensor):
        if _shapes.broadcast_shapes("setitem", target.shape, value.shape) != target.shape:
            raise ValueError(f"setitem: a value of shape {tuple(value.shape)} cannot be "
                             f"assigned to an indexed region of shape {tuple(target.shape)}")
        if value._data is x._data or value.dtype is not x.dtype:
            value = copy(value, x.dtype)  # a private copy: x[1:] = x[:-1] must read old values
    else:
        value = tensor_from_scalar(_dt.checked(x.dtype, value, "setitem"), x.dtype)
    copy_into(expand(value, target.shape), x._data, target._offset, target._strides)


# ---------------------------------------------------------------------------- composed selections


def take_along_dim(input, indices, dim=None):  # noqa: A002
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = _shapes.normalize_dim("take_along_dim", dim, input.ndim)
    indices = where(lt(indices, 0), indices + input.shape[d], indices)   # -1 is the last
    # broadcast every dim but d (PyTorch's rule), then gather
    a = list(input.shape)
    b = list(indices.shape)
    a[d] = b[d] = 1
    common = list(_shapes.broadcast_shapes("take_along_dim", tuple(a), tuple(b)))
    ia, ib = list(common), list(common)
    ia[d], ib[d] = input.shape[d], indices.shape[d]
    return gather(input.expand(*ia), d, indices.expand(*ib))


def masked_select(input, mask):  # noqa: A002
    """The elements of input where mask is True, as a 1-D tensor (both broadcast first)."""
    check_tensor("masked_select", input)
    check_tensor("masked_select", mask)
    shape = _shapes.broadcast_shapes("masked_select", input.shape, mask.shape) or (1,)
    return input.expand(*shape)[mask.expand(*shape)]


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """The indices of the non-zero elements: (count, ndim) int64, or one (count,) per dim."""
    check_tensor("nonzero", input)
    flat = input.tolist_flat()
    shape = tuple(input.shape)
    if not shape:                     # a 0-d tensor: (1, 0) if it is non-zero, else (0, 0)
        out = zeros(1 if flat[0] else 0, 0, dtype=_int64)
        if as_tuple:
            return (zeros(1 if flat[0] else 0, dtype=_int64),)
        return out
    coords = []
    for pos, v in enumerate(flat):
        if v:
            c, rest = [], pos
            for n in reversed(shape):
                c.append(rest % n)
                rest //= n
            coords.append(c[::-1])
    if as_tuple:
        return tuple(tensor([c[d] for c in coords], dtype=_int64) for d in range(len(shape)))
    if not coords:
        return tensor([], dtype=_int64).reshape(0, len(shape))
    return tensor(coords, dtype=_int64)


def repeat_interleave(input, repeats, dim=None, *, output_size=None):  # noqa: A002
    """Each element (along dim; of the flattened tensor when dim is None) repeated."""
    check_tensor("repeat_interleave", input)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim
    n = x.shape[d]
    if isinstance(repeats, Tensor) and repeats.dtype not in (_dt.int64, _dt.int32):
        raise TypeError(f"repeat_interleave: repeats must be an int64 or int32 tensor, got "
                        f"{repeats.dtype} (as PyTorch)")
    counts = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    counts = [counts] * n if isinstance(counts, int) else list(counts)
    if len(counts) == 1 and n != 1:
        counts = counts * n
    if len(counts) != n or [c for c in counts if c < 0]:
        raise RuntimeError(f"repeat_interleave: repeats must have {n} non-negative entries")
    index = tensor([i for i, c in enumerate(counts) for _ in range(c)], dtype=_int64)
    if output_size is not None and output_size != index.numel():
        raise RuntimeError(f"repeat_interleave: output_size {output_size} is not the sum of the "
                           f"repeats ({index.numel()})")
    return index_select(x, d, index)


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal of the (dim1, dim2) matrices, as the last dim: a view sharing input's
    memory, as in PyTorch (x.diagonal().fill_(0) zeroes x's diagonal)."""
    check_tensor("diagonal", input)
    d1 = _shapes.normalize_dim("diagonal", dim1, input.ndim)
    d2 = _shapes.normalize_dim("diagonal", dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal: dim1 and dim2 cannot be the same dimension ({dim1})")
    return Diagonal.apply(input, offset, d1, d2)


def diag(input, diagonal=0):  # noqa: A002
    """1-D (n,) -> the (n + |k|) square matrix with it on diagonal k; 2-D -> its diagonal k."""
    check_tensor("diag", input)
    if input.ndim == 2:  # a copy, unlike diagonal(), as PyTorch's
        return globals()["diagonal"](input, diagonal).clone()
    if input.ndim != 1:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got {input.ndim}-D")
    n = input.shape[0] + (diagonal if diagonal >= 0 else -diagonal)
    out = zeros(n, n, dtype=input.dtype)
    rows = arange(input.shape[0]) + (-diagonal if diagonal < 0 else 0)
    cols = arange(input.shape[0]) + (diagonal if diagonal > 0 else 0)
    out[rows, cols] = input
    return out


def trace(input):  # noqa: A002
    check_tensor("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, got a {input.ndim}-D tensor")
    return sum(diagonal(input))
