"""Losses (re-exported by nn/functional.py as F.cross_entropy, ...), with PyTorch's semantics.

    CrossEntropyRows   loss_i = logsumexp(x_i) - x_i[t_i] (+ label smoothing), fused per row
                       dx_i = softmax(x_i) - onehot(t_i), times the upstream gradient and weight
    NLLRows            loss_i = -x_i[t_i]
    BCEWithLogits      loss = max(x, 0) - x t + log(1 + exp(-|x|)), stable for any logit

    cross_entropy   fused log-softmax + NLL (one kernel pass per row), class-index or probability
                    targets, class weights, ignore_index, label smoothing
    nll_loss        for inputs that are already log-probabilities
    binary_cross_entropy_with_logits   stable for any logit, pos_weight
    mse_loss        mean squared error

Composed of elementwise ops (their gradients are autograd's, through the pieces):

    l1_loss         |x - y|
    smooth_l1_loss  0.5 d^2 / beta if |d| < beta, else |d| - beta/2      (d = x - y)
    huber_loss      0.5 d^2 if |d| < delta, else delta (|d| - delta/2)
    kl_div(x, t)    t (log t - x), 0 where t = 0 (x holds log-probabilities)
    binary_cross_entropy   -(t log x + (1 - t) log(1 - x)), each log clamped at -100

Shapes, as in PyTorch: input (N, C), (C,) or (N, C, d1, ..., dk) -- the class dim is dim 1 (dim 0
for an unbatched (C,) input) -- and class-index target (N,), () or (N, d1, ..., dk) of int64.

reduction='mean' with class weights divides by the sum of the weights of the targets that are not
ignored, not by the number of targets: loss = sum_i w_{t_i} l_i / sum_i w_{t_i} (PyTorch's rule). If
every target is ignored that is 0 / 0 = nan, as in PyTorch.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file (kernels: kernels/loss.py).
"""
import math
from array import array

from .. import dtypes as _dt
from ..autograd import Function
from .. import backend
from ..storage import TensorBase as Tensor, _empty, _make, _zeros
from ._launch import check_tensor, copy, packed
from ._recorded import composed
from .arithmetic import add, clamp, mul, sub
from .unary import exp, log, neg
from .indexing import movedim_back, movedim_front
from .layout import contiguous, expand, reshape
from .reduce import mean, sum
from .softmax import log_softmax
from .compare import lt, ne, where
from .convert import to_dtype

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(op, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _rows_last(op, input, target):
    """Move the class dim last and flatten: input -> (M, C) packed, target -> (M,) packed int64.

    Also returns the shape of the unreduced loss (target's shape)."""
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{op}: input and target must be Tensors")
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have a class dimension, got a 0-d tensor")
    if input.ndim == 1:  # unbatched (C,) with a 0-d target
        expected = ()
        rows = reshape(input, (1, input.shape[0]))
    else:
        expected = (input.shape[0],) + tuple(input.shape[2:])
        moved = movedim_back(movedim_front(input, 1), input.ndim - 1) if input.ndim > 2 \
            else input
        rows = reshape(moved, (-1, input.shape[1]))
    if tuple(target.shape) != expected:
        raise ValueError(f"{op}: expected a target of shape {expected} for an input of shape "
                         f"{tuple(input.shape)} (class dim {1 if input.ndim > 1 else 0}), got "
                         f"{tuple(target.shape)}")
    if target.dtype is _dt.uint8:    # PyTorch takes Long or Byte class indices
        target = target.long()
    if target.dtype is not _dt.int64:
        raise TypeError(f"{op}: class-index targets must be int64 (or uint8), got {target.dtype}")
    return contiguous(rows), packed(reshape(target, (-1,))), expected


def _weight_buffer(op, weight, C, dtype):
    """(buffer, has_weight): the class weights as a buffer of the logits' dtype (a 1-element dummy
    when there are none, so the kernel is compiled for few argument types)."""
    if weight is None:
        return array(dtype.typecode, [1.0]), False
    if not isinstance(weight, Tensor) or tuple(weight.shape) != (C,):
        got = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"{op}: weight must be a tensor of shape ({C},), one per class, got {got}")
    return copy(weight.detach(), dtype)._data, True


