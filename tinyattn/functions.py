"""The differentiable op library: primitive Functions (forward + backward) and the ops built on them.

Primitives call kernels; everything else is composed from primitives, so its gradient comes for
free. Each primitive's docstring gives the forward formula and the derivative it implements.

    elementwise  Unary (exp, log, tanh, ... one class, the kernel holds f and f')
                 Add Sub Mul Div Pow Maximum Minimum, ScalarOp (x op c), Where
    reductions   Sum, MaxAlong (max/min over one dim), Amax (over dims, ties share the gradient)
    fused        Softmax / LogSoftmax, MatMul
    layout       View (reshape without copy), Permute, Expand, Slice, Copy (contiguous/clone), ToDtype
    gather       IndexRows (advanced indexing, embedding), Cat

Broadcasting: binary ops broadcast their inputs (NumPy rules). The gradient that flows back into a
broadcast input is summed over the broadcast dimensions (`sum_to`), because each input element was
used once per position it was broadcast to.

Chapters 1 and 2 of the tour (docs/01-autograd.md, docs/02-kernels.md) walk through this file.
"""
import builtins
import math
from array import array
from collections import namedtuple

from . import _shapes
from . import dtypes as _dt
from .autograd import BinaryFunction, Function, is_grad_enabled
from .kernels import elementwise as KE
from .kernels import index as KI
from .kernels import matmul as KM
from .kernels import reduce as KR
from .kernels import softmax as KS
from .kernels import threads as _threads
from .tensor import Tensor, _empty, _make, _strides_for

_float32, _float64, _int64, _bool = _dt.float32, _dt.float64, _dt.int64, _dt.bool


# ============================================================================ helpers


def _tensor_from_scalar(value, dtype):
    return _make(array(dtype.typecode, [value]), (), dtype)


def _packed(t):
    """t itself when its elements are _data[0:numel] in row-major order, else a packed copy."""
    return t if t._packed else _copy(t)


def _copy(t, dtype=None):
    """A packed copy of t (optionally converted to dtype), without graph."""
    dtype = dtype or t.dtype
    out = _empty(t.shape, dtype)
    _copy_into(t, out._data, 0, out._strides)
    return out


def _copy_into(src, dst_data, dst_off, dst_strides):
    """Copy the elements of view `src` into the view (dst_data, dst_off, dst_strides) of equal shape."""
    if src.dtype.typecode == dst_data.typecode:
        kern = KE.COPY_SAME[dst_data.typecode]
    elif src.dtype.is_floating_point and dst_data.typecode == "q":
        kern = KE.to_int
    else:
        kern = KE.copy
    shape4, (ss, ds) = _shapes.kernel_layout(src.shape, src._strides, dst_strides)
    if len(shape4) == 4:
        kern(src._data, src._offset, *ss, dst_data, dst_off, *ds, *shape4)
        return
    # More than 4 dims that cannot be merged: loop over the leading ones in Python.
    lead = shape4[:-4]
    for idx in _ndindex(lead):
        so = src._offset + builtins.sum(i * s for i, s in zip(idx, ss))
        do = dst_off + builtins.sum(i * s for i, s in zip(idx, ds))
        kern(src._data, so, *ss[-4:], dst_data, do, *ds[-4:], *shape4[-4:])


def _ndindex(shape):
    idx = [()]
    for n in shape:
        idx = [i + (k,) for i in idx for k in range(n)]
    return idx


def _layout4(shape, *tensors_strides):
    """Merge dims for a 4-d kernel; None when more than 4 dims remain (caller materialises)."""
    shape4, strides = _shapes.kernel_layout(shape, *tensors_strides)
    return (shape4, strides) if len(shape4) == 4 else (None, None)


def _expand_to(t, shape):
    """t broadcast to `shape` as a packed copy (the rare fallback for > 4 unmergeable dims)."""
    st = _shapes.broadcast_strides(t.shape, t._strides, shape)
    return _copy(_make(t._data, shape, t.dtype, st, t._offset, False))


def _check_tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")


def _floating(op, x):
    """Ops like exp or tanh are defined on floats: integer and bool inputs become float32 first."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.is_floating_point else to_dtype(x, _float32)


def sum_to(g, shape):
    """Sum g over the dimensions along which a tensor of `shape` was broadcast to g.shape."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    s = _sum(g, dims, keepdim=True) if dims else g
    return view(s, shape) if s.shape != shape else s


def sum_to_size(x, *shape):
    shape = _shape_arg(shape)
    return sum_to(x, shape)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


# ============================================================================ elementwise: unary


class Unary(Function):
    """y = f(x) elementwise for f in exp, log, sqrt, tanh, sigmoid, relu, gelu, abs, clamp, pow, ...

    dx = g * f'(x); f and f' sit side by side in kernels/elementwise.py (_unary_value/_derivative)."""

    @staticmethod
    def forward(ctx, x, op, p1, p2):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            KE.UNARY_PACKED[x.dtype.typecode](op, p1, p2, x._data, out._data, len(out._data))
        else:
            shape4, (xs,) = _shapes.kernel_layout(x.shape, x._strides)
            if len(shape4) != 4:
                x = _copy(x)
                shape4, xs = (1, 1, 1, x.numel()), (0, 0, 0, 1)
            KE.UNARY[x.dtype.typecode](op, p1, p2, x._data, x._offset, *xs, out._data, *shape4)
        if ctx.needs_input_grad:  # building a graph: keep what backward needs
            ctx.op_name = _UNARY_NAMES[op]
            ctx.save_for_backward(x, out.detach())
            ctx.params = (op, p1, p2)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        op, p1, p2 = ctx.params
        x, g = _packed(x), _packed(g)
        out = _empty(x.shape, x.dtype)
        KE.UNARY_BACKWARD[x.dtype.typecode](op, p1, p2, g._data, x._data, y._data, out._data,
                                            len(out._data))
        return out, None, None, None


_UNARY_NAMES = {KE.NEG: "Neg", KE.ABS: "Abs", KE.EXP: "Exp", KE.LOG: "Log", KE.SQRT: "Sqrt",
                KE.TANH: "Tanh", KE.SIGMOID: "Sigmoid", KE.RELU: "Relu", KE.GELU: "Gelu",
                KE.GELU_TANH: "Gelu", KE.CLAMP: "Clamp", KE.POW: "Pow", KE.SIN: "Sin", KE.COS: "Cos"}


def _unary(op, x, p1=0.0, p2=0.0, name=""):
    return Unary.apply(_floating(name, x), op, p1, p2)


def neg(x):
    _check_tensor("neg", x)
    if x.dtype is _bool:
        raise TypeError("neg: negation of a bool tensor is not defined; use logical_not()")
    return Unary.apply(x, KE.NEG, 0.0, 0.0)


def abs(x):  # noqa: A001 - PyTorch's name
    _check_tensor("abs", x)
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
    return _unary(KE.RELU, x, name="relu")


