"""x[index] and x[index] = value, with NumPy/PyTorch semantics.

Basic indices -- ints, slices (positive steps), None, Ellipsis -- give a view (`Slice`): only the
offset, shape and strides change. Advanced indices -- integer tensors or lists, bool masks -- copy:

    1. apply the basic part as a view, leaving each advanced dim in place;
    2. broadcast the integer indices together to a shape S (a bool mask becomes the integer
       positions of its True entries, one index tensor per masked dim);
    3. move the advanced dims to the front and read the view as a (rows, row_len) matrix, where a
       row is one combination of advanced indices: row = sum_k idx_k * prod(sizes after k);
    4. gather those rows (`IndexRows`, whose gradient scatter-adds rows back);
    5. reshape to S + remaining dims, and if the advanced dims were adjacent in the index, move S
       back to where they stood (NumPy's rule; separated advanced dims stay in front).

So `logp[arange(N), target]` (the cross-entropy gather) and `emb_weight[token_ids]` are both
one row gather.
"""
import builtins
from array import array

from . import _shapes
from . import dtypes as _dt
from .tensor import Tensor, _make


def _normalize(x, index):
    """The index as a list with Ellipsis expanded; lists and bools of Python become tensors."""
    from .creation import tensor
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for it in index:
        if isinstance(it, (list, tuple)):
            it = tensor(it)
            if it.dtype.is_floating_point:
                raise IndexError("index: lists used as indices must hold ints or bools")
        elif isinstance(it, Tensor) and it.dtype.is_floating_point:
            raise IndexError(f"index: tensors used as indices must be int64 or bool, got {it.dtype}")
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
    from .functions import IndexRows, Slice, _checked_index, permute, reshape

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
        return v

    positions = [p for p, _, _ in advanced]
    idx = [_checked_index("index", t, v.shape[p], d) for p, t, d in advanced]
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
    from .functions import _packed, add, expand, mul
    rows = None
    stride = 1
    for t, n in zip(reversed(idx), reversed(sizes)):
        term = mul(t, stride) if stride != 1 else t
        rows = term if rows is None else add(rows, term)
        stride *= n
    if rows.shape != S:
        rows = expand(rows, S)
    return _packed(rows)


def _nonzero(mask):
    """One int64 tensor per dim of `mask`: the coordinates of its True entries (row-major)."""
    from .functions import _packed
    from .kernels.index import nonzero_flat
    m = _packed(mask)
    flat = _dt.zeros_buffer(_dt.int64, m.numel())
    count = nonzero_flat(m._data, m.numel(), flat) if m.numel() else 0
    flat = flat[:count]
    coords = []
    for n in reversed(mask.shape):
        coords.append([p % n for p in flat])
        flat = [p // n for p in flat]
    return [_make(array("q", c), (count,), _dt.int64) for c in reversed(coords)]


def setitem(x, index, value):
    """x[index] = value (a number or a tensor broadcast to the indexed shape), in place."""
    from .creation import arange
    from .functions import _check_inplace, _copy, _no_graph, expand, reshape
    from .kernels.index import put
    _check_inplace(x, "setitem")
    with _no_graph():
        # Index a tensor of buffer positions the same way: it says where each target element is.
        if x._packed:
            pos = reshape(arange(x.numel()), x.shape)
        else:
            pos = _make(array("q", x._positions()), x.shape, _dt.int64)
        target = getitem(pos, index)
        if isinstance(value, Tensor):
            if _shapes.broadcast_shapes("setitem", target.shape, value.shape) != target.shape:
                raise ValueError(f"setitem: a value of shape {tuple(value.shape)} cannot be "
                                 f"assigned to an indexed region of shape {tuple(target.shape)}")
            vals = _copy(expand(value if value.dtype is x.dtype else _copy(value, x.dtype),
                                target.shape))
        else:
            from .creation import full
            vals = full(target.shape, value, dtype=x.dtype)
        put(_copy(target)._data, vals._data, x._data, target.numel())

