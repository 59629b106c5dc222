"""Regression: kernels/reduce.py `sumsq_all` squares in float64 also for float32 buffers.

numba's `float(x)` keeps a float32 a float32, so the squares were rounded to float32 before the
float64 accumulation (and compiled results differed from NUMBA_DISABLE_JIT=1 ones)."""
from array import array

from tinyattn.fast.reduce import sumsq_all


def test_sumsq_all_squares_float32_values_in_float64():
    x = 1.0 + 2.0 ** -12  # exact in float32; its square needs 24 bits after the point
    buf = array("f", [x, x])
    assert sumsq_all(buf, 2) == 2 * (1.0 + 2.0 ** -11 + 2.0 ** -24)
