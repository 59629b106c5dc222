"""Norms and normalisation: the p-norm, and layer, batch and RMS normalisation.

Layer normalisation is one fused node:

    y = (x - mean) / sqrt(var + eps) * weight + bias       over the last D elements of each row
    with xhat = (x - mean) * rstd and gy = g * weight, per row:
        dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
        dweight = sum over rows of g * xhat,   dbias = sum over rows of g

Composed from ops this is ~30 small nodes; fused it is one pass forward and one backward
(kernels/norm.py), keeping mean and 1/std per row (float64) for the backward.

Batch normalisation (BatchNorm) is the same per channel of an (N, C, ...) input, over N and the
spatial dims, with the gradient through the batch statistics when they were used.

Composed of other ops (their gradients are autograd's, through the pieces):

    norm(x, p)          (sum |x|^p)^(1/p); p = inf the largest |x|, p = 0 the count of non-zeros
    normalize(x)        x / max(||x||_p, eps) along a dim
    cosine_similarity   sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))
    rms_norm(x)         x / sqrt(mean(x^2) + eps) * weight   over the trailing dims

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import math
from array import array

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import packed
from ._recorded import composed
from .arithmetic import clamp, mul
from .layout import expand
from .unary import ZeroGradient, rsqrt
from .reduce import amax, amin, mean, sum  # noqa: A004


class LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last D elements of each row.

    Fused (kernels/norm.py): with xhat = (x - mean) * rstd and gy = g * weight, per row
        dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
        dweight = sum over rows of g * xhat,  dbias = sum over rows of g."""

    @staticmethod
    def forward(ctx, x, weight, bias, D, eps):
        xp = packed(x)
        N = xp.numel() // D if D else 0
        out = _empty(x.shape, x.dtype)
        mean = _dt.zeros_buffer(_dt.float64, N)
        rstd = _dt.zeros_buffer(_dt.float64, N)
        w = xp if weight is None else packed(weight)
        b = xp if bias is None else packed(bias)
        backend.norm.layer_norm_forward(xp._data, w._data, b._data, weight is not None,
                                        bias is not None, out._data, mean, rstd, N, D, float(eps))
        ctx.save_for_backward(xp, w)
        ctx.mean, ctx.rstd = mean, rstd
        return out

    @staticmethod
    def backward(ctx, g):
        xp, w = ctx.saved_tensors
        x, weight, bias, D, _ = ctx.inputs
        N = x.numel() // D if D else 0
        g = packed(g)
        dx = _empty(x.shape, x.dtype)
        dw = _dt.zeros_buffer(_dt.float64, D)
        db = _dt.zeros_buffer(_dt.float64, D)
        backend.norm.layer_norm_backward(g._data, xp._data, w._data, weight is not None,
                                         ctx.mean, ctx.rstd, dx._data, dw, db, N, D)
        gw = gb = None
        if weight is not None and ctx.needs_input_grad[1]:
            gw = _make(array(weight.dtype.typecode, dw), weight.shape, weight.dtype)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = _make(array(bias.dtype.typecode, db), bias.shape, bias.dtype)
        return dx, gw, gb, None, None


def _layer_norm_composed(x, weight, bias, D, eps):
    """LayerNorm's forward as recorded ops (mean, var, rsqrt, ...)."""
    rows = x.reshape(-1, D)
    centered = rows - rows.mean(1, keepdim=True)
    y = (centered * ((centered * centered).mean(1, keepdim=True) + eps).rsqrt()).reshape(x.shape)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance, as in PyTorch); weight and bias have shape normalized_shape. One fused
    primitive (LayerNorm), not ~30 small ops."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
        normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise ValueError(f"layer_norm: expected input with trailing shape {normalized_shape}, "
                         f"got shape {tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"layer_norm: expected a floating-point input, got {input.dtype}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != normalized_shape or t.dtype is not input.dtype):
            raise ValueError(f"layer_norm: {name} must have shape {normalized_shape} and dtype "
                             f"{input.dtype}, got {tuple(t.shape)} ({t.dtype})")
    D = 1
    for n in normalized_shape:
        D *= n
    return LayerNorm.apply(input, weight, bias, D, eps)


