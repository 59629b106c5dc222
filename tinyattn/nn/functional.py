"""The functional API (`tinyattn.nn.functional`, imported as F), with PyTorch's names and arguments.

Layers in tinyattn.nn hold parameters and call these functions; the functions hold no state."""
from array import array

from .. import dtypes as _dt
from .. import functions as _f
from ..autograd import Function
from ..random import default_generator
from ..kernels import elementwise as KE
from ..kernels import index as KI
from ..kernels import random as KRand
from ..kernels import norm as KL
from ..tensor import Tensor, _empty, _make

relu = _f.relu
gelu = _f.gelu
tanh = _f.tanh
sigmoid = _f.sigmoid
softmax = _f.softmax
log_softmax = _f.log_softmax


class _Linear(Function):
    """y = x W^T + b as one graph node: x (*, in), W (out, in), b (out,) or None -> y (*, out).

    forward: the rows of x, folded into one (N, in) matrix, times W^T (a transposed view that the
    matmul kernel reads in place), then b added to every row.
    backward, with g (*, out) folded into (N, out):
        dx = g W   (N, in)        dW = g^T x   (out, in)        db = sum of g over the N rows
    Composed from ops this was transpose + matmul + add forward and eight ops backward, and W's
    gradient came out as a transposed view (which the optimizer then copied)."""

    op_name = "Linear"

    @staticmethod
    def forward(ctx, x, weight, bias):
        x = _f._packed(x)
        n_out, n_in = weight.shape
        N = x.numel() // n_in if n_in else _f._shapes.numel(x.shape[:-1])
        x2 = _make(x._data, (N, n_in), x.dtype)
        out = _f._matmul_raw(x2, _f._transposed(weight))  # (N, out)
        if bias is not None:
            b = _f._packed(bias)
            KE.ADD_ROW_VECTOR[out.dtype.typecode](out._data, b._data, N, n_out)
        if ctx.needs_input_grad:
            ctx.x2 = x2
        return _make(out._data, x.shape[:-1] + (n_out,), out.dtype)

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.inputs
        need_x, need_w, need_b = ctx.needs_input_grad
        x2 = ctx.x2
        g2 = _make(_f._packed(g)._data, (x2.shape[0], weight.shape[0]), g.dtype)  # (N, out)
        dx = dw = db = None
        if need_x:
            dx = _make(_f._matmul_raw(g2, weight)._data, x.shape, x.dtype)
        if need_w:
            dw = _f._matmul_raw(_f._transposed(g2), x2)  # (out, in)
        if need_b:
            db = _f._sum(g2, (0,), keepdim=False)
        return dx, dw, db


def linear(input, weight, bias=None):  # noqa: A002 - PyTorch's argument names
    """y = x W^T + b, x (*, in_features), W (out_features, in_features), b (out_features).

    One fused node (_Linear) for the usual case; anything unusual (mixed dtypes, a 1-D weight)
    takes the composed path, whose ops raise the errors."""
    if input.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: input has {input.shape[-1] if input.ndim else 0} features "
                         f"(shape {tuple(input.shape)}) but the weight of shape "
                         f"{tuple(weight.shape)} expects {weight.shape[-1]}")
    dt = input.dtype
    if len(weight.shape) == 2 and len(input.shape) >= 1 and weight.dtype is dt and \
            dt.is_floating_point and (bias is None or (bias.dtype is dt and
                                                      bias.shape == weight.shape[:1])):
        return _Linear.apply(input, weight, bias)
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
    return _Dropout.apply(input, float(p))


class _Dropout(Function):
    """y = x * m, m[i] = 1/(1-p) with probability 1-p, else 0;  dx = g * m.

    The same numbers as x * bernoulli_mask(...) (the same draw from the same generator), as one
    node: the random numbers are counter-based, so backward redraws m from the two keys instead
    of keeping an x-sized mask tensor (kernels/random.py: dropout_apply)."""

    op_name = "Dropout"

    @staticmethod
    def forward(ctx, x, p):
        k1, k2 = default_generator.next_keys()
        # the scale as a mask of x's dtype would store it (1/0.9 rounded to float32, say)
        scale = array(x.dtype.typecode, [1.0 / (1.0 - p) if p < 1 else 0.0])[0]
        x = _f._packed(x)
        out = _empty(x.shape, x.dtype)
        KRand.dropout_apply(x._data, out._data, len(out._data), k1, k2, p, scale)
        if ctx.needs_input_grad:
            ctx.draw = (k1, k2, p, scale)
        return out

    @staticmethod
    def backward(ctx, g):
        k1, k2, p, scale = ctx.draw
        g = _f._packed(g)
        dx = _empty(g.shape, g.dtype)
        KRand.dropout_apply(g._data, dx._data, len(dx._data), k1, k2, p, scale)
        return dx, None


class _LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last D elements of each row.

    Fused (kernels/norm.py): with xhat = (x - mean) * rstd and gy = g * weight, per row
        dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
        dweight = sum over rows of g * xhat,  dbias = sum over rows of g."""

    @staticmethod
    def forward(ctx, x, weight, bias, D, eps):
        xp = _f._packed(x)
        N = xp.numel() // D if D else 0
        out = _empty(x.shape, x.dtype)
        mean = _dt.zeros_buffer(_dt.float64, N)
        rstd = _dt.zeros_buffer(_dt.float64, N)
        w = xp if weight is None else _f._packed(weight)
        b = xp if bias is None else _f._packed(bias)
        KL.FORWARD[x.dtype.typecode](xp._data, w._data, b._data, weight is not None,
                                     bias is not None, out._data, mean, rstd, N, D, float(eps))
        ctx.save_for_backward(xp, w)
        ctx.stats = (mean, rstd, N)
        return out

    @staticmethod
    def backward(ctx, g):
        xp, w = ctx.saved_tensors
        mean, rstd, N = ctx.stats
        x, weight, bias, D, _ = ctx.inputs
        g = _f._packed(g)
        dx = _empty(x.shape, x.dtype)
        dw = _dt.zeros_buffer(_dt.float64, D)
        db = _dt.zeros_buffer(_dt.float64, D)
        KL.BACKWARD[x.dtype.typecode](g._data, xp._data, w._data, weight is not None, mean,
                                      rstd, dx._data, dw, db, N, D)
        gw = gb = None
        if weight is not None and ctx.needs_input_grad[1]:
            gw = _make(array(weight.dtype.typecode, dw), weight.shape, weight.dtype)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = _make(array(bias.dtype.typecode, db), bias.shape, bias.dtype)
        return dx, gw, gb, None, None


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance, as in PyTorch); weight and bias have shape normalized_shape. One fused
    primitive (_LayerNorm), not ~30 small ops."""
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
    return _LayerNorm.apply(input, weight, bias, D, eps)


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


from ._loss_functional import (binary_cross_entropy_with_logits, cross_entropy,  # noqa: E402,F401
                               mse_loss, nll_loss)
# The attention family lives in attention.py (it needs Modules); its functions are exported here.
from .attention import causal_mask, padding_mask, scaled_dot_product_attention  # noqa: E402,F401
