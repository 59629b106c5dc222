"""exp(x) in plain arithmetic, so that loops calling it vectorise (8 float64 lanes per AVX-512 op).

numba compiles `math.exp` to a call into the C library, one element at a time: LLVM cannot turn a
loop around an opaque call into vector code, and softmax, sigmoid and tanh spend nearly all their
time there. Written as arithmetic, the same loop runs several times faster (measured:
benchmarks/RESULTS.md, exp):

    exp(x) = 2^k * exp(r),   k = round(x / ln 2),   r = x - k ln 2,   |r| <= ln(2) / 2

1. k: adding 1.5 * 2^52 to x / ln 2 rounds it to an integer and leaves that integer in the low bits
   of the sum's mantissa, so k is read from the float's bits (no float->int conversion, which
   some CPUs cannot vectorise); subtracting the constant again gives k as a float.
2. r: x - k ln 2, with ln 2 split in a high part (exact when multiplied by k) and a low part, so
   that r keeps full precision (Cody and Waite's range reduction).
3. exp(r): its Taylor series to r^13 / 13!, evaluated by Horner's rule; the first omitted term is
   below 2e-16 of the result for |r| <= 0.347.
4. 2^k: a float64 whose exponent field is k + 1023 and whose mantissa is 0, built from its bits.
   k is split in two halves, 2^k = 2^k1 * 2^k2, so that results down to the smallest subnormal
   (x ~ -745) come out right instead of flushing to zero.

Result: within ~2 ulp of math.exp for every float64 (tests/fast/test_exp_softmax.py compares
them), inf above 709.78, 0 below -745.13, NaN for NaN.

`exp_float32` (at the end) is the same plan in float32 arithmetic, for float32 data: twice the
lanes per vector instruction.

Step 1 and 4 need the bits of a float and the float of given bits. Compiled, those are one LLVM
`bitcast` each (an `@intrinsic`); interpreted (NUMBA_DISABLE_JIT=1), the plain-Python twins below
do the same with `struct`, so both modes compute the same thing, and the tests check that they do.
"""
import math
import struct

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .jit import inline


def float_bits(x):
    """The IEEE-754 bits of the float64 x, as a signed int64."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def bits_float(i):
    """The float64 whose IEEE-754 bits are the int64 i."""
    return struct.unpack("<d", struct.pack("<q", i))[0]


@intrinsic
def _float_bits(typingctx, x):
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.float64)
        return builder.bitcast(value, context.get_value_type(types.int64))

    return types.int64(x), codegen


@intrinsic
def _bits_float(typingctx, i):
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.bitcast(value, context.get_value_type(types.float64))

    return types.float64(i), codegen


@overload(float_bits)
def _float_bits_jit(x):
    if isinstance(x, types.Float):
        return lambda x: _float_bits(x)


@overload(bits_float)
def _bits_float_jit(i):
    if isinstance(i, types.Integer):
        return lambda i: _bits_float(i)


_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 rounded to 32 significant bits: k * _LN2_HI is exact
_LN2_LO = 1.9082149292705877e-10  # ln 2 - _LN2_HI
_SHIFTER = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFTER rounds x to an integer (|x| < 2^51)
_SHIFTER_BITS = 0x4338000000000000  # the bits of _SHIFTER; its integer part sits in the low bits
_X_MAX = 709.782712893384  # exp(x) overflows above (log of the largest float64)
_X_MIN = -745.1332191019412  # exp(x) is 0 below (half the smallest subnormal)


@inline
def exp(x):
    """e^x for a float64 x (a float32 is promoted), in arithmetic that vectorises; see above."""
    if x != x:
        return x
    if x > _X_MAX:
        return math.inf
    if x < _X_MIN:
        return 0.0
    kf = x * _LOG2E + _SHIFTER
    k = float_bits(kf) - _SHIFTER_BITS  # round(x / ln 2), an int64 in [-1075, 1024]
    kf = kf - _SHIFTER
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!, then Horner's rule down to 1 + r
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    k1 = k >> 1  # 2^k = 2^k1 * 2^k2, each factor a normal float64 even when 2^k is not
    k2 = k - k1
    return p * bits_float((k1 + 1023) << 52) * bits_float((k2 + 1023) << 52)


_SIGN_OFF = 0x7FFFFFFFFFFFFFFF


@inline
def order_key(x):
    """An int64 that orders like the float x: max over keys = the key of the max of the floats.

    Why: LLVM vectorises a running maximum of integers, but not of floats (whose NaN rules it
    must respect). The bits of a positive float already order like the float; for a negative one
    (sign bit set) flipping the other 63 bits reverses their order, as it must. `from_order_key`
    undoes it. (NaN orders above +inf or below -inf, by its sign bit.)"""
    b = float_bits(x)
    return b ^ ((b >> 63) & _SIGN_OFF)


@inline
def from_order_key(k):
    """The float64 whose order_key is k."""
    return bits_float(k ^ ((k >> 63) & _SIGN_OFF))


# --------------------------------------------------------------------------- float32 arithmetic

def float32_bits(x):
    """The IEEE-754 bits of x rounded to float32, as a signed int32."""
    return struct.unpack("<i", struct.pack("<f", x))[0]


def bits_float32(i):
    """The float32 (as a Python float) whose IEEE-754 bits are the int32 i (wrapped to 32 bits,
    as the compiled cast does: e.g. `2^k` built from a NaN's k)."""
    return struct.unpack("<f", struct.pack("<I", i & 0xFFFFFFFF))[0]


@intrinsic
def _float32_bits(typingctx, x):
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.float32)
        return builder.bitcast(value, context.get_value_type(types.int32))

    return types.int32(x), codegen


