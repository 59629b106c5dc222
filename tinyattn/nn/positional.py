"""Positional encodings: where each token sits in the sequence, added to its embedding.

Attention by itself is blind to order: permute the tokens and the outputs are permuted the same
way (it is permutation-equivariant). Adding a vector that depends on the position breaks that
symmetry, so "dog bites man" and "man bites dog" look different to the model.

    sinusoidal (Vaswani et al., 2017):  PE(pos, 2i)   = sin(pos / 10000^(2i / d))
                                        PE(pos, 2i+1) = cos(pos / 10000^(2i / d))
    learned (GPT-2, BERT):              P = a trainable (max_len, d) table, row pos for position pos

Chapter 3 of the tour (docs/03-attention.md) walks through this file.
"""
from .. import dtypes as _dt
from ..creation import arange, empty, tensor
from ..ops.compare import where
from . import init
from .dropout import Dropout
from .module import Module, Parameter


def sinusoidal_table(max_len, d_model, dtype=None):
    """The (max_len, d_model) table PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) =
    cos(pos / 10000^(2i/d)). An odd d_model works: its last column is a sine (column 2i for
    i = (d-1)/2) with no cosine partner. Computed in float64, returned in dtype (float32)."""
    if max_len < 0 or d_model <= 0:
        raise ValueError(f"sinusoidal_table: need max_len >= 0 and d_model > 0, got "
                         f"max_len={max_len}, d_model={d_model}")
    # Column j pairs with column j ^ 1: both use the frequency of i = j // 2.
    freqs = [10000.0 ** (-2 * (j // 2) / d_model) for j in range(d_model)]
    pos = arange(max_len, dtype=_dt.float64).view(max_len, 1)       # (T, 1)
    angle = pos * tensor(freqs, dtype=_dt.float64).view(1, d_model)  # (T, d) pos / 10000^(2i/d)
    even = tensor([j % 2 == 0 for j in range(d_model)]).view(1, d_model)  # (1, d)
    table = where(even, angle.sin(), angle.cos())                 # (T, d)
    return table.to(_dt.get(dtype or _dt.float32))


class PositionalEncoding(Module):
    """x + PE[offset : offset + T], then dropout: the fixed sinusoidal encoding.

    Input layout: x (T, B, E) (sequence first, PyTorch's default, as nn.Transformer), or (B, T, E)
    with batch_first=True; an unbatched (T, E) works either way. E must equal d_model.

    The table is the buffer `pe` of shape (max_len, 1, d_model), saved in state_dict: the shape
    of PyTorch's transformer tutorial, so its checkpoints load. It is computed in float64 and
    stored in float32; odd d_model works. `offset` shifts the positions, for decoding one token at
    a time.
    """

    def __init__(self, d_model, dropout=0.0, max_len=5000, batch_first=False, dtype=None):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.batch_first = batch_first
        self.dropout = Dropout(dropout)
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, dtype).view(
            max_len, 1, d_model))

    def forward(self, x, offset=0):
        return self.dropout(x + _positions("PositionalEncoding", self.pe.squeeze(1), x, offset,
                                           self.batch_first))

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}, batch_first={self.batch_first}"


class LearnedPositionalEmbedding(Module):
    """x + P[offset : offset + T], then dropout, with P a trainable table (GPT-2 and BERT's way).

    weight (max_len, d_model) starts as N(0, 0.02^2), as in GPT-2 and BERT: small next to the
    token embeddings at first. Input layout as PositionalEncoding: (T, B, E), or (B, T, E) with
    batch_first=True, or unbatched (T, E). Positions beyond max_len raise an error: a learned
    table, unlike the sinusoidal one, has nothing to say about them.
    """

    def __init__(self, max_len, d_model, dropout=0.0, batch_first=False, dtype=None):
        super().__init__()
        self.max_len = max_len
        self.d_model = d_model
        self.batch_first = batch_first
        self.weight = Parameter(empty(max_len, d_model, dtype=dtype))
        self.dropout = Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight, 0.0, 0.02)

    def forward(self, x, offset=0):
        return self.dropout(x + _positions("LearnedPositionalEmbedding", self.weight, x, offset,
                                           self.batch_first))

    def extra_repr(self):
        return f"{self.max_len}, {self.d_model}, batch_first={self.batch_first}"


def _positions(op, table, x, offset, batch_first):
    """Rows offset..offset+T of a (max_len, E) table, shaped to broadcast against x."""
    max_len, E = table.shape
    if x.ndim not in (2, 3) or x.shape[-1] != E:
        raise ValueError(f"{op}: expected x of shape (T, B, {E}), (B, T, {E}) with "
                         f"batch_first=True, or (T, {E}); got {tuple(x.shape)}")
    T = x.shape[1] if batch_first and x.ndim == 3 else x.shape[0]
    if offset < 0 or offset + T > max_len:
        raise ValueError(f"{op}: positions {offset}..{offset + T - 1} do not fit in max_len="
                         f"{max_len}")
    rows = table.narrow(0, offset, T)                                # (T, E) a view
    if rows.dtype is not x.dtype:
        rows = rows.to(x.dtype)
    if x.ndim == 3 and not batch_first:
        rows = rows.unsqueeze(1)                                     # (T, 1, E) against (T, B, E)
    return rows                                                      # (T, E) against (B, T, E)

