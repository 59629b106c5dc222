"""The fused nodes of RNN attention (Bahdanau, Luong): the additive score and the context.

    AdditiveScore   e[b, s] = sum_a v[a] tanh(pk[b, s, a] + q[b, a])      (B, S)
                    with t = tanh(...):  d pk = g v (1 - t^2),  d q = sum_s d pk,  d v = sum g t
    Context         c[b, :] = sum_s w[b, s] h[b, s, :]                     (B, C)
                    d w[b, s] = g[b] . h[b, s],  d h[b, s] = w[b, s] g[b]

Each runs once per decoder step; as ops they would be 3-5 nodes with several passes over a
(B, S, A) tensor. The RNN attention layers (masks, softmax, the modules) are in
nn/rnn_attention.py; the loops in kernels/attention.py.

Also here, composed from ops: scaled dot-product attention and its mask helpers,

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V                  (Vaswani et al., 2017)

with PyTorch's mask conventions (nn/attention.py's docstring has the table: in
`scaled_dot_product_attention` a bool True means *may attend*; a float mask is added).

Chapter 3 (docs/03-attention.md) and chapter 4 (docs/04-seq2seq.md) of the tour walk through this
file.
"""
import math

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..creation import arange, tensor
from ..storage import TensorBase as Tensor, _empty, _zeros
from . import flash as _flash
from ._launch import packed
from ._recorded import composed
from .compare import le, logical_not, lt, where
from .convert import to_dtype
from .random import dropout
from .softmax import softmax


class AdditiveScore(Function):
    """scores[b, s] = sum_a v[a] tanh(pk[b, s, a] + q[b, a]) as one node; pk (B, S, A), q (B, A),
    v (A) -> (B, S). Gradients in kernels/attention.py."""

    @staticmethod
    def forward(ctx, pk, q, v):
        B, S, A = pk.shape
        pk, q, v = packed(pk), packed(q), packed(v)
        t = _empty((B, S, A), pk.dtype)
        scores = _empty((B, S), pk.dtype)
        backend.attention.additive_score_forward(pk._data, q._data, v._data, t._data,
                                                 scores._data, B, S, A)
        ctx.save_for_backward(t, v)
        return scores

    @staticmethod
    def backward(ctx, g):
        t, v = ctx.saved_tensors
        B, S, A = t.shape
        dpk = _empty((B, S, A), t.dtype)
        dq = _zeros((B, A), t.dtype)
        dv = _zeros(v.shape, t.dtype)  # (A,), or (1, A): v.weight of a Linear(A, 1)
        backend.attention.additive_score_backward(packed(g)._data, t._data, v._data, B, S, A,
                                                  dpk._data, dq._data, dv._data)
        return dpk, dq, dv


def _additive_score_composed(pk, q, v):
    return ((pk + q.unsqueeze(1)).tanh() * v.reshape(-1)).sum(-1)


def _context_composed(weights, keys):
    return (weights.unsqueeze(-1) * keys).sum(1)


def additive_score(projected_keys, projected_query, v, check=True):
    """v^T tanh(pk + q) for every source position: pk (B, S, A), q (B, A), v (A) -> (B, S).

    check=False skips the shape checks (for a layer that has made them) and lets v be (1, A),
    a Linear's weight used as it is rather than through a reshape node at every decoder step."""
    pk, q = projected_keys, projected_query
    if check and (pk.ndim != 3 or q.shape != (pk.shape[0], pk.shape[2])
                  or v.shape != (pk.shape[2],)):
        raise ValueError(f"additive_score: expected projected keys (B, S, A), query (B, A) and v "
                         f"(A,), got {tuple(pk.shape)}, {tuple(q.shape)} and {tuple(v.shape)}")
    dt = _dt.promote_types(_dt.promote_types(pk.dtype, q.dtype), v.dtype)
    return AdditiveScore.apply(to_dtype(pk, dt), to_dtype(q, dt), to_dtype(v, dt))


