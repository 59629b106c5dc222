"""Elementwise maths, fast: kernels/elementwise.py's functions, one compiled loop per op.

The layout (4-d strided views, a contiguous output), the op codes and the results are those of
kernels/elementwise.py. What is different here:

- The reference asks "which op?" for every element. Here each kernel is compiled once per op:
  `numba.literally(op)` makes the op code a compile-time constant, `unary_value(op, ...)` /
  `binary_value(op, ...)` then pick that op's formula from a table (`UNARY_FORMULAS`,
  `BINARY_FORMULAS`) while numba types the kernel, and the loop body is that one formula, which
  LLVM turns into vector instructions. The factory is the compiler: no formula is copied per op.
- exp (and so sigmoid) is `exp.exp`, arithmetic that vectorises, not a call into the C library
  per element; float32 GELU has its own vectorisable normal CDF (`normal_cdf`).
- Strided rows that are contiguous (a bias added to every row) or broadcast (a per-channel bias)
  go through the loop as slices indexed from 0 (`_binary`), which vectorises.
- The public functions pick the machine code compiled for their buffers' typecode and op
  (`jit.by_typecode` tables keyed (typecode, op)), skipping numba's per-call type dispatch: these
  calls are the per-op overhead of every training step.

The formulas that need nothing of the above (division, powers, rounding) are the reference's own,
imported from kernels/elementwise.py. Chapter 2 of the tour (docs/02-kernels.md) walks through
this file.
"""
import math

from numba import literally, types
from numba.extending import overload

from ..kernels import elementwise as reference
from ..kernels.elementwise import (  # noqa: F401  (the op codes, as the reference has them)
    ABS, ADD, ATAN, ATAN2, CEIL, CLAMP, COS, DIV, ERF, EXP, EXPM1, FLOOR, FLOOR_DIVIDE, GELU,
    GELU_TANH, LOG, LOG1P, MAXIMUM, MINIMUM, MUL, NEG, POW, POW2, RELU, REMAINDER, ROUND, SIGMOID,
    SIN, SQRT, SUB, TANH, TRUNC)
from .buffers import as_array
from .exp import exp, exp_float32, f32
from .jit import by_typecode, inline, kernel, pasted, reuse

__all__ = ["unary", "unary_packed", "unary_backward", "binary", "binary_packed",
           "binary_scalar", "binary_scalar_packed", "axpy", "add_row_vector"]

reuse(reference)

# The reference's formulas, inlined into the loops below (jit.pasted). Integer powers stay a call
# (`reference._int_pow`): numba's inliner trips over the loop inside the kernels' loops.
_div = pasted(reference._div)
_pow = pasted(reference._pow)
_floor = pasted(reference._floor)
_round_half_even = pasted(reference._round_half_even)
_remainder = pasted(reference._remainder)
_floor_divide = pasted(reference._floor_divide)
_gelu_tanh = pasted(reference._gelu_tanh)
_gelu_tanh_derivative = pasted(reference._gelu_tanh_derivative)
_int_pow = reference._int_pow

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2 = math.sqrt(2.0)


# ============================================================================ the formulas


@inline
def _exp(x):
    # exp.exp, not math.exp: arithmetic that loops can vectorise (math.exp is a libm call per
    # element), and inf on overflow also when interpreted (math.exp raises OverflowError there).
    return exp(x)


@inline
def _sigmoid(x):
    # kernels/elementwise.py's formula with the vectorisable exp: exp() only ever sees -|x| <= 0,
    # then the formula for the sign of x (a select, not a branch, so loops over it vectorise).
    e = _exp(-abs(x))
    return 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)


