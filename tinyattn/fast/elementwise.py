"""Elementwise kernels: unary maps, binary maps with broadcasting, comparisons, `where`, copies.

Every strided kernel walks its operands as 4-d views into flat buffers::

    element (i0, i1, i2, i3) of x lives at x[x_off + i0*xs0 + i1*xs1 + i2*xs2 + i3*xs3]

and writes a fresh contiguous output. Broadcasting costs nothing here: a broadcast dimension simply
has stride 0. The op layer (ops/_launch.py) first merges dimensions that are contiguous in every
operand, so the common case (same shape, contiguous) arrives as ``n0 = n1 = n2 = 1`` and one long
inner loop -- or as a *packed* call on whole buffers.

The formulas are written once. Each unary op has its value ``y = f(x)`` and its derivative ``dy/dx``
(given ``x`` and ``y``) side by side in the table `UNARY_FORMULAS`; each binary op its value in
`BINARY_FORMULAS` (and, where integers need their own, `BINARY_FORMULAS_INT`). Adding an
activation is one op code and one entry in the table.

Each unary and binary kernel is compiled once per op: `numba.literally(op)` makes the op code a
compile-time constant, `unary_value(op, ...)` / `binary_value(op, ...)` then pick that op's
formula while numba types the kernel, and the loop body is the one formula, which LLVM turns into
vector instructions (8-16 elements at a time). Nothing is copied per op: the factory is the
compiler. Two tiers (kernels/tiers.py) run them:

- reference: plain loops over the formulas (`unary_packed_reference`, `binary`). Read these.
- fast: the same loops with float32's own GELU, and strided rows that are contiguous handed to the
  packed loops as slices (`binary_fast`).

Op codes are plain ints in three ranges that cannot collide (unary 0.., binary 100.., comparison
200..), because numba compiles comparisons of ints into the loops.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import math

from numba import literally, types
from numba.extending import overload

from .buffers import as_array
from .exp import exp, exp_float32, f32
from .jit import by_typecode, inline, kernel
from .tiers import register

# --- op codes: unary (p1, p2 are optional float parameters), binary, comparison and logic ---
NEG, ABS, EXP, LOG, SQRT, TANH, SIGMOID, RELU, GELU, GELU_TANH, CLAMP, POW, SIN, COS = range(14)
FLOOR, CEIL, TRUNC, ROUND, LOG1P, EXPM1, ERF, ATAN = range(14, 22)
ADD, SUB, MUL, DIV, POW2, MAXIMUM, MINIMUM, REMAINDER, FLOOR_DIVIDE, ATAN2 = range(100, 110)
EQ, NE, LT, LE, GT, GE, AND, OR, XOR = range(200, 209)  # outputs are bool (0/1 bytes)


# ============================================================================ the formulas


_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = math.sqrt(2.0 / math.pi)


@inline
def _exp(x):
    # exp.exp, not math.exp: arithmetic that loops can vectorise (math.exp is a libm call per
    # element), and inf on overflow also when interpreted (math.exp raises OverflowError there).
    return exp(x)


@inline
def _div(a, b):
    # Interpreted Python raises ZeroDivisionError where compiled code follows IEEE: make both IEEE.
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.inf if (a > 0) == (math.copysign(1.0, b) > 0) else -math.inf
    return a / b


@inline
def _pow(a, b):
    # Interpreted Python returns a complex number for (-2) ** 0.5 and raises for 0 ** -1.
    if a < 0 and b != math.floor(b):
        return math.nan
    if a == 0 and b < 0:
        return math.inf
    return a ** b


@inline
def _floor(x):
    # math.floor returns an int (and raises on inf in Python): keep floats, and leave alone what
    # is already a whole number (|x| >= 2**52), inf and NaN
    if x != x or abs(x) >= 4503599627370496.0:
        return x
    return float(math.floor(x))


@inline
def _round_half_even(x):
    r = _floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and r % 2.0 != 0.0):
        return r + 1.0
    return r


@inline
def _sigmoid(x):
    # exp() only ever sees a non-positive argument: no overflow, no inf/inf. One exp, then the
    # formula for the sign of x (a select, not a branch, so loops over it still vectorise).
    e = _exp(-abs(x))
    return 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)


# Unary ops: op code -> (value y = f(x), derivative dy/dx at x, given y = f(x): many derivatives
# are cheaper in terms of y, as tanh' = 1 - y^2). p1, p2 are the op's float parameters (clamp's
# bounds, pow's exponent); the other ops ignore them.
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
    # max(x, 0): NaN and -0.0 pass through, as in PyTorch
    RELU: (lambda x, p1, p2: 0.0 if x < 0.0 else x,
           lambda x, y, p1, p2: 1.0 if x > 0.0 else 0.0),
    # x * Phi(x), Phi the standard normal CDF: (1 + erf(x/sqrt 2)) / 2, written with erfc, exact
    # also where erf is near -1; the derivative is Phi(x) + x * phi(x)
    GELU: (lambda x, p1, p2: 0.5 * x * math.erfc(-x / _SQRT_2),
           lambda x, y, p1, p2: (0.5 * math.erfc(-x / _SQRT_2)
                                 + x * _INV_SQRT_2PI * math.exp(-0.5 * x * x))),
    # the tanh approximation of GELU
    GELU_TANH: (lambda x, p1, p2: 0.5 * x * (1.0 + math.tanh(_GELU_C * (x + 0.044715 * x * x * x))),
                lambda x, y, p1, p2: _gelu_tanh_derivative(x)),
    # p1 = min, p2 = max (+-inf when absent); the gradient flows where x was inside [min, max]
    CLAMP: (lambda x, p1, p2: min(max(x, p1), p2),
            lambda x, y, p1, p2: 1.0 if (x >= p1 and x <= p2) else 0.0),
    # x ** p1
    POW: (lambda x, p1, p2: _pow(x, p1),
          lambda x, y, p1, p2: 0.0 if p1 == 0.0 else p1 * _pow(x, p1 - 1.0)),
    SIN: (lambda x, p1, p2: math.sin(x),
          lambda x, y, p1, p2: math.cos(x)),
    COS: (lambda x, p1, p2: math.cos(x),
          lambda x, y, p1, p2: -math.sin(x)),
    # piecewise constant: the gradient is 0 (as PyTorch's)
    FLOOR: (lambda x, p1, p2: _floor(x),
            lambda x, y, p1, p2: 0.0),
    CEIL: (lambda x, p1, p2: -_floor(-x),
           lambda x, y, p1, p2: 0.0),
    TRUNC: (lambda x, p1, p2: _floor(x) if x >= 0.0 else -_floor(-x),
            lambda x, y, p1, p2: 0.0),
    ROUND: (lambda x, p1, p2: _round_half_even(x),  # half to even, as PyTorch (and Python)
            lambda x, y, p1, p2: 0.0),
    LOG1P: (lambda x, p1, p2: math.log1p(x) if x > -1.0 else (-math.inf if x == -1.0 else math.nan),
            lambda x, y, p1, p2: _div(1.0, 1.0 + x)),
    EXPM1: (lambda x, p1, p2: math.expm1(x) if x < 709.0 else math.inf,
            lambda x, y, p1, p2: y + 1.0),
    ERF: (lambda x, p1, p2: math.erf(x),
          lambda x, y, p1, p2: 1.1283791670955126 * math.exp(-x * x)),  # 2 / sqrt(pi) exp(-x^2)
    ATAN: (lambda x, p1, p2: math.atan(x),
           lambda x, y, p1, p2: 1.0 / (1.0 + x * x)),
}


@inline
def _gelu_tanh_derivative(x):
    inner = _GELU_C * (x + 0.044715 * x * x * x)
    t = math.tanh(inner)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_C * (1.0 + 3.0 * 0.044715 * x * x)


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


def _formulas(table):
    """`value(op, x, p1, p2)` and `derivative(op, x, y, p1, p2)` of the unary ops in `table`.

    Interpreted, they look the op up in the table for every element. Compiled, `op` must be a
    compile-time constant (the kernels say ``literally(op)``): the lookup then happens once, while
    numba types the kernel, and the kernel's loop is compiled from that op's formula alone, which
    LLVM vectorises. (An ``if op == ...`` chain over all ops, folded after numba had inlined every
    branch, cost 4.7 s of compiling per op; this costs about 0.3 s.)"""

    def value(op, x, p1, p2):
        return table[op][0](x, p1, p2)

    def derivative(op, x, y, p1, p2):
        return table[op][1](x, y, p1, p2)

    @overload(value, inline="always", prefer_literal=True)
    def _value_jit(op, x, p1, p2):
        f = _formula("unary", table, op, 0)
        return lambda op, x, p1, p2: f(x, p1, p2)

    @overload(derivative, inline="always", prefer_literal=True)
    def _derivative_jit(op, x, y, p1, p2):
        f = _formula("unary", table, op, 1)
        return lambda op, x, y, p1, p2: f(x, y, p1, p2)

    return value, derivative


unary_value, unary_derivative = _formulas(UNARY_FORMULAS)


@inline
def _remainder(a, b):
    """a % b with the sign of the divisor, as Python and PyTorch; x % 0.0 is NaN (as PyTorch;
    Python raises, numba gives 0)."""
    if b == 0:
        return _div(0.0, 0.0) * a
    return a % b


@inline
def _floor_divide(a, b):
    """a // b rounded toward -inf, as Python and PyTorch; x // 0.0 is x / 0.0."""
    if b == 0:
        return _div(a, b)
    return a // b


