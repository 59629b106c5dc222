"""Layout ops: a tensor's shape, strides and dtype change, its numbers do not.

Views share the input's buffer and change only (offset, shape, strides):
    View      reshape without copying          dx = g reshaped back
    Permute   dims reordered (transpose, .T)   dx = g with the inverse permutation
    Expand    broadcast as a stride-0 view     dx = g summed over the broadcast dims
    Slice     a strided sub-view (x[1:5:2])    dx = zeros with g written into the view
    Diagonal  a diagonal (x.diagonal())        dx = zeros with g written onto the diagonal
Copies write a new packed buffer:
    Copy      contiguous(), clone()            dx = g
    Cat       tensors joined along a dim       each input's dx is its slice of g
Composed of those: repeat and tile (a reshape, an expand, a reshape), roll (a cat of two
narrows), movedim (a permute). Dtype conversion is ops/convert.py.

Their kernels are the strided copy loops of kernels/elementwise.py.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import builtins

from .. import _devices
from .. import _shapes
from .. import dtypes as _dt
from .. import autograd as _autograd
from ..autograd import Function, UnaryFunction
from ..storage import TensorBase as Tensor, _empty, _make, _strides_for
from ._launch import check_tensor, copy, copy_into, shape_arg
from ._recorded import adjoint
from .convert import to_dtype
from .reduce import sum_to


def _view_strides(old_shape, old_strides, new_shape):
    """Strides that show the same elements in `new_shape` without copying, or None if impossible.

    Walk the old dims from the right, grouping them into chunks that are contiguous in memory;
    each chunk may be re-split into any new dims whose sizes multiply to the chunk's size."""
    if _shapes.numel(old_shape) in (0, 1) or not old_shape:
        return _strides_for(new_shape)
    new_strides = [0] * len(new_shape)
    vd = len(new_shape) - 1
    base = old_strides[-1]
    chunk = 1
    vchunk = 1
    for d in range(len(old_shape) - 1, -1, -1):
        chunk *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != chunk * base):
            while vd >= 0 and (vchunk < chunk or new_shape[vd] == 1):
                new_strides[vd] = vchunk * base
                vchunk *= new_shape[vd]
                vd -= 1
            if vchunk != chunk:
                return None
            if d > 0:
                base = old_strides[d - 1]
                chunk = vchunk = 1
    return tuple(new_strides) if vd == -1 else None


def _infer_shape(op, shape, n):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise ValueError(f"{op}: only one dimension can be -1, got {tuple(shape)}")
    if builtins.any(s < -1 for s in shape):
        raise ValueError(f"{op}: invalid shape {tuple(shape)}")
    if neg:
        rest = _shapes.numel(s for s in shape if s != -1)
        if rest == 0 or n % rest:
            raise ValueError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
        shape[neg[0]] = n // rest
    if _shapes.numel(shape) != n:
        raise ValueError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
    return tuple(shape)


def _view(x, out):
    """out shares x's elements: remember whose (in-place ops on views check it: ops/inplace.py)."""
    out._base = x if x._base is None else x._base
    out._view_clock = _autograd._CLOCK   # a later rebinding write to the base makes it stale
    return out


class View(UnaryFunction):
    """The same elements in another shape, sharing the buffer;  dx = g reshaped back."""

    @staticmethod
    def forward(ctx, x, shape, strides):
        return _view(x, _make(x._data, shape, x.dtype, strides, x._offset))

    @staticmethod
    def backward(ctx, g):
        return reshape(g, ctx.inputs[0].shape), None, None


def alias(x):
    """A new tensor viewing all of x: where PyTorch's view op changes nothing (a view of the same
    shape, a squeeze of no size-1 dim, an identity permute) it still returns a new tensor sharing
    x's memory, never x itself; so does tinyattn (so `.grad`, `requires_grad_()` and `is_leaf` of
    the result are the view's own, as in PyTorch)."""
    return View.apply(x, x.shape, x._strides)