class Context(Function):
    """context[b] = sum_s weights[b, s] keys[b, s] as one node: weights (B, S), keys (B, S, C)
    -> (B, C). d weights[b, s] = g[b] . keys[b, s],  d keys[b, s] = weights[b, s] g[b]
    (kernels/attention.py). The same as the (B, 1, S) @ (B, S, C) product, minus its views."""

    @staticmethod
    def forward(ctx, weights, keys):
        B, S, C = keys.shape
        w = packed(weights)
        out = _empty((B, C), keys.dtype)
        backend.attention.context_forward(w._data, keys._data, keys._offset, keys._strides[0],
                                          keys._strides[1], out._data, B, S, C)
        if ctx.needs_input_grad:
            ctx.w = w
        return out

    @staticmethod
    def backward(ctx, g):
        weights, keys = ctx.inputs
        B, S, C = keys.shape
        dw = _empty((B, S), keys.dtype)
        dk = _empty((B, S, C), keys.dtype)
        backend.attention.context_backward(packed(g)._data, ctx.w._data, keys._data,
                                           keys._offset, keys._strides[0], keys._strides[1],
                                           dw._data, dk._data, B, S, C)
        return dw, dk


# Under create_graph=True their backwards are the composed formulas, differentiated.
AdditiveScore.differentiable_backward = composed(_additive_score_composed)
Context.differentiable_backward = composed(_context_composed)


def attention_context(weights, keys):
    """sum_s weights[b, s] keys[b, s, :]: weights (B, S), keys (B, S, C) of one float dtype whose
    last dim is contiguous -> (B, C), as one node (Context)."""
    return Context.apply(weights, keys)


# ---------------------------------------------------------------------------- scaled dot-product attention

_CONVENTIONS = ("additive", "sdpa", "mha")


def _mask_in_convention(op, allowed, convention, dtype):
    """Turn a bool mask with True = may attend into the form named by `convention`."""
    if convention == "sdpa":
        return allowed
    if convention == "mha":
        return logical_not(allowed)
    if convention == "additive":
        dtype = _dt.get(dtype or _dt.float32)
        if not dtype.is_floating_point:
            raise TypeError(f"{op}: an additive mask is a float tensor, got dtype={dtype}")
        return to_dtype(where(allowed, 0.0, -math.inf), dtype)
    raise ValueError(f"{op}: convention must be one of {_CONVENTIONS}, got {convention!r}")


def causal_mask(L, S=None, *, convention="additive", dtype=None):
    """The causal (look-ahead) mask of shape (L, S) (S defaults to L): query i may attend to key j
    only when j <= i (top-left aligned when L != S, as `is_causal` in scaled_dot_product_attention).

    `convention` picks what you get:
      "additive" (default): float, 0 where allowed and -inf above the diagonal. Means the same to
                  every consumer: SDPA, MultiheadAttention, Transformer (it equals
                  Transformer.generate_square_subsequent_mask(L)).
      "sdpa":     bool, True = MAY attend (the lower triangle): scaled_dot_product_attention's
                  polarity.
      "mha":      bool, True = may NOT attend (the strict upper triangle): MultiheadAttention's
                  and Transformer's polarity.
    """
    S = L if S is None else S
    if L < 0 or S < 0:
        raise ValueError(f"causal_mask: sizes must be non-negative, got L={L}, S={S}")
    rows = arange(L).view(L, 1)                                      # (L, 1) query positions i
    cols = arange(S).view(1, S)                                      # (1, S) key positions j
    allowed = le(cols, rows)                                      # (L, S) True where j <= i
    return _mask_in_convention("causal_mask", allowed, convention, dtype)


