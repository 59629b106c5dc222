"""From class indices to vectors: embedding (a learned row per index) and one_hot.

    Embedding   out[..., :] = weight[idx[...], :];  dweight = g rows added into the rows they
                came from (a row picked twice gets both); the padding row receives no gradient

The same row gather as x[idx] (ops/indexing.py IndexRows), with PyTorch's embedding options:
padding_idx, max_norm (rows renormalised in place before the lookup) and scale_grad_by_freq.
An index outside [0, num_embeddings) raises IndexError; a negative one too, unlike x[idx].

Chapter 5 of the tour (docs/05-transformer.md) uses embedding.
"""
import builtins
from array import array

from .. import dtypes as _dt
from ..autograd import Function, no_grad
from .. import backend
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import packed
from ._recorded import adjoint
from .convert import to_dtype
from .compare import eq, where
from .indexing import checked_index, index_select, int_range
from .norm import norm
from .scatter import unique

_int64 = _dt.int64


class Embedding(Function):
    """out[..., :] = weight[idx[...], :];  dweight = g rows added into the rows they came from,
    except row padding_idx, which receives no gradient (it stays the 'no token' vector). With
    scale_grad_by_freq each row's gradient is divided by how often its index occurs in idx."""

    @staticmethod
    def forward(ctx, weight, rows, out_shape, padding_idx, scale_grad_by_freq=False):
        n, d = rows.numel(), weight.shape[1]
        out = _empty(out_shape, weight.dtype)
        backend.index.gather_rows(packed(weight)._data, rows._data, out._data, n, d)
        return out

    @staticmethod
    def backward(ctx, g):
        weight, rows, _, padding_idx, scale_grad_by_freq = ctx.inputs
        n, d = rows.numel(), weight.shape[1]
        out = _make(_dt.zeros_buffer(g.dtype, weight.numel()), weight.shape, g.dtype)
        backend.index.scatter_add_rows(packed(g)._data, rows._data, out._data, n, d)
        if scale_grad_by_freq:
            count = _dt.zeros_buffer(g.dtype, weight.shape[0])
            backend.index.scatter_add_rows(array(g.dtype.typecode, [1]) * n, rows._data, count, n, 1)
            data = out._data
            for r, c in enumerate(count):
                if c > 1:
                    data[r * d:(r + 1) * d] = array(g.dtype.typecode,
                                                    (v / c for v in data[r * d:(r + 1) * d]))
        if padding_idx is not None:
            out._data[padding_idx * d:(padding_idx + 1) * d] = _dt.zeros_buffer(g.dtype, d)
        return out, None, None, None, None


def _lookup(ctx, u):
    """L of Embedding's backward g -> dweight, recorded: the rows of u (weight's shape), each
    scaled as the backward scales its row (0 for padding_idx, 1/count with scale_grad_by_freq)."""
    weight, rows, out_shape, padding_idx, scale_grad_by_freq = ctx.inputs
    if padding_idx is not None or scale_grad_by_freq:
        u = u * _row_scale(ctx, u.dtype)
    return Embedding.apply(u, rows, out_shape, None, False)


def _row_scale(ctx, dtype):
    """(V, 1): the factor Embedding's backward gives each row's gradient."""
    weight, rows, _, padding_idx, scale_grad_by_freq = ctx.inputs
    V = weight.shape[0]
    factor = [1.0] * V
    if scale_grad_by_freq:
        count = [0] * V
        for r in rows._data:
            count[r] += 1
        factor = [1.0 / c if c > 1 else 1.0 for c in count]
    if padding_idx is not None:
        factor[padding_idx] = 0.0
    return _make(array(dtype.typecode, factor), (V, 1), dtype)


Embedding.differentiable_backward = adjoint(_lookup)


def _embedding_renorm_(weight, rows, max_norm, norm_type):
    """PyTorch's max_norm: each row of weight that idx uses and whose norm exceeds max_norm is
    scaled, in place and outside the graph, to max_norm / (norm + 1e-7) times itself."""
    with no_grad():
        used = unique(rows)
        picked = index_select(weight, 0, used)
        norms = norm(picked, norm_type, dim=1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[used] = picked * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight (num_embeddings, embedding_dim) picked by the int64 indices in input (*):
    output (*, embedding_dim). An index outside [0, num_embeddings) raises IndexError.

    max_norm: the rows used are first renormalised in place (see _embedding_renorm_), as in
    PyTorch; scale_grad_by_freq: a row's gradient is divided by its count in input."""
    if not isinstance(input, Tensor) or input.dtype not in (_int64, _dt.int32):
        raise TypeError("embedding: indices must be an int64 or int32 tensor" + (
            f", got {input.dtype}" if isinstance(input, Tensor) else
            f", got {type(input).__name__}"))
    if sparse:
        raise NotImplementedError("embedding: sparse=True (a sparse gradient) is not implemented "
                                  "in tinyattn, which has no sparse tensors")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ValueError("embedding: weight must be a 2-D (num_embeddings, embedding_dim) tensor"
                         + (f", got shape {tuple(weight.shape)}" if isinstance(weight, Tensor)
                            else ""))
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within "
                             f"[-{num}, {num}) for a weight of {num} rows")
        padding_idx %= num
    # Unlike x[idx], a negative token id is an error here (as in PyTorch), not "count from the end".
    rows = checked_index("embedding", input, num, 0, allow_negative=False)
    if max_norm is not None:
        _embedding_renorm_(weight, rows, max_norm, norm_type)
    return Embedding.apply(weight, rows, tuple(input.shape) + (weight.shape[1],), padding_idx,
                           builtins.bool(scale_grad_by_freq))


def one_hot(tensor, num_classes=-1):  # noqa: A002
    """(*) int64 class indices -> (*, num_classes) int64 of 0 / 1; num_classes=-1 takes max + 1."""
    if not isinstance(tensor, Tensor) or tensor.dtype is not _int64:
        raise TypeError("one_hot: expects an int64 tensor of class indices")
    values = tensor.tolist() if tensor.ndim else [tensor.item()]
    flat = [v for v in _flat(values)]
    if flat and min(flat) < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {min(flat)}")
    if num_classes == -1:
        num_classes = max(flat) + 1 if flat else 0
    if flat and max(flat) >= num_classes:
        raise ValueError(f"one_hot: class value {max(flat)} is out of range for num_classes="
                         f"{num_classes}")
    classes = int_range(num_classes)
    with no_grad():
        return to_dtype(eq(tensor.unsqueeze(-1), classes), _int64)


def _flat(v):
    if isinstance(v, list):
        for x in v:
            yield from _flat(x)
    else:
        yield v