def view(x, *shape):
    shape = _infer_shape("view", shape_arg(shape), x.numel())
    if shape == x.shape:  # a new view, not x itself (see alias)
        return View.apply(x, x.shape, x._strides)
    strides = _view_strides(x.shape, x._strides, shape)
    if strides is None:
        raise RuntimeError(f"view: size {shape} is not compatible with the input's shape "
                           f"{tuple(x.shape)} and strides {x._strides} (a view cannot copy); use "
                           f".reshape(...) instead")
    return View.apply(x, shape, strides)


def reshape(x, *shape):
    """view() when the layout allows it, else a contiguous copy reshaped."""
    check_tensor("reshape", x)
    shape = _infer_shape("reshape", shape_arg(shape), x.numel())
    if shape == x.shape:  # a new view, not x itself (see alias)
        return View.apply(x, x.shape, x._strides)
    strides = _view_strides(x.shape, x._strides, shape)
    if strides is None:
        x = contiguous(x)
        strides = _strides_for(shape)
    return View.apply(x, shape, strides)


def view_as(x, other):
    return view(x, other.shape)


def reshape_as(x, other):
    return reshape(x, other.shape)


def flatten(x, start_dim=0, end_dim=-1):
    check_tensor("flatten", x)
    if x.ndim == 0:
        return reshape(x, (1,))
    s = _shapes.normalize_dim("flatten", start_dim, x.ndim)
    e = _shapes.normalize_dim("flatten", end_dim, x.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    if s == e:  # nothing to merge: x itself, as PyTorch returns it
        return x
    return reshape(x, x.shape[:s] + (_shapes.numel(x.shape[s:e + 1]),) + x.shape[e + 1:])


def unflatten(x, dim, sizes):
    d = _shapes.normalize_dim("unflatten", dim, x.ndim)
    sizes = _infer_shape("unflatten", tuple(sizes), x.shape[d])
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(x, dim):
    check_tensor("unsqueeze", x)
    d = _shapes.normalize_dim("unsqueeze", dim, x.ndim + 1)
    st = x._strides[d] * x.shape[d] if d < x.ndim else 1
    return View.apply(x, x.shape[:d] + (1,) + x.shape[d:], x._strides[:d] + (st,) + x._strides[d:])


def squeeze(x, dim=None):
    check_tensor("squeeze", x)
    if dim is None:
        dims = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        dims = [d for d in _shapes.normalize_dims("squeeze", dim, x.ndim) if x.shape[d] == 1]
    if not dims:
        return alias(x)
    keep = [i for i in range(x.ndim) if i not in dims]
    return View.apply(x, tuple(x.shape[i] for i in keep), tuple(x._strides[i] for i in keep))


class Permute(UnaryFunction):
    """The dims reordered (a view);  dx = g with the inverse permutation."""

    @staticmethod
    def forward(ctx, x, dims):
        return _view(x, _make(x._data, tuple(x.shape[d] for d in dims), x.dtype,
                              tuple(x._strides[d] for d in dims), x._offset))

    @staticmethod
    def backward(ctx, g):
        dims = ctx.inputs[1]
        inverse = [0] * len(dims)
        for i, d in enumerate(dims):
            inverse[d] = i
        return permute(g, *inverse), None


def permute(x, *dims):
    check_tensor("permute", x)
    dims = shape_arg(dims)
    if len(dims) != x.ndim or sorted(_shapes.normalize_dim("permute", d, x.ndim)
                                     for d in dims) != list(range(x.ndim)):
        raise ValueError(f"permute: dims {dims} are not a permutation of the {x.ndim} dims of a "
                         f"tensor of shape {tuple(x.shape)}")
    dims = tuple(d % x.ndim if x.ndim else 0 for d in dims)
    if dims == tuple(range(x.ndim)):
        return alias(x)
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    check_tensor("transpose", x)
    n = x.ndim
    d0 = _shapes.normalize_dim("transpose", dim0, n)
    d1 = _shapes.normalize_dim("transpose", dim1, n)
    if d0 == d1 or n < 2:
        return alias(x)
    dims = list(range(n))
    dims[d0], dims[d1] = d1, d0
    return Permute.apply(x, tuple(dims))


def t(x):
    """torch.t: a 2-D tensor transposed; 0-D and 1-D tensors as a view of the same shape."""
    check_tensor("t", x)
    if x.ndim > 2:
        raise ValueError(f"t: expects a tensor with <= 2 dimensions, got a {x.ndim}-d tensor of "
                         f"shape {tuple(x.shape)} (use transpose(dim0, dim1) or mT)")
    return transpose(x, 0, 1) if x.ndim == 2 else alias(x)


class Expand(UnaryFunction):
    """x broadcast to a larger shape as a stride-0 view;  dx = g summed over the broadcast dims."""

    @staticmethod
    def forward(ctx, x, shape):
        return _view(x, _make(x._data, shape, x.dtype,
                              _shapes.broadcast_strides(x.shape, x._strides, shape), x._offset,
                              False))

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.inputs[0].shape), None


