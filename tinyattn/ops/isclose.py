"""Are two tensors equal, or close? isclose (elementwise), allclose and equal (one bool), composed
of the comparison ops.

    isclose(a, b)   |a - b| <= atol + rtol |b|, elementwise (equal infinities are close; NaN only
                    with equal_nan=True)
"""
from .arithmetic import sub
from .compare import eq, le, logical_and, logical_or
from .unary import abs, isnan  # noqa: A004


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol |other| elementwise (equal infinities are close)."""
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be greater than or equal to zero, got "
                           f"rtol={rtol}, atol={atol}")
    if input.dtype.name == "bool" or other.dtype.name == "bool":
        return eq(input, other)
    close = le(abs(sub(input, other)), abs(other) * rtol + atol)
    close = logical_or(close, eq(input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):  # noqa: A002
    """True when both have the same shape and the same elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all().item())
