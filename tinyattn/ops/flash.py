"""Fused attention as one autograd node: softmax(Q K^T * scale + M) V without the (L, S) weights.

    FlashAttention   q (..., L, E), k (..., S, E), v (..., S, Ev) -> out (..., L, Ev)
                     saves lse (..., L) = log sum_j exp(s_ij); the backward recomputes the weights
                     tile by tile (kernels/flash.py has the equations and the algorithm;
                     fast/flash.py the same, tiled for the cache and threaded).
                     With dropout_p > 0 the weights are dropped inside the kernel: the mask is
                     a hash of the element's index and two keys drawn from the generator
                     (saved: two ints), so the backward draws it again and nothing is (L, S).

`scaled_dot_product_attention` (ops/attention.py) takes this path when it can: no weights
asked for, and a mask that needs no gradient. Otherwise, or inside
`sdpa_kernel(SDPBackend.MATH)`, it composes matmul, softmax and matmul, which store the
(..., L, S) weights. With the same seed both paths drop the same weights (`dropout_mask`).
PyTorch chooses among its backends the same way and offers the same switch:

    from tinyattn.nn.attention import sdpa_kernel, SDPBackend
    with sdpa_kernel(SDPBackend.MATH): ...              # the composed path
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION): ...   # the fused path (an error where it can't)

Chapter 10 of the tour (docs/10-flash-attention.md) walks through this file.
"""
import enum
import math
from array import array
from contextlib import contextmanager

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..creation import zeros
from ..random import default_generator
from ..storage import _empty, _make
from ._launch import packed
from ._recorded import composed_grads
from .compare import where
from .convert import to_dtype
from .softmax import softmax


class SDPBackend(enum.IntEnum):
    """PyTorch's names for the implementations of scaled_dot_product_attention. On tinyattn's CPU,
    FLASH_ATTENTION is the fused kernel and MATH the composed ops; EFFICIENT_ATTENTION,
    CUDNN_ATTENTION and OVERRIDEABLE are accepted in `sdpa_kernel` and never chosen."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_enabled = frozenset({SDPBackend.MATH, SDPBackend.FLASH_ATTENTION})


@contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Limit scaled_dot_product_attention to `backends` (one SDPBackend or a list) inside the
    block, as `torch.nn.attention.sdpa_kernel`. With FLASH_ATTENTION alone, an input the fused
    kernel cannot take (a mask that needs a gradient, return_weights) raises."""
    global _enabled
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: backends must be SDPBackend members, got {b!r}")
    old = _enabled
    _enabled = frozenset(backends)
    try:
        yield
    finally:
        _enabled = old


class FlashAttention(Function):
    """softmax(q k^T * scale + mask) v as one node. q (nb, L, E), k (nb, S, E), v (nb, S, Ev), all
    of one float dtype with the same leading dims; `mask` None or an additive float mask of
    the q's dtype, already a (nb0, nb1, L, S) view (strides may be 0); `causal` True for j <= i;
    dropout_p > 0 drops weights with the keys of one draw of the default generator."""

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale, dropout_p):
        batch = q.shape[:-2]
        nb, nb1 = _shapes.numel(batch), (batch[-1] if batch else 1)
        L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        q, k, v = packed(q), packed(k), packed(v)
        out, lse = _empty(batch + (L, Ev), q.dtype), _empty(batch + (L,), q.dtype)
        margs = _mask_args(mask, q.dtype)
        drop = (dropout_p,) + (default_generator.next_keys() if dropout_p > 0.0 else (0, 0))
        if nb and L:
            backend.flash.flash_forward(q._data, k._data, v._data, *margs, causal, scale, *drop,
                                        out._data, lse._data, nb1, nb, L, S, E, Ev)
        if ctx.needs_input_grad:
            ctx.saved = (q, k, v, out, lse, margs, causal, scale, drop)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse, margs, causal, scale, drop = ctx.saved
        batch = q.shape[:-2]
        L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        nb = _shapes.numel(batch)
        if not (nb and L):  # no queries: keys and values get no gradient
            return (_empty(q.shape, q.dtype), zeros(k.shape, dtype=q.dtype),
                    zeros(v.shape, dtype=q.dtype), None, None, None, None)
        dq, dk, dv = _empty(q.shape, q.dtype), _empty(k.shape, q.dtype), _empty(v.shape, q.dtype)
        backend.flash.flash_backward(q._data, k._data, v._data, out._data, packed(g)._data,
                                     lse._data, *margs, causal, scale, *drop, dq._data, dk._data,
                                     dv._data, batch[-1] if batch else 1, nb, L, S, E, Ev)
        return dq, dk, dv, None, None, None, None