def expand(x, *shape):
    check_tensor("expand", x)
    shape = shape_arg(shape)
    if len(shape) < x.ndim:
        raise ValueError(f"expand: the target shape {shape} has fewer dims than the tensor's "
                         f"shape {tuple(x.shape)}")
    lead = len(shape) - x.ndim
    full = list(shape)
    for i, n in enumerate(x.shape):
        t = shape[lead + i]
        if t == -1:
            full[lead + i] = n
        elif n != 1 and t != n:
            raise ValueError(f"expand: the expanded size {t} must match the existing size {n} at "
                             f"non-singleton dimension {lead + i}; target shape {shape}, tensor "
                             f"shape {tuple(x.shape)}")
    if builtins.any(s < 0 for s in full):
        raise ValueError(f"expand: invalid target shape {shape}")
    full = tuple(full)
    return alias(x) if full == x.shape else Expand.apply(x, full)


def expand_as(x, other):
    return expand(x, other.shape)


def repeat(x, *sizes):
    """Tile x: repeat(2, 3) on a (a, b) tensor gives (2a, 3b), as torch.Tensor.repeat."""
    sizes = shape_arg(sizes)
    if len(sizes) < x.ndim:
        raise ValueError(f"repeat: need at least {x.ndim} repeat counts, got {sizes}")
    x = reshape(x, (1,) * (len(sizes) - x.ndim) + x.shape)
    inter = []
    for r, n in zip(sizes, x.shape):
        inter += [1, n]
    y = reshape(x, tuple(inter))
    big = []
    for r, n in zip(sizes, x.shape):
        big += [r, n]
    y = Copy.apply(expand(y, tuple(big)))  # always new memory, as PyTorch (repeat(1, 1) too)
    return reshape(y, tuple(r * n for r, n in zip(sizes, x.shape)))


class Slice(UnaryFunction):
    """A strided sub-view (basic indexing, narrow, split);  dx = zeros with g written into the view.

    `recipe` holds, per input dim, an int (that index, dim dropped) or (start, step, length), and
    `new_axes` the output positions of None-inserted dims."""

    reads_inputs = False  # the gradient needs x's shape and strides, not its values

    @staticmethod
    def forward(ctx, x, recipe, new_axes):
        shape, strides, offset = _apply_recipe(x.shape, x._strides, x._offset, recipe, new_axes)
        return _view(x, _make(x._data, shape, x.dtype, strides, offset))

    @staticmethod
    def backward(ctx, g):
        x, recipe, new_axes = ctx.inputs
        out = _make(_dt.zeros_buffer(g.dtype, x.numel()), x.shape, g.dtype)
        shape, strides, offset = _apply_recipe(out.shape, out._strides, 0, recipe, new_axes)
        copy_into(g, out._data, offset, strides)
        return out, None, None


def _apply_recipe(shape, strides, offset, recipe, new_axes):
    out_shape, out_strides = [], []
    for n, st, r in zip(shape, strides, recipe):
        if isinstance(r, int):
            offset += r * st
        else:
            start, step, length = r
            offset += start * st
            out_shape.append(length)
            out_strides.append(st * step)
    for p in new_axes:
        out_shape.insert(p, 1)
        out_strides.insert(p, 0)
    return tuple(out_shape), tuple(out_strides), offset


