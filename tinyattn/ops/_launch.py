"""How a tensor view becomes kernel arguments: the one place ops turn strides into loops.

A tensor is a view (buffer, offset, shape, strides) of a flat `array.array`. Kernels know nothing of
tensors; a strided kernel takes each operand as a *bundle* of arguments

    (buffer, offset, s0, s1, s2, s3)          element (i, j, k, l) at buffer[offset + i*s0 + ... + l*s3]

over a common 4-d iteration shape (n0, n1, n2, n3). `views4(shape, a, b, ...)` merges the dims of
`shape` that every operand walks alike (so a contiguous (B, T, E) tensor becomes (1, 1, 1, B*T*E)),
broadcasts each operand to `shape` (a broadcast dim gets stride 0) and returns the 4-d shape and one
bundle per operand, to be splatted into the kernel call:

    shape4, (va, vb) = views4(out.shape, a, b)
    backend.elementwise.binary(op, *va, *vb, out._data, *shape4)

More than 4 dims that cannot be merged are rare (a permuted 5-d view); then the operands are copied
into packed buffers first, which always merge to one dim.

Also here: `packed(t)` (t itself if its elements are buffer[0:numel] in row-major order, else a
packed copy), `copy_into` (any view into any view of equal shape, through kernels/copy.py), and
small argument checks the op files share.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import builtins
from array import array

from .. import _numpy as _np
from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..storage import TensorBase as Tensor, _empty, _make


def tensor_from_scalar(value, dtype):
    """A 0-d tensor holding one Python number (an int wraps into a uint8 / int32 tensor, as
    PyTorch's arithmetic casts it: dtypes.wrap)."""
    if dtype.in_int64:
        value = _dt.wrap(dtype, int(value))
    return _make(array(dtype.typecode, [value]), (), dtype)


def packed(t):
    """t itself when its elements are t._data[0:numel] in row-major order, else a packed copy."""
    return t if t._packed else copy(t)


def copy(t, dtype=None):
    """A packed copy of t (optionally converted to dtype), without graph."""
    out = _empty(t.shape, dtype or t.dtype)
    copy_into(t, out._data, 0, out._strides, out.dtype)
    return out


# How copy_into converts into the dtypes PyTorch converts its own way (kernels/copy.py).
_CONVERT_MODE = {_dt.bool: backend.copy.TO_BOOL, _dt.uint8: backend.copy.TO_UINT8,
                 _dt.int32: backend.copy.TO_INT32}


def copy_into(src, dst_data, dst_off, dst_strides, dst_dtype=None):
    """Copy the elements of view `src` into the view (dst_data, dst_off, dst_strides), same shape,
    converting to `dst_dtype` (default: src's dtype if the buffers' typecodes agree, else the
    typecode's dtype). bool and uint8 share the typecode 'B': the dtypes decide (dtypes.py)."""
    sd = src.dtype
    if dst_dtype is None:
        dst_dtype = sd if sd.typecode == dst_data.typecode else _dt.BY_TYPECODE[dst_data.typecode]
    extra = ()
    if sd.typecode == dst_data.typecode and not (dst_dtype is _dt.bool and sd is not _dt.bool):
        kern = backend.copy.copy
    elif dst_dtype in _CONVERT_MODE:   # bool, uint8, int32: test / wrap
        kern = backend.copy.convert_float if sd.is_floating_point else backend.copy.convert_int
        extra = (_CONVERT_MODE[dst_dtype],)
    elif sd.is_floating_point and dst_data.typecode == "q":
        kern = backend.copy.to_int         # float -> int truncates toward zero, as PyTorch
    else:
        kern = backend.copy.copy           # int -> float, float32 <-> float64: by assignment
    shape4, (ss, ds) = _shapes.kernel_layout(src.shape, src._strides, dst_strides)
    if len(shape4) == 4:
        kern(src._data, src._offset, *ss, dst_data, dst_off, *ds, *shape4, *extra)
        return
    # More than 4 dims that do not merge: loop over the leading ones in Python.
    for idx in _ndindex(shape4[:-4]):
        so = src._offset + builtins.sum(i * s for i, s in zip(idx, ss))
        do = dst_off + builtins.sum(i * s for i, s in zip(idx, ds))
        kern(src._data, so, *ss[-4:], dst_data, do, *ds[-4:], *shape4[-4:], *extra)


def _ndindex(shape):
    idx = [()]
    for n in shape:
        idx = [i + (k,) for i in idx for k in range(n)]
    return idx


def views4(shape, *tensors):
    """(shape4, bundles): `tensors` broadcast to `shape`, dims merged to a 4-d iteration shape, and
    one (buffer, offset, s0, s1, s2, s3) bundle per tensor (see the module docstring)."""
    strides = [t._strides if t.shape == shape else
               _shapes.broadcast_strides(t.shape, t._strides, shape) for t in tensors]
    shape4, merged = _shapes.kernel_layout(shape, *strides)
    if len(shape4) != 4:  # > 4 dims that do not merge: pack the broadcast operands first
        tensors = [expanded_copy(t, shape) for t in tensors]
        shape4, merged = (1, 1, 1, _shapes.numel(shape)), [(0, 0, 0, 1)] * len(tensors)
    return shape4, [(t._data, t._offset) + tuple(s) for t, s in zip(tensors, merged)]


def expanded_copy(t, shape):
    """t broadcast to `shape`, as a packed copy."""
    st = _shapes.broadcast_strides(t.shape, t._strides, shape)
    return copy(_make(t._data, shape, t.dtype, st, t._offset, False))


def transposed(t):
    """The (n, m) transposed view of a 2-D tensor t (m, n), without graph."""
    return _make(t._data, (t.shape[1], t.shape[0]), t.dtype, (t._strides[1], t._strides[0]),
                 t._offset, False)


def rows(t, n_cols):
    """A packed t read as an (N, n_cols) matrix, without graph (N = numel / n_cols)."""
    t = packed(t)
    return _make(t._data, (t.numel() // n_cols if n_cols else 0, n_cols), t.dtype)


def check_tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")


def need_tensors(op, *xs):
    """PyTorch's rule for ops like maximum or logical_and: tensor operands only (a number
    raises, it is not cast)."""
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: expected Tensor operands, got {type(x).__name__} "
                            f"(wrap numbers with tinyattn.tensor(...))")


def shape_arg(shape):
    """f(2, 3) and f((2, 3)) both give (2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def other_operand(binary, a, b, name):
    """`binary(a, b)` of an arithmetic op (ops/arithmetic.py) whose a or b is neither a tensor
    nor a Python number: a NumPy scalar counts as the number it holds and a NumPy array as a
    tensor of its dtype (read by tinyattn/_numpy.py), as PyTorch takes them; anything else
    raises TypeError naming the op."""
    tensor_a = isinstance(a, Tensor)
    v = b if tensor_a else a if isinstance(b, Tensor) else None
    if _np.is_numpy_scalar(v):
        v = v.item()
    elif _np.is_numpy_array(v):
        v = _make(*_np.read(v, name)[:3])
    elif tensor_a:
        raise TypeError(f"{name}: unsupported operand type {type(b).__name__}")
    else:
        raise TypeError(f"{name}: expected Tensors or numbers, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    return binary(a, v) if tensor_a else binary(v, b)


def times_alpha(name, a, b, alpha, mul):
    """alpha * b for add / sub (a + alpha * b), as PyTorch takes alpha: for two bool operands a
    truth value, so the sum stays bool (add(x, y, alpha=False) is x); a bool alpha needs bool
    operands, a float alpha a floating-point operand (else RuntimeError, as in PyTorch). `mul`
    is ops/arithmetic.py's, which sits above this module."""
    kinds = [_dt.bool if isinstance(t, builtins.bool) else t.dtype if isinstance(t, Tensor) else
             _dt.float32 if isinstance(t, float) else _dt.int64 for t in (a, b)]
    if kinds[0] is _dt.bool and kinds[1] is _dt.bool:
        return b if alpha else b & False
    if isinstance(alpha, builtins.bool) or (
            isinstance(alpha, float) and not any(k.is_floating_point for k in kinds)):
        need = "bool" if isinstance(alpha, builtins.bool) else "floating-point"
        raise RuntimeError(f"{name}: alpha={alpha!r} needs {need} operands (as in PyTorch), got "
                           f"{kinds[0].name} and {kinds[1].name}")
    return b if alpha == 1 else mul(b, alpha)
