"""Elementwise ops: y[i] = f(x[i]) and out[i] = a[i] (op) b[i], with broadcasting and PyTorch's
type promotion.

    Unary       exp, log, sqrt, tanh, sigmoid, relu, gelu, abs, clamp, x ** p, ...
                dx = g * f'(x); f and f' are written once, side by side, in kernels/elementwise.py
    Add Sub Mul Div Pow Maximum Minimum   a (op) b, both Tensors, broadcast (NumPy rules)
    ScalarOp    x (op) c for a Python number c (no 1-element buffer, no broadcasting)
    Where       a where cond else b
    comparisons and logic (eq, lt, logical_and, ...) return bool tensors and carry no gradient.

Broadcasting: the gradient that flows back into a broadcast input is summed over the broadcast
dims (`sum_to`, ops/reduce.py): each input element was used once per position it was broadcast to.

Chapters 1 and 2 of the tour (docs/01-autograd.md, docs/02-kernels.md) walk through this file.
"""
import builtins
import math
import warnings

from .. import _shapes
from .. import dtypes as _dt
from ..autograd import BinaryFunction, Function, UnaryFunction, no_grad
from ..fast import elementwise as KE
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import check_tensor, packed, tensor_from_scalar, views4
from .convert import to_dtype
from .layout import expand
from .reduce import sum_to

_float32, _float64, _int64, _bool = _dt.float32, _dt.float64, _dt.int64, _dt.bool
_narrow = _dt.computes_in_int64   # uint8, int32: computed in int64, wrapped back (dtypes.py)


def _in_int64(fn, dt, *xs):
    """fn(*xs) with uint8 / int32 tensors converted to int64, the result wrapped back to dt."""
    xs = [to_dtype(x, _int64) if isinstance(x, Tensor) and _narrow(x.dtype) else x for x in xs]
    return to_dtype(fn(*xs), dt)


def _floating(op, x):
    """Ops like exp or tanh are defined on floats: integer and bool inputs become float32 first."""
    check_tensor(op, x)
    return x if x.dtype.is_floating_point else to_dtype(x, _float32)


class Unary(UnaryFunction):
    """y = f(x) elementwise for f in exp, log, sqrt, tanh, sigmoid, relu, gelu, abs, clamp, pow, ...

    dx = g * f'(x); f and f' sit side by side in kernels/elementwise.py (UNARY_FORMULAS)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, op, p1, p2):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            KE.UNARY_PACKED[x.dtype.typecode, op](op, p1, p2, x._data, out._data, len(out._data))
        else:
            shape4, (vx,) = views4(x.shape, x)
            KE.UNARY[x.dtype.typecode, op](op, p1, p2, *vx, out._data, *shape4)
        if ctx.needs_input_grad:  # building a graph: keep what backward needs
            ctx.op_name = _UNARY_NAMES[op]
            ctx.save_for_backward(x, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        _, op, p1, p2 = ctx.inputs
        x, g = packed(x), packed(g)
        out = _empty(x.shape, x.dtype)
        KE.UNARY_BACKWARD[x.dtype.typecode, op](op, p1, p2, g._data, x._data, y._data, out._data,
                                            len(out._data))
        return out, None, None, None


_UNARY_NAMES = {KE.NEG: "Neg", KE.ABS: "Abs", KE.EXP: "Exp", KE.LOG: "Log", KE.SQRT: "Sqrt",
                KE.TANH: "Tanh", KE.SIGMOID: "Sigmoid", KE.RELU: "Relu", KE.GELU: "Gelu",
                KE.GELU_TANH: "Gelu", KE.CLAMP: "Clamp", KE.POW: "Pow", KE.SIN: "Sin", KE.COS: "Cos",
                KE.FLOOR: "Floor", KE.CEIL: "Ceil", KE.TRUNC: "Trunc", KE.ROUND: "Round",
                KE.LOG1P: "Log1p", KE.EXPM1: "Expm1", KE.ERF: "Erf", KE.ATAN: "Atan"}


def _unary(op, x, p1=0.0, p2=0.0, name=""):
    return Unary.apply(_floating(name, x), op, p1, p2)


def neg(x):
    check_tensor("neg", x)
    if x.dtype is _bool:
        raise TypeError("neg: negation of a bool tensor is not defined; use logical_not()")
    if x.dtype.in_int64:  # uint8: -x wraps (-3 -> 253), as PyTorch
        return _in_int64(neg, x.dtype, x)
    return Unary.apply(x, KE.NEG, 0.0, 0.0)


def abs(x):  # noqa: A001 - PyTorch's name
    check_tensor("abs", x)
    if x.dtype.in_int64:
        return _in_int64(abs, x.dtype, x)
    return Unary.apply(x, KE.ABS, 0.0, 0.0)


def exp(x):
    return _unary(KE.EXP, x, name="exp")


def log(x):
    return _unary(KE.LOG, x, name="log")


def sqrt(x):
    return _unary(KE.SQRT, x, name="sqrt")


def rsqrt(x):
    return _unary(KE.POW, x, -0.5, name="rsqrt")


def tanh(x):
    return _unary(KE.TANH, x, name="tanh")


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow for any x."""
    return _unary(KE.SIGMOID, x, name="sigmoid")