def _raise_bad_target(op, targets, bad, C):
    value = targets._data[bad]
    raise IndexError(f"{op}: target {value} is out of bounds for {C} classes (expected 0 <= target "
                     f"< {C}, or ignore_index)")


class CrossEntropyRows(Function):
    """Per-row cross-entropy of logits x (M, C) against class indices (M,): see kernels/loss.py for
    the formula and its gradient. Returns the (M,) unreduced losses; total weight goes in `stats`."""

    op_name = "CrossEntropy"

    @staticmethod
    def forward(ctx, x, targets, weight, has_weight, ignore_index, eps, stats):
        M, C = x.shape
        losses = _empty((M,), x.dtype)
        lse = _empty((M,), _dt.float64)
        backend.loss.cross_entropy_forward(x._data, targets._data, weight, has_weight,
                                           ignore_index, eps, M, C, losses._data, lse._data, stats)
        ctx.lse = lse
        return losses

    @staticmethod
    def backward(ctx, g):
        x, targets, weight, has_weight, ignore_index, eps, _ = ctx.inputs
        M, C = x.shape
        dx = _empty((M, C), x.dtype)
        backend.loss.cross_entropy_backward(packed(g)._data, x._data, targets._data, weight,
                                            has_weight, ignore_index, eps, M, C, ctx.lse._data,
                                            dx._data)
        return dx, None, None, None, None, None, None


def _class_constants(x, targets, weight, has_weight, ignore_index):
    """(onehot * w_t (M, C), valid (M, 1), w (1, C)) as constants of x's dtype: the rows'
    targets, weighted, 0 on ignored rows."""
    M, C = x.shape
    w = list(weight) if has_weight else [1.0] * C
    picked = array(x.dtype.typecode, [0]) * (M * C)
    valid = array(x.dtype.typecode, [0]) * M
    for i, t in enumerate(targets._data):
        if t != ignore_index:
            picked[i * C + t] = w[t]
            valid[i] = 1
    return (_make(picked, (M, C), x.dtype), _make(valid, (M, 1), x.dtype),
            _make(array(x.dtype.typecode, w), (1, C), x.dtype))


def _cross_entropy_composed(x, targets, weight, has_weight, ignore_index, eps, stats):
    """CrossEntropyRows as recorded ops: -(1 - eps) w_t logp_t - eps / C sum_c w_c logp_c."""
    picked, valid, w = _class_constants(x, targets, weight, has_weight, ignore_index)
    logp = log_softmax(x, 1)
    loss = neg(sum(mul(logp, picked), 1)) * (1.0 - eps)
    if eps > 0.0:
        loss = loss - sum(mul(mul(logp, w), valid), 1) * (eps / x.shape[1])
    return loss


def _nll_composed(x, targets, weight, has_weight, ignore_index, stats):
    """NLLRows as recorded ops: -w_t x_t."""
    return neg(sum(mul(x, _class_constants(x, targets, weight, has_weight, ignore_index)[0]), 1))


