"""Matrix products: matmul (with torch.matmul's rules for 1-D and batched operands), mm, bmm, and
the fused linear layer y = x W^T + b; and the products composed of those: addmm, baddbmm, mv,
dot and outer.

    MatMul   out = a @ b over the last two dims, batch dims broadcast: (..., M, K) @ (..., K, N)
             da = g @ b^T,   db = a^T @ g   (summed over broadcast batch dims)
    Linear   y = x W^T + b as one node: x (*, in), W (out, in), b (out,)
             dx = g W,   dW = g^T x,   db = sum of g over the rows

Transposes are views: the kernel (kernels/matmul.py) reads them through strides, nothing is
copied. The kernel takes each operand as (buffer, offset, two batch strides, row stride, column
stride) and walks up to two batch dims, which covers (B, T, E) @ (E, F) and attention's
(B, H, T, d) @ (B, H, d, S), head-split and transposed views included.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import BinaryFunction, Function, is_grad_enabled
from ..storage import TensorBase as Tensor, _empty, _make
from ._launch import check_tensor, expanded_copy, packed, transposed
from .layout import reshape, squeeze, transpose, unsqueeze
from .reduce import _sum, sum, sum_to  # noqa: A004
from .arithmetic import mul
from .convert import to_dtype


def _batch_layout(bshape, a, b):
    """Strides of a and b over the broadcast batch dims `bshape`, merged to exactly two dims."""
    sa = _shapes.broadcast_strides(a.shape[:-2], a._strides[:-2], bshape)
    sb = _shapes.broadcast_strides(b.shape[:-2], b._strides[:-2], bshape)
    shape, (sa, sb) = _shapes.kernel_layout(bshape, sa, sb)
    if len(shape) > 4 or shape[0] != 1 or shape[1] != 1:
        return None
    return shape[2:], sa[2:], sb[2:]


class MatMul(BinaryFunction):
    """out = a @ b over the last two dims, batch dims broadcast:  (..., M, K) @ (..., K, N).

    da = g @ b^T,  db = a^T @ g  (summed over broadcast batch dims). Transposes are views: the
    kernel reads them through strides, nothing is copied."""

    @staticmethod
    def forward(ctx, a, b):
        sa, sb = a.shape, b.shape
        # The common layouts go straight to the kernel (this op runs hundreds of times per step):
        if len(sb) == 2 and (len(sa) == 2 or a._packed):
            # x @ W (also a batch (..., M, K) @ (K, N) of packed x): one (rows, K) @ (K, N)
            # product, so that W is packed once for all the rows, not once per batch entry.
            K, N = sb
            if len(sa) == 2:
                M = sa[0]
                out = _empty((M, N), a.dtype)
            else:
                out = _empty(sa[:-1] + (N,), a.dtype)
                M = len(out._data) // N if N else 0
            s, t = a._strides, b._strides
            backend.matmul.mm(a._data, a._offset, s[-2], s[-1], b._data, b._offset, t[0], t[1],
                              out._data, M, N, K)
            return out
        M, K = sa[-2], sa[-1]
        N = sb[-1]
        if len(sa) == len(sb) and 3 <= len(sa) <= 4 and sa[:-2] == sb[:-2]:
            # (B, M, K) @ (B, K, N) or (B, H, M, K) @ (B, H, K, N): attention's batched products;
            # the kernel walks two batch dims with any strides (head-split and transposed views).
            nb0, nb1 = (1, sa[0]) if len(sa) == 3 else sa[:2]
            a0, a1 = (0, a._strides[0]) if len(sa) == 3 else a._strides[:2]
            b0, b1 = (0, b._strides[0]) if len(sa) == 3 else b._strides[:2]
            out = _empty(sa[:-2] + (M, N), a.dtype)
            backend.matmul.bmm(a._data, a._offset, a0, a1, a._strides[-2], a._strides[-1],
                               b._data, b._offset, b0, b1, b._strides[-2], b._strides[-1],
                               out._data, nb0, nb1, M, N, K)
            return out
        bshape = _shapes.broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
        out = _empty(bshape + (M, N), a.dtype)
        lay = _batch_layout(bshape, a, b)
        if lay is None:  # batch dims that do not merge into two: materialise the broadcast
            a = expanded_copy(a, bshape + (M, K))
            b = expanded_copy(b, bshape + (K, N))
            lay = _batch_layout(bshape, a, b)
        (nb0, nb1), (a0, a1), (b0, b1) = lay
        backend.matmul.bmm(a._data, a._offset, a0, a1, a._strides[-2], a._strides[-1],
                           b._data, b._offset, b0, b1, b._strides[-2], b._strides[-1],
                           out._data, nb0, nb1, M, N, K)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.inputs
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na and nb and a.ndim == 2 and b.ndim == 2 and not is_grad_enabled():  # one per core
            return mm_pair_raw(g, transposed(b), transposed(a), g)
        if na:
            ga = sum_to(matmul(g, transpose(b, -1, -2)), a.shape)
        if nb:
            if b.ndim == 2 and a.ndim > 2:  # x @ W with a batched x: fold the batch into M
                m = _shapes.numel(a.shape[:-1])   # not -1: a zero-size K leaves it ambiguous
                a2 = reshape(a, (m, a.shape[-1]))
                gb = matmul(transpose(a2, 0, 1), reshape(g, (m, g.shape[-1])))
            else:
                gb = sum_to(matmul(transpose(a, -1, -2), g), b.shape)
        return ga, gb


def mm_raw(a, b):
    """a @ b for 2-D a and b of one float dtype, with no graph and no checks: the product inside
    fused nodes (Linear here, the GRU step in ops/rnn.py)."""
    return MatMul.forward(None, a, b)


def mm_pair_raw(a, b, c, d):
    """(a @ b, c @ d) for 2-D operands of one float dtype, no graph, no checks: two independent
    products (a backward's gradients of input and weights), which the fast backend runs one on
    each core with a single hand-off (mm_pair)."""
    (M, K), N = a.shape, b.shape[1]
    (M2, K2), N2 = c.shape, d.shape[1]
    out, out2 = _empty((M, N), a.dtype), _empty((M2, N2), a.dtype)
    s, t, u, v = a._strides, b._strides, c._strides, d._strides
    backend.matmul.mm_pair(a._data, a._offset, s[0], s[1], b._data, b._offset, t[0], t[1],
                           out._data, M, N, K, c._data, c._offset, u[0], u[1], d._data,
                           d._offset, v[0], v[1], out2._data, M2, N2, K2)
    return out, out2


def matmul(a, b):
    """Matrix product with torch.matmul's rules: 1-D @ 1-D is a dot product, a 1-D operand is
    treated as a row (left) or column (right) vector and that dim removed from the result, and
    N-D operands are batches of matrices with broadcast batch dims."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected two Tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    sa, sb = a.shape, b.shape
    if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0] and a.dtype is b.dtype \
            and a.dtype.is_floating_point:
        return MatMul.apply(a, b)  # the common case, every check below passed
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    ka = a.shape[-1]
    kb = b.shape[0] if nb == 1 else b.shape[-2]
    if ka != kb:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned "
                         f"({ka} != {kb})")
    if a.dtype is not b.dtype:
        raise TypeError(f"matmul: both operands must have the same dtype, got {a.dtype} and "
                        f"{b.dtype}")
    if _dt.is_integer(a.dtype):
        # Integers: multiplied in float64 and given back as int64 -- exact while every partial
        # sum stays below 2**53 (PyTorch multiplies in int64; past 2**53 the two differ) --
        # then wrapped to uint8 / int32 as PyTorch's arithmetic in those types wraps.
        out = to_dtype(matmul(to_dtype(a, _dt.float64), to_dtype(b, _dt.float64)), _dt.int64)
        return to_dtype(out, a.dtype)
    if not a.dtype.is_floating_point:
        raise TypeError(f"matmul: expected floating-point or int64 / int32 / uint8 tensors, "
                        f"got {a.dtype}")
    if na >= 2 and nb >= 2:
        if (na > 2 or nb > 2) and a.shape[:-2] != b.shape[:-2] and nb != 2:
            try:
                _shapes.broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} have "
                                 f"batch dims {tuple(a.shape[:-2])} and {tuple(b.shape[:-2])} "
                                 f"that cannot be broadcast together") from None
        return MatMul.apply(a, b)
    a2 = unsqueeze(a, 0) if na == 1 else a
    b2 = unsqueeze(b, -1) if nb == 1 else b
    out = MatMul.apply(a2, b2)
    if nb == 1:
        out = squeeze(out, -1)
    if na == 1:
        out = squeeze(out, -2 if nb > 1 else -1)
    return out