# Binary ops: op code -> a (op) b, for float operands (integers: `BINARY_FORMULAS_INT` below).
BINARY_FORMULAS = {
    ADD: lambda a, b: a + b,
    SUB: lambda a, b: a - b,
    MUL: lambda a, b: a * b,
    DIV: lambda a, b: _div(a, b),
    POW2: lambda a, b: _pow(a, b),
    MAXIMUM: lambda a, b: a if (a >= b or a != a) else b,  # NaN propagates, as in PyTorch
    MINIMUM: lambda a, b: a if (a <= b or a != a) else b,
    ATAN2: lambda a, b: math.atan2(a, b),  # the angle of the point (x=b, y=a), in (-pi, pi]
    REMAINDER: lambda a, b: _remainder(a, b),
    FLOOR_DIVIDE: lambda a, b: _floor_divide(a, b),
}


@kernel
def _int_pow(a, b):
    """a ** b for integers, b >= 0, by squaring (wrapping as int64 arithmetic does). A called
    function, not inlined: numba's inliner trips over the loop inside the kernels' loops."""
    r = a - a + 1
    while b > 0:
        if b & 1:
            r *= a
        a *= a
        b >>= 1
    return r


# Integer operands give integers: numba gives a function one return type, and the float formulas'
# NaN and inf (x % 0.0, x // 0.0, a ** -1) would make every integer result a float64, which rounds
# products past 2**53 (int64 and wrapped int32 arithmetic must be exact). The op layer raises for
# integer division by zero, takes b >= 0 for powers (ops/elementwise.py _integer_pow), and
# computes DIV and ATAN2 in floats.
BINARY_FORMULAS_INT = dict(BINARY_FORMULAS)
BINARY_FORMULAS_INT.update({
    POW2: lambda a, b: _int_pow(a, b),
    REMAINDER: lambda a, b: a % b,
    FLOOR_DIVIDE: lambda a, b: a // b,
})


