"""Arithmetic: a + b, a - b, a * b, a / b, a ** b, maximum, minimum, remainder, ..., with
broadcasting and PyTorch's type promotion.

    Add Sub Mul Div Pow Maximum Minimum   a (op) b, both Tensors, broadcast (NumPy rules)
    ScalarOp    x (op) c for a Python number c (no 1-element buffer, no broadcasting)
    remainder, floor_divide   integer-valued: remainder has PyTorch's gradient, floor_divide none
    clamp, sign, round, square, reciprocal   built on the above and on ops/unary.py

Broadcasting: the gradient that flows back into a broadcast input is summed over the broadcast
dims (`sum_to`, ops/reduce.py): each input element was used once per position it was broadcast to.
Integer tensors compute in int64 and wrap as PyTorch's do (uint8 200 + 100 == 44, dtypes.py).
The kernels are kernels/elementwise.py's binary maps, called as `backend.elementwise.<fn>(...)`.

Chapters 1 and 2 of the tour (docs/01-autograd.md, docs/02-kernels.md) walk through this file.
"""
import builtins
import math

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import BinaryFunction, Function, UnaryFunction, is_grad_enabled, no_grad
from ..storage import TensorBase as Tensor, _empty
from ._launch import (check_tensor, need_tensors, other_operand, tensor_from_scalar,
                      times_alpha, views4)
from .compare import eq, gt, logical_and, logical_or, logical_xor, lt, ne, where
from .convert import to_dtype
from .reduce import sum_to
from .unary import (CLAMP, POW, ROUND, Unary, ZeroGradient, _in_int64, _rounding, floor, log, neg,
                    trunc)

_float32, _float64, _int64, _bool = _dt.float32, _dt.float64, _dt.int64, _dt.bool

# The op codes the kernels take: plain ints that both backends share (kernels/elementwise.py).
_k = backend.elementwise
ADD, SUB, MUL, DIV, POW2 = _k.ADD, _k.SUB, _k.MUL, _k.DIV, _k.POW2
MAXIMUM, MINIMUM, REMAINDER, FLOOR_DIVIDE, ATAN2 = (_k.MAXIMUM, _k.MINIMUM, _k.REMAINDER,
                                                    _k.FLOOR_DIVIDE, _k.ATAN2)
del _k


def _binary_forward(op, a, b):
    """out = a (op) b, broadcasting; a and b already have the same dtype."""
    if a.shape == b.shape and a._packed and b._packed:
        out = _empty(a.shape, a.dtype)
        backend.elementwise.binary_packed(op, a._data, b._data, out._data, len(out._data))
        return out
    shape = a.shape if a.shape == b.shape else _shapes.broadcast_shapes(_BINARY_NAMES[op],
                                                                        a.shape, b.shape)
    out = _empty(shape, a.dtype)
    shape4, (va, vb) = views4(shape, a, b)
    backend.elementwise.binary(op, *va, *vb, out._data, *shape4)
    return out


def add_into(acc, g):
    """acc += g in place, for the autograd engine's own gradient sums: acc packed, g of the same
    shape and dtype (any layout). Not an op: no graph, no checks."""
    if g._packed:  # acc[i] += 1.0 * g[i] (exact): two buffers, so the loop vectorises, which
        # binary_packed(ADD, acc, g, out=acc) would not (its output overlaps an input)
        backend.elementwise.axpy(1.0, g._data, acc._data, len(acc._data))
    else:
        shape4, (va, vb) = views4(acc.shape, acc, g)
        backend.elementwise.binary(ADD, *va, *vb, acc._data, *shape4)


_BINARY_NAMES = {ADD: "add", SUB: "sub", MUL: "mul", DIV: "div", POW2: "pow",
                 MAXIMUM: "maximum", MINIMUM: "minimum", REMAINDER: "remainder",
                 FLOOR_DIVIDE: "floor_divide", ATAN2: "atan2"}


class Add(BinaryFunction):
    """out = a + b;  da = g,  db = g  (each summed back to its input's shape)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        return _binary_forward(ADD, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        na, nb = ctx.needs_input_grad
        # An input that needs no gradient (an attention mask) must not cost a reduction pass.
        return (sum_to(g, a.shape) if na else None), (sum_to(g, b.shape) if nb else None)


class Sub(BinaryFunction):
    """out = a - b;  da = g,  db = -g."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        return _binary_forward(SUB, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        nb = ctx.needs_input_grad[1]
        return sum_to(g, a.shape), (sum_to(neg(g), b.shape) if nb else None)