def relu(x):
    check_tensor("relu", x)
    if _dt.is_integer(x.dtype):      # integers stay integers, as in PyTorch
        return where(gt(x, 0), x, 0)
    return _unary(KE.RELU, x, name="relu")


def gelu(x, approximate="none"):
    """x * Phi(x) (exact, erf-based, PyTorch's default) or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary(KE.GELU if approximate == "none" else KE.GELU_TANH, x, name="gelu")


def sin(x):
    return _unary(KE.SIN, x, name="sin")


def log1p(x):
    """log(1 + x), exact for small x."""
    return _unary(KE.LOG1P, x, name="log1p")


def expm1(x):
    """exp(x) - 1, exact for small x."""
    return _unary(KE.EXPM1, x, name="expm1")


def erf(x):
    """The error function, 2/sqrt(pi) * integral of exp(-t^2) from 0 to x."""
    return _unary(KE.ERF, x, name="erf")


def atan(x):
    """The arc tangent, in (-pi/2, pi/2);  dx = g / (1 + x^2)."""
    return _unary(KE.ATAN, x, name="atan")


arctan = atan


def _rounding(op, name, x):
    check_tensor(name, x)
    if not x.dtype.is_floating_point:      # already whole numbers: a copy, as PyTorch
        return x.clone()
    return Unary.apply(x, op, 0.0, 0.0)


def floor(x):
    return _rounding(KE.FLOOR, "floor", x)


def ceil(x):
    return _rounding(KE.CEIL, "ceil", x)


def trunc(x):
    return _rounding(KE.TRUNC, "trunc", x)


def round(x, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even; decimals=d rounds x * 10**d, then divides back (as PyTorch)."""
    if decimals == 0:
        return _rounding(KE.ROUND, "round", x)
    scale = 10.0 ** decimals
    return div(_rounding(KE.ROUND, "round", mul(x, scale)), scale)


def cos(x):
    return _unary(KE.COS, x, name="cos")


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
    if _narrow(x.dtype):              # PyTorch checks the bounds fit: uint8 clamp(0, 300) raises
        min, max = (None if v is None else _dt.checked(x.dtype, v, "clamp") for v in (min, max))
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    if not x.dtype.is_floating_point:
        return to_dtype(Unary.apply(to_dtype(x, _float64), KE.CLAMP, lo, hi), x.dtype)
    return Unary.apply(x, KE.CLAMP, lo, hi)


clip = clamp


