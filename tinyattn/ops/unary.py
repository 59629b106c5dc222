"""Unary maps: y[i] = f(x[i]) for f in exp, log, sqrt, tanh, sigmoid, relu, gelu, sin, floor, ...

All of them are one Function, `Unary`, and one op code each:

    forward   y = f(x)
    backward  dx = g * f'(x)

f and f' sit side by side in kernels/elementwise.py (`_unary_value`, `_unary_derivative`): adding
an activation is one op code there and one line per formula. Integer and bool inputs of the float
functions (exp, tanh, ...) become float32 first, as in PyTorch. Also here: isnan / isinf /
isfinite, and `ZeroGradient` for piecewise-constant maps.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import math

from .. import backend
from .. import dtypes as _dt
from ..autograd import Function, UnaryFunction, is_grad_enabled, no_grad
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import check_tensor, packed, views4
from .compare import eq, gt, logical_not, logical_or, ne, where
from .convert import to_dtype

_float32, _int64, _bool = _dt.float32, _dt.int64, _dt.bool

# The op codes the kernels take: plain ints that both backends share (kernels/elementwise.py).
_k = backend.elementwise
NEG, ABS, EXP, LOG, SQRT, TANH = _k.NEG, _k.ABS, _k.EXP, _k.LOG, _k.SQRT, _k.TANH
SIGMOID, RELU, GELU, GELU_TANH = _k.SIGMOID, _k.RELU, _k.GELU, _k.GELU_TANH
CLAMP, POW, SIN, COS, FLOOR, CEIL = _k.CLAMP, _k.POW, _k.SIN, _k.COS, _k.FLOOR, _k.CEIL
TRUNC, ROUND, LOG1P, EXPM1, ERF, ATAN = _k.TRUNC, _k.ROUND, _k.LOG1P, _k.EXPM1, _k.ERF, _k.ATAN
del _k


def _in_int64(fn, dt, *xs):
    """fn(*xs) with uint8 / int32 tensors converted to int64, the result wrapped back to dt."""
    xs = [to_dtype(x, _int64) if isinstance(x, Tensor) and _dt.computes_in_int64(x.dtype) else x
          for x in xs]
    return to_dtype(fn(*xs), dt)


def _floating(op, x):
    """Ops like exp or tanh are defined on floats: integer and bool inputs become float32 first."""
    check_tensor(op, x)
    return x if x.dtype.is_floating_point else to_dtype(x, _float32)


class Unary(UnaryFunction):
    """y = f(x) elementwise for f in exp, log, sqrt, tanh, sigmoid, relu, gelu, abs, clamp, pow, ...

    dx = g * f'(x); f and f' sit side by side in kernels/elementwise.py."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, op, p1, p2):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            backend.elementwise.unary_packed(op, p1, p2, x._data, out._data, len(out._data))
        else:
            shape4, (vx,) = views4(x.shape, x)
            backend.elementwise.unary(op, p1, p2, *vx, out._data, *shape4)
        if ctx.needs_input_grad:  # building a graph: keep what backward needs
            ctx.op_name = _UNARY_NAMES[op]
            ctx.save_for_backward(x, out.detach())
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        _, op, p1, p2 = ctx.inputs
        if is_grad_enabled():    # create_graph=True: the formula as recorded ops on x's graph
            return _recorded_backward(ctx, ctx.inputs[0], g), None, None, None
        x, g = packed(x), packed(g)
        out = _empty(x.shape, x.dtype)
        backend.elementwise.unary_backward(op, p1, p2, g._data, x._data, y._data, out._data,
                                           len(out._data))
        return out, None, None, None


def _recorded_backward(ctx, x, g):
    """dx = g f'(x) written with recorded ops (Tensor methods), so that it can be differentiated
    again: the create_graph=True path. The kernel's formula is the fast path otherwise."""
    _, op, p1, _ = ctx.inputs
    if op == NEG:
        return -g
    if op == EXP:
        return g * x.exp()
    if op == LOG:
        return g / x
    if op == SQRT:
        return g * 0.5 / x.sqrt()
    if op == TANH:
        return g * (1.0 - x.tanh() ** 2)
    if op == SIGMOID:
        s = x.sigmoid()
        return g * s * (1.0 - s)
    if op == RELU:
        return g * (x > 0).to(g.dtype)
    if op == SIN:
        return g * x.cos()
    if op == COS:
        return -g * x.sin()
    if op == ABS:
        return g * x.sign()
    if op == POW:
        return g * 0.0 if p1 == 0.0 else g * p1 * x ** (p1 - 1)
    if op == GELU:               # Phi(x) + x phi(x), phi the standard normal density
        return g * (0.5 * (1.0 + (x * 0.7071067811865476).erf())
                    + x * 0.3989422804014327 * (x * x * -0.5).exp())
    if op == GELU_TANH:          # t = tanh(c (x + 0.044715 x^3))
        c = 0.7978845608028654
        t = ((x + x * x * x * 0.044715) * c).tanh()
        return g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * c * (x * x * 0.134145 + 1.0))
    if op == CLAMP:              # the gradient flows where x was inside [min, max]
        _, _, lo, hi = ctx.inputs
        return g * ((x >= lo) & (x <= hi)).to(g.dtype)
    if op == LOG1P:
        return g / (x + 1.0)
    if op == EXPM1:
        return g * x.exp()
    if op == ERF:                # 2 / sqrt(pi) e^(-x^2)
        return g * 1.1283791670955126 * (-(x * x)).exp()
    if op == ATAN:
        return g / (x * x + 1.0)
    return g * 0.0               # FLOOR, CEIL, TRUNC, ROUND: piecewise constant


