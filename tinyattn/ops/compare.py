"""Comparisons, logic and selection: eq, lt, ..., logical_and, bitwise_and, ..., where, masked_fill.

    comparisons   a == b, a < b, ...          bool tensors, broadcast (NumPy rules), no gradient
    logic         logical_and / or / xor / not of "non-zero is True", bool tensors
    bitwise       a & b, a | b, a ^ b, ~a     integers bit by bit, bools as bools
    Where         a where cond else b;  da = g where cond else 0,  db = g where not cond else 0

The kernels are kernels/compare.py's, called as `backend.compare.<function>(...)`.
Operands of two dtypes are compared in the dtype PyTorch promotes them to (`dtypes.result_type`).
"""
import builtins
import warnings

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..storage import TensorBase as Tensor, _empty
from ._launch import check_tensor, need_tensors, packed, tensor_from_scalar, views4
from .convert import to_dtype
from .layout import expand
from .reduce import sum_to

_float32, _int64, _bool = _dt.float32, _dt.int64, _dt.bool

# The op codes the kernels take: plain ints that both backends share (kernels/compare.py).
_k = backend.compare
EQ, NE, LT, LE, GT, GE = _k.EQ, _k.NE, _k.LT, _k.LE, _k.GT, _k.GE
AND, OR, XOR = _k.AND, _k.OR, _k.XOR
_BITWISE = {"bitwise_and": _k.BITWISE_AND, "bitwise_or": _k.BITWISE_OR,
            "bitwise_xor": _k.BITWISE_XOR}
del _k


def _compare(op, name, a, b):
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(a).__name__}")
    if not isinstance(b, Tensor):
        if not isinstance(b, (int, float, bool)):
            return NotImplemented
        # PyTorch's rule for a number: int tensor == 0.5 compares as floats (not int(0.5))
        b = tensor_from_scalar(b, _dt.scalar_result_type(a.dtype, b))
    if a.dtype is not b.dtype:
        dt = _dt.result_type(a, b)
        a, b = to_dtype(a, dt), to_dtype(b, dt)
    if a.dtype.in_int64:    # compared as int64 (the values are the same)
        a, b = to_dtype(a, _int64), to_dtype(b, _int64)
    shape = _shapes.broadcast_shapes(name, a.shape, b.shape)
    out = _empty(shape, _bool)
    shape4, (va, vb) = views4(shape, a, b)
    backend.compare.compare(op, *va, *vb, out._data, *shape4)
    return out


def eq(a, b):
    return _compare(EQ, "eq", a, b)


def ne(a, b):
    return _compare(NE, "ne", a, b)


def lt(a, b):
    return _compare(LT, "lt", a, b)


def le(a, b):
    return _compare(LE, "le", a, b)


def gt(a, b):
    return _compare(GT, "gt", a, b)


def ge(a, b):
    return _compare(GE, "ge", a, b)


def logical_and(a, b):
    need_tensors("logical_and", a, b)
    return _compare(AND, "logical_and", a, b)


def logical_or(a, b):
    need_tensors("logical_or", a, b)
    return _compare(OR, "logical_or", a, b)


def logical_xor(a, b):
    need_tensors("logical_xor", a, b)
    return _compare(XOR, "logical_xor", a, b)


def logical_not(a):
    return _compare(EQ, "logical_not", a, 0)


def _bitwise(name, a, b):
    """Integers bit by bit, bools as bools (PyTorch's & | ^); floats are refused."""
    if not isinstance(a, Tensor):
        a, b = b, a
    if not isinstance(b, Tensor):
        if isinstance(b, float) or not isinstance(b, int):
            raise TypeError(f"{name}: expected an integer or bool operand, got {b!r}")
        b = tensor_from_scalar(b, a.dtype)
    for t in (a, b):
        if t.dtype.is_floating_point:
            raise TypeError(f"{name}: not defined for {t.dtype} tensors (integers and bools "
                            f"only)")
    dt = _dt.result_type(a, b)
    shape = _shapes.broadcast_shapes(name, a.shape, b.shape)
    kdt = _int64 if _dt.computes_in_int64(dt) else dt   # uint8 / int32 bits in int64, wrapped back
    a = packed(expand(to_dtype(a, kdt), shape))
    b = packed(expand(to_dtype(b, kdt), shape))
    out = _empty(shape, kdt)
    backend.compare.bitwise(_BITWISE[name], a._data, b._data, out._data, out.numel())
    return to_dtype(out, dt)