class ZeroGradient(Function):
    """y = f(x) for a piecewise-constant f (sign, a count of non-zeros): dx = 0, as in PyTorch,
    which records these ops in the graph with a zero gradient rather than cutting the graph."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, x, f):
        with no_grad():
            return f(x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        return _make(_dt.zeros_buffer(x.dtype, x.numel()), x.shape, x.dtype), None


def _sign(x):
    return sub(to_dtype(gt(x, 0), x.dtype), to_dtype(lt(x, 0), x.dtype))


def sign(x):
    """-1, 0 or 1 by the sign of x (NaN gives 0, as in PyTorch); dx = 0."""
    check_tensor("sign", x)
    if x.dtype is _bool:
        return x.clone()
    return ZeroGradient.apply(x, _sign)

def _binary_forward(op, a, b):
    """out = a (op) b, broadcasting; a and b already have the same dtype."""
    if a.shape == b.shape and a._packed and b._packed:
        out = _empty(a.shape, a.dtype)
        KE.BINARY_PACKED[a.dtype.typecode, op](op, a._data, b._data, out._data, len(out._data))
        return out
    shape = a.shape if a.shape == b.shape else _shapes.broadcast_shapes(_BINARY_NAMES[op],
                                                                        a.shape, b.shape)
    out = _empty(shape, a.dtype)
    shape4, (va, vb) = views4(shape, a, b)
    KE.BINARY[a.dtype.typecode, op](op, *va, *vb, out._data, *shape4)
    return out


def add_into(acc, g):
    """acc += g in place, for the autograd engine's own gradient sums: acc packed, g of the same
    shape and dtype (any layout). Not an op: no graph, no checks."""
    if g._packed:  # acc[i] += 1.0 * g[i] (exact): two buffers, so the loop vectorises, which
        # binary_packed(ADD, acc, g, out=acc) would not (its output overlaps an input)
        KE.AXPY[acc.dtype.typecode](1.0, g._data, acc._data, len(acc._data))
    else:
        shape4, (va, vb) = views4(acc.shape, acc, g)
        KE.BINARY[acc.dtype.typecode, KE.ADD](KE.ADD, *va, *vb, acc._data, *shape4)


_BINARY_NAMES = {KE.ADD: "add", KE.SUB: "sub", KE.MUL: "mul", KE.DIV: "div", KE.POW2: "pow",
                 KE.MAXIMUM: "maximum", KE.MINIMUM: "minimum", KE.REMAINDER: "remainder",
                 KE.FLOOR_DIVIDE: "floor_divide", KE.ATAN2: "atan2"}


class Add(BinaryFunction):
    """out = a + b;  da = g,  db = g  (each summed back to its input's shape)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        return _binary_forward(KE.ADD, a, b)

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
        return _binary_forward(KE.SUB, a, b)

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
        return _binary_forward(KE.MUL, a, b)

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
        out = _binary_forward(KE.DIV, a, b)
        if ctx.needs_input_grad:
            ctx.save_for_backward(b, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        a = ctx.inputs[0]
        na, nb = ctx.needs_input_grad
        ga = sum_to(div(g, b), a.shape) if na else None
        gb = sum_to(neg(div(mul(g, out), b)), b.shape) if nb else None
        return ga, gb


class Pow(BinaryFunction):
    """out = a ** b;  da = g * b * a^(b-1),  db = g * out * log(a)  (0 where a <= 0)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, a, b):
        out = _binary_forward(KE.POW2, a, b)
        ctx.save_for_backward(a, b, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = sum_to(mul(g, mul(b, pow(a, sub(b, 1.0)))), a.shape) if na else None
        gb = None
        if nb:
            safe_log = where(gt(a, 0), log(where(gt(a, 0), a, 1.0)), 0.0)
            gb = sum_to(mul(g, mul(out, safe_log)), b.shape)
        return ga, gb


class Maximum(BinaryFunction):
    """out = max(a, b);  the gradient goes to the larger input (split in half on ties, as PyTorch)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    op = KE.MAXIMUM

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary_forward(cls.op, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        win_a = gt(a, b) if ctx.op == KE.MAXIMUM else lt(a, b)
        share_a = add(to_dtype(win_a, g.dtype), mul(to_dtype(eq(a, b), g.dtype), 0.5))
        ga = sum_to(mul(g, share_a), a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to(mul(g, rsub(share_a, 1.0)), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Minimum(Maximum):
    """out = min(a, b);  the gradient goes to the smaller input (split in half on ties)."""

    op = KE.MINIMUM


class Atan2(BinaryFunction):
    """out = atan2(a, b), the angle of the point (x = b, y = a) in (-pi, pi];
    da = g * b / (a^2 + b^2),  db = -g * a / (a^2 + b^2)  (NaN at a = b = 0, as PyTorch)."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary_forward(KE.ATAN2, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        r = reciprocal(add(mul(a, a), mul(b, b)))
        return (sum_to(mul(mul(g, b), r), a.shape) if na else None,
                sum_to(mul(mul(g, neg(a)), r), b.shape) if nb else None)


def atan2(input, other):  # noqa: A002 - PyTorch's argument names
    """The angle of the point (x = other, y = input), elementwise, in (-pi, pi] (broadcasting;
    integer and bool inputs give float32, as PyTorch). Gradient: see Atan2."""
    _need_tensors("atan2", input, other)
    dt = _dt.promote_types(input.dtype, other.dtype)
    if not dt.is_floating_point:
        dt = _float32
    a = input if input.dtype is dt else to_dtype(input, dt)
    b = other if other.dtype is dt else to_dtype(other, dt)
    return Atan2.apply(a, b)


arctan2 = atan2


class ScalarOp(UnaryFunction):
    """out = x (op) c or c (op) x for a Python number c: no 1-element buffer, no broadcasting.

    add/sub: dx = +-g;  mul: dx = g c;  x / c: dx = g / c;  c / x: dx = -g out / x;
    c ** x: dx = g out log(c)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, op, c, reverse):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            KE.BINARY_SCALAR_PACKED[x.dtype.typecode, op](op, x._data, c, reverse, out._data,
                                                      len(out._data))
        else:
            shape4, (vx,) = views4(x.shape, x)
            KE.BINARY_SCALAR[x.dtype.typecode, op](op, *vx, c, reverse, out._data, *shape4)
        if ctx.needs_input_grad:
            ctx.op_name = _BINARY_NAMES[op].capitalize()
            if op == KE.DIV and reverse or op == KE.POW2:
                ctx.save_for_backward(x, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        x, op, c, reverse = ctx.inputs
        if op == KE.ADD:
            return g, None, None, None
        if op == KE.SUB:
            return (neg(g) if reverse else g), None, None, None
        if op == KE.MUL:
            return mul(g, c), None, None, None
        if op == KE.DIV:
            if not reverse:
                return mul(g, 1.0 / c), None, None, None
            xs, out = ctx.saved_tensors
            return neg(div(mul(g, out), xs)), None, None, None
        _, out = ctx.saved_tensors  # POW2 with reverse: c ** x
        return mul(mul(g, out), math.log(c) if c > 0 else math.nan), None, None, None


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
            if a.dtype is not b.dtype:
                if op == KE.SUB and (a.dtype is _bool or b.dtype is _bool):
                    raise TypeError(f"sub: subtracting a bool tensor is not supported (got "
                                    f"{a.dtype} - {b.dtype}, as PyTorch); to invert a mask use "
                                    f"~ or logical_not()")
                dt = _dt.result_type(a, b)
                a, b = to_dtype(a, dt), to_dtype(b, dt)
            if a.dtype is _bool:  # PyTorch: bool + bool is `or`, bool * bool is `and`
                if op == KE.ADD:
                    return logical_or(a, b)
                if op == KE.MUL:
                    return logical_and(a, b)
                if op == KE.SUB:
                    raise TypeError("sub: subtracting two bool tensors is not supported; use "
                                    "logical_xor() or convert with .long() first")
                if op == KE.POW2:
                    raise NotImplementedError("pow: not implemented for bool ** bool (as "
                                              "PyTorch)")
                a, b = to_dtype(a, _int64), to_dtype(b, _int64)
            if op == KE.DIV and not a.dtype.is_floating_point:
                a, b = to_dtype(a, _float32), to_dtype(b, _float32)
            if a.dtype.in_int64:  # in int64, wrapped back: uint8 200 + 100 == 44
                return _in_int64(cls.apply, a.dtype, a, b)
            return cls.apply(a, b)
        if isinstance(b, (int, float)):
            if op == KE.SUB and (a.dtype is _bool or isinstance(b, bool)):
                raise TypeError(f"sub: subtraction with a bool is not supported (got {a.dtype} "
                                f"- {b!r}, as PyTorch); to invert a mask use ~ or logical_not()")
            if op == KE.DIV and not a.dtype.is_floating_point:
                a = to_dtype(a, _float32)
            if a.dtype is _bool:
                a = to_dtype(a, _int64 if isinstance(b, int) else _float32)
            return _scalar_op(op, a, b)
        raise TypeError(f"{_BINARY_NAMES[op]}: unsupported operand type {type(b).__name__}")
    if isinstance(b, Tensor) and isinstance(a, (int, float)):
        if op in (KE.ADD, KE.MUL, KE.MAXIMUM, KE.MINIMUM):
            return _binary(cls, op, b, a)
        if op == KE.SUB and (b.dtype is _bool or isinstance(a, bool)):
            raise TypeError(f"sub: subtraction with a bool is not supported (got {a!r} - "
                            f"{b.dtype}, as PyTorch); to invert a mask use ~ or logical_not()")
        if op == KE.DIV and not b.dtype.is_floating_point:
            b = to_dtype(b, _float32)
        elif op == KE.POW2 and not b.dtype.is_floating_point:
            # 2 ** int_tensor keeps the tensor's integer dtype in PyTorch (2 ** bool_tensor is
            # int64, 2.0 ** int_tensor is float32)
            if not (isinstance(a, int) and not isinstance(a, bool)):
                b = to_dtype(b, _float32)
            elif b.dtype is _bool:
                b = to_dtype(b, _int64)
        return _scalar_op(op, b, a, reverse=True)
    raise TypeError(f"{_BINARY_NAMES[op]}: expected Tensors or numbers, got "
                    f"{type(a).__name__} and {type(b).__name__}")


def add(a, b, alpha=1):
    if alpha != 1:
        b = mul(b, alpha)
    return _binary(Add, KE.ADD, a, b)


def sub(a, b, alpha=1):
    if alpha != 1:
        b = mul(b, alpha)
    return _binary(Sub, KE.SUB, a, b)


def rsub(a, b):
    """b - a (the reflected subtraction: `2 - x`); a must be a tensor, as in PyTorch."""
    _need_tensors("rsub", a)
    return _binary(Sub, KE.SUB, b, a)


def _need_tensors(name, *xs):
    """PyTorch's rule for these ops: tensor operands only (a number raises, it is not cast)."""
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: expected Tensor operands, got {type(x).__name__} "
                            f"(wrap numbers with tinyattn.tensor(...))")


def mul(a, b):
    return _binary(Mul, KE.MUL, a, b)


def div(a, b, *, rounding_mode=None):
    """a / b (true division; integer inputs give floats). rounding_mode='trunc' rounds the
    quotient toward zero, 'floor' toward -inf; integers then stay integers (as PyTorch)."""
    if rounding_mode is None:
        return _binary(Div, KE.DIV, a, b)
    if rounding_mode == "floor":
        a2, b2 = _integerish_operands(a, b)
        if not a2.dtype.is_floating_point:
            return floor_divide(a2, b2)
        return floor(_binary(Div, KE.DIV, a, b))
    if rounding_mode == "trunc":
        a2, b2 = _integerish_operands(a, b)
        if not a2.dtype.is_floating_point:
            if not isinstance(b2, Tensor):
                b2 = tensor_from_scalar(b2, a2.dtype)
            q = floor_divide(a2, b2)          # toward -inf; one up where it went past zero
            inexact = ne(remainder(a2, b2), 0)
            signs_differ = logical_xor(lt(a2, 0), lt(b2, 0))
            return add(q, to_dtype(logical_and(inexact, signs_differ), q.dtype))
        return trunc(_binary(Div, KE.DIV, a, b))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                     f"{rounding_mode!r}")


def rdiv(a, b):
    """b / a (the reflected division: `1 / x`)."""
    return _binary(Div, KE.DIV, b, a)


def pow(a, b):  # noqa: A001 - PyTorch's name
    if isinstance(a, Tensor) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return mul(a, a)
        if a.dtype.is_floating_point:
            return Unary.apply(a, KE.POW, float(b), 0.0)
    if _integral(a) and _integral(b):
        return _integer_pow(a, b)
    return _binary(Pow, KE.POW2, a, b)


def rpow(a, b):
    """b ** a (the reflected power: `2 ** x`)."""
    if _integral(a) and _integral(b):
        return _integer_pow(b, a)
    return _binary(Pow, KE.POW2, b, a)


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
        return _binary(Pow, KE.POW2, a, b)
    with no_grad():
        negative = lt(b, 0)
        if not any_true(negative):
            return _binary(Pow, KE.POW2, a, b)
        out = _binary(Pow, KE.POW2, a, where(negative, 0, b))
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
    _need_tensors("maximum", a, b)
    out = _bool_as_int(maximum, a, b)
    return out if out is not None else _binary(Maximum, KE.MAXIMUM, a, b)


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
        return _Integerish.forward(ctx, a, b, KE.REMAINDER)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        ga = sum_to(g, a.shape) if ctx.needs_input_grad[0] else None
        gb = None
        if isinstance(b, Tensor) and ctx.needs_input_grad[1]:
            gb = sum_to(neg(mul(g, floor_divide(a, b))), b.shape)
        return ga, gb


def remainder(a, b):
    """a - floor(a / b) * b: the result takes the sign of b, as Python's % (and PyTorch's).
    Integer division by zero raises (IntegerDivisionByZero, a RuntimeError as in PyTorch)."""
    a, b = _integerish_operands(a, b)
    _check_integer_divisor("remainder", a, b)
    if a.dtype.is_floating_point:
        return Remainder.apply(a, b)
    with no_grad():
        if _narrow(a.dtype):
            return _in_int64(_Integerish.apply, a.dtype, a, b, KE.REMAINDER)
        return _Integerish.apply(a, b, KE.REMAINDER)


def floor_divide(a, b):
    """floor(a / b), rounding toward -inf as Python's // (and PyTorch's); no gradient (PyTorch
    has none either). Integer division by zero raises, as in PyTorch."""
    a, b = _integerish_operands(a, b)
    _check_integer_divisor("floor_divide", a, b)
    with no_grad():
        if _narrow(a.dtype):
            return _in_int64(_Integerish.apply, a.dtype, a, b, KE.FLOOR_DIVIDE)
        return _Integerish.apply(a, b, KE.FLOOR_DIVIDE)


def minimum(a, b):
    _need_tensors("minimum", a, b)
    out = _bool_as_int(minimum, a, b)
    return out if out is not None else _binary(Minimum, KE.MINIMUM, a, b)

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
    KE.COMPARE[a.dtype.typecode](op, *va, *vb, out._data, *shape4)
    return out


def eq(a, b):
    return _compare(KE.EQ, "eq", a, b)


def ne(a, b):
    return _compare(KE.NE, "ne", a, b)


def lt(a, b):
    return _compare(KE.LT, "lt", a, b)


def le(a, b):
    return _compare(KE.LE, "le", a, b)


def gt(a, b):
    return _compare(KE.GT, "gt", a, b)


def ge(a, b):
    return _compare(KE.GE, "ge", a, b)


_BITWISE = {"bitwise_and": 0, "bitwise_or": 1, "bitwise_xor": 2}


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
    kdt = _int64 if _narrow(dt) else dt      # uint8 / int32 bits in int64, wrapped back
    a = packed(expand(to_dtype(a, kdt), shape))
    b = packed(expand(to_dtype(b, kdt), shape))
    out = _empty(shape, kdt)
    KE.BITWISE[kdt.typecode](_BITWISE[name], a._data, b._data, out._data, out.numel())
    return to_dtype(out, dt)


def bitwise_and(a, b):
    return _bitwise("bitwise_and", a, b)


def bitwise_or(a, b):
    return _bitwise("bitwise_or", a, b)


def bitwise_xor(a, b):
    return _bitwise("bitwise_xor", a, b)


def bitwise_not(x):
    """~x: logical not of a bool tensor, -x - 1 of an integer one."""
    check_tensor("bitwise_not", x)
    if x.dtype is _bool:
        return logical_not(x)
    if x.dtype.is_floating_point:
        raise TypeError(f"bitwise_not: not defined for {x.dtype} tensors (integers and bools "
                        f"only)")
    return sub(neg(x), 1)


def logical_and(a, b):
    _need_tensors("logical_and", a, b)
    return _compare(KE.AND, "logical_and", a, b)


def logical_or(a, b):
    _need_tensors("logical_or", a, b)
    return _compare(KE.OR, "logical_or", a, b)


def logical_xor(a, b):
    _need_tensors("logical_xor", a, b)
    return _compare(KE.XOR, "logical_xor", a, b)


def logical_not(a):
    return _compare(KE.EQ, "logical_not", a, 0)


def isnan(x):
    check_tensor("isnan", x)
    return ne(x, x)


def isinf(x):
    check_tensor("isinf", x)
    return eq(abs(x), math.inf) if x.dtype.is_floating_point else zeros_like_bool(x)


def isfinite(x):
    check_tensor("isfinite", x)
    return logical_not(logical_or(isnan(x), isinf(x))) if x.dtype.is_floating_point \
        else logical_not(zeros_like_bool(x))


def zeros_like_bool(x):
    return _make(_dt.zeros_buffer(_bool, x.numel()), x.shape, _bool)

class Where(Function):
    """out = a where cond else b;  da = g where cond else 0,  db = g where not cond else 0."""

    @staticmethod
    def forward(ctx, cond, a, b):
        shape = _shapes.broadcast_shapes("where", cond.shape, a.shape, b.shape)
        out = _empty(shape, a.dtype)
        shape4, (vc, va, vb) = views4(shape, cond, a, b)
        KE.WHERE[a.dtype.typecode](*vc, *va, *vb, out._data, *shape4)
        return out

    @staticmethod
    def backward(ctx, g):
        cond, a, b = ctx.inputs
        zero = tensor_from_scalar(0, g.dtype)
        ga = sum_to(where(cond, g, zero), a.shape) if ctx.needs_input_grad[1] else None
        gb = sum_to(where(cond, zero, g), b.shape) if ctx.needs_input_grad[2] else None
        return None, ga, gb


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
    """x with `value` wherever mask is True (mask broadcasts to x.shape).

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
    if out.shape != x.shape:
        raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the input's shape {tuple(x.shape)}")
    return out
