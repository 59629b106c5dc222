"""Elementwise maths: y = f(x) for every element, and out = a (op) b with broadcasting.

Every kernel walks its operands as 4-d views into flat buffers::

    element (i0, i1, i2, i3) of x is x[x_off + i0*xs0 + i1*xs1 + i2*xs2 + i3*xs3]

and writes a contiguous output of shape (n0, n1, n2, n3). Broadcasting costs nothing: a
broadcast dim has stride 0. The ops first merge the dims that every operand walks alike
(ops/_launch.py, `views4`), so a contiguous tensor arrives as one long inner loop; whole packed
buffers take the `_packed` kernels, the same loops over one dim.

The op is an integer code (EXP, TANH, ... ADD, MUL, ...) passed like any other argument, and each
element asks "which op?" (`_unary_value`, `_binary_value`): a chain of ifs with one formula per
op, so every formula is written once, here. A unary op's derivative sits in `_unary_derivative`,
given x and y = f(x) (tanh' = 1 - y^2 is cheaper from y). Unary codes count from 0, binary ones
from 100 and comparisons (compare.py) from 200, so no two codes mean the same.

Integer (int64) operands give integer results that wrap around as int64 arithmetic does, also
when run as Python (`_int64`); division and atan2 of integers are computed in floats by the ops.
"""
import math

from . import kernel

__all__ = ["unary", "unary_packed", "unary_backward", "binary", "binary_packed",
           "binary_scalar", "binary_scalar_packed", "axpy", "add_row_vector"]

# Unary ops (p1, p2: the op's parameters: clamp's bounds, pow's exponent), then binary ops.
NEG, ABS, EXP, LOG, SQRT, TANH, SIGMOID, RELU, GELU, GELU_TANH, CLAMP, POW, SIN, COS = range(14)
FLOOR, CEIL, TRUNC, ROUND, LOG1P, EXPM1, ERF, ATAN = range(14, 22)
ADD, SUB, MUL, DIV, POW2, MAXIMUM, MINIMUM, REMAINDER, FLOOR_DIVIDE, ATAN2 = range(100, 110)

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = math.sqrt(2.0 / math.pi)


# ============================================================================ the formulas
# Where Python and compiled code disagree (Python raises on 1 / 0, overflow, a negative base
# to a fractional power), the formula spells out IEEE's answer, so both modes compute the same.


@kernel
def _sigmoid(x):
    """1 / (1 + e^-x), with exp only of -|x| <= 0: no overflow, no inf / inf."""
    e = math.exp(-abs(x))
    return 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)


@kernel
def _gelu(x):
    """x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 the standard normal CDF, written with erfc
    (exact also where erf(x / sqrt 2) is near -1)."""
    return 0.5 * x * math.erfc(-x / _SQRT_2)


@kernel
def _gelu_tanh(x):
    """GELU's tanh approximation: x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2."""
    return 0.5 * x * (1.0 + math.tanh(_GELU_C * (x + 0.044715 * x * x * x)))


@kernel
def _gelu_tanh_derivative(x):
    t = math.tanh(_GELU_C * (x + 0.044715 * x * x * x))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_C * (1.0 + 3.0 * 0.044715 * x * x)


@kernel
def _div(a, b):
    """a / b, with IEEE's inf and NaN for b = 0."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.inf if (a > 0) == (math.copysign(1.0, b) > 0) else -math.inf
    return a / b


@kernel
def _pow(a, b):
    """a ** b: NaN for a negative base to a fractional power, inf for 0 to a negative one."""
    if a < 0 and b != math.floor(b):
        return math.nan
    if a == 0 and b < 0:
        return math.inf
    return a ** b


@kernel
def _floor(x):
    """floor(x) as a float; whole numbers (|x| >= 2^52), inf and NaN stay as they are."""
    if x != x or abs(x) >= 4503599627370496.0:
        return x
    return float(math.floor(x))


@kernel
def _round_half_even(x):
    """x rounded to the nearest whole number, halves to the even one (as PyTorch and Python)."""
    r = _floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and r % 2.0 != 0.0):
        return r + 1.0
    return r


@kernel
def _remainder(a, b):
    """a % b with the sign of the divisor, as Python and PyTorch; x % 0.0 is NaN."""
    if b == 0:
        return _div(0.0, 0.0) * a
    return a % b


@kernel
def _floor_divide(a, b):
    """a // b rounded toward -inf, as Python and PyTorch; x // 0.0 is x / 0.0."""
    if b == 0:
        return _div(a, b)
    return a // b