def _attention_composed(q, k, v, mask, causal, scale, dropout_p, keys=None):
    """FlashAttention as recorded ops: softmax(q k^T * scale + mask) v, storing the weights; with
    dropout, the weights times the mask the kernel drew with `keys` (dropout_mask)."""
    L, S = q.shape[-2], k.shape[-2]
    s = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask.reshape(s.shape)
    if causal:
        above = [-math.inf if j > i else 0.0 for i in range(L) for j in range(S)]
        s = s + _make(array(q.dtype.typecode, above), (L, S), q.dtype)
    w = softmax(s, -1)
    if dropout_p > 0.0:
        w = w * dropout_mask(w.shape, dropout_p, keys, q.dtype)
    return w @ v


def _recorded_backward(ctx, g):
    keys = ctx.saved[-1][1:]    # the draw the forward took: the same mask again
    return composed_grads(ctx, lambda *inputs: _attention_composed(*inputs, keys=keys), g)


FlashAttention.differentiable_backward = _recorded_backward


def _mask_args(mask, dtype):
    """(buffer, offset, s0, s1, s_l, s_s, has_mask) of a (nb0, nb1, L, S) mask view, or a dummy."""
    if mask is None:
        return array(dtype.typecode, [0.0]), 0, 0, 0, 0, 0, False
    s0, s1, sl, ss = mask._strides
    return mask._data, mask._offset, s0, s1, sl, ss, True


def fused_reason(query, key, value, mask, dropout_p, return_weights):
    """Why the fused kernel cannot compute this call (a phrase), or None when it can."""
    if return_weights:
        return "return_weights=True (the fused kernel never forms the weights)"
    if mask is not None and mask.requires_grad:
        return "attn_mask requires a gradient"
    if query.dtype not in (_dt.float32, _dt.float64):
        return f"dtype {query.dtype}"
    return None


def use_fused(query, key, value, mask, dropout_p, return_weights):
    """True when scaled_dot_product_attention should take the fused path; raises when only
    FLASH_ATTENTION is enabled and this call cannot take it."""
    flash = SDPBackend.FLASH_ATTENTION in _enabled
    math_ok = SDPBackend.MATH in _enabled
    reason = fused_reason(query, key, value, mask, dropout_p, return_weights)
    if flash and reason is None:
        return True
    if math_ok:
        return False
    why = reason if flash else "neither MATH nor FLASH_ATTENTION is enabled by sdpa_kernel"
    raise RuntimeError(f"scaled_dot_product_attention: no enabled backend can compute this "
                       f"call: {why}")


def flash_attention(q, k, v, mask, is_causal, scale, dropout_p=0.0):
    """The fused path of scaled_dot_product_attention, its arguments already checked there:
    q (..., L, E), k (..., S, E), v (..., S, Ev) of one float dtype; mask None, bool (True = may
    attend) or float (added), broadcastable to (..., L, S); is_causal top-left aligned;
    0 <= dropout_p <= 1."""
    L, S = q.shape[-2], k.shape[-2]
    batch = _shapes.broadcast_shapes("scaled_dot_product_attention", q.shape[:-2], k.shape[:-2],
                                     v.shape[:-2])
    # Leading dims that broadcast become real ones (expand is a view; its gradient sums back).
    q = q if q.shape[:-2] == batch else q.expand(batch + q.shape[-2:])
    k = k if k.shape[:-2] == batch else k.expand(batch + k.shape[-2:])
    v = v if v.shape[:-2] == batch else v.expand(batch + v.shape[-2:])
    if mask is not None:
        if mask.dtype is _dt.bool:
            mask = where(mask, 0.0, -math.inf)
        mask = to_dtype(mask, q.dtype).detach()
        nb1 = batch[-1] if batch else 1
        mask = mask.expand(batch + (L, S)).reshape(_shapes.numel(batch[:-1]), nb1, L, S)
    return FlashAttention.apply(q, k, v, mask, bool(is_causal), float(scale), float(dropout_p))


def dropout_mask(shape, dropout_p, keys, dtype=_dt.float32):
    """The dropout factors z (shape (..., L, S): 0, or 1 / (1 - dropout_p)) that the fused kernel
    multiplies the weights of attention by, for the draw keyed `keys` = (k1, k2): the keys a call
    takes from the generator (`tinyattn.random.default_generator.next_keys()` after the same
    seed). Element (b, i, j) of the flattened leading dims is z[(b L + i) S + j]: below 2^32
    elements, the mask `dropout` draws for a tensor of this shape with the same keys."""
    out = _empty(tuple(shape), _dt.get(dtype))
    *batch, L, S = out.shape
    k1, k2 = keys
    backend.flash.dropout_mask(k1, k2, float(dropout_p), out._data, _shapes.numel(batch), L, S)
    return out
