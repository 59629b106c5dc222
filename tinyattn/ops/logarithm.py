"""Logarithms in base 2 and 10: log_b(x) = log(x) / log(b), composed of log and a product (the
gradient is log's, scaled: d log_b(x) = dx / (x log b))."""
import math

from .arithmetic import mul
from .unary import log


def log2(input):  # noqa: A002
    return mul(log(input), 1.0 / math.log(2.0))


def log10(input):  # noqa: A002
    return mul(log(input), 1.0 / math.log(10.0))
