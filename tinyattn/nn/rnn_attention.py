"""Attention for RNN encoder-decoders: Bahdanau's additive attention and Luong's three scores.

A decoder state s (the query, (B, H_dec)) looks at the encoder outputs h_1 .. h_S (the keys, which
are also the values, (B, S, H_enc)) and takes their weighted average, the context:

    e_j = score(s, h_j)              (B, S)   how well source position j fits the current step
    a   = softmax(e)                 (B, S)   attention weights, sum to 1 over the source
    c   = sum_j a_j h_j              (B, H_enc)

    AdditiveAttention (Bahdanau et al., 2015):  score(s, h) = v^T tanh(W s + U h)
    LuongAttention    (Luong et al., 2015):     dot      s^T h
                                                general  s^T W_a h
                                                concat   v^T tanh(W_a [s; h])

The encoder-side part (U h, W_a h, or nothing for dot) does not depend on the decoder step, so it
is computed once per source sentence with `precompute_keys(keys)` and passed back every step as
`projected_keys=`; a decoder then does only the (B, H_dec)-sized work per step.

Masks: `key_padding_mask` (B, S) bool, **True marks padding** -- positions that may not be attended
to -- as in torch.nn.MultiheadAttention's key_padding_mask; build it with
`nn.padding_mask(lengths, S, convention="mha")`.
Masked positions get weight exactly 0; a row with every position masked gets all-zero weights and
a zero context (PyTorch's softmax would give NaN), with finite gradients.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math

from .. import dtypes as _dt
from ..ops.attention import additive_score, attention_context
from ..ops.compare import masked_fill
from ..ops.layout import narrow, squeeze, transpose, unsqueeze
from ..tensor import Tensor
from ..ops.matmul import matmul
from ..ops.softmax import softmax
from .linear import Linear
from .module import Module


def _check(op, query, keys, key_padding_mask, query_size, key_size):
    if not isinstance(query, Tensor) or query.ndim != 2 or query.shape[1] != query_size:
        raise ValueError(f"{op}: query must have shape (B, {query_size}), got "
                         f"{tuple(query.shape) if isinstance(query, Tensor) else query!r}")
    if not isinstance(keys, Tensor) or keys.ndim != 3 or keys.shape[2] != key_size \
            or keys.shape[0] != query.shape[0]:
        raise ValueError(f"{op}: keys (encoder outputs) must have shape ({query.shape[0]}, S, "
                         f"{key_size}), got "
                         f"{tuple(keys.shape) if isinstance(keys, Tensor) else keys!r}")
    if key_padding_mask is not None:
        if not isinstance(key_padding_mask, Tensor) or key_padding_mask.dtype is not _dt.bool:
            raise TypeError(f"{op}: key_padding_mask must be a bool tensor (True = padding)")
        if tuple(key_padding_mask.shape) != tuple(keys.shape[:2]):
            raise ValueError(f"{op}: key_padding_mask must have shape {tuple(keys.shape[:2])} "
                             f"(B, S), got {tuple(key_padding_mask.shape)}")


def _weigh_keys(scores, keys, key_padding_mask):
    """Masked softmax over the source, then the weighted sum of the keys.

    scores (B, S), keys (B, S, H_enc) -> context (B, H_enc), weights (B, S)."""
    if key_padding_mask is not None:
        scores = masked_fill(scores, key_padding_mask, -math.inf)
    weights = softmax(scores, -1)  # (B, S); an all -inf row gives zeros
    if weights.dtype is keys.dtype and keys._strides[2] == 1:
        context = attention_context(weights, keys)  # sum_s weights[:, s] keys[:, s]: fused
    else:  # the same as a batched product: (B, 1, S) @ (B, S, H)
        context = squeeze(matmul(unsqueeze(weights, 1), keys), 1)
    return context, weights


class AdditiveAttention(Module):
    """Bahdanau attention: score(s, h_j) = v^T tanh(W s + U h_j).

    query_size = H_dec, key_size = H_enc, hidden_size = the size A of the tanh layer (default
    H_dec). Parameters: query_proj.weight (A, H_dec) = W, key_proj.weight (A, H_enc) = U and
    key_proj.bias (A), v.weight (1, A).

    forward(query (B, H_dec), keys (B, S, H_enc), key_padding_mask=None (B, S) True = padding,
    projected_keys=None) -> (context (B, H_enc), weights (B, S))."""

    def __init__(self, query_size, key_size, hidden_size=None, dtype=None):
        super().__init__()
        hidden_size = query_size if hidden_size is None else hidden_size
        self.query_size, self.key_size, self.hidden_size = query_size, key_size, hidden_size
        self.query_proj = Linear(query_size, hidden_size, bias=False, dtype=dtype)
        self.key_proj = Linear(key_size, hidden_size, bias=True, dtype=dtype)
        self.v = Linear(hidden_size, 1, bias=False, dtype=dtype)

    def precompute_keys(self, keys):
        """U h_j + b for every source position: (B, S, H_enc) -> (B, S, A). Once per sentence."""
        return self.key_proj(keys)

    def forward(self, query, keys, key_padding_mask=None, projected_keys=None):
        _check("AdditiveAttention", query, keys, key_padding_mask, self.query_size, self.key_size)
        pk = self.precompute_keys(keys) if projected_keys is None else projected_keys  # (B, S, A)
        q = self.query_proj(query)  # (B, A)
        # v^T tanh(U h_s + W s) for all s at once, fused (the ops: tanh(pk + q[:, None]) @ v)
        scores = additive_score(pk, q, self.v.weight, check=False)  # (B, S); v.weight is (1, A)
        return _weigh_keys(scores, keys, key_padding_mask)

    def extra_repr(self):
        return f"query_size={self.query_size}, key_size={self.key_size}, " \
               f"hidden_size={self.hidden_size}"


class LuongAttention(Module):
    """Luong attention with score 'dot' (s^T h; needs H_dec == H_enc, no parameters), 'general'
    (s^T W_a h; W_a.weight (H_dec, H_enc)) or 'concat' (v^T tanh(W_a [s; h]); W_a.weight
    (A, H_dec + H_enc), v.weight (1, A), A = hidden_size, default H_dec).

    forward(query (B, H_dec), keys (B, S, H_enc), key_padding_mask=None (B, S) True = padding,
    projected_keys=None) -> (context (B, H_enc), weights (B, S)). In Luong's decoder the query is
    the *current* state s_t (Bahdanau's uses the previous one)."""

    def __init__(self, query_size, key_size, score="general", hidden_size=None, dtype=None):
        super().__init__()
        if score not in ("dot", "general", "concat"):
            raise ValueError(f"LuongAttention: score must be 'dot', 'general' or 'concat', got "
                             f"{score!r}")
        if score == "dot" and query_size != key_size:
            raise ValueError(f"LuongAttention: the 'dot' score needs query_size == key_size, got "
                             f"{query_size} and {key_size} (use 'general')")
        self.query_size, self.key_size, self.score = query_size, key_size, score
        self.hidden_size = query_size if hidden_size is None else hidden_size
        if score == "general":
            self.W_a = Linear(key_size, query_size, bias=False, dtype=dtype)
        elif score == "concat":
            self.W_a = Linear(query_size + key_size, self.hidden_size, bias=False, dtype=dtype)
            self.v = Linear(self.hidden_size, 1, bias=False, dtype=dtype)

    def precompute_keys(self, keys):
        """The query-independent part: h (dot), W_a h (general, (B, S, H_dec)), or the key half of
        W_a [s; h] (concat, (B, S, A))."""
        if self.score == "dot":
            return keys
        if self.score == "general":
            return self.W_a(keys)
        w_key = narrow(self.W_a.weight, 1, self.query_size, self.key_size)  # (A, H_enc)
        return matmul(keys, transpose(w_key, 0, 1))

    def forward(self, query, keys, key_padding_mask=None, projected_keys=None):
        _check("LuongAttention", query, keys, key_padding_mask, self.query_size, self.key_size)
        pk = self.precompute_keys(keys) if projected_keys is None else projected_keys
        if self.score == "concat":
            w_query = narrow(self.W_a.weight, 1, 0, self.query_size)  # (A, H_dec)
            q = matmul(query, transpose(w_query, 0, 1))  # (B, A)
            scores = additive_score(pk, q, self.v.weight, check=False)  # (B, S); v.weight is (1, A)
        else:
            scores = squeeze(matmul(pk, unsqueeze(query, 2)), 2)  # (B, S, H) @ (B, H, 1)
        return _weigh_keys(scores, keys, key_padding_mask)

    def extra_repr(self):
        return f"query_size={self.query_size}, key_size={self.key_size}, score='{self.score}'"