class BatchNorm(Function):
    """y = (x - mean_c) * rstd_c * w_c + b_c per channel c (dim 1) of an (N, C, L) view.

    With the batch's statistics (training): dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)),
    gy = g * w, the means over the N*L values of the channel; with given (running) statistics
    dx = rstd * gy. dw_c = sum g * xhat, db_c = sum g. One pass each way instead of ~25 ops."""

    @staticmethod
    def forward(ctx, x, weight, bias, mean, rstd, batch_stats):
        N, C = x.shape[0], x.shape[1]
        L = x.numel() // (N * C) if N * C else 0
        xp = packed(x)
        out = _empty(x.shape, x.dtype)
        w = _channel(weight, C, 1.0)
        b = _channel(bias, C, 0.0)
        backend.norm.batch_norm_forward(xp._data, mean, rstd, w, b, out._data, N, C, L)
        ctx.xp, ctx.w = xp, w
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, bias, mean, rstd, batch_stats = ctx.inputs
        N, C = x.shape[0], x.shape[1]
        L = x.numel() // (N * C) if N * C else 0
        dx = _empty(x.shape, x.dtype)
        dw = _dt.zeros_buffer(_dt.float64, C)
        db = _dt.zeros_buffer(_dt.float64, C)
        backend.norm.batch_norm_backward(packed(g)._data, ctx.xp._data, mean, rstd, ctx.w,
                                         batch_stats, dx._data, dw, db, N, C, L)
        gw = gb = None
        if weight is not None and ctx.needs_input_grad[1]:
            gw = _make(array(weight.dtype.typecode, dw), weight.shape, weight.dtype)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = _make(array(bias.dtype.typecode, db), bias.shape, bias.dtype)
        return dx, gw, gb, None, None, None


def _batch_norm_composed(x, weight, bias, mean, rstd, batch_stats):
    """BatchNorm's forward as recorded ops. With the batch's statistics, var + eps is written
    var(x) + (1/rstd^2 - var's value): the same number, and x's variance keeps its graph."""
    C = x.shape[1]
    shape = (1, C) + (1,) * (x.ndim - 2)
    mu = _make(array("d", mean), shape, _dt.float64).to(x.dtype)
    r = _make(array("d", rstd), shape, _dt.float64).to(x.dtype)
    if batch_stats:
        dims = (0,) + tuple(range(2, x.ndim))
        mu = x.mean(dims, keepdim=True)
        var = ((x - mu) * (x - mu)).mean(dims, keepdim=True)
        r = (var + (1.0 / (r * r) - var.detach())).rsqrt()
    y = (x - mu) * r
    y = y if weight is None else y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)


LayerNorm.differentiable_backward = composed(_layer_norm_composed)
BatchNorm.differentiable_backward = composed(_batch_norm_composed)