def _bce_with_logits_composed(x, t, pw):
    """BCEWithLogits as recorded ops: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    softplus = (-x).relu() + (-x.abs()).exp().log1p()
    return (1.0 - t) * x + (1.0 + (pw - 1.0) * t) * softplus


CrossEntropyRows.differentiable_backward = composed(_cross_entropy_composed)


def _reduce_weighted(losses, total_weight, reduction, shape):
    if reduction == "none":
        return reshape(losses, shape)
    total = sum(losses)
    if reduction == "sum":
        return total
    return mul(total, 1.0 / total_weight) if total_weight != 0 else mul(total, math.nan)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits and targets: log_softmax and negative log-likelihood in one pass.

    input (N, C) / (C,) / (N, C, d1, ...) logits. target: class indices (N,) / () / (N, d1, ...) int64,
    or class probabilities of input's shape (float). weight (C,): per-class weights. Rows whose
    target is ignore_index count neither in the loss nor in the 'mean' denominator. label_smoothing
    eps mixes the target with the uniform distribution: (1 - eps) * onehot + eps / C.
    size_average / reduce are PyTorch's deprecated arguments, accepted only as None."""
    _check_reduction("cross_entropy", reduction)
    if size_average is not None or reduce is not None:
        raise ValueError("cross_entropy: size_average and reduce are deprecated; use reduction=")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("cross_entropy: input must be a floating-point tensor of logits")
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        if ignore_index != -100:   # class probabilities have no class index to ignore
            raise RuntimeError(f"cross_entropy: ignore_index is not supported for floating "
                               f"point target (got ignore_index={ignore_index})")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    x, targets, shape = _rows_last("cross_entropy", input, target)
    M, C = x.shape
    wbuf, has_w = _weight_buffer("cross_entropy", weight, C, x.dtype)
    bad = backend.loss.check_targets(targets._data, M, C, ignore_index)
    if bad >= 0:
        _raise_bad_target("cross_entropy", targets, bad, C)
    stats = array("d", [0.0])
    losses = CrossEntropyRows.apply(x, targets, wbuf, has_w, int(ignore_index),
                                     float(label_smoothing), stats)
    return _reduce_weighted(losses, stats[0], reduction, shape)


