"""Ops written as compositions of other ops: their gradient is autograd's, through the pieces.

    silu(x)            x * sigmoid(x)
    leaky_relu(x, a)   x if x > 0 else a x
    elu(x, a)          x if x > 0 else a (exp(x) - 1)        exp of min(x, 0): no inf * 0
    softplus(x, b, t)  log(1 + exp(b x)) / b, x where b x > t   (stable for large b x)
    mish(x)            x * tanh(softplus(x))
    hardtanh(x, lo, hi), relu6(x)                             clamp
    logsigmoid(x)      -softplus(-x)
    l1_loss            |x - y|             smooth_l1_loss   0.5 d^2 / beta if |d| < beta, else |d| - beta/2
    huber_loss         0.5 d^2 if |d| < delta, else delta (|d| - delta/2)
    kl_div(x, t)       t (log t - x), 0 where t = 0 (x holds log-probabilities)
    outer(a, b)        a[:, None] * b[None, :]      dot(a, b)   sum(a * b) of two 1-D tensors

A fused kernel would be faster; these are short and exact, and gradcheck holds them to their
formulas (tests/test_composite.py).
"""
from ..tensor import Tensor
from ._launch import check_tensor
from .elementwise import (abs, clamp, exp, gt, log, lt, mul, neg, sigmoid, sub,  # noqa: A004
                          tanh, where)
from .reduce import mean, sum  # noqa: A004

_REDUCTIONS = ("none", "mean", "sum")


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
    return clamp(input, min_val, max_val)


def relu6(input, inplace=False):  # noqa: A002
    return clamp(input, 0.0, 6.0)


def logsigmoid(input):  # noqa: A002
    return neg(softplus(neg(input)))


def _reduce(op, loss, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if reduction == "none":
        return loss
    return sum(loss) if reduction == "sum" else mean(loss)


def _diff(op, input, target):
    check_tensor(op, input)
    check_tensor(op, target)
    return sub(input, target)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    return _reduce("l1_loss", abs(_diff("l1_loss", input, target)), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                   reduction="mean", beta=1.0):
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = _diff("smooth_l1_loss", input, target)
    a = abs(d)
    if beta == 0:
        return _reduce("smooth_l1_loss", a, reduction)
    loss = where(lt(a, beta), mul(mul(d, d), 0.5 / beta), sub(a, 0.5 * beta))
    return _reduce("smooth_l1_loss", loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = _diff("huber_loss", input, target)
    a = abs(d)
    loss = where(lt(a, delta), mul(mul(d, d), 0.5), mul(sub(a, 0.5 * delta), delta))
    return _reduce("huber_loss", loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
           log_target=False):
    """KL(target || exp(input)) pointwise: input holds log-probabilities. reduction='batchmean'
    divides the sum by the batch size (the mathematically right mean; 'mean' averages over every
    element, as PyTorch does)."""
    check_tensor("kl_div", input)
    check_tensor("kl_div", target)
    if log_target:
        loss = mul(exp(target), sub(target, input))
    else:
        positive = gt(target, 0.0)
        safe = where(positive, target, 1.0)             # log(1) = 0 where target is 0
        loss = sub(mul(target, log(safe)), mul(target, input))
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        return mul(sum(loss), 1.0 / n)
    return _reduce("kl_div", loss, reduction)


def outer(input, vec2):  # noqa: A002
    """(n,) x (m,) -> (n, m): input[i] * vec2[j]."""
    for name, t in (("input", input), ("vec2", vec2)):
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise RuntimeError(f"outer: {name} must be a 1-D tensor, got "
                               f"{getattr(t, 'shape', type(t).__name__)}")
    return mul(input.reshape(-1, 1), vec2.reshape(1, -1))


def dot(input, tensor):  # noqa: A002
    """sum_i input[i] * tensor[i] of two 1-D tensors of the same length and dtype."""
    for t in (input, tensor):
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise RuntimeError(f"dot: 1D tensors expected, but got "
                               f"{getattr(t, 'ndim', type(t).__name__)}D tensor")
    if input.shape != tensor.shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{tensor.shape[0]}] to have the same number of elements")
    if input.dtype is not tensor.dtype:
        raise RuntimeError(f"dot: expected both vectors to have same dtype, but found "
                           f"{input.dtype} and {tensor.dtype}")
    return sum(mul(input, tensor))