def binary_value(op, a, b):
    """a (op) b. Compiled, `op` must be a compile-time constant (``literally(op)`` in the kernel),
    and the formula is picked while numba types the kernel, as `unary_value` does (an ``if op ==
    ...`` chain over every op cost 1.2 s more to compile per kernel).

    Interpreted, Python's integers do not overflow: an integer result is wrapped to int64 here, as
    the compiled loop's int64 arithmetic wraps (and a power is taken mod 2**64, never in full)."""
    if type(a) is int and type(b) is int:
        v = pow(a, b, 1 << 64) if op == POW2 else BINARY_FORMULAS_INT[op](a, b)
        v &= 0xFFFFFFFFFFFFFFFF
        return v - (1 << 64) if v >= 1 << 63 else v
    return BINARY_FORMULAS[op](a, b)


@overload(binary_value, prefer_literal=True)
def _binary_value_jit(op, a, b):
    ints = isinstance(a, types.Integer) and isinstance(b, types.Integer)
    f = _formula("binary", BINARY_FORMULAS_INT if ints else BINARY_FORMULAS, op)
    return lambda op, a, b: f(a, b)


@inline
def _compare_value(op, a, b):
    if op == EQ:
        return a == b
    if op == NE:
        return a != b
    if op == LT:
        return a < b
    if op == LE:
        return a <= b
    if op == GT:
        return a > b
    if op == GE:
        return a >= b
    if op == AND:
        return (a != 0) and (b != 0)
    if op == OR:
        return (a != 0) or (b != 0)
    return (a != 0) != (b != 0)  # XOR


