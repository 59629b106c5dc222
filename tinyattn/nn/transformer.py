"""The Transformer (Vaswani et al., 2017) with PyTorch's classes, arguments and state_dict keys.

    encoder layer (post-norm, norm_first=False)       encoder layer (pre-norm, norm_first=True)
        x = norm1(x + SelfAttn(x))                        x = x + SelfAttn(norm1(x))
        x = norm2(x + FF(x))                              x = x + FF(norm2(x))

    decoder layer adds cross-attention to the encoder output ("memory") between the two:
        x = norm2(x + CrossAttn(x, memory))               x = x + CrossAttn(norm2(x), memory)
        x = norm3(x + FF(x))                              x = x + FF(norm3(x))

    FF(x) = linear2(dropout(activation(linear1(x))))

Masks follow MultiheadAttention: a bool True = may NOT attend, a float mask is added to the
scores; `*_key_padding_mask` (B, S) marks padding keys (bool True = padding).
`Transformer.generate_square_subsequent_mask(T)` gives the float causal mask.

Beyond PyTorch, for pictures: `record_attention(model)` makes every layer keep the real per-head
weights of its last forward pass, `attention_maps(model)` collects them by module path:

    {"encoder.layers.0.self_attn": (B, H, S, S), "decoder.layers.0.self_attn": (B, H, T, T),
     "decoder.layers.0.multihead_attn": (B, H, T, S), ...}

(unbatched input gives (H, L, S)). They are the weights multiplied with V, so record in eval mode
to see them without dropout.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import copy
from collections import OrderedDict

from ..tensor import Tensor
from . import functional as F
from . import init
from .attention import MultiheadAttention, causal_mask
from .dropout import Dropout
from .linear import Linear
from .module import Module, ModuleList
from .normalization import LayerNorm


def _get_activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def _run_attention(layer, attn, x, kv, attn_mask, key_padding_mask, is_causal, slot):
    """attn(x, kv, kv) without weights, or with the per-head weights kept in `layer.<slot>`."""
    record = layer.record_attn_weights
    out, weights = attn(x, kv, kv, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                        need_weights=record, average_attn_weights=False, is_causal=is_causal)
    if record:
        setattr(layer, slot, weights.detach())                       # (B, H, L, S)
    return out


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm.

    src (S, B, E), or (B, S, E) with batch_first=True, or unbatched (S, E) -> the same shape.
    activation: 'relu', 'gelu' or a callable. norm_first=True is the pre-norm variant (more stable
    to train deep); False (the default) is the original post-norm layer.

    forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False): src_mask (S, S) or
    (B * nhead, S, S) and src_key_padding_mask (B, S), bool True = may NOT attend, float added.

    record_attn_weights=True (tinyattn only) keeps `self_attn_weights` (B, nhead, S, S) of the
    last forward.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, *, record_attn_weights=False):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation(activation)
        self.batch_first = batch_first
        self.record_attn_weights = record_attn_weights
        self.self_attn_weights = None

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src                                                      # (S, B, E)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x                                                     # (S, B, E)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = _run_attention(self, self.self_attn, x, x, attn_mask, key_padding_mask, is_causal,
                           "self_attn_weights")
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Masked self-attention, cross-attention to the encoder output, and a feed-forward block,
    each with a residual connection and LayerNorm.

    tgt (T, B, E) and memory (S, B, E) (batch first with batch_first=True; unbatched (T, E),
    (S, E)) -> (T, B, E).

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False): tgt_mask (T, T),
    memory_mask (T, S), key padding masks (B, T) and (B, S); bool True = may NOT attend, float
    added.

    record_attn_weights=True (tinyattn only) keeps `self_attn_weights` (B, nhead, T, T) and
    `cross_attn_weights` (B, nhead, T, S) of the last forward.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, *, record_attn_weights=False):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation(activation)
        self.batch_first = batch_first
        self.record_attn_weights = record_attn_weights
        self.self_attn_weights = None
        self.cross_attn_weights = None

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt                                                      # (T, B, E)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x                                                     # (T, B, E)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = _run_attention(self, self.self_attn, x, x, attn_mask, key_padding_mask, is_causal,
                           "self_attn_weights")
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = _run_attention(self, self.multihead_attn, x, memory, attn_mask, key_padding_mask,
                           is_causal, "cross_attn_weights")
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _clones(layer, n):
    """n independent deep copies of one layer (each with its own parameters), as PyTorch does."""
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer applied in turn, then `norm` if given.

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None): masks as
    TransformerEncoderLayer (bool True = may NOT attend, float added). enable_nested_tensor and
    mask_check are accepted for compatibility (tinyattn has no nested tensors): padded positions
    are computed like any other, where PyTorch's inference fast path would output zeros."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer applied in turn, then `norm` if given.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """The encoder-decoder Transformer, with PyTorch's arguments, submodules and state_dict keys
    (`encoder.layers.0.self_attn.in_proj_weight`, ..., `encoder.norm.weight`,
    `decoder.layers.0.multihead_attn.out_proj.bias`, ..., `decoder.norm.bias`).

    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
            tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
            tgt_is_causal=None, memory_is_causal=False)

    src (S, B, E), tgt (T, B, E) -> (T, B, E) (batch first with batch_first=True; unbatched
    (S, E), (T, E) -> (T, E)). src_mask (S, S), tgt_mask (T, T), memory_mask (T, S); key padding
    masks (B, S), (B, T), (B, S). Bool True = may NOT attend, float added: the decoder's causal
    mask is `Transformer.generate_square_subsequent_mask(T)`.

    Every weight matrix starts Xavier-uniform (as in PyTorch); inputs get no embedding or
    positional encoding here: add nn.Embedding and PositionalEncoding in front.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        for name, t in (("src", src), ("tgt", tgt)):
            if not isinstance(t, Tensor):
                raise TypeError(f"Transformer: {name} must be a Tensor, got {type(t).__name__}")
        if src.ndim == 3 and tgt.ndim == 3:
            bdim = 0 if self.batch_first else 1
            if src.shape[bdim] != tgt.shape[bdim]:
                raise ValueError(f"Transformer: the batch sizes of src {tuple(src.shape)} and "
                                 f"tgt {tuple(tgt.shape)} must be equal "
                                 f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature sizes of src {tuple(src.shape)} and tgt "
                             f"{tuple(tgt.shape)} must equal d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)               # (S, B, E)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)       # (T, B, E)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) float causal mask: -inf above the diagonal, 0 on and below it."""
        return causal_mask(sz, convention="additive", dtype=dtype)


_LAYERS = (TransformerEncoderLayer, TransformerDecoderLayer)


def record_attention(model, enabled=True):
    """Make every transformer layer inside `model` keep (enabled=True) or stop keeping its real
    per-head attention weights; returns model. Read them with `attention_maps(model)`."""
    for m in model.modules():
        if isinstance(m, _LAYERS):
            m.record_attn_weights = bool(enabled)
            if not enabled:
                m.self_attn_weights = None
                if isinstance(m, TransformerDecoderLayer):
                    m.cross_attn_weights = None
    return model


def attention_maps(model):
    """The weights recorded by the last forward pass of every layer (see `record_attention`),
    keyed by the attention module's path: OrderedDict {"encoder.layers.0.self_attn": (B, H, L, S),
    "decoder.layers.0.multihead_attn": (B, H, T, S), ...}."""
    maps = OrderedDict()
    for name, m in model.named_modules():
        if not isinstance(m, _LAYERS):
            continue
        prefix = name + "." if name else ""
        if m.self_attn_weights is not None:
            maps[prefix + "self_attn"] = m.self_attn_weights
        if isinstance(m, TransformerDecoderLayer) and m.cross_attn_weights is not None:
            maps[prefix + "multihead_attn"] = m.cross_attn_weights
    return maps