def padding_mask(lengths, max_len=None, *, convention="additive", dtype=None):
    """The key padding mask (B, S) of a batch of sequences with the given lengths: key j of
    sequence b is padding when j >= lengths[b]. S = max_len, or max(lengths) when not given.

    `lengths`: a list of ints or an int64 tensor (B,). `convention` picks what you get:
      "additive" (default): float, 0 at real tokens and -inf at padding. Pass it as
                  `key_padding_mask` / `src_key_padding_mask` (MultiheadAttention, Transformer),
                  or as `attn_mask=mask[:, None, None, :]` to SDPA with scores (B, H, L, S).
      "mha":      bool, True at PADDING (= may NOT attend): MultiheadAttention's and
                  Transformer's `key_padding_mask` polarity.
      "sdpa":     bool, True at REAL TOKENS (= may attend): for scaled_dot_product_attention,
                  again indexed `mask[:, None, None, :]` to broadcast over heads and queries.
    """
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.ndim != 1:
            raise TypeError(f"padding_mask: lengths must be a 1-D integer tensor, got "
                            f"{lengths.dtype} of shape {tuple(lengths.shape)}")
        lengths = lengths.tolist()
    lengths = [int(n) for n in lengths]
    if any(n < 0 for n in lengths):
        raise ValueError(f"padding_mask: lengths must be non-negative, got {lengths}")
    longest = max(lengths, default=0)
    S = longest if max_len is None else int(max_len)
    if longest > S:
        raise ValueError(f"padding_mask: a sequence of length {longest} does not fit in "
                         f"max_len={S}")
    B = len(lengths)
    cols = arange(S).view(1, S)                                      # (1, S) key positions j
    lens = tensor(lengths, dtype=_dt.int64).view(B, 1)               # (B, 1)
    real = lt(cols, lens)                                         # (B, S) True at real tokens
    return _mask_in_convention("padding_mask", real, convention, dtype)


# ============================================================================ the attention core


def attend(q, k, v, mask, dropout_p, scale):
    """softmax(q k^T * scale + mask) v, the one computation every layer here shares.

    q (..., L, E), k (..., S, E), v (..., S, Ev); mask None, bool with True = MAY attend (SDPA's
    polarity), or float added to the scores. Returns (out (..., L, Ev), weights (..., L, S)),
    where weights are the ones multiplied with v (after dropout)."""
    if scale != 1.0:
        q = q * scale                                                # (..., L, E)
    scores = q @ k.transpose(-2, -1)                                 # (..., L, S)
    if mask is not None:
        if mask.dtype is _dt.bool:
            # As an additive mask (0 / -inf, the mask's size, often just (L, S)): adding passes
            # the gradient through unchanged, where masked_fill would need a pass over the scores.
            mask = where(mask, 0.0, -math.inf).to(scores.dtype)  # (..., L, S) or smaller
        scores = scores + mask                                       # (..., L, S)
    # An all -inf row (every key masked) has softmax 0: output 0 instead of PyTorch's NaN.
    weights = softmax(scores, -1)                                 # (..., L, S) rows sum to 1
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)                      # (..., L, S)
    return weights @ v, weights                                      # (..., L, Ev), (..., L, S)