def _channel(t, C, default):
    """A float64 buffer of C per-channel values: t's, or `default` when t is None."""
    if t is None:
        return array("d", [default]) * C
    return array("d", packed(t).tolist() if t.ndim else [t.item()])


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """F.batch_norm over dim 1 of an (N, C, ...) input: y = (x - mean) / sqrt(var + eps) * weight
    + bias, per channel. Training: mean and (biased) var over every dim but 1, and the running
    stats move by `momentum` toward them (running_var with the unbiased var, as PyTorch);
    evaluation: the running stats. One fused node (BatchNorm)."""
    op = "batch_norm"
    empty = isinstance(input, Tensor) and input.numel() == 0 and input.ndim >= 1
    if not isinstance(input, Tensor) or (input.ndim < 2 and not empty):
        raise ValueError(f"{op}: expected an (N, C, ...) tensor, got "
                         f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating-point input, got {input.dtype}")
    N, C = input.shape[0], (input.shape[1] if input.ndim >= 2 else 0)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and (not isinstance(t, Tensor) or t.numel() != C):
            raise ValueError(f"{op}: {name} must have {C} elements (the input's channels), got "
                             f"{tuple(t.shape) if isinstance(t, Tensor) else t!r}")
    if empty:   # nothing to normalise and no statistics to update (as PyTorch)
        return input.clone()
    count = input.numel() // C if C else 0
    x = packed(input)
    if training:
        if count <= 1:
            raise ValueError(f"{op}: expected more than 1 value per channel when training, got "
                             f"input of shape {tuple(input.shape)}")
        mean = _dt.zeros_buffer(_dt.float64, C)
        rstd = _dt.zeros_buffer(_dt.float64, C)
        backend.norm.batch_norm_stats(x._data, mean, rstd, N, C, count // N, float(eps))
        m = 0.1 if momentum is None else momentum
        if running_mean is not None:
            new = [(1 - m) * r + m * v for r, v in zip(running_mean.tolist(), mean)]
            running_mean.copy_(_tensor(new, running_mean))
        if running_var is not None:
            # the unbiased variance, recovered from rstd = 1 / sqrt(var + eps) in float64
            var = [(1.0 / (r * r) - eps) * count / (count - 1) for r in rstd]
            new = [(1 - m) * r + m * v for r, v in zip(running_var.tolist(), var)]
            running_var.copy_(_tensor(new, running_var))
    else:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: running_mean and running_var are needed when not training")
        mean = array("d", running_mean.tolist())
        rstd = array("d", [1.0 / math.sqrt(v + eps) for v in running_var.tolist()])
    return BatchNorm.apply(input, weight, bias, mean, rstd, bool(training))


def _tensor(values, like):
    return _make(array(like.dtype.typecode, values), like.shape, like.dtype)


def norm(x, p=2, dim=None, keepdim=False, dtype=None):
    """The p-norm over dim (all elements by default): (sum |x|^p)^(1/p); p=inf the largest
    |x|, p=-inf the smallest, p=0 the number of non-zeros."""
    if dtype is not None:
        x = x.to(dtype)
    if p == 2 or p == "fro":
        return sum(x * x, dim, keepdim).sqrt()
    if p == 1:
        return sum(x.abs(), dim, keepdim)
    if p == math.inf:
        return amax(x.abs(), dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return amin(x.abs(), dim if dim is not None else (), keepdim)
    if p == 0:   # a count: dx = 0
        return ZeroGradient.apply(x, lambda v: sum((v != 0).to(v.dtype), dim, keepdim))
    if isinstance(p, (int, float)) and not isinstance(p, bool):
        return sum(x.abs() ** p, dim, keepdim) ** (1.0 / p)
    if p == "nuc":
        raise NotImplementedError("norm: p='nuc' (the nuclear norm, a sum of singular values) is "
                                  "not implemented in tinyattn: it has no SVD")
    raise ValueError(f"norm: p must be a number, inf, 'fro' or 'nuc', got {p!r}")


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(||input||_p along dim, eps)."""
    return input / clamp(norm(input, p, dim, keepdim=True), min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim (broadcasting).

    The two are broadcast to one shape first: a norm taken over a dimension of size 1 that the
    other input broadcasts would count that element once, not once per copy, and give |cos| > 1."""
    shape = _shapes.broadcast_shapes("cosine_similarity", x1.shape, x2.shape)
    x1, x2 = expand(x1, shape), expand(x2, shape)
    n1 = clamp(norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = clamp(norm(x2, 2, dim, keepdim=True), min=eps)
    return sum(mul(x1 / n1, x2 / n2), dim)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """input / sqrt(mean(input^2 over the last len(normalized_shape) dims) + eps) * weight;
    eps defaults to the dtype's machine epsilon, as in PyTorch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError("rms_norm: Expected normalized_shape to be at least 1-dimensional")
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm: expected input with trailing shape {shape}, got "
                           f"{tuple(input.shape)}")
    if eps is None:
        eps = 1.1920928955078125e-07 if input.dtype.name == "float32" else 2.220446049250313e-16
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = mul(input, rsqrt(mean(mul(input, input), dims, keepdim=True) + eps))
    return out if weight is None else mul(out, weight)
