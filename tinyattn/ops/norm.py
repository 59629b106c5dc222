"""Layer normalisation as one fused node.

    y = (x - mean) / sqrt(var + eps) * weight + bias       over the last D elements of each row
    with xhat = (x - mean) * rstd and gy = g * weight, per row:
        dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
        dweight = sum over rows of g * xhat,   dbias = sum over rows of g

Composed from ops this is ~30 small nodes; fused it is one pass forward and one backward
(kernels/norm.py), keeping mean and 1/std per row (float64) for the backward.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
from array import array

from .. import dtypes as _dt
from ..autograd import Function
from ..kernels import norm as KL
from ..tensor import _empty, _make
from ._launch import packed


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
        KL.FORWARD[x.dtype.typecode](xp._data, w._data, b._data, weight is not None,
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
        KL.BACKWARD[x.dtype.typecode](g._data, xp._data, w._data, weight is not None, ctx.mean,
                                      ctx.rstd, dx._data, dw, db, N, D)
        gw = gb = None
        if weight is not None and ctx.needs_input_grad[1]:
            gw = _make(array(weight.dtype.typecode, dw), weight.shape, weight.dtype)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = _make(array(bias.dtype.typecode, db), bias.shape, bias.dtype)
        return dx, gw, gb, None, None


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