@kernel
def _int64(v):
    """v as int64 arithmetic leaves it: its low 64 bits, signed. Compiled, v already is that;
    Python's integers never overflow, and writing 2^63 into an int64 buffer would raise."""
    high = (v >> 32) & 0xFFFFFFFF
    if high >= 0x80000000:
        high -= 0x100000000
    return (high << 32) + (v & 0xFFFFFFFF)


@kernel
def _int_pow(a, b):
    """a ** b for integers, b >= 0, by repeated squaring, wrapping as int64."""
    r = a - a + 1
    while b > 0:
        if b & 1:
            r = _int64(r * a)
        a = _int64(a * a)
        b >>= 1
    return r


@kernel
def _unary_value(op, x, p1, p2):
    """y = f(x) for the unary op `op`."""
    if isinstance(x, int):               # int64 tensors: neg and abs (the ops float the rest)
        return _int64(-x) if op == NEG else _int64(abs(x))
    if op == NEG:
        return -x
    if op == ABS:
        return abs(x)
    if op == EXP:                        # inf past float64's range (Python's math.exp raises)
        return math.inf if x > 709.782712893384 else math.exp(x)
    if op == LOG:
        return math.log(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan)
    if op == SQRT:
        return math.sqrt(x) if x >= 0.0 else math.nan
    if op == TANH:
        return math.tanh(x)
    if op == SIGMOID:
        return _sigmoid(x)
    if op == RELU:                       # max(x, 0): NaN and -0.0 pass through, as in PyTorch
        return 0.0 if x < 0.0 else x
    if op == GELU:
        return _gelu(x)
    if op == GELU_TANH:
        return _gelu_tanh(x)
    if op == CLAMP:                      # p1 = min, p2 = max (+-inf when absent)
        return min(max(x, p1), p2)
    if op == POW:                        # x ** p1
        return _pow(x, p1)
    if op == SIN:
        return math.sin(x)
    if op == COS:
        return math.cos(x)
    if op == FLOOR:
        return _floor(x)
    if op == CEIL:
        return -_floor(-x)
    if op == TRUNC:
        return _floor(x) if x >= 0.0 else -_floor(-x)
    if op == ROUND:
        return _round_half_even(x)
    if op == LOG1P:
        return math.log1p(x) if x > -1.0 else (-math.inf if x == -1.0 else math.nan)
    if op == EXPM1:
        return math.expm1(x) if x < 709.0 else math.inf
    if op == ERF:
        return math.erf(x)
    return math.atan(x)                  # ATAN


@kernel
def _unary_derivative(op, x, y, p1, p2):
    """dy/dx of the unary op `op` at x, given y = f(x)."""
    if op == NEG:
        return -1.0
    if op == ABS:
        return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
    if op == EXP:
        return y
    if op == LOG:
        return _div(1.0, x)
    if op == SQRT:
        return _div(0.5, y)
    if op == TANH:
        return 1.0 - y * y
    if op == SIGMOID:
        return y * (1.0 - y)
    if op == RELU:
        return 1.0 if x > 0.0 else 0.0
    if op == GELU:                       # Phi(x) + x phi(x), phi the normal density
        return 0.5 * math.erfc(-x / _SQRT_2) + x * _INV_SQRT_2PI * math.exp(-0.5 * x * x)
    if op == GELU_TANH:
        return _gelu_tanh_derivative(x)
    if op == CLAMP:                      # the gradient flows where x was inside [min, max]
        return 1.0 if (x >= p1 and x <= p2) else 0.0
    if op == POW:
        return 0.0 if p1 == 0.0 else p1 * _pow(x, p1 - 1.0)
    if op == SIN:
        return math.cos(x)
    if op == COS:
        return -math.sin(x)
    if op == LOG1P:
        return _div(1.0, 1.0 + x)
    if op == EXPM1:
        return y + 1.0
    if op == ERF:                        # 2 / sqrt(pi) e^(-x^2)
        return 1.1283791670955126 * math.exp(-x * x)
    if op == ATAN:
        return 1.0 / (1.0 + x * x)
    return 0.0                           # FLOOR, CEIL, TRUNC, ROUND: piecewise constant