def gelu(x, approximate="none"):
    """x * Phi(x) (exact, erf-based, PyTorch's default) or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary(KE.GELU if approximate == "none" else KE.GELU_TANH, x, name="gelu")


def sin(x):
    return _unary(KE.SIN, x, name="sin")


def cos(x):
    return _unary(KE.COS, x, name="cos")


def square(x):
    return mul(x, x)


def reciprocal(x):
    return rdiv(x, 1.0)


def clamp(x, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    """Limit x to [min, max]; the gradient flows only where min <= x <= max."""
    _check_tensor("clamp", x)
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    if not x.dtype.is_floating_point:
        return to_dtype(Unary.apply(to_dtype(x, _float64), KE.CLAMP, lo, hi), x.dtype)
    return Unary.apply(x, KE.CLAMP, lo, hi)


clip = clamp


def sign(x):
    _check_tensor("sign", x)
    return sub(to_dtype(gt(x, 0), x.dtype), to_dtype(lt(x, 0), x.dtype))


# ============================================================================ elementwise: binary


def _binary_forward(op, a, b):
    """out = a (op) b, broadcasting; a and b already have the same dtype."""
    if a.shape == b.shape and a._packed and b._packed:
        out = _empty(a.shape, a.dtype)
        KE.BINARY_PACKED[a.dtype.typecode](op, a._data, b._data, out._data, len(out._data))
        return out
    shape = _shapes.broadcast_shapes(_BINARY_NAMES[op], a.shape, b.shape)
    out = _empty(shape, a.dtype)
    _run_binary(KE.BINARY, op, a, b, shape, out._data)
    return out


def add_into(acc, g):
    """acc += g in place, for the autograd engine's own gradient sums: acc packed, g of the same
    shape and dtype (any layout). Not an op: no graph, no checks."""
    if g._packed:  # acc[i] += 1.0 * g[i] (exact): two buffers, so the loop vectorises, which
        # binary_packed(ADD, acc, g, out=acc) would not (its output overlaps an input)
        KE.AXPY[acc.dtype.typecode](1.0, g._data, acc._data, len(acc._data))
    else:
        _run_binary(KE.BINARY, KE.ADD, acc, g, acc.shape, acc._data)


def _run_binary(kernels, op, a, b, shape, out_data):
    """kernels[typecode] (BINARY or COMPARE) on a and b broadcast to `shape`, into out_data."""
    sa = _shapes.broadcast_strides(a.shape, a._strides, shape)
    sb = _shapes.broadcast_strides(b.shape, b._strides, shape)
    shape4, st = _layout4(shape, sa, sb)
    if shape4 is None:
        a, b = _expand_to(a, shape), _expand_to(b, shape)
        shape4, st = (1, 1, 1, a.numel()), [(0, 0, 0, 1), (0, 0, 0, 1)]
    kernels[a.dtype.typecode](op, a._data, a._offset, *st[0], b._data, b._offset, *st[1],
                              out_data, *shape4)


_BINARY_NAMES = {KE.ADD: "add", KE.SUB: "sub", KE.MUL: "mul", KE.DIV: "div", KE.POW2: "pow",
                 KE.MAXIMUM: "maximum", KE.MINIMUM: "minimum", KE.REMAINDER: "remainder",
                 KE.FLOOR_DIVIDE: "floor_divide"}


class Add(BinaryFunction):
    """out = a + b;  da = g,  db = g  (each summed back to its input's shape)."""

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


class ScalarOp(Function):
    """out = x (op) c or c (op) x for a Python number c: no 1-element buffer, no broadcasting.

    add/sub: dx = +-g;  mul: dx = g c;  x / c: dx = g / c;  c / x: dx = -g out / x;
    c ** x: dx = g out log(c)."""

    @staticmethod
    def forward(ctx, x, op, c, reverse):
        out = _empty(x.shape, x.dtype)
        if x._packed:
            KE.BINARY_SCALAR_PACKED[x.dtype.typecode](op, x._data, c, reverse, out._data,
                                                      len(out._data))
        else:
            shape4, st = _layout4(x.shape, x._strides)
            if shape4 is None:
                x = _copy(x)
                shape4, st = (1, 1, 1, x.numel()), [(0, 0, 0, 1)]
            KE.BINARY_SCALAR[x.dtype.typecode](op, x._data, x._offset, *st[0], c, reverse,
                                               out._data, *shape4)
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
    return ScalarOp.apply(x, op, c, reverse)


def _binary(cls, op, a, b):
    """Dispatch a (op) b for tensors and Python numbers, promoting dtypes as PyTorch does."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            if a.dtype is not b.dtype:
                dt = _dt.promote_types(a.dtype, b.dtype)
                a, b = to_dtype(a, dt), to_dtype(b, dt)
            if a.dtype is _bool:  # PyTorch: bool + bool is `or`, bool * bool is `and`
                if op == KE.ADD:
                    return logical_or(a, b)
                if op == KE.MUL:
                    return logical_and(a, b)
                if op == KE.SUB:
                    raise TypeError("sub: subtracting two bool tensors is not supported; use "
                                    "logical_xor() or convert with .long() first")
                a, b = to_dtype(a, _int64), to_dtype(b, _int64)
            if op == KE.DIV and not a.dtype.is_floating_point:
                a, b = to_dtype(a, _float32), to_dtype(b, _float32)
            return cls.apply(a, b)
        if isinstance(b, (int, float)):
            if op == KE.DIV and not a.dtype.is_floating_point:
                a = to_dtype(a, _float32)
            if a.dtype is _bool:
                a = to_dtype(a, _int64 if isinstance(b, int) else _float32)
            return _scalar_op(op, a, b)
        raise TypeError(f"{_BINARY_NAMES[op]}: unsupported operand type {type(b).__name__}")
    if isinstance(b, Tensor) and isinstance(a, (int, float)):
        if op in (KE.ADD, KE.MUL, KE.MAXIMUM, KE.MINIMUM):
            return _binary(cls, op, b, a)
        if (op == KE.DIV or op == KE.POW2) and not b.dtype.is_floating_point:
            b = to_dtype(b, _float32)
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
    """b - a (the reflected subtraction: `2 - x`)."""
    return _binary(Sub, KE.SUB, b, a)


def mul(a, b):
    return _binary(Mul, KE.MUL, a, b)


def div(a, b):
    return _binary(Div, KE.DIV, a, b)


def rdiv(a, b):
    """b / a (the reflected division: `1 / x`)."""
    return _binary(Div, KE.DIV, b, a)


def pow(a, b):  # noqa: A001 - PyTorch's name
    if isinstance(a, Tensor) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return mul(a, a)
        if a.dtype.is_floating_point:
            return Unary.apply(a, KE.POW, float(b), 0.0)
    return _binary(Pow, KE.POW2, a, b)


def rpow(a, b):
    """b ** a (the reflected power: `2 ** x`)."""
    return _binary(Pow, KE.POW2, b, a)


def maximum(a, b):
    return _binary(Maximum, KE.MAXIMUM, a, b)


class _Integerish(Function):
    """remainder and floor_divide: piecewise constant or integer-valued, so no gradient flows."""

    @staticmethod
    def forward(ctx, a, b, op):
        if isinstance(b, Tensor):
            return _binary_forward(op, a, b)
        return ScalarOp.forward(ctx, a, op, b, False)


def _no_grad_binary(op, a, b):
    if not isinstance(a, Tensor):
        a = _tensor_from_scalar(a, _dt.scalar_result_type(b.dtype, a))
    if isinstance(b, Tensor) and a.dtype is not b.dtype:
        dt = _dt.promote_types(a.dtype, b.dtype)
        a, b = to_dtype(a, dt), to_dtype(b, dt)
    elif not isinstance(b, Tensor):
        dt = _dt.scalar_result_type(a.dtype, b)
        a = to_dtype(a, dt)
        b = float(b) if dt.is_floating_point else int(b)
    if a.dtype is _bool:
        a = to_dtype(a, _int64)
        b = to_dtype(b, _int64) if isinstance(b, Tensor) else b
    with _no_graph():
        return _Integerish.apply(a, b, op)


def remainder(a, b):
    """a - floor(a / b) * b: the result takes the sign of b, as Python's % (and PyTorch's)."""
    return _no_grad_binary(KE.REMAINDER, a, b)


def floor_divide(a, b):
    """floor(a / b), rounding toward -inf as Python's // (and PyTorch's)."""
    return _no_grad_binary(KE.FLOOR_DIVIDE, a, b)


def minimum(a, b):
    return _binary(Minimum, KE.MINIMUM, a, b)


# ============================================================================ comparisons and logic


def _compare(op, name, a, b):
    if not isinstance(a, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(a).__name__}")
    if not isinstance(b, Tensor):
        if not isinstance(b, (int, float, bool)):
            return NotImplemented
        b = _tensor_from_scalar(b, a.dtype if a.dtype is not _bool or isinstance(b, bool)
                                else _int64)
    if a.dtype is not b.dtype:
        dt = _dt.promote_types(a.dtype, b.dtype)
        a, b = to_dtype(a, dt), to_dtype(b, dt)
    shape = _shapes.broadcast_shapes(name, a.shape, b.shape)
    out = _empty(shape, _bool)
    _run_binary(KE.COMPARE, op, a, b, shape, out._data)
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


def logical_and(a, b):
    return _compare(KE.AND, "logical_and", a, b)


def logical_or(a, b):
    return _compare(KE.OR, "logical_or", a, b)


def logical_xor(a, b):
    return _compare(KE.XOR, "logical_xor", a, b)


def logical_not(a):
    return _compare(KE.EQ, "logical_not", a, 0)


def isnan(x):
    return ne(x, x)


def isinf(x):
    return eq(abs(x), math.inf) if x.dtype.is_floating_point else zeros_like_bool(x)


def isfinite(x):
    return logical_not(logical_or(isnan(x), isinf(x))) if x.dtype.is_floating_point \
        else logical_not(zeros_like_bool(x))


def zeros_like_bool(x):
    return _make(_dt.zeros_buffer(_bool, x.numel()), x.shape, _bool)


# ============================================================================ where / masked_fill


class Where(Function):
    """out = a where cond else b;  da = g where cond else 0,  db = g where not cond else 0."""

    @staticmethod
    def forward(ctx, cond, a, b):
        shape = _shapes.broadcast_shapes("where", cond.shape, a.shape, b.shape)
        out = _empty(shape, a.dtype)
        sc = _shapes.broadcast_strides(cond.shape, cond._strides, shape)
        sa = _shapes.broadcast_strides(a.shape, a._strides, shape)
        sb = _shapes.broadcast_strides(b.shape, b._strides, shape)
        shape4, st = _layout4(shape, sc, sa, sb)
        if shape4 is None:
            cond, a, b = (_expand_to(t, shape) for t in (cond, a, b))
            shape4, st = (1, 1, 1, out.numel()), [(0, 0, 0, 1)] * 3
        KE.WHERE[a.dtype.typecode](cond._data, cond._offset, *st[0], a._data, a._offset,
                                   *st[1], b._data, b._offset, *st[2], out._data, *shape4)
        return out

    @staticmethod
    def backward(ctx, g):
        cond, a, b = ctx.inputs
        zero = _tensor_from_scalar(0, g.dtype)
        ga = sum_to(where(cond, g, zero), a.shape) if ctx.needs_input_grad[1] else None
        gb = sum_to(where(cond, zero, g), b.shape) if ctx.needs_input_grad[2] else None
        return None, ga, gb


def where(condition, input, other):  # noqa: A002 - PyTorch's argument names
    """Elementwise `input if condition else other`; either value may be a Python number."""
    if not isinstance(condition, Tensor) or condition.dtype is not _bool:
        raise TypeError("where: condition must be a bool tensor"
                        + (f", got {condition.dtype}" if isinstance(condition, Tensor) else ""))
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(ref, Tensor):
        dt = _float32 if builtins.any(isinstance(v, float) for v in (input, other)) else _int64
        input, other = _tensor_from_scalar(input, dt), _tensor_from_scalar(other, dt)
    if not isinstance(input, Tensor):
        input = _tensor_from_scalar(input, _dt.scalar_result_type(other.dtype, input))
    if not isinstance(other, Tensor):
        other = _tensor_from_scalar(other, _dt.scalar_result_type(input.dtype, other))
    if input.dtype is not other.dtype:
        dt = _dt.promote_types(input.dtype, other.dtype)
        input, other = to_dtype(input, dt), to_dtype(other, dt)
    return Where.apply(condition, input, other)


def masked_fill(x, mask, value):
    """x with `value` wherever mask is True (mask broadcasts to x.shape)."""
    _check_tensor("masked_fill", x)
    if not isinstance(mask, Tensor) or mask.dtype is not _bool:
        raise TypeError("masked_fill: mask must be a bool tensor")
    _shapes.broadcast_shapes("masked_fill", x.shape, mask.shape)
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"masked_fill: value must be a number or a 1-element tensor, got "
                             f"shape {tuple(value.shape)}")
        value = value.item()
    out = where(mask, _tensor_from_scalar(value, x.dtype), x)
    if out.shape != x.shape:
        raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the input's shape {tuple(x.shape)}")
    return out


# ============================================================================ reductions


def _runs(dims):
    """Group sorted dims into runs of adjacent dims: (0, 1, 3) -> [(0, 2), (3, 4)]."""
    runs = []
    for d in dims:
        if runs and runs[-1][1] == d:
            runs[-1][1] = d + 1
        else:
            runs.append([d, d + 1])
    return runs


def _reduce_runs(x, dims, kernel_call):
    """Apply an (O, R, I) reduction kernel to each run of adjacent dims, last run first.
    Returns a packed tensor with the reduced dims kept as size 1."""
    x = _packed(x)
    shape = list(x.shape)
    for start, stop in reversed(_runs(dims)):
        O = _shapes.numel(shape[:start])
        R = _shapes.numel(shape[start:stop])
        I = _shapes.numel(shape[stop:])
        shape[start:stop] = [1] * (stop - start)
        x = kernel_call(x, O, R, I, tuple(shape))
    return x


def _sum_kernel(x, O, R, I, shape):
    out = _empty(shape, x.dtype)
    if R == 0:
        return out
    if not x.dtype.is_floating_point:
        # The kernel accumulates in float64; interpreted (NUMBA_DISABLE_JIT=1) Python cannot store
        # that float into an int64 buffer, so integers are summed into float64 and converted back
        # (exact below 2**53).
        acc = _empty(shape, _float64)
        KR.sum_ori(x._data, acc._data, O, R, I)
        return _copy(acc, x.dtype)
    KR.sum_ori(x._data, out._data, O, R, I)
    return out


def _sum(x, dims, keepdim):
    """Raw sum over sorted `dims` (no graph)."""
    out = _reduce_runs(x, dims, _sum_kernel)
    if not keepdim:
        out = _make(out._data, tuple(n for i, n in enumerate(out.shape) if i not in dims), out.dtype)
    return out


class Sum(Function):
    """out = sum of x over `dims`;  dx = g broadcast back over the summed dims (a stride-0 view)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        return _sum(x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        x, dims, keepdim = ctx.inputs
        if not keepdim:
            g = view(g, tuple(1 if i in dims else n for i, n in enumerate(x.shape)))
        return expand(g, x.shape), None, None


def sum(x, dim=None, keepdim=False, dtype=None):  # noqa: A001 - PyTorch's name
    _check_tensor("sum", x)
    dims = _shapes.normalize_dims("sum", dim, x.ndim)
    if dtype is not None:
        x = to_dtype(x, _dt.get(dtype))
    elif not x.dtype.is_floating_point:
        x = to_dtype(x, _int64)  # bool and int sums count in int64, as in PyTorch
    return Sum.apply(x, dims, keepdim)


def mean(x, dim=None, keepdim=False):
    _check_tensor("mean", x)
    if not x.dtype.is_floating_point:
        raise TypeError(f"mean: expected a floating-point tensor, got {x.dtype} "
                        f"(use .float() first, as in PyTorch)")
    dims = _shapes.normalize_dims("mean", dim, x.ndim)
    n = _shapes.numel(x.shape[d] for d in dims)
    s = Sum.apply(x, dims, keepdim)
    return mul(s, 1.0 / n) if n else mul(s, math.nan)


def var(x, dim=None, unbiased=None, keepdim=False, correction=None):
    """Variance over dim; `correction` = 1 (default, Bessel) divides by n - 1, 0 by n."""
    _check_tensor("var", x)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _shapes.normalize_dims("var", dim, x.ndim)
    n = _shapes.numel(x.shape[d] for d in dims)
    centered = sub(x, mean(x, dims, keepdim=True))
    s = sum(mul(centered, centered), dims, keepdim)
    denom = n - correction
    return mul(s, 1.0 / denom) if denom > 0 else mul(s, math.nan)


def std(x, dim=None, unbiased=None, keepdim=False, correction=None):
    return sqrt(var(x, dim, unbiased, keepdim, correction))


def norm(x, p=2, dim=None, keepdim=False):
    """The p-norm (p = 1, 2 or inf) over dim (all elements by default)."""
    if p == 2 or p == "fro":
        return sqrt(sum(mul(x, x), dim, keepdim))
    if p == 1:
        return sum(abs(x), dim, keepdim)
    if p == math.inf:
        return amax(abs(x), dim if dim is not None else (), keepdim)
    raise ValueError(f"norm: p must be 1, 2 or inf, got {p!r}")


def _max_kernel(x, O, R, I, shape, want_min):
    if R == 0:
        raise IndexError(f"{'min' if want_min else 'max'}: cannot reduce over a dimension of size 0")
    values = _empty(shape, x.dtype)
    indices = _empty(shape, _int64)
    KR.max_ori(x._data, values._data, indices._data, O, R, I, want_min)
    return values, indices


class MaxAlong(Function):
    """(values, indices) of max (or min) over one dim; dx = g scattered to the chosen positions."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, want_min, indices_out):
        xp = _packed(x)
        shape = list(x.shape)
        O, R, I = _shapes.numel(shape[:dim]), shape[dim], _shapes.numel(shape[dim + 1:])
        shape[dim] = 1
        values, indices = _max_kernel(xp, O, R, I, tuple(shape), want_min)
        if not keepdim:
            shape.pop(dim)
            values = _make(values._data, tuple(shape), values.dtype)
            indices = _make(indices._data, tuple(shape), _int64)
        indices_out.append(indices)
        ctx.op_name = "Min" if want_min else "Max"
        ctx.saved = (indices, O, R, I)
        return values

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        indices, O, R, I = ctx.saved
        out = _make(_dt.zeros_buffer(g.dtype, x.numel()), x.shape, g.dtype)
        KR.scatter_ori(_packed(g)._data, indices._data, out._data, O, R, I)
        return out, None, None, None, None


class Amax(Function):
    """max over `dims`; the gradient is shared equally among tied maxima (as torch.amax)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, want_min):
        ctx.op_name = "Amin" if want_min else "Amax"
        out = _reduce_runs(x, dims, lambda t, O, R, I, s: _max_kernel(t, O, R, I, s, want_min)[0])
        ctx.save_for_backward(x, out.detach())
        if not keepdim:
            out = _make(out._data, tuple(n for i, n in enumerate(out.shape) if i not in dims),
                        out.dtype)
        return out

    @staticmethod
    def backward(ctx, g):
        x, m = ctx.saved_tensors
        _, dims, keepdim, _ = ctx.inputs
        if not keepdim:
            g = view(g, m.shape)
        hit = to_dtype(eq(x, m), g.dtype)
        return mul(hit, div(g, _sum(hit, dims, keepdim=True))), None, None, None


