"""Activation functions composed of elementwise ops (F.silu, F.elu, ...): their gradients are
autograd's, through the pieces. (relu, gelu, sigmoid and tanh have kernels of their own:
ops/unary.py.)

    silu(x)              x * sigmoid(x)
    leaky_relu(x, a)     x if x > 0 else a x
    elu(x, a)            x if x > 0 else a (exp(x) - 1)        exp of min(x, 0): no inf * 0
    softplus(x, b, t)    log(1 + exp(b x)) / b, x where b x > t   (stable for large b x)
    mish(x)              x * tanh(softplus(x))
    hardtanh(x, lo, hi)  clamp(x, lo, hi);   relu6(x) = hardtanh(x, 0, 6)
    logsigmoid(x)        -softplus(-x)
    glu(x, dim)          a * sigmoid(b), a and b the two halves of x along dim

A fused kernel would be faster; these are short and exact, and gradcheck holds them to their
formulas.
"""
import builtins

from .. import dtypes as _dt
from ..storage import TensorBase as Tensor
from .arithmetic import clamp, mul, sub
from .compare import gt, where
from .unary import exp, log, neg, sigmoid, tanh
from .layout import chunk


def silu(input, inplace=False):  # noqa: A002
    return mul(input, sigmoid(input))


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return where(gt(input, 0.0), input, mul(input, negative_slope))


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    negative = mul(sub(exp(clamp(input, max=0.0)), 1.0), alpha)
    return where(gt(input, 0.0), input, negative)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    bx = mul(input, beta)
    soft = mul(log(exp(clamp(bx, max=threshold)) + 1.0), 1.0 / beta)
    return where(gt(bx, threshold), input, soft)


def mish(input, inplace=False):  # noqa: A002
    return mul(input, tanh(softplus(input)))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val ({min_val} > "
                         f"{max_val})")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # integers keep their dtype: the limits are truncated to ints (PyTorch)
        if input.dtype is _dt.uint8 and builtins.min(min_val, max_val) < 0:
            raise ValueError("hardtanh: cannot do hardtanh on an unsigned type (uint8) with "
                             "negative limits")
        min_val, max_val = int(min_val), int(max_val)
    return clamp(input, min_val, max_val)


def relu6(input, inplace=False):  # noqa: A002
    return hardtanh(input, 0.0, 6.0)


def logsigmoid(input):  # noqa: A002
    return neg(softplus(neg(input)))


def glu(input, dim=-1):  # noqa: A002
    """a * sigmoid(b), with a and b the two halves of input along dim."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    a, b = chunk(input, 2, dim)
    return mul(a, sigmoid(b))