class Diagonal(UnaryFunction):
    """The diagonal `offset` of the (d1, d2) matrices as the last dim, a view (x.diagonal()
    shares x's memory, as in PyTorch);  dx = zeros with g written onto that diagonal."""

    reads_inputs = False  # the gradient needs x's shape, not its values

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        shape, strides, off = _diagonal_layout(x.shape, x._strides, x._offset, offset, d1, d2)
        return _view(x, _make(x._data, shape, x.dtype, strides, off))

    @staticmethod
    def backward(ctx, g):
        x, offset, d1, d2 = ctx.inputs
        out = _make(_dt.zeros_buffer(g.dtype, x.numel()), x.shape, g.dtype)
        shape, strides, off = _diagonal_layout(out.shape, out._strides, 0, offset, d1, d2)
        copy_into(g, out._data, off, strides)
        return out, None, None, None


def _diagonal_layout(shape, strides, off, offset, d1, d2):
    n, m = shape[d1], shape[d2]
    k = builtins.max(0, builtins.min(n - builtins.max(0, -offset), m - builtins.max(0, offset)))
    if k:
        off += builtins.max(0, -offset) * strides[d1] + builtins.max(0, offset) * strides[d2]
    rest = [d for d in range(len(shape)) if d not in (d1, d2)]
    return (tuple(shape[d] for d in rest) + (k,),
            tuple(strides[d] for d in rest) + (strides[d1] + strides[d2],), off)


def narrow(x, dim, start, length):
    check_tensor("narrow", x)
    if isinstance(start, Tensor):
        if start.ndim != 0 or start.dtype is not _dt.int64:
            raise RuntimeError("narrow: start must be an 0-dim integral Tensor")
        start = start.item()
    if x.ndim == 0:
        raise RuntimeError("narrow: narrow() cannot be applied to a 0-dim tensor")
    d = _shapes.normalize_dim("narrow", dim, x.ndim)
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise IndexError(f"narrow: start {start} and length {length} are out of range for "
                         f"dimension {dim} of size {n}")
    if start == 0 and length == n:
        return alias(x)
    recipe = tuple((start, 1, length) if i == d else (0, 1, m) for i, m in enumerate(x.shape))
    return Slice.apply(x, recipe, ())


def split(x, split_size_or_sections, dim=0):
    check_tensor("split", x)
    d = _shapes.normalize_dim("split", dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0:
            raise ValueError(f"split: split_size must be positive, got {s}")
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} do not add up to {n}, the size of dimension "
                             f"{dim}")
    out, start = [], 0
    for s in sizes or [0]:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    check_tensor("chunk", x)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[_shapes.normalize_dim("chunk", dim, x.ndim)]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


def unbind(x, dim=0):
    check_tensor("unbind", x)
    d = _shapes.normalize_dim("unbind", dim, x.ndim)
    return tuple(select(x, d, i) for i in range(x.shape[d]))