MaxResult = namedtuple("max", ["values", "indices"])


def _max_or_min(x, dim, keepdim, other, want_min):
    name = "min" if want_min else "max"
    if isinstance(dim, Tensor) or other is not None:  # torch.max(a, b) is maximum
        other = dim if other is None else other
        return minimum(x, other) if want_min else maximum(x, other)
    _check_tensor(name, x)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{name}: cannot reduce an empty tensor with no dim given")
        return Amax.apply(x, tuple(range(x.ndim)), False, want_min)
    d = _shapes.normalize_dim(name, dim, x.ndim)
    if x.ndim == 0:
        return MaxResult(x, _tensor_from_scalar(0, _int64))
    holder = []
    values = MaxAlong.apply(x, d, keepdim, want_min, holder)
    return MaxResult(values, holder[0])


def max(x, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """max() -> the largest element; max(dim) -> (values, indices); max(other) -> maximum."""
    return _max_or_min(x, dim, keepdim, other, False)


def min(x, dim=None, keepdim=False, *, other=None):  # noqa: A001
    return _max_or_min(x, dim, keepdim, other, True)


def amax(x, dim=(), keepdim=False):
    dims = _shapes.normalize_dims("amax", None if dim == () else dim, x.ndim)
    return Amax.apply(x, dims, keepdim, False)


def amin(x, dim=(), keepdim=False):
    dims = _shapes.normalize_dims("amin", None if dim == () else dim, x.ndim)
    return Amax.apply(x, dims, keepdim, True)


def _arg(x, dim, keepdim, want_min, name):
    _check_tensor(name, x)
    if dim is None:
        x, dim = reshape(x, (-1,)), 0
        keepdim = False
    d = _shapes.normalize_dim(name, dim, x.ndim)
    holder = []
    with _no_graph():
        MaxAlong.apply(x, d, keepdim, want_min, holder)
    return holder[0]


def argmax(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, False, "argmax")


def argmin(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, True, "argmin")


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over dim, computed as m + log(sum(exp(x - m))) to avoid overflow."""
    dims = _shapes.normalize_dims("logsumexp", dim, x.ndim)
    m = detach(amax(x, dims, keepdim=True))
    m = where(isfinite(m), m, 0.0)
    out = add(log(sum(exp(sub(x, m)), dims, keepdim=True)), m)
    if not keepdim:
        out = view(out, tuple(n for i, n in enumerate(out.shape) if i not in dims))
    return out


def all(x, dim=None, keepdim=False):  # noqa: A001
    return eq(sum(ne(x, 0), dim, keepdim),
              _shapes.numel(x.shape[d] for d in _shapes.normalize_dims("all", dim, x.ndim)))


def any(x, dim=None, keepdim=False):  # noqa: A001
    return gt(sum(ne(x, 0), dim, keepdim), 0)


def prod(x, dim=None, keepdim=False):
    raise NotImplementedError("prod is not implemented in tinyattn")


# ============================================================================ softmax


class Softmax(Function):
    """y = softmax(x) along dim (or log_softmax when `log`); fused, stable (max subtracted).

    softmax dx = y * (g - sum(g * y));  log_softmax dx = g - exp(y) * sum(g)."""

    @staticmethod
    def forward(ctx, x, dim, log):
        if not x._packed:
            x = _copy(x)
        shape = x.shape
        R = shape[dim]
        out = _empty(shape, x.dtype)
        if dim == len(shape) - 1:  # the last dim: rows of R numbers (the common case)
            O, I = (len(out._data) // R if R else 0), 1
        else:
            O, I = _shapes.numel(shape[:dim]), _shapes.numel(shape[dim + 1:])
        tc = x.dtype.typecode
        if I == 1 and len(out._data) < SOFTMAX_PARALLEL_MIN:  # small rows: one kernel call
            KS.ROWS_FORWARD[tc](x._data, out._data, R, 0, O, log, tc == "f")
        else:
            _run_softmax(KS.ROWS_FORWARD, KS.FORWARD, tc, x._data, out._data, None, O, R, I, log)
        if ctx.needs_input_grad:
            ctx.op_name = "LogSoftmax" if log else "Softmax"
            ctx.save_for_backward(out.detach())
            ctx.layout = (O, R, I)
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        O, R, I = ctx.layout
        out = _empty(y.shape, y.dtype)
        _run_softmax(KS.ROWS_BACKWARD, KS.BACKWARD, y.dtype.typecode, _packed(g)._data, y._data,
                     out._data, O, R, I, ctx.inputs[2])
        return out, None, None


# Softmax over the last dim of at least this many elements is split between the cores by rows:
# handing half the rows to the other core costs ~20 us, a 32k-element softmax takes ~40 us.
SOFTMAX_PARALLEL_MIN = 1 << 15


def _run_softmax(rows_kernels, kernels, typecode, b1, b2, b3, O, R, I, log):
    """Run a softmax kernel on buffers (x, out) (forward) or (g, y, out) (backward, b3 given)."""
    buffers = (b1, b2) if b3 is None else (b1, b2, b3)
    if I != 1:
        kernels[typecode](*buffers, O, R, I, log)
    elif O * R < SOFTMAX_PARALLEL_MIN or _threads.num_threads() == 1:
        rows_kernels[typecode](*buffers, R, 0, O, log, typecode == "f")
    else:
        kern = rows_kernels[typecode]
        single = typecode == "f"
        _threads.parallel_for(lambda n0, n1: kern(*buffers, R, n0, n1, log, single), O,
                              min_chunk=-(-SOFTMAX_PARALLEL_MIN // (2 * R)))


def softmax(x, dim, dtype=None):
    """exp(x_i) / sum_j exp(x_j) along dim. A row that is entirely -inf gives zeros (PyTorch: NaN)."""
    x = _floating("softmax", x if dtype is None else to_dtype(x, _dt.get(dtype)))
    return Softmax.apply(x, _shapes.normalize_dim("softmax", dim, len(x.shape)), False)


def log_softmax(x, dim, dtype=None):
    """x_i - log(sum_j exp(x_j)) along dim, without overflow for any logits."""
    x = _floating("log_softmax", x if dtype is None else to_dtype(x, _dt.get(dtype)))
    return Softmax.apply(x, _shapes.normalize_dim("log_softmax", dim, len(x.shape)), True)


# ============================================================================ matmul


def _batch_layout(bshape, a, b):
    """Strides of a and b over the broadcast batch dims `bshape`, merged to exactly two dims."""
    sa = _shapes.broadcast_strides(a.shape[:-2], a._strides[:-2], bshape)
    sb = _shapes.broadcast_strides(b.shape[:-2], b._strides[:-2], bshape)
    shape, (sa, sb) = _shapes.kernel_layout(bshape, sa, sb)
    if len(shape) > 4 or shape[0] != 1 or shape[1] != 1:
        return None
    return shape[2:], sa[2:], sb[2:]


class MatMul(BinaryFunction):
    """out = a @ b over the last two dims, batch dims broadcast:  (..., M, K) @ (..., K, N).

    da = g @ b^T,  db = a^T @ g  (summed over broadcast batch dims). Transposes are views: the
    kernel reads them through strides, nothing is copied."""

    @staticmethod
    def forward(ctx, a, b):
        sa, sb = a.shape, b.shape
        M, K = sa[-2], sa[-1]
        N = sb[-1]
        # The common layouts go straight to the kernel (this op runs hundreds of times per step):
        if len(sb) == 2 and (len(sa) == 2 or a._packed):
            # x @ W (also a batch (..., M, K) @ (K, N) of packed x): one (rows, K) @ (K, N)
            # product, so that W is packed once for all the rows, not once per batch entry.
            out = _empty(sa[:-1] + (N,), a.dtype)
            KM.bmm(a._data, a._offset, 0, 0, a._strides[-2], a._strides[-1],
                   b._data, b._offset, 0, 0, b._strides[0], b._strides[1],
                   out._data, 1, 1, len(out._data) // N if N else 0, N, K)
            return out
        if len(sa) == len(sb) and 3 <= len(sa) <= 4 and sa[:-2] == sb[:-2]:
            # (B, M, K) @ (B, K, N) or (B, H, M, K) @ (B, H, K, N): attention's batched products;
            # the kernel walks two batch dims with any strides (head-split and transposed views).
            nb0, nb1 = (1, sa[0]) if len(sa) == 3 else sa[:2]
            a0, a1 = (0, a._strides[0]) if len(sa) == 3 else a._strides[:2]
            b0, b1 = (0, b._strides[0]) if len(sa) == 3 else b._strides[:2]
            out = _empty(sa[:-2] + (M, N), a.dtype)
            KM.bmm(a._data, a._offset, a0, a1, a._strides[-2], a._strides[-1],
                   b._data, b._offset, b0, b1, b._strides[-2], b._strides[-1],
                   out._data, nb0, nb1, M, N, K)
            return out
        bshape = _shapes.broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
        out = _empty(bshape + (M, N), a.dtype)
        lay = _batch_layout(bshape, a, b)
        if lay is None:  # batch dims that do not merge into two: materialise the broadcast
            a = _expand_to(a, bshape + (M, K))
            b = _expand_to(b, bshape + (K, N))
            lay = _batch_layout(bshape, a, b)
        (nb0, nb1), (a0, a1), (b0, b1) = lay
        KM.bmm(a._data, a._offset, a0, a1, a._strides[-2], a._strides[-1],
               b._data, b._offset, b0, b1, b._strides[-2], b._strides[-1],
               out._data, nb0, nb1, M, N, K)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na:
            ga = sum_to(matmul(g, transpose(b, -1, -2)), a.shape)
        if nb:
            if b.ndim == 2 and a.ndim > 2:  # x @ W with a batched x: fold the batch into M
                a2 = reshape(a, (-1, a.shape[-1]))
                gb = matmul(transpose(a2, 0, 1), reshape(g, (-1, g.shape[-1])))
            else:
                gb = sum_to(matmul(transpose(a, -1, -2), g), b.shape)
        return ga, gb


def _matmul_raw(a, b):
    """a @ b for 2-D a and b of one float dtype, no graph and no checks: the product inside
    fused primitives (nn.functional's linear)."""
    return MatMul.forward(None, a, b)


def _transposed(t):
    """The (n, m) transposed view of a 2-D tensor t (m, n), without graph."""
    return _make(t._data, (t.shape[1], t.shape[0]), t.dtype, (t._strides[1], t._strides[0]),
                 t._offset, False)


def matmul(a, b):
    """Matrix product with torch.matmul's rules: 1-D @ 1-D is a dot product, a 1-D operand is
    treated as a row (left) or column (right) vector and that dim removed from the result, and
    N-D operands are batches of matrices with broadcast batch dims."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected two Tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    sa, sb = a.shape, b.shape
    if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and a.dtype is b.dtype \
            and a.dtype.is_floating_point:
        return MatMul.apply(a, b)  # the common case, every check below passed
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    ka = a.shape[-1]
    kb = b.shape[0] if nb == 1 else b.shape[-2]
    if ka != kb:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned "
                         f"({ka} != {kb})")
    if a.dtype is not b.dtype:
        raise TypeError(f"matmul: both operands must have the same dtype, got {a.dtype} and "
                        f"{b.dtype}")
    if not a.dtype.is_floating_point:
        raise TypeError(f"matmul: expected floating-point tensors, got {a.dtype} "
                        f"(tinyattn multiplies float32 and float64 matrices)")
    if na >= 2 and nb >= 2:
        if (na > 2 or nb > 2) and a.shape[:-2] != b.shape[:-2] and nb != 2:
            try:
                _shapes.broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} have "
                                 f"batch dims {tuple(a.shape[:-2])} and {tuple(b.shape[:-2])} "
                                 f"that cannot be broadcast together") from None
        return MatMul.apply(a, b)
    a2 = unsqueeze(a, 0) if na == 1 else a
    b2 = unsqueeze(b, -1) if nb == 1 else b
    out = MatMul.apply(a2, b2)
    if nb == 1:
        out = squeeze(out, -1)
    if na == 1:
        out = squeeze(out, -2 if nb > 1 else -1)
    return out


def mm(a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: expected 2-D tensors, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return matmul(a, b)


def bmm(a, b):
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: expected 3-D tensors with the same batch size, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


# ============================================================================ layout: views


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


class View(Function):
    """The same elements in another shape, sharing the buffer;  dx = g reshaped back."""

    @staticmethod
    def forward(ctx, x, shape, strides):
        return _make(x._data, shape, x.dtype, strides, x._offset)

    @staticmethod
    def backward(ctx, g):
        return reshape(g, ctx.inputs[0].shape), None, None


def view(x, *shape):
    shape = _infer_shape("view", _shape_arg(shape), x.numel())
    if shape == x.shape:
        return x
    strides = _view_strides(x.shape, x._strides, shape)
    if strides is None:
        raise RuntimeError(f"view: size {shape} is not compatible with the input's shape "
                           f"{tuple(x.shape)} and strides {x._strides} (a view cannot copy); use "
                           f".reshape(...) instead")
    return View.apply(x, shape, strides)


def reshape(x, *shape):
    """view() when the layout allows it, else a contiguous copy reshaped."""
    _check_tensor("reshape", x)
    shape = _infer_shape("reshape", _shape_arg(shape), x.numel())
    if shape == x.shape:
        return x
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
    if x.ndim == 0:
        return reshape(x, (1,))
    s = _shapes.normalize_dim("flatten", start_dim, x.ndim)
    e = _shapes.normalize_dim("flatten", end_dim, x.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(x, x.shape[:s] + (_shapes.numel(x.shape[s:e + 1]),) + x.shape[e + 1:])


def unflatten(x, dim, sizes):
    d = _shapes.normalize_dim("unflatten", dim, x.ndim)
    sizes = _infer_shape("unflatten", tuple(sizes), x.shape[d])
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(x, dim):
    d = _shapes.normalize_dim("unsqueeze", dim, x.ndim + 1)
    st = x._strides[d] * x.shape[d] if d < x.ndim else 1
    return View.apply(x, x.shape[:d] + (1,) + x.shape[d:], x._strides[:d] + (st,) + x._strides[d:])


def squeeze(x, dim=None):
    if dim is None:
        dims = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        dims = [d for d in _shapes.normalize_dims("squeeze", dim, x.ndim) if x.shape[d] == 1]
    if not dims:
        return x
    keep = [i for i in range(x.ndim) if i not in dims]
    return View.apply(x, tuple(x.shape[i] for i in keep), tuple(x._strides[i] for i in keep))


class Permute(Function):
    """The dims reordered (a view);  dx = g with the inverse permutation."""

    @staticmethod
    def forward(ctx, x, dims):
        return _make(x._data, tuple(x.shape[d] for d in dims), x.dtype,
                     tuple(x._strides[d] for d in dims), x._offset)

    @staticmethod
    def backward(ctx, g):
        dims = ctx.inputs[1]
        inverse = [0] * len(dims)
        for i, d in enumerate(dims):
            inverse[d] = i
        return permute(g, *inverse), None


def permute(x, *dims):
    dims = _shape_arg(dims)
    if len(dims) != x.ndim or sorted(_shapes.normalize_dim("permute", d, x.ndim)
                                     for d in dims) != list(range(x.ndim)):
        raise ValueError(f"permute: dims {dims} are not a permutation of the {x.ndim} dims of a "
                         f"tensor of shape {tuple(x.shape)}")
    dims = tuple(d % x.ndim if x.ndim else 0 for d in dims)
    if dims == tuple(range(x.ndim)):
        return x
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    n = x.ndim
    d0 = _shapes.normalize_dim("transpose", dim0, n)
    d1 = _shapes.normalize_dim("transpose", dim1, n)
    if d0 == d1 or n < 2:
        return x
    dims = list(range(n))
    dims[d0], dims[d1] = d1, d0
    return Permute.apply(x, tuple(dims))


class Expand(Function):
    """x broadcast to a larger shape as a stride-0 view;  dx = g summed over the broadcast dims."""

    @staticmethod
    def forward(ctx, x, shape):
        return _make(x._data, shape, x.dtype,
                     _shapes.broadcast_strides(x.shape, x._strides, shape), x._offset, False)

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.inputs[0].shape), None


def expand(x, *shape):
    shape = _shape_arg(shape)
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
    return x if full == x.shape else Expand.apply(x, full)


def expand_as(x, other):
    return expand(x, other.shape)


def repeat(x, *sizes):
    """Tile x: repeat(2, 3) on a (a, b) tensor gives (2a, 3b), as torch.Tensor.repeat."""
    sizes = _shape_arg(sizes)
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
    y = expand(y, tuple(big))
    return reshape(y, tuple(r * n for r, n in zip(sizes, x.shape)))


class Slice(Function):
    """A strided sub-view (basic indexing, narrow, split);  dx = zeros with g written into the view.

    `recipe` holds, per input dim, an int (that index, dim dropped) or (start, step, length), and
    `new_axes` the output positions of None-inserted dims."""

    @staticmethod
    def forward(ctx, x, recipe, new_axes):
        shape, strides, offset = _apply_recipe(x.shape, x._strides, x._offset, recipe, new_axes)
        return _make(x._data, shape, x.dtype, strides, offset)

    @staticmethod
    def backward(ctx, g):
        x, recipe, new_axes = ctx.inputs
        out = _make(_dt.zeros_buffer(g.dtype, x.numel()), x.shape, g.dtype)
        shape, strides, offset = _apply_recipe(out.shape, out._strides, 0, recipe, new_axes)
        _copy_into(g, out._data, offset, strides)
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


def narrow(x, dim, start, length):
    d = _shapes.normalize_dim("narrow", dim, x.ndim)
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise IndexError(f"narrow: start {start} and length {length} are out of range for "
                         f"dimension {dim} of size {n}")
    if start == 0 and length == n:
        return x
    recipe = tuple((start, 1, length) if i == d else (0, 1, m) for i, m in enumerate(x.shape))
    return Slice.apply(x, recipe, ())


def split(x, split_size_or_sections, dim=0):
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
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[_shapes.normalize_dim("chunk", dim, x.ndim)]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


def unbind(x, dim=0):
    d = _shapes.normalize_dim("unbind", dim, x.ndim)
    return tuple(select(x, d, i) for i in range(x.shape[d]))


def select(x, dim, index):
    d = _shapes.normalize_dim("select", dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of bounds for dimension {dim} with size {n}")
    recipe = tuple(index % n if i == d else (0, 1, m) for i, m in enumerate(x.shape))
    return Slice.apply(x, recipe, ())


def flip(x, dims):
    dims = _shapes.normalize_dims("flip", dims, x.ndim)
    for d in dims:
        n = x.shape[d]
        x = index_select(x, d, arange_(n - 1, -1, -1))
    return x


# ============================================================================ layout: copies


class Copy(Function):
    """A packed copy of x (contiguous(), clone());  dx = g."""

    @staticmethod
    def forward(ctx, x):
        return _copy(x)

    @staticmethod
    def backward(ctx, g):
        return g


def contiguous(x):
    return x if x._packed else Copy.apply(x)


def clone(x):
    return Copy.apply(x)


class ToDtype(Function):
    """x converted to another dtype;  dx = g converted back (floats only carry gradients)."""

    @staticmethod
    def forward(ctx, x, dtype):
        if dtype is _bool:
            return ne(x, 0)
        return _copy(x, dtype)

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        return (_copy(g, x.dtype) if x.dtype.is_floating_point else None), None


def to_dtype(x, dtype):
    if x.dtype is dtype:
        return x
    out = ToDtype.apply(x, dtype)
    if not dtype.is_floating_point and out.grad_fn is not None:  # integers carry no gradient
        out.grad_fn = None
        out._requires_grad = False
    return out


def detach(x):
    return x.detach()


class Cat(Function):
    """Tensors joined along dim;  each input's gradient is its slice of g."""

    @staticmethod
    def forward(ctx, dim, *tensors):
        first = tensors[0]
        size = builtins.sum(t.shape[dim] for t in tensors)
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        out = _empty(shape, first.dtype)
        pos = 0
        for t in tensors:
            _copy_into(t, out._data, pos * out._strides[dim], out._strides)
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


def cat(tensors, dim=0):
    """Join tensors of equal shape (except along dim) along dim."""
    tensors = [t for t in tensors]
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    for t in tensors:
        _check_tensor("cat", t)
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
    if len(tensors) == 1:
        return tensors[0]
    return Cat.apply(d, *tensors)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    for i, t in enumerate(tensors):
        _check_tensor("stack", t)
        if t.shape != tensors[0].shape:
            raise ValueError(f"stack: tensor {i} has shape {tuple(t.shape)} but tensor 0 has "
                             f"shape {tuple(tensors[0].shape)}; stack needs equal shapes")
    d = _shapes.normalize_dim("stack", dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


# ============================================================================ integer indexing


class IndexRows(Function):
    """out[j] = src[rows[j]] for a (R, L) src;  dsrc = zeros with g[j] added into row rows[j]
    (rows that are picked twice receive both gradients)."""

    @staticmethod
    def forward(ctx, src, rows):
        n, L = rows.numel(), src.shape[1]
        out = _empty((n, L), src.dtype)
        KI.gather_rows(_packed(src)._data, rows._data, out._data, n, L)
        return out

    @staticmethod
    def backward(ctx, g):
        src, rows = ctx.inputs
        out = _make(_dt.zeros_buffer(g.dtype, src.numel()), src.shape, g.dtype)
        KI.scatter_add_rows(_packed(g)._data, rows._data, out._data, rows.numel(), src.shape[1])
        return out, None


def _checked_index(op, idx, size, dim, allow_negative=True):
    """idx as a packed int64 tensor with negatives wrapped; IndexError names the bad value."""
    if idx.dtype is not _int64:
        if idx.dtype.is_floating_point:
            raise TypeError(f"{op}: indices must be integers (int64) or bools, got {idx.dtype}")
        idx = to_dtype(idx, _int64)
    n = idx.numel()
    out = _empty(idx.shape, _int64)
    if n:
        if idx._packed:
            bad = KI.wrap_indices(idx._data, 0, 1, n, size, out._data, allow_negative)
        else:
            p = _packed(idx)
            bad = KI.wrap_indices(p._data, 0, 1, n, size, out._data, allow_negative)
            idx = p
        if bad >= 0:
            value = idx._data[bad] if idx._packed else idx.tolist_flat()[bad]
            raise IndexError(f"{op}: index {value} is out of bounds for dimension {dim} with "
                             f"size {size}")
    return out


def index_select(x, dim, index):
    """The entries of x at `index` (a 1-D int64 tensor) along dim."""
    _check_tensor("index_select", x)
    d = _shapes.normalize_dim("index_select", dim, x.ndim)
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise TypeError("index_select: index must be a 1-D integer tensor")
    rows = _checked_index("index_select", index, x.shape[d], d)
    moved = movedim_front(x, d)
    src = reshape(moved, (x.shape[d], -1))
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
    _check_tensor("gather", x)
    d = _shapes.normalize_dim("gather", dim, x.ndim)
    if not isinstance(index, Tensor) or index.ndim != x.ndim:
        raise ValueError(f"gather: index must be an integer tensor with {x.ndim} dims")
    for i, (n, m) in enumerate(zip(index.shape, x.shape)):
        if i != d and n > m:
            raise ValueError(f"gather: index shape {tuple(index.shape)} is larger than the input "
                             f"shape {tuple(x.shape)} at dim {i}")
    idx = _checked_index("gather", index, x.shape[d], d)
    grids = []
    for i, n in enumerate(index.shape):
        if i == d:
            grids.append(idx)
        else:
            shape = [1] * index.ndim
            shape[i] = n
            grids.append(view(arange_(n), tuple(shape)))
    return getitem(x, tuple(grids))


def arange_(start, end=None, step=1):
    from .creation import arange
    return arange(start, end, step)


# indexing (x[...] and x[...] = v) lives in indexing.py; imported here so Tensor can find it
from .indexing import getitem, setitem  # noqa: E402,F401


# ============================================================================ in-place ops


class _no_graph:
    def __enter__(self):
        from . import autograd
        self.prev = autograd._grad_enabled
        autograd._grad_enabled = False

    def __exit__(self, *exc):
        from . import autograd
        autograd._grad_enabled = self.prev


def _check_inplace(t, op):
    if is_grad_enabled() and t._requires_grad:
        if t.grad_fn is None:
            raise RuntimeError(f"{op}: a leaf tensor that requires grad cannot be changed in place "
                               f"(do parameter updates inside `with tinyattn.no_grad():`)")
        raise RuntimeError(f"{op}: this tensor is part of the autograd graph; changing it in place "
                           f"would corrupt values saved for backward. Use the out-of-place "
                           f"{op.rstrip('_')}() instead")


def _assign(t, value, op):
    """Write `value` (a Tensor broadcast to t.shape, or a number) into t's elements in place."""
    _check_inplace(t, op)
    if isinstance(value, Tensor):
        if _shapes.broadcast_shapes(op, t.shape, value.shape) != t.shape:
            raise ValueError(f"{op}: a value of shape {tuple(value.shape)} cannot be written into "
                             f"a tensor of shape {tuple(t.shape)}")
        src = value if value.dtype is t.dtype else _copy(value, t.dtype)
        src = _make(src._data, t.shape, t.dtype,
                    _shapes.broadcast_strides(src.shape, src._strides, t.shape), src._offset, False)
        _copy_into(src, t._data, t._offset, t._strides)
    else:
        v = (value != 0) if t.dtype is _bool else (float(value) if t.dtype.is_floating_point
                                                   else int(value))
        shape4, st = _shapes.kernel_layout(t.shape, t._strides)
        if len(shape4) == 4:
            KE.fill(t._data, t._offset, *st[0], v, *shape4)
        else:
            for i, pos in enumerate(t._positions()):
                t._data[pos] = v
    return t


def zero_(t):
    return _assign(t, 0, "zero_")


def fill_(t, value):
    return _assign(t, value, "fill_")


def copy_(t, src):
    return _assign(t, src, "copy_")


def _inplace(op_fn, name):
    def method(t, other, *args, **kwargs):
        _check_inplace(t, name)
        with _no_graph():
            result = op_fn(t, other, *args, **kwargs)
        return _assign(t, result, name)
    method.__name__ = name
    method.__doc__ = f"In-place {name.rstrip('_')}: the result is written into this tensor."
    return method


add_ = _inplace(add, "add_")
sub_ = _inplace(sub, "sub_")
mul_ = _inplace(mul, "mul_")
div_ = _inplace(div, "div_")
masked_fill_ = _inplace(masked_fill, "masked_fill_")


def clamp_(t, min=None, max=None):  # noqa: A002
    _check_inplace(t, "clamp_")
    with _no_graph():
        return _assign(t, clamp(t, min, max), "clamp_")


def exp_(t):
    _check_inplace(t, "exp_")
    with _no_graph():
        return _assign(t, exp(t), "exp_")


def relu_(t):
    _check_inplace(t, "relu_")
    with _no_graph():
        return _assign(t, relu(t), "relu_")


def uniform_(t, a=0.0, b=1.0, generator=None):
    from .creation import rand
    _check_inplace(t, "uniform_")
    return _assign(t, rand(t.shape, dtype=t.dtype, low=a, high=b, generator=generator), "uniform_")


def normal_(t, mean=0.0, std=1.0, generator=None):
    from .creation import randn
    _check_inplace(t, "normal_")
    return _assign(t, randn(t.shape, dtype=t.dtype, mean=mean, std=std, generator=generator),
                   "normal_")


def _augmented(op_fn, inplace_fn):
    """`x += y`: in place when allowed; on a tensor inside the graph, out of place (x is rebound)."""
    def method(t, other):
        if is_grad_enabled() and t._requires_grad and t.grad_fn is not None:
            return op_fn(t, other)
        return inplace_fn(t, other)
    return method


iadd = _augmented(add, add_)
isub = _augmented(sub, sub_)
imul = _augmented(mul, mul_)
idiv = _augmented(div, div_)


# ============================================================================ triangular masks


def tril(x, diagonal=0):
    """Elements on and below the `diagonal`-th diagonal of the last two dims; the rest zero."""
    return _triangle(x, diagonal, lower=True)


def triu(x, diagonal=0):
    return _triangle(x, diagonal, lower=False)


def _triangle(x, diagonal, lower):
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'}: expected at least 2 dims, got shape "
                         f"{tuple(x.shape)}")
    r, c = x.shape[-2], x.shape[-1]
    rows = view(arange_(r), (r, 1))
    cols = view(arange_(c), (1, c))
    diff = sub(cols, rows)
    keep = le(diff, diagonal) if lower else ge(diff, diagonal)
    return where(keep, x, _tensor_from_scalar(0, x.dtype))