def _cross_entropy_probs(input, target, weight, reduction, eps):
    """Soft targets: loss = -sum_c w_c * t'_c * log_softmax(x)_c, t' = (1 - eps) t + eps / C.

    'mean' divides by the number of rows (N * d1 * ...), not by weights, as in PyTorch."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"cross_entropy: probability targets must have the input's shape "
                         f"{tuple(input.shape)}, got {tuple(target.shape)}")
    class_dim = 1 if input.ndim > 1 else 0
    C = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    t = target if eps == 0.0 else add(mul(target, 1.0 - eps), eps / C)
    prod = mul(logp, t)
    if weight is not None:
        _weight_buffer("cross_entropy", weight, C, input.dtype)  # validates the shape
        wshape = [1] * input.ndim
        wshape[class_dim] = C
        prod = mul(prod, reshape(weight, tuple(wshape)))
    losses = neg(sum(prod, class_dim))
    if reduction == "none":
        return losses
    return sum(losses) if reduction == "sum" else mean(losses)


class NLLRows(Function):
    """loss_i = -w_{t_i} * x[i, t_i] for log-probabilities x (M, C);  dx[i, t_i] = -w_{t_i} * g_i."""

    op_name = "NllLoss"

    @staticmethod
    def forward(ctx, x, targets, weight, has_weight, ignore_index, stats):
        M, C = x.shape
        losses = _empty((M,), x.dtype)
        backend.loss.nll_forward(x._data, targets._data, weight, has_weight, ignore_index, M, C,
                                 losses._data, stats)
        return losses

    @staticmethod
    def backward(ctx, g):
        x, targets, weight, has_weight, ignore_index, _ = ctx.inputs
        M, C = x.shape
        dx = _zeros((M, C), x.dtype)
        backend.loss.nll_backward(packed(g)._data, targets._data, weight, has_weight,
                                  ignore_index, M, C, dx._data)
        return dx, None, None, None, None, None


NLLRows.differentiable_backward = composed(_nll_composed)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """Negative log-likelihood of class-index targets under log-probabilities `input` (the output of
    log_softmax): loss_i = -weight[t_i] * input[i, t_i]. Shapes and reductions as cross_entropy."""
    _check_reduction("nll_loss", reduction)
    if size_average is not None or reduce is not None:
        raise ValueError("nll_loss: size_average and reduce are deprecated; use reduction=")
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("nll_loss: input must be a floating-point tensor of log-probabilities")
    x, targets, shape = _rows_last("nll_loss", input, target)
    M, C = x.shape
    wbuf, has_w = _weight_buffer("nll_loss", weight, C, x.dtype)
    bad = backend.loss.check_targets(targets._data, M, C, ignore_index)
    if bad >= 0:
        _raise_bad_target("nll_loss", targets, bad, C)
    stats = array("d", [0.0])
    losses = NLLRows.apply(x, targets, wbuf, has_w, int(ignore_index), stats)
    return _reduce_weighted(losses, stats[0], reduction, shape)


class BCEWithLogits(Function):
    """Elementwise (1 - t) x + (1 + (pw - 1) t) softplus(-x) on equal-shape packed x, t, pw (see
    kernels/loss.py for the stable form and the gradients for x, t and pw)."""

    op_name = "BinaryCrossEntropyWithLogits"

    @staticmethod
    def forward(ctx, x, t, pw):
        out = _empty(x.shape, x.dtype)
        backend.loss.bce_with_logits_forward(x._data, t._data, pw._data, x.numel(), out._data)
        return out

    @staticmethod
    def backward(ctx, g):
        x, t, pw = ctx.inputs
        dx, dt, dpw = (_empty(x.shape, x.dtype) for _ in range(3))
        backend.loss.bce_with_logits_backward(packed(g)._data, x._data, t._data, pw._data,
                                              x.numel(), dx._data, dt._data, dpw._data)
        return dx, dt, dpw


BCEWithLogits.differentiable_backward = composed(_bce_with_logits_composed)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,  # noqa: A002
                                     reduce=None, reduction="mean", pos_weight=None):
    """-[pos_weight * t * log sigmoid(x) + (1 - t) * log(1 - sigmoid(x))], computed from the logit x
    without ever forming sigmoid(x), so it is exact for |x| of any size.

    input and target have the same shape; weight broadcasts against it (a rescaling per element);
    pos_weight broadcasts against the last dim (one weight per class, > 1 raises recall)."""
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    if size_average is not None or reduce is not None:
        raise ValueError("binary_cross_entropy_with_logits: size_average and reduce are deprecated")
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError("binary_cross_entropy_with_logits: input and target must be Tensors")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy_with_logits: target size {tuple(target.shape)} "
                         f"must be the same as input size {tuple(input.shape)}")
    dt = input.dtype if input.dtype.is_floating_point else _dt.float32
    x = contiguous(to_dtype(input, dt))
    t = contiguous(to_dtype(target, dt))
    if pos_weight is None:
        pw = _make(_dt.zeros_buffer(dt, 1), (), dt)
        pw._data[0] = 1.0
    else:
        pw = to_dtype(pos_weight, dt)
    pw = contiguous(expand(pw, x.shape)) if pw.shape != x.shape else contiguous(pw)
    loss = BCEWithLogits.apply(x, t, pw)
    if weight is not None:
        loss = mul(loss, weight)
    if reduction == "none":
        return loss
    return sum(loss) if reduction == "sum" else mean(loss)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Mean squared error: (input - target)^2, averaged ('mean'), summed, or elementwise ('none')."""
    _check_reduction("mse_loss", reduction)
    if size_average is not None or reduce is not None:
        raise ValueError("mse_loss: size_average and reduce are deprecated; use reduction=")
    diff = sub(input, target)
    sq = mul(diff, diff)
    if reduction == "none":
        return sq
    return sum(sq) if reduction == "sum" else mean(sq)


# ---------------------------------------------------------------- composed of elementwise ops

def _reduce(op, loss, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if reduction == "none":
        return loss
    return sum(loss) if reduction == "sum" else mean(loss)


def _diff(op, input, target):  # noqa: A002
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
        # target log target is 0 where target is 0 (log(1) = 0 there) and NaN where it is
        # negative (log of a negative number), as PyTorch's xlogy
        safe = where(ne(target, 0.0), target, 1.0)
        loss = sub(mul(target, log(safe)), mul(target, input))
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        return mul(sum(loss), 1.0 / n)
    return _reduce("kl_div", loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 (PyTorch's guard against
    log 0). input must hold probabilities in [0, 1]."""
    check_tensor("binary_cross_entropy", input)
    lo = input.detach().amin().item() if input.numel() else 0.0
    hi = input.detach().amax().item() if input.numel() else 1.0
    if lo < 0 or hi > 1:
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 "
                           "and 1")
    log_x = clamp(log(input), min=-100.0)
    log_1mx = clamp(log(1.0 - input), min=-100.0)
    loss = neg(target * log_x + (1.0 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy", loss, reduction)