# ============================================================================ reference tier


@kernel
def unary_packed_reference(op, p1, p2, x, out, n):
    """out[i] = f(x[i]) for contiguous x and out of n elements."""
    literally(op)  # compiled once per op (see `_formulas`)
    for i in range(n):
        out[i] = unary_value(op, x[i], p1, p2)


@kernel
def unary_backward_reference(op, p1, p2, g, x, y, out, n):
    """out[i] = g[i] * f'(x[i]), given y = f(x); all contiguous, n elements."""
    literally(op)
    for i in range(n):
        out[i] = g[i] * unary_derivative(op, x[i], y[i], p1, p2)


@kernel
def unary(op, p1, p2, x, x_off, xs0, xs1, xs2, xs3, out, n0, n1, n2, n3):
    """out = f(x) elementwise; x a strided 4-d view, out contiguous (n0, n1, n2, n3)."""
    literally(op)
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                for i3 in range(n3):
                    out[o + i3] = unary_value(op, x[px + i3 * xs3], p1, p2)
                o += n3


@kernel
def binary_packed_reference(op, a, b, out, n):
    """out[i] = a[i] (op) b[i] for contiguous a, b, out of n elements."""
    literally(op)  # compiled once per op (see binary_value)
    for i in range(n):
        out[i] = binary_value(op, a[i], b[i])