@intrinsic
def _bits_float32(typingctx, i):
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int32)
        return builder.bitcast(value, context.get_value_type(types.float32))

    return types.float32(i), codegen


@overload(float32_bits)
def _float32_bits_jit(x):
    if isinstance(x, types.Float):
        return lambda x: _float32_bits(x)


@overload(bits_float32)
def _bits_float32_jit(i):
    if isinstance(i, types.Integer):
        return lambda i: _bits_float32(i)


# f32(c): c as a float32 constant in compiled code, so that float32 arithmetic stays float32 (a
# plain literal is a float64 and would widen it); interpreted, Python floats are float64 anyway.
f32 = float if numba.config.DISABLE_JIT else numba.float32


@inline
def exp_float32(x):
    """e^x in float32 arithmetic, for float32 data: 16 lanes per AVX-512 instruction instead of
    exp's 8. The same plan as `exp` at float32 precision (series to r^6 / 6!, error ~1 ulp of
    float32), with results below ~2e-38 (x < -86.6, near the bottom of float32's normal range)
    flushed to 0. x and the result are float32 in compiled code (float64 holding float32-accurate
    values when interpreted)."""
    if x > f32(88.72):
        return f32(math.inf)
    if x < f32(-86.6):
        return f32(0.0)
    k, p = _exp_float32_parts(x)
    return p * bits_float32((k + 126) << 23) * f32(2.0)  # 2^(k-1) * 2: k = 128 stays finite


@inline
def exp_float32_nonpositive(x):
    """`exp_float32` without its overflow test, for x below 88.0 (softmax's x - max <= 0,
    attention's s - lse, and s - m <= 16 in flash.py's lazy rescaling), so that 2^k is one
    float's bits (k <= 127): no overflow test, no "* 2" and no NaN test make softmax's rows faster
    (measured: benchmarks/RESULTS.md, exp_float32_nonpositive). (A NaN needs no test: it fails
    `x < -86.6` and stays NaN through the series.)"""
    if x < f32(-86.6):
        return f32(0.0)
    k, p = _exp_float32_parts(x)
    return p * bits_float32((k + 127) << 23)


@inline
def _exp_float32_parts(x):
    """(k, p) with e^x = 2^k * p: k = round(x / ln 2) and p = e^r, r = x - k ln 2 in
    [-ln 2 / 2, ln 2 / 2], by its series to r^6 / 6!."""
    t = float32_bits(x * f32(1.4426950408889634) + f32(12582912.0))  # 1.5 * 2^23: as in exp
    k = t - 0x4B400000                           # round(x / ln 2), read from the float's bits
    kf = bits_float32(t) - f32(12582912.0)       # the same as a float, without converting k:
    # numba's integers are int64, and AVX2 has no vector int64 -> float conversion (AVX-512 has),
    # so f32(k) would make this loop scalar on AVX2 CPUs (benchmarks/RESULTS.md, exp_float32)
    r = (x - kf * f32(0.693359375)) - kf * f32(-2.12194440e-4)  # ln 2 = hi + lo, hi exact * k
    p = f32(1.0 / 720.0)
    p = p * r + f32(1.0 / 120.0)
    p = p * r + f32(1.0 / 24.0)
    p = p * r + f32(1.0 / 6.0)
    p = p * r + f32(0.5)
    p = p * r + f32(1.0)
    p = p * r + f32(1.0)
    return k, p