def check_float(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if not t.dtype.is_floating_point:
        raise TypeError(f"{op}: {name} must be a float tensor, got {t.dtype}")


def check_mask_dtype(op, name, mask, dtype):
    """A mask is bool or float (a float mask is converted to the scores' dtype)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(mask).__name__}")
    if mask.dtype is _dt.bool:
        return mask
    if not mask.dtype.is_floating_point:
        raise TypeError(f"{op}: only bool and floating-point {name} are supported, got "
                        f"{mask.dtype}")
    return to_dtype(mask, dtype)


def _repeat_kv_heads(x, groups):
    """(..., Hkv, S, E) -> (..., Hkv * groups, S, E), each head repeated `groups` times in a row."""
    shape = x.shape
    x = x.unsqueeze(-3)                                              # (..., Hkv, 1, S, E)
    x = x.expand(shape[:-2] + (groups,) + shape[-2:])                # (..., Hkv, g, S, E) a view
    return x.reshape(shape[:-3] + (shape[-3] * groups,) + shape[-2:])  # (..., Hkv*g, S, E)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, *, scale=None, enable_gqa=False,
                                 return_weights=False):
    """softmax(Q K^T * scale + M) V with PyTorch's arguments and semantics.

    query (..., L, E), key (..., S, E), value (..., S, Ev) -> output (..., L, Ev). The leading dims
    (typically (B, H)) broadcast.

    attn_mask: broadcastable to (..., L, S). A bool mask: True = MAY attend (the opposite of
        MultiheadAttention's attn_mask!). A float mask: added to the scores (0 / -inf).
    is_causal: query i attends to keys j <= i (top-left aligned when L != S). Giving it together
        with attn_mask is an error, as in PyTorch.
    dropout_p: dropout on the attention weights, applied whenever dropout_p > 0 (this function
        does not know about training mode: pass 0.0 when evaluating, as in PyTorch). The fused
        kernel drops inside its tiles the weights the composed ops would drop after the same seed.
    scale (keyword-only, as in PyTorch): multiplies the scores; defaults to 1 / sqrt(E).
    enable_gqa: grouped-query attention; query has Hq heads in dim -3, key and value Hkv, and each
        key/value head serves Hq / Hkv consecutive query heads.

    A query whose keys are all masked gets weights 0 and output 0, with finite gradients (recent
    PyTorch versions do the same here; its MultiheadAttention gives NaN).

    Beyond PyTorch: `return_weights=True` returns (output, weights), weights (..., L, S) being the
    ones multiplied with V (after dropout): the real per-head attention maps, for pictures.
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float(op, name, t)
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} needs at least 2 dims (..., seq, features), got "
                             f"shape {tuple(t.shape)}")
    if not query.dtype is key.dtype is value.dtype:
        raise TypeError(f"{op}: query, key and value must have the same dtype, got "
                        f"{query.dtype}, {key.dtype} and {value.dtype}")
    L, E = query.shape[-2], query.shape[-1]
    S = key.shape[-2]
    if key.shape[-1] != E:
        raise ValueError(f"{op}: query has E={E} features (shape {tuple(query.shape)}) but key "
                         f"has {key.shape[-1]} (shape {tuple(key.shape)}); they must match")
    if value.shape[-2] != S:
        raise ValueError(f"{op}: key has S={S} positions (shape {tuple(key.shape)}) but value "
                         f"has {value.shape[-2]} (shape {tuple(value.shape)}); they must match")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    if enable_gqa:
        heads_ok = query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3
        hq = query.shape[-3] if heads_ok else 0
        hkv = key.shape[-3] if heads_ok else 0
        if not heads_ok or value.shape[-3] != hkv or hkv == 0 or hq % hkv:
            raise ValueError(f"{op}: enable_gqa needs (..., H, seq, features) inputs whose key/"
                             f"value heads divide the query heads; got shapes "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        if hq != hkv:
            key = _repeat_kv_heads(key, hq // hkv)
            value = _repeat_kv_heads(value, hq // hkv)
    mask = None
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"{op}: an explicit attn_mask must not be given with "
                           f"is_causal=True (as in PyTorch); pass one or the other")
    if attn_mask is not None:
        mask = check_mask_dtype(op, "attn_mask", attn_mask, query.dtype)
        batch = _shapes.broadcast_shapes(op, query.shape[:-2], key.shape[:-2])
        _shapes.broadcast_shapes(f"{op} (attn_mask against the scores (..., L, S))",
                                 mask.shape, batch + (L, S))
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    if _flash.use_fused(query, key, value, mask, dropout_p, return_weights):
        # One node, no (L, S) weights stored: kernels/flash.py (chapter 10).
        return _flash.flash_attention(query, key, value, mask, is_causal, scale, dropout_p)
    if is_causal:
        mask = causal_mask(L, S, convention="sdpa")                  # (L, S) True = may attend
    out, weights = attend(query, key, value, mask, dropout_p, scale)
    return (out, weights) if return_weights else out


# ============================================================================ one head
