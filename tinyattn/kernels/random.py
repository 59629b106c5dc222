"""Counter-based random numbers: element i of a draw is a hash of (i, key).

A draw of n numbers needs no sequential state, so the kernel is one simple loop and the result does
not depend on how it is split up. The generator (tinyattn/random.py) hands each draw a fresh key
derived from the seed and a call counter; `manual_seed(n)` therefore makes every run repeatable.

`_hash32` is a 32-bit integer hash (xor-shift / multiply rounds, a bijection on [0, 2**32)). Every
intermediate stays below 2**63, so it gives the same numbers compiled (int64 arithmetic) and
interpreted (Python ints) -- the NUMBA_DISABLE_JIT=1 run reproduces the compiled one exactly.
"""
import math

from . import kernel

__all__ = ["uniform", "normal", "randint", "bernoulli_scale", "dropout_apply", "randperm",
           "multinomial"]

_M32 = 0xFFFFFFFF
_TWO_PI = 2.0 * math.pi


@kernel
def _hash32(x):
    """A 32-bit integer hash of x in [0, 2**32). tinyattn/random.py derives the keys with the
    same function written in Python (a test holds the two equal)."""
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    return (x >> 16) ^ x


@kernel
def _bits(i, k1, k2):
    """32 random bits for element i of the stream keyed (k1, k2)."""
    return _hash32((_hash32((i & _M32) ^ k1) + k2) & _M32)


@kernel
def _unit(i, k1, k2):
    """A float64 uniform in [0, 1) with 53 random bits, from two 32-bit draws."""
    hi = _bits(2 * i, k1, k2) >> 5  # 27 bits
    lo = _bits(2 * i + 1, k1, k2) >> 6  # 26 bits
    return (hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0)


@kernel
def uniform(out, n, k1, k2, low, high, single):
    """out[i] ~ U[low, high); `single` draws 24-bit floats so that float32 never rounds up to high."""
    span = high - low
    for i in range(n):
        if single:
            u = (_bits(i, k1, k2) >> 8) * (1.0 / 16777216.0)
        else:
            u = _unit(i, k1, k2)
        out[i] = low + span * u


@kernel
def normal(out, n, k1, k2, mean, std):
    """out[i] ~ N(mean, std**2) by the Box-Muller transform of two uniforms."""
    for i in range(n):
        u1 = _unit(2 * i, k1, k2)
        u2 = _unit(2 * i + 1, k1, k2)
        r = math.sqrt(-2.0 * math.log(1.0 - u1))  # 1 - u1 is in (0, 1]: log is finite
        out[i] = mean + std * r * math.cos(_TWO_PI * u2)


@kernel
def randint(out, n, k1, k2, low, high):
    """out[i] uniform on the integers low <= v < high."""
    span = high - low
    for i in range(n):
        v = int(_unit(i, k1, k2) * span)
        out[i] = low + (v if v < span else span - 1)


@kernel
def bernoulli_scale(out, n, k1, k2, p, scale):
    """out[i] = scale with probability 1 - p, else 0 (the inverted-dropout mask)."""
    for i in range(n):
        out[i] = 0.0 if (_bits(i, k1, k2) >> 8) * (1.0 / 16777216.0) < p else scale


@kernel
def dropout_apply(x, out, n, k1, k2, p, scale):
    """out[i] = x[i] * m[i], with m the mask bernoulli_scale draws for the same keys (the same
    test, element by element), so dropout needs no mask tensor: backward redraws it. `scale`
    comes rounded to x's dtype, as it would be stored in a mask of that dtype."""
    for i in range(n):
        out[i] = x[i] * (0.0 if (_bits(i, k1, k2) >> 8) * (1.0 / 16777216.0) < p else scale)


@kernel
def randperm(out, n, k1, k2):
    """A uniformly random permutation of 0..n-1 (Fisher-Yates, swapping from the end)."""
    for i in range(n):
        out[i] = i
    for i in range(n - 1, 0, -1):
        j = int(_unit(i, k1, k2) * (i + 1))
        if j > i:
            j = i
        t = out[i]
        out[i] = out[j]
        out[j] = t


@kernel
def multinomial(w, rows, n, draws, replacement, out, k1, k2, left):
    """out[r, s] = category i drawn with probability w[r, i] / sum_i w[r, i] (inverse of the
    cumulative sum at a uniform u). Without replacement a drawn category's weight is set to 0 in
    `left` (a scratch copy of the row) before the next draw. The caller checks that the weights
    are finite, >= 0, and that enough of them are positive."""
    for r in range(rows):
        for i in range(n):
            left[i] = w[r * n + i]
        for s in range(draws):
            total = 0.0
            for i in range(n):
                total += left[i]
            u = _unit(r * draws + s, k1, k2) * total
            pick = -1
            acc = 0.0
            for i in range(n):
                acc += left[i]
                if left[i] > 0.0:
                    pick = i          # the last positive category so far (rounding guard)
                    if u < acc:
                        break
            out[r * draws + s] = pick
            if not replacement:
                left[pick] = 0.0