@inline
def tanh_float32(x):
    """tanh(x) in float32 arithmetic, for float32 data (twice the lanes of float64, and no
    conversions). |x| < 0.625: x + x^3 P(x^2), an odd minimax polynomial (the coefficients of
    Cephes' tanhf), which keeps the relative precision near 0 that the other form loses; above:
    1 - 2 / (e^{2|x|} + 1) with x's sign (e^{2|x|} = inf gives 1). Error within ~2 ulp of float32;
    NaN stays NaN. Both forms are computed and one is selected, so loops over it vectorise."""
    ax = abs(x)
    z = x * x
    p = f32(-5.70498872745e-3)
    p = p * z + f32(2.06390887954e-2)
    p = p * z + f32(-5.37397155531e-2)
    p = p * z + f32(1.33314422036e-1)
    p = p * z + f32(-3.33332819422e-1)
    small = p * z * x + x
    big = f32(1.0) - f32(2.0) / (exp_float32(ax + ax) + f32(1.0))
    if x < f32(0.0):
        big = -big
    return small if ax < f32(0.625) else big


@inline
def sigmoid_float32(x):
    """1 / (1 + e^-x) in float32 arithmetic, for float32 data (e^-x = inf gives 0, 0 gives 1)."""
    return f32(1.0) / (f32(1.0) + exp_float32(-x))


def flip32(b):
    """b ^ ((b >> 31) & 0x7FFFFFFF) for an int32 b: the other 31 bits flipped when the sign bit is
    set. Maps float32 bits to order keys and back (it is its own inverse).

    Compiled, it is LLVM's 32-bit integer ops (`_flip32`): numba computes with int64 whatever the
    operands' width, and AVX2 has no 64-bit integer maximum, so the same formula in numba ran a
    running maximum of keys 4 lanes at a time through compare-and-blend (vpcmpgtq)."""
    return b ^ ((b >> 31) & 0x7FFFFFFF)


@intrinsic
def _flip32(typingctx, b):
    if not isinstance(b, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i32t = ir.IntType(32)
        b = context.cast(builder, args[0], signature.args[0], types.int32)
        sign = builder.ashr(b, ir.Constant(i32t, 31))
        return builder.xor(b, builder.and_(sign, ir.Constant(i32t, 0x7FFFFFFF)))

    return types.int32(b), codegen


@overload(flip32)
def _flip32_jit(b):
    if isinstance(b, types.Integer):
        return lambda b: _flip32(b)


@inline
def order_key32(x):
    """`order_key` for float32 data: an int32 that orders like the float32 x, so that a running
    maximum over a float32 row vectorises with 8 lanes per AVX2 instruction (16 with AVX-512)
    instead of 4 (8): float32_bits, flip32 and the maximum all stay 32-bit."""
    return flip32(float32_bits(x))


@inline
def from_order_key32(k):
    """The float32 whose order_key32 is k (a Python float when interpreted)."""
    return bits_float32(flip32(k))


# --------------------------------------------------------------------------- one loop, either width
# A row loop written once with these four runs in its row's own precision: for a float32 row the
# float32 functions above (32-bit lanes, twice as many per vector), for a float64 row the float64
# ones; numba picks by type when it compiles. Interpreted, the float64 versions serve both.


def like(value, row):
    """value as a number of row's element type: a float32 for a float32 row (so that arithmetic
    with it stays float32), a float64 otherwise."""
    return float(value)


def exp_below_88(x):
    """e^x for x < 88, in x's precision: `exp_float32_nonpositive` for a float32, `exp` for a
    float64."""
    return exp(x)


def row_key(x):
    """`order_key32` of a float32, `order_key` of a float64."""
    return order_key(x)


def from_row_key(k):
    """The float whose `row_key` is k (int32: float32, int64: float64)."""
    return from_order_key(k)


@overload(like)
def _like_jit(value, row):
    if isinstance(row, types.Array) and row.dtype == types.float32:
        return lambda value, row: numba.float32(value)
    return lambda value, row: float(value)


@overload(exp_below_88)
def _exp_below_88_jit(x):
    if x == types.float32:
        return lambda x: exp_float32_nonpositive(x)
    return lambda x: exp(x)


@overload(row_key)
def _row_key_jit(x):
    if x == types.float32:
        return lambda x: order_key32(x)
    return lambda x: order_key(x)


@overload(from_row_key)
def _from_row_key_jit(k):
    if isinstance(k, types.Integer) and k.bitwidth == 32:
        return lambda k: from_order_key32(k)
    return lambda k: from_order_key(k)