@kernel
def binary(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (op) b with broadcasting by zero strides; out contiguous (n0, n1, n2, n3)."""
    literally(op)
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    out[o + i3] = binary_value(op, a[pa + i3 * as3], b[pb + i3 * bs3])
                o += n3


@kernel
def binary_scalar_packed_reference(op, a, s, reverse, out, n):
    """out[i] = a[i] (op) s, or s (op) a[i] when `reverse`; contiguous a and out of n elements."""
    literally(op)
    for i in range(n):
        if reverse:
            out[i] = binary_value(op, s, a[i])
        else:
            out[i] = binary_value(op, a[i], s)


@kernel
def binary_scalar(op, a, a_off, as0, as1, as2, as3, s, reverse, out, n0, n1, n2, n3):
    """out = a (op) s, or s (op) a when `reverse`; s a Python number (no 1-element buffer needed)."""
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
def compare(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (cmp) b as 0/1 bytes (bool tensor), broadcasting by zero strides."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    out[o + i3] = 1 if _compare_value(op, a[pa + i3 * as3], b[pb + i3 * bs3]) else 0
                o += n3


@kernel
def where(c, c_off, cs0, cs1, cs2, cs3, a, a_off, as0, as1, as2, as3,
          b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a where c else b (c a bool buffer), all three broadcast by zero strides."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pc = c_off + i0 * cs0 + i1 * cs1 + i2 * cs2
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    if c[pc + i3 * cs3]:
                        out[o + i3] = a[pa + i3 * as3]
                    else:
                        out[o + i3] = b[pb + i3 * bs3]
                o += n3


@kernel
def copy(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """Strided copy (and dtype conversion, when the buffers differ in type) from view x into view out.

    Used for `contiguous()`, `to(dtype)`, `cat`, and for writing a gradient into a slice of zeros."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = x[px + i3 * xs3]


@kernel
def to_int(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """Strided copy from a float view into an integer view, rounding toward zero (as a C cast)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = int(x[px + i3 * xs3])


# How `convert_int` / `convert_float` turn each element into the output's type (dtypes.py
# explains the narrow integer types). Two kernels, one per kind of input: numba types every branch.
TO_BOOL, TO_UINT8, TO_INT32 = range(3)


@inline
def _int_converted(mode, v):
    if mode == TO_BOOL:
        return 1 if v != 0 else 0
    if mode == TO_UINT8:                # the low 8 bits: 300 -> 44, -1 -> 255
        return v & 0xFF
    w = v & 0xFFFFFFFF                  # TO_INT32: the low 32 bits, as a signed number
    return w - 4294967296 if w >= 2147483648 else w


@inline
def _float_converted(mode, v):
    if mode == TO_BOOL:                 # any non-zero value (NaN too) is True
        return 1 if v != 0 else 0
    if mode == TO_UINT8:                # through int64 (NaN, out of its range: -2**63), low byte
        if v != v or v >= 9.2233720368547758e18 or v < -9.2233720368547758e18:
            return 0
        return int(v) & 0xFF
    if v != v or v >= 2147483648.0 or v < -2147483648.0:
        return -2147483648              # TO_INT32: out of range and NaN give -2**31 (PyTorch, x86)
    return int(v)


@kernel
def convert_int(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3,
                mode):
    """Strided copy of an integer or bool view into a bool, uint8 or int32 view, converting each
    element as PyTorch does (`mode`: TO_BOOL, TO_UINT8, TO_INT32). Wrapping is written out with
    masks, so it gives the same bits compiled and interpreted (where storing 300 into a byte
    array would raise OverflowError)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = _int_converted(mode, x[px + i3 * xs3])


@kernel
def convert_float(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3,
                  mode):
    """`convert_int` for a float32 / float64 view: truncated toward zero, then wrapped."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = _float_converted(mode, x[px + i3 * xs3])


@kernel
def fill(out, o_off, os0, os1, os2, os3, value, n0, n1, n2, n3):
    """Write `value` into every element of a strided view (`fill_`, `zero_`, masked writes)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = value


@kernel
def axpy(alpha, x, out, n):
    """out += alpha * x over contiguous buffers (the autograd engine's in-place gradient sums)."""
    for i in range(n):
        out[i] += alpha * x[i]


@kernel
def add_row_vector_reference(out, v, rows, n):
    """out[r, j] += v[j] for each of `rows` contiguous rows of n (a bias added to every row)."""
    for r in range(rows):
        for j in range(n):
            out[r * n + j] += v[j]


# ============================================================================ fast tier
# The reference loops, compiled once per op (literally) and fed contiguous rows as slices.


def normal_cdf(x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal CDF that GELU multiplies x by.

    math.erfc is a call into the C library for every element, which no loop around it can
    vectorise: GELU ran at ~5 ns per element, a quarter of a GPT training step. Compiled for
    float32 data this is instead `_normal_cdf_float32`, arithmetic LLVM turns into vector code;
    float64 (and interpreted) keeps the library's erfc."""
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


# The fast tier's table: GELU through the float32 normal CDF above, the rest as defined.
UNARY_FORMULAS_FAST = dict(UNARY_FORMULAS)
UNARY_FORMULAS_FAST[GELU] = (
    lambda x, p1, p2: x * normal_cdf(x),
    lambda x, y, p1, p2: normal_cdf(x) + x * _INV_SQRT_2PI * _exp(-0.5 * x * x))  # Phi + x phi
unary_value_fast, unary_derivative_fast = _formulas(UNARY_FORMULAS_FAST)


@kernel
def unary_packed_fast(op, p1, p2, x, out, n):
    literally(op)  # one compiled loop per op: its body is that op's formula, vectorised
    for i in range(n):
        out[i] = unary_value_fast(op, x[i], p1, p2)


@kernel
def unary_backward_fast(op, p1, p2, g, x, y, out, n):
    literally(op)
    for i in range(n):
        out[i] = g[i] * unary_derivative_fast(op, x[i], y[i], p1, p2)


@kernel
def binary_packed_fast(op, a, b, out, n):
    literally(op)
    for i in range(n):
        out[i] = binary_value(op, a[i], b[i])


@kernel
def binary_scalar_packed_fast(op, a, s, reverse, out, n):
    literally(op)
    if reverse:
        for i in range(n):
            out[i] = binary_value(op, s, a[i])
    else:
        for i in range(n):
            out[i] = binary_value(op, a[i], s)


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
def binary_fast(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out,
                n0, n1, n2, n3):
    """`binary`, where rows whose last dim is contiguous in both inputs (a bias added to every row),
    or contiguous in one and broadcast in the other (a per-channel bias added to an (N, C, H*W)
    image: 8x faster measured), are handed over as slices indexed from 0, whose loop vectorises."""
    literally(op)  # one compiled loop per op, as the packed kernels
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
def copy_same(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """`copy` between buffers of the same type: rows whose last dim is contiguous on both sides
    are copied as slices (a loop LLVM turns into vector moves), the rest element by element."""
    X, O = as_array(x), as_array(out)
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                if xs3 == 1 and os3 == 1:
                    src = X[px:px + n3]
                    dst = O[po:po + n3]
                    for i3 in range(n3):
                        dst[i3] = src[i3]
                else:
                    for i3 in range(n3):
                        out[po + i3 * os3] = x[px + i3 * xs3]


@kernel
def add_row_vector_fast(out, v, rows, n):
    O = as_array(out)
    V = as_array(v)
    for r in range(rows):
        row = O[r * n:(r + 1) * n]
        for j in range(n):
            row[j] += V[j]


# ============================================================================ the interface
@kernel
def bitwise(op, a, b, out, n):
    """out[i] = a[i] & b[i] (op 0), a[i] | b[i] (op 1), a[i] ^ b[i] (op 2), on integer or bool
    buffers of n elements (the caller broadcasts)."""
    for i in range(n):
        if op == 0:
            out[i] = a[i] & b[i]
        elif op == 1:
            out[i] = a[i] | b[i]
        else:
            out[i] = a[i] ^ b[i]


# What ops/ calls, by buffer typecode (see jit.by_typecode); packed maps are keyed (typecode, op).

_STRIDED = "T i i i i i T i i i i i i i i i"
register(
    globals(),
    reference=dict(
        UNARY_PACKED=by_typecode(unary_packed_reference, "L f f T T i"),
        UNARY_BACKWARD=by_typecode(unary_backward_reference, "L f f T T T T i"),
        BINARY_PACKED=by_typecode(binary_packed_reference, "L T T T i"),
        BINARY_SCALAR_PACKED=by_typecode(binary_scalar_packed_reference, "L T S b T i"),
        BINARY=by_typecode(binary, "L T i i i i i T i i i i i T i i i i"),
        COPY_SAME=by_typecode(copy, _STRIDED),
        ADD_ROW_VECTOR=by_typecode(add_row_vector_reference, "T T i i"),
    ),
    fast=dict(
        UNARY_PACKED=by_typecode(unary_packed_fast, "L f f T T i"),
        UNARY_BACKWARD=by_typecode(unary_backward_fast, "L f f T T T T i"),
        BINARY_PACKED=by_typecode(binary_packed_fast, "L T T T i"),
        BINARY_SCALAR_PACKED=by_typecode(binary_scalar_packed_fast, "L T S b T i"),
        BINARY=by_typecode(binary_fast, "L T i i i i i T i i i i i T i i i i"),
        COPY_SAME=by_typecode(copy_same, _STRIDED),
        ADD_ROW_VECTOR=by_typecode(add_row_vector_fast, "T T i i"),
    ),
)
# One version, plain loops, in both tiers:
UNARY = by_typecode(unary, "L f f T i i i i i T i i i i")
BINARY_SCALAR = by_typecode(binary_scalar, "L T i i i i i S b T i i i i")
COMPARE = by_typecode(compare, "i T i i i i i T i i i i i @B i i i i")
BITWISE = by_typecode(bitwise, "i T T T i")
WHERE = by_typecode(where, "@B i i i i i T i i i i i T i i i i i T i i i i")
AXPY = by_typecode(axpy, "f T T i")