# Under create_graph=True its backward is _recorded_backward: recorded ops, for the ops it writes.
Unary.differentiable_backward = True

_UNARY_NAMES = {NEG: "Neg", ABS: "Abs", EXP: "Exp", LOG: "Log", SQRT: "Sqrt", TANH: "Tanh",
                SIGMOID: "Sigmoid", RELU: "Relu", GELU: "Gelu", GELU_TANH: "Gelu",
                CLAMP: "Clamp", POW: "Pow", SIN: "Sin", COS: "Cos", FLOOR: "Floor",
                CEIL: "Ceil", TRUNC: "Trunc", ROUND: "Round", LOG1P: "Log1p", EXPM1: "Expm1",
                ERF: "Erf", ATAN: "Atan"}


def _unary(op, x, p1=0.0, p2=0.0, name=""):
    return Unary.apply(_floating(name, x), op, p1, p2)


def positive(x):
    """+x: the tensor itself (not a copy), as PyTorch returns it; a bool tensor raises."""
    check_tensor("positive", x)
    if x.dtype is _bool:
        raise RuntimeError("positive: the `+` operator, on a bool tensor is not supported")
    return x


def neg(x):
    check_tensor("neg", x)
    if x.dtype is _bool:
        raise TypeError("neg: negation of a bool tensor is not defined; use logical_not()")
    if x.dtype.in_int64:  # uint8: -x wraps (-3 -> 253), as PyTorch
        return _in_int64(neg, x.dtype, x)
    return Unary.apply(x, NEG, 0.0, 0.0)


def abs(x):  # noqa: A001 - PyTorch's name
    check_tensor("abs", x)
    if x.dtype.in_int64:
        return _in_int64(abs, x.dtype, x)
    return Unary.apply(x, ABS, 0.0, 0.0)


def exp(x):
    return _unary(EXP, x, name="exp")


def log(x):
    return _unary(LOG, x, name="log")


def sqrt(x):
    return _unary(SQRT, x, name="sqrt")


def rsqrt(x):
    return _unary(POW, x, -0.5, name="rsqrt")


def tanh(x):
    return _unary(TANH, x, name="tanh")


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow for any x."""
    return _unary(SIGMOID, x, name="sigmoid")


def relu(x):
    check_tensor("relu", x)
    if _dt.is_integer(x.dtype):      # integers stay integers, as in PyTorch
        return where(gt(x, 0), x, 0)
    return _unary(RELU, x, name="relu")


def gelu(x, approximate="none"):
    """x * Phi(x) (exact, erf-based, PyTorch's default) or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary(GELU if approximate == "none" else GELU_TANH, x, name="gelu")


def sin(x):
    return _unary(SIN, x, name="sin")


def cos(x):
    return _unary(COS, x, name="cos")


def log1p(x):
    """log(1 + x), exact for small x."""
    return _unary(LOG1P, x, name="log1p")


def expm1(x):
    """exp(x) - 1, exact for small x."""
    return _unary(EXPM1, x, name="expm1")


def erf(x):
    """The error function, 2/sqrt(pi) * integral of exp(-t^2) from 0 to x."""
    return _unary(ERF, x, name="erf")


def atan(x):
    """The arc tangent, in (-pi/2, pi/2);  dx = g / (1 + x^2)."""
    return _unary(ATAN, x, name="atan")


arctan = atan


def _rounding(op, name, x):
    check_tensor(name, x)
    if not x.dtype.is_floating_point:      # already whole numbers: a copy, as PyTorch
        return x.clone()
    return Unary.apply(x, op, 0.0, 0.0)


def floor(x):
    return _rounding(FLOOR, "floor", x)


def ceil(x):
    return _rounding(CEIL, "ceil", x)


def trunc(x):
    return _rounding(TRUNC, "trunc", x)


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


# dx = 0 is a constant: differentiable again, to 0.
ZeroGradient.differentiable_backward = True


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