class Mul(BinaryFunction):
    """out = a * b;  da = g * b,  db = g * a."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary_forward(MUL, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        return (sum_to(mul(g, b), a.shape) if na else None,
                sum_to(mul(g, a), b.shape) if nb else None)


class Div(BinaryFunction):
    """out = a / b;  da = g / b,  db = -g * a / b^2 = -g * out / b."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        out = _binary_forward(DIV, a, b)
        if ctx.needs_input_grad:
            ctx.save_for_backward(b, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        a = ctx.inputs[0]
        na, nb = ctx.needs_input_grad
        if is_grad_enabled():   # create_graph=True: out's graph is a's and b's, written out
            out = div(a, b)
        ga = sum_to(div(g, b), a.shape) if na else None
        gb = sum_to(neg(div(mul(g, out), b)), b.shape) if nb else None
        return ga, gb


class Pow(BinaryFunction):
    """out = a ** b;  da = g * b * a^(b-1),  db = g * out * log(a)  (0 where a <= 0)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        out = _binary_forward(POW2, a, b)
        ctx.save_for_backward(a, b, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = sum_to(mul(g, mul(b, pow(a, sub(b, 1.0)))), a.shape) if na else None
        gb = None
        if nb:
            if is_grad_enabled():   # create_graph=True: out's graph is a's and b's, written out
                out = pow(a, b)
            safe_log = where(gt(a, 0), log(where(gt(a, 0), a, 1.0)), 0.0)
            gb = sum_to(mul(g, mul(out, safe_log)), b.shape)
        return ga, gb


class Maximum(BinaryFunction):
    """out = max(a, b);  the gradient goes to the larger input (split in half on ties, as PyTorch)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    op = MAXIMUM

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary_forward(cls.op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        win_a = gt(a, b) if ctx.op == MAXIMUM else lt(a, b)
        share_a = add(to_dtype(win_a, g.dtype), mul(to_dtype(eq(a, b), g.dtype), 0.5))
        ga = sum_to(mul(g, share_a), a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to(mul(g, rsub(share_a, 1.0)), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Minimum(Maximum):
    """out = min(a, b);  the gradient goes to the smaller input (split in half on ties)."""

    op = MINIMUM


class ScalarOp(UnaryFunction):
    """out = x (op) c or c (op) x for a Python number c: no 1-element buffer, no broadcasting.

    add/sub: dx = +-g;  mul: dx = g c;  x / c: dx = g / c;  c / x: dx = -g out / x;
    c ** x: dx = g out log(c)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, op, c, reverse):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            backend.elementwise.binary_scalar_packed(op, x._data, c, reverse, out._data,
                                                     len(out._data))
        else:
            shape4, (vx,) = views4(x.shape, x)
            backend.elementwise.binary_scalar(op, *vx, c, reverse, out._data, *shape4)
        if ctx.needs_input_grad:
            ctx.op_name = _BINARY_NAMES[op].capitalize()
            if op == DIV and reverse or op == POW2:
                ctx.save_for_backward(x, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        x, op, c, reverse = ctx.inputs
        if op == ADD:
            return g, None, None, None
        if op == SUB:
            return (neg(g) if reverse else g), None, None, None
        if op == MUL:
            return mul(g, c), None, None, None
        if op == DIV:
            if not reverse:
                return mul(g, 1.0 / c), None, None, None
            xs, out = ctx.saved_tensors
            if is_grad_enabled():    # create_graph=True: c / x recorded, on x's graph
                xs, out = x, _scalar_op(DIV, x, c, reverse=True)
            return neg(div(mul(g, out), xs)), None, None, None
        _, out = ctx.saved_tensors  # POW2 with reverse: c ** x
        if is_grad_enabled():
            out = _scalar_op(POW2, x, c, reverse=True)
        return mul(mul(g, out), math.log(c) if c > 0 else math.nan), None, None, None


# Their backward formulas are recorded ops, differentiable again (create_graph=True).
Add.differentiable_backward = Sub.differentiable_backward = Mul.differentiable_backward = True
Div.differentiable_backward = ScalarOp.differentiable_backward = True
Pow.differentiable_backward = Maximum.differentiable_backward = True

def _scalar_op(op, x, c, reverse=False):
    dt = _dt.scalar_result_type(x.dtype, c)
    if dt is not x.dtype:
        x = to_dtype(x, dt)
    c = float(c) if dt.is_floating_point else int(c)
    if dt.in_int64:  # the number wraps into dt first (uint8 % -3 is % 253), as PyTorch
        return to_dtype(ScalarOp.apply(to_dtype(x, _int64), op, _dt.wrap(dt, c), reverse), dt)
    return ScalarOp.apply(x, op, c, reverse)


def _binary(cls, op, a, b):
    """Dispatch a (op) b for tensors and Python numbers, promoting dtypes as PyTorch does."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            dt = a.dtype
            if dt is b.dtype and dt.is_floating_point:   # the common case: nothing to convert
                return cls.apply(a, b)
            if a.dtype is not b.dtype:
                if op == SUB and (a.dtype is _bool or b.dtype is _bool):
                    raise TypeError(f"sub: subtracting a bool tensor is not supported (got "
                                    f"{a.dtype} - {b.dtype}, as PyTorch); to invert a mask use "
                                    f"~ or logical_not()")
                dt = _dt.result_type(a, b)
                a, b = to_dtype(a, dt), to_dtype(b, dt)
            if a.dtype is _bool:  # PyTorch: bool + bool is `or`, bool * bool is `and`
                if op == ADD:
                    return logical_or(a, b)
                if op == MUL:
                    return logical_and(a, b)
                if op == SUB:
                    raise TypeError("sub: subtracting two bool tensors is not supported; use "
                                    "logical_xor() or convert with .long() first")
                if op == POW2:
                    raise NotImplementedError("pow: not implemented for bool ** bool (as "
                                              "PyTorch)")
                a, b = to_dtype(a, _int64), to_dtype(b, _int64)
            if op == DIV and not a.dtype.is_floating_point:
                a, b = to_dtype(a, _float32), to_dtype(b, _float32)
            if a.dtype.in_int64:  # in int64, wrapped back: uint8 200 + 100 == 44
                return _in_int64(cls.apply, a.dtype, a, b)
            return cls.apply(a, b)
        if isinstance(b, (int, float)):
            if op == SUB and (a.dtype is _bool or isinstance(b, bool)):
                raise TypeError(f"sub: subtraction with a bool is not supported (got {a.dtype} "
                                f"- {b!r}, as PyTorch); to invert a mask use ~ or logical_not()")
            if op == DIV and not a.dtype.is_floating_point:
                a = to_dtype(a, _float32)
            if a.dtype is _bool and isinstance(b, bool) and op in (ADD, MUL):  # mask * True: bool
                return _binary(cls, op, a, tensor_from_scalar(b, _bool))
            if a.dtype is _bool:
                a = to_dtype(a, _int64 if isinstance(b, int) else _float32)
            return _scalar_op(op, a, b)
        return other_operand(lambda x, y: _binary(cls, op, x, y), a, b, _BINARY_NAMES[op])
    if isinstance(b, Tensor) and isinstance(a, (int, float)):
        if op in (ADD, MUL, MAXIMUM, MINIMUM):
            return _binary(cls, op, b, a)
        if op == SUB and (b.dtype is _bool or isinstance(a, bool)):
            raise TypeError(f"sub: subtraction with a bool is not supported (got {a!r} - "
                            f"{b.dtype}, as PyTorch); to invert a mask use ~ or logical_not()")
        if op == DIV and not b.dtype.is_floating_point:
            b = to_dtype(b, _float32)
        elif op == POW2 and not b.dtype.is_floating_point:
            # 2 ** int_tensor keeps the tensor's integer dtype in PyTorch (2 ** bool_tensor is
            # int64, 2.0 ** int_tensor is float32)
            if not (isinstance(a, int) and not isinstance(a, bool)):
                b = to_dtype(b, _float32)
            elif b.dtype is _bool:
                b = to_dtype(b, _int64)
        return _scalar_op(op, b, a, reverse=True)
    return other_operand(lambda x, y: _binary(cls, op, x, y), a, b, _BINARY_NAMES[op])


def add(a, b, alpha=1):
    if alpha.__class__ is not int or alpha != 1:  # alpha=True, 1.0: checked (_launch.py)
        b = times_alpha("add", a, b, alpha, mul)
    return _binary(Add, ADD, a, b)


def sub(a, b, alpha=1):
    if alpha.__class__ is not int or alpha != 1:
        b = times_alpha("sub", a, b, alpha, mul)
    return _binary(Sub, SUB, a, b)


def rsub(a, b, alpha=1):
    """b - alpha * a (the reflected subtraction: `2 - x`); a must be a tensor, as in PyTorch."""
    need_tensors("rsub", a)
    if alpha.__class__ is not int or alpha != 1:
        a = times_alpha("rsub", b, a, alpha, mul)
    return _binary(Sub, SUB, b, a)


def mul(a, b):
    return _binary(Mul, MUL, a, b)


def div(a, b, *, rounding_mode=None):
    """a / b (true division; integer inputs give floats). rounding_mode='trunc' rounds the
    quotient toward zero, 'floor' toward -inf; integers then stay integers (as PyTorch)."""
    if rounding_mode is None:
        return _binary(Div, DIV, a, b)
    if rounding_mode == "floor":
        a2, b2 = _integerish_operands(a, b)
        if not a2.dtype.is_floating_point:
            return floor_divide(a2, b2)
        return floor(_binary(Div, DIV, a, b))
    if rounding_mode == "trunc":
        a2, b2 = _integerish_operands(a, b)
        if not a2.dtype.is_floating_point:
            if not isinstance(b2, Tensor):
                b2 = tensor_from_scalar(b2, a2.dtype)
            q = floor_divide(a2, b2)          # toward -inf; one up where it went past zero
            inexact = ne(remainder(a2, b2), 0)
            signs_differ = logical_xor(lt(a2, 0), lt(b2, 0))
            return add(q, to_dtype(logical_and(inexact, signs_differ), q.dtype))
        return trunc(_binary(Div, DIV, a, b))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                     f"{rounding_mode!r}")


def rdiv(a, b):
    """b / a (the reflected division: `1 / x`)."""
    return _binary(Div, DIV, b, a)


def pow(a, b):  # noqa: A001 - PyTorch's name
    if isinstance(a, Tensor) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return mul(a, a)
        if a.dtype.is_floating_point:
            return Unary.apply(a, POW, float(b), 0.0)
    if _integral(a) and _integral(b):
        return _integer_pow(a, b)
    return _binary(Pow, POW2, a, b)


def rpow(a, b):
    """b ** a (the reflected power: `2 ** x`)."""
    if _integral(a) and _integral(b):
        return _integer_pow(b, a)
    return _binary(Pow, POW2, b, a)


def _integral(x):
    if isinstance(x, Tensor):
        return _dt.is_integer(x.dtype)
    return isinstance(x, int) and not isinstance(x, bool)


def _integer_pow(a, b):
    """Integer a ** b. For b < 0 it is 1 / a**|b| truncated: 1 for a = 1, +-1 for a = -1, else 0
    (PyTorch's answer; the kernel computes only b >= 0, where the result is an integer)."""
    if not isinstance(b, Tensor):
        if b < 0:
            raise RuntimeError("pow: integers to negative integer powers are not allowed (as in "
                               "PyTorch); use a float base or a tensor exponent")
        return _binary(Pow, POW2, a, b)
    with no_grad():
        negative = lt(b, 0)
        if not any_true(negative):
            return _binary(Pow, POW2, a, b)
        out = _binary(Pow, POW2, a, where(negative, 0, b))
        minus_one = where(ne(remainder(b, 2), 0), -1, 1)
        a_t = a if isinstance(a, Tensor) else tensor_from_scalar(a, out.dtype)
        small = where(eq(a_t, 1), 1, where(eq(a_t, -1), minus_one, 0))
        return where(negative, to_dtype(small, out.dtype), out)


def any_true(mask):
    return builtins.any(mask.tolist_flat())


def _bool_as_int(fn, a, b):
    """max / min of two bool tensors: computed on 0 / 1, given back as bool (PyTorch's dtype)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype is _bool and b.dtype is _bool:
        return to_dtype(fn(to_dtype(a, _int64), to_dtype(b, _int64)), _bool)
    return None


def maximum(a, b):
    need_tensors("maximum", a, b)
    out = _bool_as_int(maximum, a, b)
    return out if out is not None else _binary(Maximum, MAXIMUM, a, b)


class _Integerish(Function):
    """remainder and floor_divide: piecewise constant or integer-valued, so no gradient flows."""

    @staticmethod
    def forward(ctx, a, b, op):
        if isinstance(b, Tensor):
            return _binary_forward(op, a, b)
        return ScalarOp.forward(ctx, a, op, b, False)


def _integerish_operands(a, b):
    """a and b promoted as PyTorch promotes them for remainder / floor_divide (bool -> int64)."""
    if not isinstance(a, Tensor):
        a = tensor_from_scalar(a, _dt.scalar_result_type(b.dtype, a))
    if isinstance(b, Tensor) and a.dtype is not b.dtype:
        dt = _dt.result_type(a, b)
        a, b = to_dtype(a, dt), to_dtype(b, dt)
    elif not isinstance(b, Tensor):
        dt = _dt.scalar_result_type(a.dtype, b)
        a = to_dtype(a, dt)
        b = float(b) if dt.is_floating_point else _dt.wrap(dt, int(b))
    if a.dtype is _bool:
        a = to_dtype(a, _int64)
        b = to_dtype(b, _int64) if isinstance(b, Tensor) else b
    return a, b


class IntegerDivisionByZero(ZeroDivisionError, RuntimeError):
    """Integer remainder / floor_divide by 0. PyTorch raises RuntimeError("ZeroDivisionError");
    this is both, so either `except` catches it."""


def _check_integer_divisor(name, a, b):
    if a.dtype.is_floating_point:
        return
    zero = (b == 0) if not isinstance(b, Tensor) else bool(eq(b, 0).any().item()) \
        if b.numel() else False
    if zero:
        raise IntegerDivisionByZero(f"{name}: integer division by zero")


class Remainder(Function):
    """out = a - floor(a / b) * b;  da = g,  db = -g * floor(a / b) (PyTorch's gradient)."""

    @staticmethod
    def forward(ctx, a, b):
        return _Integerish.forward(ctx, a, b, REMAINDER)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        ga = sum_to(g, a.shape) if ctx.needs_input_grad[0] else None
        gb = None
        if isinstance(b, Tensor) and ctx.needs_input_grad[1]:
            gb = sum_to(neg(mul(g, floor_divide(a, b))), b.shape)
        return ga, gb


# floor(a / b) is piecewise constant: the formula is recorded ops, differentiable again.
Remainder.differentiable_backward = True


def remainder(a, b):
    """a - floor(a / b) * b: the result takes the sign of b, as Python's % (and PyTorch's).
    Integer division by zero raises (IntegerDivisionByZero, a RuntimeError as in PyTorch)."""
    a, b = _integerish_operands(a, b)
    _check_integer_divisor("remainder", a, b)
    if a.dtype.is_floating_point:
        return Remainder.apply(a, b)
    with no_grad():
        if _dt.computes_in_int64(a.dtype):
            return _in_int64(_Integerish.apply, a.dtype, a, b, REMAINDER)
        return _Integerish.apply(a, b, REMAINDER)


def floor_divide(a, b):
    """floor(a / b), rounding toward -inf as Python's // (and PyTorch's); no gradient (PyTorch
    has none either). Integer division by zero raises, as in PyTorch."""
    a, b = _integerish_operands(a, b)
    _check_integer_divisor("floor_divide", a, b)
    with no_grad():
        if _dt.computes_in_int64(a.dtype):
            return _in_int64(_Integerish.apply, a.dtype, a, b, FLOOR_DIVIDE)
        return _Integerish.apply(a, b, FLOOR_DIVIDE)


def minimum(a, b):
    need_tensors("minimum", a, b)
    out = _bool_as_int(minimum, a, b)
    return out if out is not None else _binary(Minimum, MINIMUM, a, b)


def square(x):
    """x * x; a bool tensor squares to int64, as in PyTorch (x * x alone would stay bool)."""
    if isinstance(x, Tensor) and x.dtype is _bool:
        x = to_dtype(x, _int64)
    return mul(x, x)     # uint8 / int32 squares wrap in their own dtype, as PyTorch


def reciprocal(x):
    return rdiv(x, 1.0)


def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    """Limit x to [min, max]; the gradient flows only where min <= x <= max."""
    check_tensor("clamp", x)
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    if not x.dtype.is_floating_point and builtins.any(
            isinstance(v, float) for v in (min, max)):
        x = to_dtype(x, _float32)     # an integer tensor clamped to a float bound: float32
    if _dt.computes_in_int64(x.dtype):   # PyTorch checks the bounds fit: uint8 clamp(0, 300) raises
        min, max = (None if v is None else _dt.checked(x.dtype, v, "clamp") for v in (min, max))
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    if not x.dtype.is_floating_point:
        return to_dtype(Unary.apply(to_dtype(x, _float64), CLAMP, lo, hi), x.dtype)
    return Unary.apply(x, CLAMP, lo, hi)


clip = clamp


def _sign(x):
    return sub(to_dtype(gt(x, 0), x.dtype), to_dtype(lt(x, 0), x.dtype))


def sign(x):
    """-1, 0 or 1 by the sign of x (NaN gives 0, as in PyTorch); dx = 0."""
    check_tensor("sign", x)
    if x.dtype is _bool:
        return x.clone()
    return ZeroGradient.apply(x, _sign)


def round(x, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even; decimals=d rounds x * 10**d, then divides back (as PyTorch)."""
    if decimals == 0:
        return _rounding(ROUND, "round", x)
    scale = 10.0 ** decimals
    return div(_rounding(ROUND, "round", mul(x, scale)), scale)
