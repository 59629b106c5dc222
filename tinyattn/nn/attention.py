"""Attention: scaled dot-product attention, multi-head attention, a single-head layer, mask helpers.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d) + M) V                  (Vaswani et al., 2017)

Letters as the attention literature writes them: B batch, H heads, L query (target) positions,
S key (source) positions, E embedding size, hs = E / H the size of one head, M the mask.

Mask polarity -- the most reported confusion in the field. PyTorch uses two opposite bool
conventions; tinyattn follows PyTorch in each place, and says so in every docstring:

    consumer                                          bool True means      float mask
    ------------------------------------------------  -------------------  -------------------
    scaled_dot_product_attention(attn_mask=)          may attend           added to the scores
    SelfAttention(mask=)  (tinyattn only, as SDPA)    may attend           added to the scores
    MultiheadAttention(attn_mask=, key_padding_mask=)  may NOT attend       added to the scores
    Transformer*(..._mask=, ..._key_padding_mask=)    may NOT attend       added to the scores

A float mask holds 0 where attention is allowed and -inf where it is not. It means the same thing
to every consumer, which is why `causal_mask` and `padding_mask` return one unless asked for a
bool mask of a named convention.

Beyond PyTorch:
- a query whose keys are all masked gets weights 0 and output 0, with finite gradients, in every
  layer (PyTorch's MultiheadAttention and Transformer give NaN there): the softmax of an all -inf
  row is 0 in tinyattn;
- every layer can hand back its real per-head weights (B, H, L, S) for pictures:
  `scaled_dot_product_attention(..., return_weights=True)`, `MultiheadAttention(...,
  average_attn_weights=False)`, and `SelfAttention` always.

Chapter 3 of the tour (docs/03-attention.md) walks through this file.
"""
import math

from .. import dtypes as _dt
from ..creation import empty, zeros
from ..ops.attention import (attend, check_float, check_mask_dtype,  # noqa: F401  (re-exported)
                             causal_mask, padding_mask, scaled_dot_product_attention)
from ..ops.compare import where
from ..ops.flash import SDPBackend, sdpa_kernel  # noqa: F401  (torch.nn.attention's names)
from ..ops.layout import cat
from . import functional as F
from . import init
from .linear import Linear
from .module import Module, Parameter


class SelfAttention(Module):
    """Single-head self-attention, as the attention literature writes it:

        Q = X W_Q + b_Q      K = X W_K + b_K      V = X W_V + b_V
        A = softmax(Q K^T / sqrt(d_k))            H = A V

    X (N, D) or (B, N, D) -> H (N, d_v) / (B, N, d_v) and the attention weights A (N, N) /
    (B, N, N): row n says how much token n attends to every token.

    D = embed_dim; d_k = kdim (default D), the size of queries and keys; d_v = out_dim (default
    D). W_Q, W_K (D, d_k) and W_V (D, d_v) multiply from the right, as in the equations; biases
    b_Q, b_K (d_k) and b_V (d_v) exist when bias=True. In the Omega/beta notation of Prince's
    "Understanding Deep Learning" (tokens as columns, q_n = beta_q + Omega_q x_n):
    Omega_q = W_Q^T and beta_q = b_Q, likewise for k and v. Weights start Xavier-uniform (as
    MultiheadAttention's), biases at zero. tinyattn only (PyTorch has no single-head layer).

    forward(x, mask=None, is_causal=False): mask follows scaled_dot_product_attention: a bool
    True = MAY attend, a float is added; broadcastable to (N, N) / (B, N, N).
    """

    def __init__(self, embed_dim, kdim=None, out_dim=None, bias=False, dtype=None):
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.out_dim = embed_dim if out_dim is None else out_dim
        self.W_Q = Parameter(empty(embed_dim, self.kdim, dtype=dtype))
        self.W_K = Parameter(empty(embed_dim, self.kdim, dtype=dtype))
        self.W_V = Parameter(empty(embed_dim, self.out_dim, dtype=dtype))
        if bias:
            self.b_Q = Parameter(zeros(self.kdim, dtype=dtype))
            self.b_K = Parameter(zeros(self.kdim, dtype=dtype))
            self.b_V = Parameter(zeros(self.out_dim, dtype=dtype))
        else:
            self.register_parameter("b_Q", None)
            self.register_parameter("b_K", None)
            self.register_parameter("b_V", None)
        self.reset_parameters()

    def reset_parameters(self):
        for w in (self.W_Q, self.W_K, self.W_V):
            init.xavier_uniform_(w)
        for b in (self.b_Q, self.b_K, self.b_V):
            if b is not None:
                init.zeros_(b)

    def forward(self, x, mask=None, is_causal=False):
        check_float("SelfAttention", "x", x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.embed_dim:
            raise ValueError(f"SelfAttention: expected x of shape (N, {self.embed_dim}) or "
                             f"(B, N, {self.embed_dim}), got {tuple(x.shape)}")
        q = x @ self.W_Q                                             # (B, N, d_k)
        k = x @ self.W_K                                             # (B, N, d_k)
        v = x @ self.W_V                                             # (B, N, d_v)
        if self.b_Q is not None:
            q = q + self.b_Q                                         # (B, N, d_k)
            k = k + self.b_K                                         # (B, N, d_k)
            v = v + self.b_V                                         # (B, N, d_v)
        return scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                            return_weights=True)   # (B, N, d_v), (B, N, N)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, kdim={self.kdim}, out_dim={self.out_dim}, "
                f"bias={self.b_Q is not None}")