def normal_cdf(x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal CDF that GELU multiplies x by.

    math.erfc is a call into the C library for every element, which no loop around it can
    vectorise (measured: benchmarks/RESULTS.md, normal_cdf). Compiled for float32 data this is
    `_normal_cdf_float32`, arithmetic LLVM turns into vector code; float64 (and interpreted) keeps
    the library's erfc."""
    return 0.5 * math.erfc(-x / _SQRT_2)


@inline
def _normal_cdf_float32(x):
    # Phi(x) = erfc(-x / sqrt 2) / 2, with erfc(a) for a >= 0 as t * exp(-a^2 + P(t)),
    # t = 1 / (1 + a / 2) (Numerical Recipes' erfcc: relative error < 1.2e-7 for every a >= 0,
    # float32's own precision), and Phi(x) = 1 - Phi(-x) for x >= 0. No branch: a select.
    a = abs(x) * f32(0.70710678)
    t = f32(1.0) / (f32(1.0) + f32(0.5) * a)
    p = f32(0.17087277)
    p = p * t + f32(-0.82215223)
    p = p * t + f32(1.48851587)
    p = p * t + f32(-1.13520398)
    p = p * t + f32(0.27886807)
    p = p * t + f32(-0.18628806)
    p = p * t + f32(0.09678418)
    p = p * t + f32(0.37409196)
    p = p * t + f32(1.00002368)
    p = p * t + f32(-1.26551223)
    c = f32(0.5) * t * exp_float32(p - a * a)      # Phi(-|x|)
    return f32(1.0) - c if x >= f32(0.0) else c


@overload(normal_cdf, inline="always")
def _normal_cdf_jit(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _normal_cdf_float32(x)
    return lambda x: 0.5 * math.erfc(-x / _SQRT_2)


# Unary ops: op code -> (value y = f(x), derivative dy/dx at x given y = f(x)), the formulas of
# kernels/elementwise.py (`_unary_value`, `_unary_derivative`), one op per entry.
UNARY_FORMULAS = {
    NEG: (lambda x, p1, p2: -x,
          lambda x, y, p1, p2: -1.0),
    ABS: (lambda x, p1, p2: abs(x),
          lambda x, y, p1, p2: 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)),
    EXP: (lambda x, p1, p2: _exp(x),
          lambda x, y, p1, p2: y),
    LOG: (lambda x, p1, p2: math.log(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan),
          lambda x, y, p1, p2: _div(1.0, x)),
    SQRT: (lambda x, p1, p2: math.sqrt(x) if x >= 0.0 else math.nan,
           lambda x, y, p1, p2: _div(0.5, y)),
    TANH: (lambda x, p1, p2: math.tanh(x),
           lambda x, y, p1, p2: 1.0 - y * y),
    SIGMOID: (lambda x, p1, p2: _sigmoid(x),
              lambda x, y, p1, p2: y * (1.0 - y)),
    RELU: (lambda x, p1, p2: 0.0 if x < 0.0 else x,
           lambda x, y, p1, p2: 1.0 if x > 0.0 else 0.0),
    GELU: (lambda x, p1, p2: x * normal_cdf(x),
           lambda x, y, p1, p2: normal_cdf(x) + x * _INV_SQRT_2PI * _exp(-0.5 * x * x)),
    GELU_TANH: (lambda x, p1, p2: _gelu_tanh(x),
                lambda x, y, p1, p2: _gelu_tanh_derivative(x)),
    CLAMP: (lambda x, p1, p2: min(max(x, p1), p2),
            lambda x, y, p1, p2: 1.0 if (x >= p1 and x <= p2) else 0.0),
    POW: (lambda x, p1, p2: _pow(x, p1),
          lambda x, y, p1, p2: 0.0 if p1 == 0.0 else p1 * _pow(x, p1 - 1.0)),
    SIN: (lambda x, p1, p2: math.sin(x),
          lambda x, y, p1, p2: math.cos(x)),
    COS: (lambda x, p1, p2: math.cos(x),
          lambda x, y, p1, p2: -math.sin(x)),
    FLOOR: (lambda x, p1, p2: _floor(x),
            lambda x, y, p1, p2: 0.0),
    CEIL: (lambda x, p1, p2: -_floor(-x),
           lambda x, y, p1, p2: 0.0),
    TRUNC: (lambda x, p1, p2: _floor(x) if x >= 0.0 else -_floor(-x),
            lambda x, y, p1, p2: 0.0),
    ROUND: (lambda x, p1, p2: _round_half_even(x),
            lambda x, y, p1, p2: 0.0),
    LOG1P: (lambda x, p1, p2: math.log1p(x) if x > -1.0 else (-math.inf if x == -1.0 else math.nan),
            lambda x, y, p1, p2: _div(1.0, 1.0 + x)),
    EXPM1: (lambda x, p1, p2: math.expm1(x) if x < 709.0 else math.inf,
            lambda x, y, p1, p2: y + 1.0),
    ERF: (lambda x, p1, p2: math.erf(x),
          lambda x, y, p1, p2: 1.1283791670955126 * math.exp(-x * x)),
    ATAN: (lambda x, p1, p2: math.atan(x),
           lambda x, y, p1, p2: 1.0 / (1.0 + x * x)),
}

# Binary ops: op code -> a (op) b for float operands, and for integer ones, which must give
# integers: numba gives a function one return type, and the float formulas' NaN and inf would make
# every integer result a float64, which rounds products past 2^53.
BINARY_FORMULAS = {
    ADD: lambda a, b: a + b,
    SUB: lambda a, b: a - b,
    MUL: lambda a, b: a * b,
    DIV: lambda a, b: _div(a, b),
    POW2: lambda a, b: _pow(a, b),
    MAXIMUM: lambda a, b: a if (a >= b or a != a) else b,
    MINIMUM: lambda a, b: a if (a <= b or a != a) else b,
    ATAN2: lambda a, b: math.atan2(a, b),
    REMAINDER: lambda a, b: _remainder(a, b),
    FLOOR_DIVIDE: lambda a, b: _floor_divide(a, b),
}
BINARY_FORMULAS_INT = dict(BINARY_FORMULAS)
BINARY_FORMULAS_INT.update({
    POW2: lambda a, b: _int_pow(a, b),
    REMAINDER: lambda a, b: a % b,
    FLOOR_DIVIDE: lambda a, b: reference._int64(-a) if b == -1 else a // b,  # MIN // -1: MIN
})


# ============================================================================ the factory

_inlined = {}   # (table, op code, which) -> that formula as a numba function inlined into kernels


def _formula(kind, table, op, which=None):
    """`table[op]` (or `table[op][which]`) as a numba function that is inlined where it is called,
    made once per entry. `op` is the type numba gives the kernel's op code, which must be a
    compile-time constant: the kernels say ``literally(op)``."""
    if not isinstance(op, types.IntegerLiteral):
        raise TypeError(f"{kind} kernels: the op code must be a compile-time constant "
                        "(numba.literally(op) in the kernel)")
    key = (id(table), op.literal_value, which)
    if key not in _inlined:
        f = table[op.literal_value]
        _inlined[key] = inline(f if which is None else f[which])
    return _inlined[key]


def _wrapped(v):
    """A Python int as int64 arithmetic leaves it (its low 64 bits, signed): interpreted, the
    integer maps wrap as the compiled loops do."""
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


def unary_value(op, x, p1, p2):
    """f(x) of unary op `op`. Interpreted, a lookup in the table for every element. Compiled,
    `op` must be a compile-time constant (``literally(op)`` in the kernel): the lookup then
    happens once, while numba types the kernel, and the loop is compiled from that op's formula
    alone (an ``if op == ...`` chain over all ops costs far more to compile: benchmarks/RESULTS.md,
    UNARY_FORMULAS)."""
    y = UNARY_FORMULAS[op][0](x, p1, p2)
    return _wrapped(y) if type(y) is int else y


def unary_derivative(op, x, y, p1, p2):
    """f'(x) of unary op `op`, given y = f(x); picked as `unary_value` picks f."""
    return UNARY_FORMULAS[op][1](x, y, p1, p2)


@overload(unary_value, inline="always", prefer_literal=True)
def _unary_value_jit(op, x, p1, p2):
    f = _formula("unary", UNARY_FORMULAS, op, 0)
    return lambda op, x, p1, p2: f(x, p1, p2)


@overload(unary_derivative, inline="always", prefer_literal=True)
def _unary_derivative_jit(op, x, y, p1, p2):
    f = _formula("unary", UNARY_FORMULAS, op, 1)
    return lambda op, x, y, p1, p2: f(x, y, p1, p2)


def binary_value(op, a, b):
    """a (op) b, picked as `unary_value` picks f. Interpreted, Python's integers do not overflow:
    an integer result is wrapped to int64, as the compiled loop's int64 arithmetic wraps (and a
    power is taken mod 2^64, never in full)."""
    if type(a) is int and type(b) is int:
        return _wrapped(pow(a, b, 1 << 64) if op == POW2 else BINARY_FORMULAS_INT[op](a, b))
    return BINARY_FORMULAS[op](a, b)


@overload(binary_value, prefer_literal=True)
def _binary_value_jit(op, a, b):
    ints = isinstance(a, types.Integer) and isinstance(b, types.Integer)
    f = _formula("binary", BINARY_FORMULAS_INT if ints else BINARY_FORMULAS, op)
    return lambda op, a, b: f(a, b)


# ============================================================================ the loops


@kernel
def _unary(op, p1, p2, x, x_off, xs0, xs1, xs2, xs3, out, n0, n1, n2, n3):
    literally(op)  # one compiled loop per op: its body is that op's formula
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                for i3 in range(n3):
                    out[o + i3] = unary_value(op, x[px + i3 * xs3], p1, p2)
                o += n3


@kernel
def _unary_packed(op, p1, p2, x, out, n):
    literally(op)
    for i in range(n):
        out[i] = unary_value(op, x[i], p1, p2)


@kernel
def _unary_backward(op, p1, p2, g, x, y, out, n):
    literally(op)
    for i in range(n):
        out[i] = g[i] * unary_derivative(op, x[i], y[i], p1, p2)


@inline
def _binary_row(op, a, b, out, n):
    for i in range(n):
        out[i] = binary_value(op, a[i], b[i])


@inline
def _binary_row_scalar(op, a, s, reverse, out, n):
    if reverse:
        for i in range(n):
            out[i] = binary_value(op, s, a[i])
    else:
        for i in range(n):
            out[i] = binary_value(op, a[i], s)


@kernel
def _binary(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """Rows whose last dim is contiguous in both inputs (a bias added to every row), or contiguous
    in one and broadcast in the other (a per-channel bias added to an (N, C, H*W) image), are
    handed over as slices indexed from 0, whose loop vectorises (measured: benchmarks/RESULTS.md,
    _binary)."""
    literally(op)
    A, B, O = as_array(a), as_array(b), as_array(out)
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                if as3 == 1 and bs3 == 1:
                    _binary_row(op, A[pa:pa + n3], B[pb:pb + n3], O[o:o + n3], n3)
                elif as3 == 1 and bs3 == 0:
                    _binary_row_scalar(op, A[pa:pa + n3], b[pb], False, O[o:o + n3], n3)
                elif as3 == 0 and bs3 == 1:
                    _binary_row_scalar(op, B[pb:pb + n3], a[pa], True, O[o:o + n3], n3)
                else:
                    for i3 in range(n3):
                        out[o + i3] = binary_value(op, a[pa + i3 * as3], b[pb + i3 * bs3])
                o += n3


@kernel
def _binary_packed(op, a, b, out, n):
    literally(op)
    for i in range(n):
        out[i] = binary_value(op, a[i], b[i])


@kernel
def _binary_scalar(op, a, a_off, as0, as1, as2, as3, s, reverse, out, n0, n1, n2, n3):
    literally(op)
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                for i3 in range(n3):
                    v = a[pa + i3 * as3]
                    if reverse:
                        out[o + i3] = binary_value(op, s, v)
                    else:
                        out[o + i3] = binary_value(op, v, s)
                o += n3


@kernel
def _binary_scalar_packed(op, a, s, reverse, out, n):
    literally(op)
    if reverse:
        for i in range(n):
            out[i] = binary_value(op, s, a[i])
    else:
        for i in range(n):
            out[i] = binary_value(op, a[i], s)


@kernel
def _add_row_vector(out, v, rows, n):
    O = as_array(out)
    V = as_array(v)
    for r in range(rows):
        row = O[r * n:(r + 1) * n]
        for j in range(n):
            row[j] += V[j]


# ============================================================================ the interface
# Machine code by buffer typecode, and by op (`literally`) for the maps (jit.by_typecode): the
# tables are keyed (typecode, op); the functions below reach an entry as view[op][typecode]
# (by_typecode.by_op, .entries: these calls are the overhead of every small op).

_UNARY = by_typecode(_unary, "L f f T i i i i i T i i i i")
_UNARY_PACKED = by_typecode(_unary_packed, "L f f T T i")
_UNARY_BACKWARD = by_typecode(_unary_backward, "L f f T T T T i")
_BINARY = by_typecode(_binary, "L T i i i i i T i i i i i T i i i i")
_BINARY_PACKED = by_typecode(_binary_packed, "L T T T i")
_BINARY_SCALAR = by_typecode(_binary_scalar, "L T i i i i i S b T i i i i")
_BINARY_SCALAR_PACKED = by_typecode(_binary_scalar_packed, "L T S b T i")
_AXPY = by_typecode(reference.axpy, "f T T i")      # the reference loop vectorises as it is
_ADD_ROW_VECTOR = by_typecode(_add_row_vector, "T T i i")

_unary_by_op = _UNARY.by_op(UNARY_FORMULAS)
_unary_packed_by_op = _UNARY_PACKED.by_op(UNARY_FORMULAS)
_unary_backward_by_op = _UNARY_BACKWARD.by_op(UNARY_FORMULAS)
_binary_by_op = _BINARY.by_op(BINARY_FORMULAS)
_binary_packed_by_op = _BINARY_PACKED.by_op(BINARY_FORMULAS)
_binary_scalar_by_op = _BINARY_SCALAR.by_op(BINARY_FORMULAS)
_binary_scalar_packed_by_op = _BINARY_SCALAR_PACKED.by_op(BINARY_FORMULAS)
_axpy = _AXPY.entries()
_add_row_vector_entries = _ADD_ROW_VECTOR.entries()


def unary(op, p1, p2, x, x_off, xs0, xs1, xs2, xs3, out, n0, n1, n2, n3):
    """out = f(x) elementwise; x a strided 4-d view, out contiguous (n0, n1, n2, n3)."""
    _unary_by_op[op][x.typecode](op, p1, p2, x, x_off, xs0, xs1, xs2, xs3, out, n0, n1, n2, n3)


def unary_packed(op, p1, p2, x, out, n):
    """out[i] = f(x[i]) for contiguous x and out of n elements."""
    _unary_packed_by_op[op][x.typecode](op, p1, p2, x, out, n)


def unary_backward(op, p1, p2, g, x, y, out, n):
    """out[i] = g[i] * f'(x[i]), given y = f(x); all contiguous, n elements."""
    _unary_backward_by_op[op][x.typecode](op, p1, p2, g, x, y, out, n)


def binary(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (op) b, broadcast by zero strides; out contiguous (n0, n1, n2, n3)."""
    _binary_by_op[op][a.typecode](op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3,
                                  out, n0, n1, n2, n3)


def binary_packed(op, a, b, out, n):
    """out[i] = a[i] (op) b[i] for contiguous a, b and out of n elements."""
    _binary_packed_by_op[op][a.typecode](op, a, b, out, n)


def binary_scalar(op, a, a_off, as0, as1, as2, as3, s, reverse, out, n0, n1, n2, n3):
    """out = a (op) s, or s (op) a when `reverse`; s a Python number (no 1-element buffer)."""
    _binary_scalar_by_op[op][a.typecode](op, a, a_off, as0, as1, as2, as3, s, reverse, out,
                                         n0, n1, n2, n3)


def binary_scalar_packed(op, a, s, reverse, out, n):
    """`binary_scalar` for contiguous a and out of n elements."""
    _binary_scalar_packed_by_op[op][a.typecode](op, a, s, reverse, out, n)


def axpy(alpha, x, out, n):
    """out += alpha * x over contiguous buffers (the autograd engine's in-place gradient sums)."""
    _axpy[out.typecode](alpha, x, out, n)


def add_row_vector(out, v, rows, n):
    """out[r, j] += v[j] for each of `rows` contiguous rows of n (a bias added to every row)."""
    _add_row_vector_entries[out.typecode](out, v, rows, n)