def bitwise_and(a, b):
    return _bitwise("bitwise_and", a, b)


def bitwise_or(a, b):
    return _bitwise("bitwise_or", a, b)


def bitwise_xor(a, b):
    return _bitwise("bitwise_xor", a, b)


def bitwise_not(x):
    """~x: logical not of a bool tensor; of an integer one, every bit flipped (x ^ -1 = -x - 1)."""
    check_tensor("bitwise_not", x)
    if x.dtype is _bool:
        return logical_not(x)
    if x.dtype.is_floating_point:
        raise TypeError(f"bitwise_not: not defined for {x.dtype} tensors (integers and bools "
                        f"only)")
    return _bitwise("bitwise_xor", x, -1)


class Where(Function):
    """out = a where cond else b;  da = g where cond else 0,  db = g where not cond else 0."""

    @staticmethod
    def forward(ctx, cond, a, b):
        shape = _shapes.broadcast_shapes("where", cond.shape, a.shape, b.shape)
        out = _empty(shape, a.dtype)
        shape4, (vc, va, vb) = views4(shape, cond, a, b)
        backend.compare.where(*vc, *va, *vb, out._data, *shape4)
        return out

    @staticmethod
    def backward(ctx, g):
        cond, a, b = ctx.inputs
        zero = tensor_from_scalar(0, g.dtype)
        ga = sum_to(where(cond, g, zero), a.shape) if ctx.needs_input_grad[1] else None
        gb = sum_to(where(cond, zero, g), b.shape) if ctx.needs_input_grad[2] else None
        return None, ga, gb


# Its backward formula is recorded ops, differentiable again (create_graph=True).
Where.differentiable_backward = True


def where(condition, input, other):  # noqa: A002 - PyTorch's argument names
    """Elementwise `input if condition else other`; either value may be a Python number.

    condition: a bool tensor. A uint8 one is accepted with PyTorch's deprecation warning (as
    `condition != 0`); other dtypes raise."""
    if isinstance(condition, Tensor) and condition.dtype is _dt.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = ne(condition, 0)
    if not isinstance(condition, Tensor) or condition.dtype is not _bool:
        raise TypeError("where: condition must be a bool tensor"
                        + (f", got {condition.dtype}" if isinstance(condition, Tensor) else ""))
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(ref, Tensor):
        dt = _float32 if builtins.any(isinstance(v, float) for v in (input, other)) else _int64
        input, other = tensor_from_scalar(input, dt), tensor_from_scalar(other, dt)
    if not isinstance(input, Tensor):
        input = _fill_value("where", input, _dt.scalar_result_type(other.dtype, input))
    if not isinstance(other, Tensor):
        other = _fill_value("where", other, _dt.scalar_result_type(input.dtype, other))
    if input.dtype is not other.dtype:
        dt = _dt.result_type(input, other)
        input, other = to_dtype(input, dt), to_dtype(other, dt)
    return Where.apply(condition, input, other)


def _fill_value(op, value, dt):
    """A number written into a dt tensor, range-checked as PyTorch does (uint8: 300 raises)."""
    return tensor_from_scalar(_dt.checked(dt, value, op), dt)


def masked_fill(x, mask, value):
    """x with `value` wherever mask is True; x and mask broadcast together, as in PyTorch (a
    larger mask gives a larger result; x.masked_fill_ needs the result to fit x).

    The mask must be a bool tensor: PyTorch 2.x refuses uint8 masks here (old code's
    `mask.byte()`); convert one with `mask.bool()` or `mask != 0`."""
    check_tensor("masked_fill", x)
    if not isinstance(mask, Tensor) or mask.dtype is not _bool:
        raise TypeError("masked_fill: mask must be a bool tensor"
                        + (f", got {mask.dtype} (PyTorch 2.x accepts only bool masks here; "
                           f"convert with mask.bool())" if isinstance(mask, Tensor) else ""))
    _shapes.broadcast_shapes("masked_fill", x.shape, mask.shape)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a number or a 0-dim tensor, got "
                             f"shape {tuple(value.shape)}")
        # a 0-d tensor stays in the graph: its gradient is the sum of g where the mask is True
        out = where(mask, value if value.dtype is x.dtype else to_dtype(value, x.dtype), x)
    else:
        out = where(mask, _fill_value("masked_fill", value, x.dtype), x)
    return out