def mm(a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: expected 2-D tensors, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return matmul(a, b)


def bmm(a, b):
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: expected 3-D tensors with the same batch size, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


# ---------------------------------------------------------------------------- linear


class Linear(Function):
    """y = x W^T + b as one graph node: x (*, in), W (out, in), b (out,) or None -> y (*, out).

    forward: the rows of x, folded into one (N, in) matrix, times W^T (a transposed view that the
    matmul kernel reads in place), then b added to every row.
    backward, with g (*, out) folded into (N, out):
        dx = g W   (N, in)        dW = g^T x   (out, in)        db = sum of g over the N rows
    Composed from ops it would be transpose + matmul + add forward and eight ops backward, and W's
    gradient would come out as a transposed view (which the optimizer would then copy)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        n_out, n_in = weight.shape
        x2 = _make(packed(x)._data, (_shapes.numel(x.shape[:-1]), n_in), x.dtype)  # (N, in)
        out = mm_raw(x2, transposed(weight))  # (N, out)
        if bias is not None:
            backend.elementwise.add_row_vector(out._data, packed(bias)._data, x2.shape[0], n_out)
        if ctx.needs_input_grad:
            ctx.x2 = x2
        return _make(out._data, x.shape[:-1] + (n_out,), out.dtype)

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.inputs
        need_x, need_w, need_b = ctx.needs_input_grad
        if is_grad_enabled():    # create_graph=True: the same products as recorded ops
            n = _shapes.numel(x.shape[:-1])   # not -1: ambiguous when a width is 0
            g2, x2 = reshape(g, (n, weight.shape[0])), reshape(x, (n, weight.shape[1]))
            return (matmul(g, weight) if need_x else None,
                    matmul(transpose(g2, 0, 1), x2) if need_w else None,
                    sum(g2, 0) if need_b else None)
        x2 = ctx.x2
        g2 = _make(packed(g)._data, (x2.shape[0], weight.shape[0]), g.dtype)  # (N, out)
        if need_x and need_w:   # two products of equal work: one on each core
            dx2, dw = mm_pair_raw(g2, weight, transposed(g2), x2)
            dx = _make(dx2._data, x.shape, x.dtype)
        else:
            dx = _make(mm_raw(g2, weight)._data, x.shape, x.dtype) if need_x else None
            dw = mm_raw(transposed(g2), x2) if need_w else None  # (out, in)
        db = _sum(g2, (0,), keepdim=False) if need_b else None
        return dx, dw, db


# Their backward formulas are recorded ops, differentiable again (create_graph=True).
MatMul.differentiable_backward = Linear.differentiable_backward = True


def linear(input, weight, bias=None):  # noqa: A002 - PyTorch's argument names
    """y = x W^T + b, x (*, in_features), W (out_features, in_features), b (out_features).

    One fused node (Linear) for the usual case; anything unusual (mixed dtypes, a 1-D weight)
    takes the composed path, whose ops raise the errors."""
    if input.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: input has {input.shape[-1] if input.ndim else 0} features "
                         f"(shape {tuple(input.shape)}) but the weight of shape "
                         f"{tuple(weight.shape)} expects {weight.shape[-1]}")
    dt = input.dtype
    if weight.ndim == 2 and input.ndim >= 1 and weight.dtype is dt and dt.is_floating_point and (
            bias is None or (bias.dtype is dt and bias.shape == weight.shape[:1])):
        return Linear.apply(input, weight, bias)
    out = matmul(input, transpose(weight, 0, 1) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


# ---------------------------------------------------------------- composed of the products above

def _scaled_sum(input, product, beta, alpha):  # noqa: A002
    if not input.dtype.is_floating_point:     # PyTorch casts the scalars to the integer type
        beta, alpha = int(beta), int(alpha)
    a = input if beta == 1 else mul(input, beta)
    b = product if alpha == 1 else mul(product, alpha)
    out = a + b
    return out if input.dtype.is_floating_point else out.to(input.dtype)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), mat1 (n, m), mat2 (m, p)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def mv(input, vec):  # noqa: A002
    """(n, m) @ (m,) -> (n,)."""
    check_tensor("mv", input)
    check_tensor("mv", vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got shapes "
                           f"{tuple(input.shape)} and {tuple(vec.shape)}")
    return matmul(input, vec)


def outer(input, vec2):  # noqa: A002
    """(n,) x (m,) -> (n, m): input[i] * vec2[j]."""
    check_tensor("outer", input)
    check_tensor("outer", vec2)
    for name, t in (("input", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: {name} must be a 1-D tensor, got shape {tuple(t.shape)}")
    return mul(input.reshape(-1, 1), vec2.reshape(1, -1))


def dot(input, tensor):  # noqa: A002
    """sum_i input[i] * tensor[i] of two 1-D tensors of the same length and dtype."""
    check_tensor("dot", input)
    check_tensor("dot", tensor)
    for t in (input, tensor):
        if t.ndim != 1:
            raise RuntimeError(f"dot: 1D tensors expected, but got {t.ndim}D tensor")
    if input.shape != tensor.shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{tensor.shape[0]}] to have the same number of elements")
    if input.dtype is not tensor.dtype:
        raise RuntimeError(f"dot: expected both vectors to have same dtype, but found "
                           f"{input.dtype} and {tensor.dtype}")
    out = sum(mul(input, tensor))     # integers: in int64, given back in their dtype (PyTorch)
    return out if out.dtype is input.dtype else to_dtype(out, input.dtype)