@kernel
def _binary_value(op, a, b):
    """a (op) b."""
    if isinstance(a, int):               # int64 operands: int64 results (b >= 0 for POW2 and
        if op == ADD:                    # b != 0 for REMAINDER and FLOOR_DIVIDE: the ops check)
            return _int64(a + b)
        if op == SUB:
            return _int64(a - b)
        if op == MUL:
            return _int64(a * b)
        if op == POW2:
            return _int_pow(a, b)
        if op == MAXIMUM:
            return max(a, b)
        if op == MINIMUM:
            return min(a, b)
        if op == REMAINDER:
            return a % b
        if b == -1:                      # FLOOR_DIVIDE; INT64_MIN // -1 wraps to INT64_MIN
            return _int64(-a)
        return a // b
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return _div(a, b)
    if op == POW2:
        return _pow(a, b)
    if op == MAXIMUM:                    # NaN propagates, as in PyTorch
        return a if (a >= b or a != a) else b
    if op == MINIMUM:
        return a if (a <= b or a != a) else b
    if op == REMAINDER:
        return _remainder(a, b)
    if op == FLOOR_DIVIDE:
        return _floor_divide(a, b)
    return math.atan2(a, b)              # ATAN2: the angle of the point (x = b, y = a)


# ============================================================================ the loops


@kernel
def unary(op, p1, p2, x, x_off, xs0, xs1, xs2, xs3, out, n0, n1, n2, n3):
    """out = f(x) elementwise; x a strided 4-d view, out contiguous (n0, n1, n2, n3)."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                for i3 in range(n3):
                    out[o + i3] = _unary_value(op, x[px + i3 * xs3], p1, p2)
                o += n3


@kernel
def unary_packed(op, p1, p2, x, out, n):
    """out[i] = f(x[i]) for contiguous x and out of n elements."""
    for i in range(n):
        out[i] = _unary_value(op, x[i], p1, p2)


@kernel
def unary_backward(op, p1, p2, g, x, y, out, n):
    """out[i] = g[i] * f'(x[i]), given y = f(x); all contiguous, n elements."""
    for i in range(n):
        out[i] = g[i] * _unary_derivative(op, x[i], y[i], p1, p2)


@kernel
def binary(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (op) b, broadcast by zero strides; out contiguous (n0, n1, n2, n3)."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    out[o + i3] = _binary_value(op, a[pa + i3 * as3], b[pb + i3 * bs3])
                o += n3


@kernel
def binary_packed(op, a, b, out, n):
    """out[i] = a[i] (op) b[i] for contiguous a, b and out of n elements."""
    for i in range(n):
        out[i] = _binary_value(op, a[i], b[i])


@kernel
def binary_scalar(op, a, a_off, as0, as1, as2, as3, s, reverse, out, n0, n1, n2, n3):
    """out = a (op) s, or s (op) a when `reverse`; s a Python number (no 1-element buffer)."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                for i3 in range(n3):
                    v = a[pa + i3 * as3]
                    out[o + i3] = _binary_value(op, s, v) if reverse else _binary_value(op, v, s)
                o += n3


@kernel
def binary_scalar_packed(op, a, s, reverse, out, n):
    """out[i] = a[i] (op) s, or s (op) a[i] when `reverse`; contiguous a and out, n elements."""
    for i in range(n):
        out[i] = _binary_value(op, s, a[i]) if reverse else _binary_value(op, a[i], s)


@kernel
def axpy(alpha, x, out, n):
    """out += alpha * x over contiguous buffers (the autograd engine's in-place gradient sums)."""
    for i in range(n):
        out[i] += alpha * x[i]


@kernel
def add_row_vector(out, v, rows, n):
    """out[r, j] += v[j] for each of `rows` contiguous rows of n (a bias added to every row)."""
    for r in range(rows):
        for j in range(n):
            out[r * n + j] += v[j]