# ============================================================================ many heads


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's signature, parameters, initialisation and outputs.

        head_h = softmax(Q W_q^h (K W_k^h)^T / sqrt(hs) + M) V W_v^h        h = 1..H
        out    = concat(head_1, ..., head_H) W_o^T + b_o

    Parameters (PyTorch's names and shapes): `in_proj_weight` (3E, E) stacking W_q, W_k, W_v when
    kdim == vdim == E, else `q_proj_weight` (E, E), `k_proj_weight` (E, kdim), `v_proj_weight`
    (E, vdim); `in_proj_bias` (3E); `out_proj` a Linear(E, E). In-projections start
    Xavier-uniform, both biases at zero, out_proj.weight as Linear's default (as in PyTorch).

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
            average_attn_weights=True, is_causal=False) -> (output, weights)

    query (L, B, E), key (S, B, kdim), value (S, B, vdim) -> output (L, B, E); with
    batch_first=True (B, L, E) etc.; unbatched (L, E), (S, kdim), (S, vdim) -> (L, E).

    key_padding_mask (B, S) (unbatched (S,)): bool True = this key is padding, may NOT be
        attended to; a float mask is added to the scores.
    attn_mask (L, S), or (B * H, L, S) with row b * H + h for batch b, head h (unbatched
        (H, L, S)): bool True = may NOT attend; a float mask is added. The opposite bool polarity
        of scaled_dot_product_attention's attn_mask, as in PyTorch.
    is_causal: a hint that attn_mask is the causal mask; as in PyTorch, attn_mask must be given.
    need_weights: also return the attention weights, averaged over heads (B, L, S) when
        average_attn_weights, else per head (B, H, L, S); None when need_weights=False. They
        are the weights multiplied with V (after dropout in training mode), as in PyTorch.

    Beyond PyTorch: a query whose keys are all masked gets weights 0 and output out_proj.bias
    (its attention output is 0), with finite gradients; PyTorch gives NaN. add_bias_kv adds a
    learned key and value (bias_k, bias_v: (1, 1, E)) and add_zero_attn a zero one, as in PyTorch.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be positive, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        E = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * E, E, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(E, E, dtype=dtype))
            self.k_proj_weight = Parameter(empty(E, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(empty(E, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * E, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        if add_bias_kv:   # one more key and value, learned, that every query may attend to
            self.bias_k = Parameter(empty(1, 1, E, dtype=dtype))
            self.bias_v = Parameter(empty(1, 1, E, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn   # one more key and value of zeros
        self.recorded = None   # a dict here makes forward keep scores, mask, weights (viz.explorer)
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projection_weights(self):
        """(W_q, W_k, W_v) and (b_q, b_k, b_v): views into the packed parameters, no copies."""
        if self._qkv_same_embed_dim:
            ws = self.in_proj_weight.chunk(3)                        # 3 x (E, E) views
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else b.chunk(3)         # 3 x (E,) views
        return ws, bs

    def _split_heads(self, x):
        """(L, B, E) -> (B, H, L, hs), or (B, L, E) -> (B, H, L, hs) when batch_first: a view."""
        H, hs = self.num_heads, self.head_dim
        if self.batch_first:
            B, L, _ = x.shape
            return x.view(B, L, H, hs).permute(0, 2, 1, 3)          # (B, H, L, hs)
        L, B, _ = x.shape
        return x.view(L, B, H, hs).permute(1, 2, 0, 3)              # (B, H, L, hs)

    def _merge_heads(self, x):
        """(B, H, L, hs) -> (L, B, E), or (B, L, E) if batch_first: one copy, heads side by side."""
        B, H, L, hs = x.shape
        if self.batch_first:
            return x.permute(0, 2, 1, 3).reshape(B, L, H * hs)      # (B, L, E)
        return x.permute(2, 0, 1, 3).reshape(L, B, H * hs)          # (L, B, E)

    def _check_inputs(self, query, key, value, key_padding_mask, attn_mask):
        op = "MultiheadAttention"
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_float(op, name, t)
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{op}: query, key and value must all be 3-D (batched) or all 2-D "
                             f"(unbatched), got shapes {tuple(query.shape)}, {tuple(key.shape)}, "
                             f"{tuple(value.shape)}")
        for name, t, want in (("query", query, self.embed_dim), ("key", key, self.kdim),
                              ("value", value, self.vdim)):
            if t.shape[-1] != want:
                raise ValueError(f"{op}: expected {name} with {want} features, got shape "
                                 f"{tuple(t.shape)}")
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"{op}: key shape {tuple(key.shape)} and value shape "
                             f"{tuple(value.shape)} must agree except in the last dim")
        bdim = 0 if self.batch_first else 1
        if batched and query.shape[bdim] != key.shape[bdim]:
            raise ValueError(f"{op}: query (shape {tuple(query.shape)}) and key (shape "
                             f"{tuple(key.shape)}) have different batch sizes "
                             f"(batch_first={self.batch_first})")
        if not query.dtype is key.dtype is value.dtype:
            raise TypeError(f"{op}: query, key and value must have the same dtype, got "
                            f"{query.dtype}, {key.dtype} and {value.dtype}")
        sdim = 1 if self.batch_first and batched else 0
        L, S = query.shape[sdim], key.shape[sdim]
        B = query.shape[bdim] if batched else 1
        if key_padding_mask is not None:
            want = (B, S) if batched else (S,)
            if tuple(key_padding_mask.shape) != want:
                raise ValueError(f"{op}: key_padding_mask must have shape {want} (batch, source "
                                 f"length), got {tuple(key_padding_mask.shape)}")
        if attn_mask is not None:
            want3 = (B * self.num_heads, L, S) if batched else (self.num_heads, L, S)
            if tuple(attn_mask.shape) not in ((L, S), want3):
                raise ValueError(f"{op}: attn_mask must have shape {(L, S)} or {want3}, got "
                                 f"{tuple(attn_mask.shape)}")
        return batched, B, L, S

    def _combined_mask(self, attn_mask, key_padding_mask, B, L, S, dtype):
        """Both masks as one additive float mask for `attend` (0 = may attend, -inf = may not),
        broadcastable to the scores (B, H, L, S); None when there is no mask."""
        parts = []
        if attn_mask is not None:
            m = check_mask_dtype("MultiheadAttention", "attn_mask", attn_mask, dtype)
            if m.ndim == 3:  # row b * H + h holds batch b, head h
                m = m.reshape(B, self.num_heads, L, S)               # (B, H, L, S)
            parts.append(m)                                          # (L, S) or (B, H, L, S)
        if key_padding_mask is not None:
            m = check_mask_dtype("MultiheadAttention", "key_padding_mask", key_padding_mask,
                                  dtype)
            parts.append(m.reshape(B, 1, 1, S))                      # (B, 1, 1, S)
        combined = None
        for m in parts:
            if m.dtype is _dt.bool:  # MultiheadAttention's polarity: True = may NOT attend
                m = where(m, -math.inf, 0.0).to(dtype)            # True -> -inf
            combined = m if combined is None else combined + m       # (B, H, L, S) broadcast
        return combined

    def _extra_keys(self, k, v, mask):
        """add_bias_kv and add_zero_attn: keys and values (B, H, S, hs) get one more position each
        (bias_k / bias_v split into heads, then zeros), which no mask hides."""
        B, H, _, hs = k.shape
        extra = []
        if self.bias_k is not None:
            extra.append((self.bias_k.reshape(1, H, 1, hs).expand(B, H, 1, hs),
                          self.bias_v.reshape(1, H, 1, hs).expand(B, H, 1, hs)))
        if self.add_zero_attn:
            z = zeros(B, H, 1, hs, dtype=k.dtype)
            extra.append((z, z))
        for ek, ev in extra:
            k, v = cat([k, ek], 2), cat([v, ev], 2)
        if extra and mask is not None:
            mask = F.pad(mask, (0, len(extra)))                      # 0: may attend
        return k, v, mask

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched, B, L, S = self._check_inputs(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: is_causal=True is a hint that attn_mask is "
                               "the causal mask, so attn_mask must be given (as in PyTorch); use "
                               "causal_mask(L) or Transformer.generate_square_subsequent_mask(L)")
        if not batched:  # a batch of one, removed again at the end
            bdim = 0 if self.batch_first else 1
            query, key, value = query.unsqueeze(bdim), key.unsqueeze(bdim), value.unsqueeze(bdim)
        (w_q, w_k, w_v), (b_q, b_k, b_v) = self._projection_weights()
        # The 1/sqrt(hs) of the scores, folded into the query projection:
        # (x W_q^T + b_q) * s = x (s W_q)^T + s b_q scales E * E weights instead of B * L * E.
        scale = 1.0 / math.sqrt(self.head_dim)
        w_q = w_q * scale                                            # (E, E)
        b_q = None if b_q is None else b_q * scale                   # (E,)
        q = self._split_heads(F.linear(query, w_q, b_q))            # (B, H, L, hs)
        k = self._split_heads(F.linear(key, w_k, b_k))              # (B, H, S, hs)
        v = self._split_heads(F.linear(value, w_v, b_v))            # (B, H, S, hs)
        mask = self._combined_mask(attn_mask, key_padding_mask, B, L, S, q.dtype)
        k, v, mask = self._extra_keys(k, v, mask)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or self.recorded is not None:
            out, weights = attend(q, k, v, mask, dropout_p, 1.0)   # (B, H, L, hs), (B, H, L, S)
        else:  # no weights wanted: the fused kernel when it can (PyTorch takes SDPA here too)
            out = scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                               scale=1.0)            # (B, H, L, hs)
        if self.recorded is not None:  # tinyattn only: viz.explorer asked for the scores too
            self.recorded.update(scores=(q @ k.transpose(-2, -1)).detach(), mask=mask,
                                 weights=weights.detach())        # scale already in q
        out = self.out_proj(self._merge_heads(out))                  # (L, B, E) or (B, L, E)
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)          # (L, E)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)                                # (B, L, S)
        if not batched:
            weights = weights.squeeze(0)                             # (L, S) or (H, L, S)
        return out, weights

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
