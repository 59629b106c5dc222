"""The functional API (`tinyattn.nn.functional`, imported as F), with PyTorch's names and arguments.

Layers in tinyattn.nn hold parameters and call these functions; the functions hold no state."""
from .. import dtypes as _dt
from .. import functions as _f
from ..autograd import Function
from ..creation import bernoulli_mask
from ..kernels import index as KI
from ..tensor import Tensor, _empty, _make

relu = _f.relu
gelu = _f.gelu
tanh = _f.tanh
sigmoid = _f.sigmoid
softmax = _f.softmax
log_softmax = _f.log_softmax


def linear(input, weight, bias=None):  # noqa: A002 - PyTorch's argument names
    """y = x W^T + b, x (*, in_features), W (out_features, in_features), b (out_features)."""
    if input.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: input has {input.shape[-1] if input.ndim else 0} features "
                         f"(shape {tuple(input.shape)}) but the weight of shape "
                         f"{tuple(weight.shape)} expects {weight.shape[-1]}")
    out = _f.matmul(input, _f.transpose(weight, 0, 1) if weight.ndim == 2 else weight)
    return out if bias is None else _f.add(out, bias)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability p and scale the rest by 1/(1-p) (inverted dropout), so
    the expected value is unchanged and evaluation needs no rescaling."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if not input.dtype.is_floating_point:
        raise TypeError(f"dropout: expected a floating-point tensor, got {input.dtype}")
    return _f.mul(input, bernoulli_mask(input.shape, p, input.dtype))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance, as in PyTorch)."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
        normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise ValueError(f"layer_norm: expected input with trailing shape {normalized_shape}, "
                         f"got shape {tuple(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    mu = _f.mean(input, dims, keepdim=True)
    xc = _f.sub(input, mu)
    var = _f.mean(_f.mul(xc, xc), dims, keepdim=True)
    y = _f.mul(xc, _f.rsqrt(_f.add(var, eps)))
    if weight is not None:
        y = _f.mul(y, weight)
    if bias is not None:
        y = _f.add(y, bias)
    return y


class _Embedding(Function):
    """out[..., :] = weight[idx[...], :];  dweight = g rows added into the rows they came from,
    except row padding_idx, which receives no gradient (it stays the 'no token' vector)."""

    @staticmethod
    def forward(ctx, weight, rows, out_shape, padding_idx):
        n, d = rows.numel(), weight.shape[1]
        out = _empty(out_shape, weight.dtype)
        KI.gather_rows(weight.contiguous()._data, rows._data, out._data, n, d)
        return out

    @staticmethod
    def backward(ctx, g):
        weight, rows, _, padding_idx = ctx.inputs
        n, d = rows.numel(), weight.shape[1]
        out = _make(_dt.zeros_buffer(g.dtype, weight.numel()), weight.shape, g.dtype)
        KI.scatter_add_rows(g.contiguous()._data, rows._data, out._data, n, d)
        if padding_idx is not None:
            out._data[padding_idx * d:(padding_idx + 1) * d] = _dt.zeros_buffer(g.dtype, d)
        return out, None, None, None


def embedding(input, weight, padding_idx=None):  # noqa: A002
    """Rows of weight (num_embeddings, embedding_dim) picked by the int64 indices in input (*):
    output (*, embedding_dim). An index outside [0, num_embeddings) raises IndexError."""
    if not isinstance(input, Tensor) or input.dtype is not _dt.int64:
        raise TypeError("embedding: indices must be an int64 tensor" + (
            f", got {input.dtype}" if isinstance(input, Tensor) else
            f", got {type(input).__name__}"))
    num = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    # Unlike x[idx], a negative token id is an error here (as in PyTorch), not "count from the end".
    rows = _f._checked_index("embedding", input, num, 0, allow_negative=False)
    return _Embedding.apply(weight, rows, tuple(input.shape) + (weight.shape[1],), padding_idx)


# The attention family lives in attention.py (it needs Modules); its functions are exported here.
from .attention import causal_mask, padding_mask, scaled_dot_product_attention  # noqa: E402,F401