def select(x, dim, index):
    d = _shapes.normalize_dim("select", dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of bounds for dimension {dim} with size {n}")
    recipe = tuple(index % n if i == d else (0, 1, m) for i, m in enumerate(x.shape))
    return Slice.apply(x, recipe, ())



class Copy(UnaryFunction):
    """A packed copy of x (contiguous(), clone());  dx = g."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x):
        return copy(x)

    @staticmethod
    def backward(ctx, g):
        return g


# Their backward formulas are recorded ops, differentiable again (create_graph=True).
View.differentiable_backward = Permute.differentiable_backward = True
Expand.differentiable_backward = Copy.differentiable_backward = True
# Slicing and taking a diagonal are linear: the gradient of their backward is the op again.
Slice.differentiable_backward = adjoint(lambda ctx, u: Slice.apply(u, *ctx.inputs[1:]))
Diagonal.differentiable_backward = adjoint(lambda ctx, u: Diagonal.apply(u, *ctx.inputs[1:]))


def contiguous(x):
    return x if x._packed else Copy.apply(x)


def clone(x, *, memory_format=None):
    _devices.check_memory_format(memory_format, "clone")
    check_tensor("clone", x)
    return Copy.apply(x)


def detach(x):
    return x.detach()


class Cat(Function):
    """Tensors joined along dim;  each input's gradient is its slice of g."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, dim, *tensors):
        first = tensors[0]
        size = builtins.sum(t.shape[dim] for t in tensors)
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        out = _empty(shape, first.dtype)
        pos = 0
        for t in tensors:
            copy_into(t, out._data, pos * out._strides[dim], out._strides)
            pos += t.shape[dim]
        return out

    @staticmethod
    def backward(ctx, g):
        dim = ctx.inputs[0]
        grads, pos = [None], 0
        step = g._strides[dim]
        for t, need in zip(ctx.inputs[1:], ctx.needs_input_grad[1:]):
            n = t.shape[dim]
            if need:  # narrow(g, dim, pos, n), made directly (backward records no graph)
                grads.append(_make(g._data, g.shape[:dim] + (n,) + g.shape[dim + 1:], g.dtype,
                                   g._strides, g._offset + pos * step))
            else:
                grads.append(None)
            pos += n
        return tuple(grads)


def _cat_recorded(ctx, g):
    """create_graph=True: each input's gradient is its slice of g (a recorded split)."""
    dim = ctx.inputs[0]
    parts = split(g, [t.shape[dim] for t in ctx.inputs[1:]], dim)
    return (None,) + tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad[1:]))


Cat.differentiable_backward = _cat_recorded


def cat(tensors, dim=0):
    """Join tensors of equal shape (except along dim) along dim."""
    tensors = [t for t in tensors]
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    for t in tensors:
        check_tensor("cat", t)
    # PyTorch's legacy rule: 1-D empty tensors are skipped when the others have more dims
    if builtins.any(t.ndim > 1 for t in tensors):
        kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
        tensors = kept or tensors
    ref = tensors[0]
    d = _shapes.normalize_dim("cat", dim, ref.ndim)
    dt = ref.dtype
    for i, t in enumerate(tensors):
        if t.ndim != ref.ndim or builtins.any(
                a != b for j, (a, b) in enumerate(zip(t.shape, ref.shape)) if j != d):
            raise ValueError(f"cat: tensor {i} has shape {tuple(t.shape)} but tensor 0 has shape "
                             f"{tuple(ref.shape)}; all dims except dim {dim} must match")
        dt = _dt.promote_types(dt, t.dtype)
    tensors = [to_dtype(t, dt) for t in tensors]
    return Cat.apply(d, *tensors)   # a new tensor even for one input, as PyTorch


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    for i, t in enumerate(tensors):
        check_tensor("stack", t)
        if t.shape != tensors[0].shape:
            raise ValueError(f"stack: tensor {i} has shape {tuple(t.shape)} but tensor 0 has "
                             f"shape {tuple(tensors[0].shape)}; stack needs equal shapes")
    d = _shapes.normalize_dim("stack", dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


def tile(input, dims):  # noqa: A002
    check_tensor("tile", input)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return input.repeat(*dims)


def roll(input, shifts, dims=None):  # noqa: A002
    """Elements shifted along dims, wrapping around (dims None: over the flattened tensor).

    Always a new tensor, as PyTorch's: a shift that moves nothing (a multiple of the size, any
    shift along a size-1 dim) returns a copy, never the input, so writing into the result cannot
    change the caller's tensor."""
    check_tensor("roll", input)
    if dims is None:
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dims must have the same length, got {shifts} and "
                           f"{dims}")
    out = input
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return Copy.apply(input) if out is input else out


def movedim(input, source, destination):  # noqa: A002
    check_tensor("movedim", input)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source {src} and "
                           f"destination {dst} must have the same number of dims")
    src = [_shapes.normalize_dim("movedim", s, input.ndim) for s in src]
    dst = [_shapes.normalize_dim("movedim", s, input.ndim) for s in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    if input.ndim == 0:  # dim 0 of a 0-d tensor is the tensor: a view of it
        return alias(input)
    order = [d for d in range(input.ndim) if d not in src]
    for s, t in sorted(zip(dst, src)):
        order.insert(s, t)
    return input.permute(*order)
