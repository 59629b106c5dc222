"""Axis ticks a person would choose: steps of 1, 2 or 5 times a power of ten.

For a range [lo, hi] and about n ticks the raw step is (hi - lo) / n; rounding it up to the next of
1, 2, 5, 10, 20, 50, ... gives ticks like 0, 0.2, 0.4 rather than 0, 0.1837, 0.3674.
"""
import math


def nice_step(span, n=5):
    """The 1-2-5 step closest to span / n (closest by ratio: 1.2 -> 1, 1.6 -> 2)."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / n
    power = 10.0 ** math.floor(math.log10(raw))
    return min((m * power for m in (1, 2, 5, 10)), key=lambda step: abs(math.log(step / raw)))


def nice_ticks(lo, hi, n=5):
    """Multiples of a 1-2-5 step inside [lo, hi] (both ends included when they are multiples)."""
    if hi < lo:
        lo, hi = hi, lo
    step = nice_step(hi - lo, n)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    if last - first < 1 and hi > lo and n < 1000:  # a lone tick shows no scale: finer steps
        return nice_ticks(lo, hi, 2 * n)
    # round away binary noise (0.30000000000000004) so labels and comparisons stay clean
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(k * step, digits) for k in range(first, last + 1)]


def nice_range(lo, hi, n=5):
    """[lo, hi] widened outwards to whole steps, so a chart's axis starts and ends on a tick."""
    if hi == lo:  # a flat series still needs a visible axis
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    step = nice_step(hi - lo, n)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step


def log_ticks(lo, hi):
    """Ticks for a log axis on [lo, hi] (both > 0): powers of ten, with 2 and 5 when few decades."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mantissas = (1, 2, 5) if last - first <= 3 else (1,)
    ticks = []
    for e in range(first, last + 1):
        for m in mantissas:
            v = m * 10.0 ** e
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                ticks.append(v)
    if len(ticks) < 2 and mantissas == (1, 2, 5):  # less than one decade: fall back to linear
        return nice_ticks(lo, hi, 4)
    return ticks


def format_ticks(values, trim=False):
    """Labels with the same number of decimals, just enough to tell neighbours apart.

    trim=True drops trailing zeros label by label (a log axis: 0.2, 0.5, 1, 2)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return [str(v) for v in values]
    big = max(abs(v) for v in finite)
    nonzero = [abs(v) for v in finite if v != 0]
    if big >= 1e5 or (nonzero and big < 1e-3):
        return [_short_exp(v) for v in values]
    gaps = [abs(b - a) for a, b in zip(finite, finite[1:]) if b != a]
    finest = min(gaps) if gaps else (min(nonzero) if nonzero else 1.0)
    decimals = 0
    while decimals < 6 and finest * 10 ** decimals < 0.999:
        decimals += 1
    if trim:
        return [_trim(f"{v:.{decimals}f}") for v in values]
    return [f"{v:.{decimals}f}" for v in values]


def _trim(s):
    return s.rstrip("0").rstrip(".") if "." in s else s


def _short_exp(v):
    """1e-05, 2.5e+06 -> '1e-5', '2.5e6'."""
    mantissa, exp = f"{v:.2g}".split("e") if "e" in f"{v:.2g}" else (f"{v:.2g}", "0")
    return f"{mantissa}e{int(exp)}" if exp != "0" else mantissa


def format_value(v, digits=2):
    """A short cell label: 0.83, 12, 3.1e-5 -- at most about five characters."""
    if v != v:
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e4 or a < 10 ** -digits:
        return _short_exp(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}" if digits > 1 else f"{v:.0f}"
    return f"{v:.{digits}f}"


def value_formatter(values):
    """One format for every cell of a map, so that a column of numbers lines up: all integers
    -> '12'; otherwise 2 decimals below 10, 1 below 100, none above; tiny or huge -> '3.1e-05'."""
    finite = [abs(v) for v in values if math.isfinite(v)]
    big = max(finite, default=0.0)
    if all(v == int(v) for v in finite) and big < 1e5:
        spec = ".0f"
    elif big >= 1e4 or big < 1e-2:
        spec = ".1e"
    else:
        spec = ".2f" if big < 10 else ".1f" if big < 100 else ".0f"

    def fmt(v):
        return format(v, spec) if math.isfinite(v) else format_value(v)
    return fmt
