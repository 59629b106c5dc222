"""Ops written as compositions of other ops: their gradient is autograd's, through the pieces.

    silu(x)            x * sigmoid(x)
    leaky_relu(x, a)   x if x > 0 else a x
    elu(x, a)          x if x > 0 else a (exp(x) - 1)        exp of min(x, 0): no inf * 0
    softplus(x, b, t)  log(1 + exp(b x)) / b, x where b x > t   (stable for large b x)
    mish(x)            x * tanh(softplus(x))
    hardtanh(x, lo, hi), relu6(x)                             clamp
    logsigmoid(x)      -softplus(-x)
    l1_loss            |x - y|             smooth_l1_loss   0.5 d^2 / beta if |d| < beta, else |d| - beta/2
    huber_loss         0.5 d^2 if |d| < delta, else delta (|d| - delta/2)
    kl_div(x, t)       t (log t - x), 0 where t = 0 (x holds log-probabilities)
    outer(a, b)        a[:, None] * b[None, :]      dot(a, b)   sum(a * b) of two 1-D tensors

A fused kernel would be faster; these are short and exact, and gradcheck holds them to their
formulas (tests/test_composite.py).
"""
import builtins
import math

from .. import dtypes as _dt
from ..tensor import Tensor
from ._launch import check_tensor
from .layout import to_dtype
from .arithmetic import clamp, mul, sub
from .compare import gt, lt, where
from .unary import abs, exp, log, neg, sigmoid, tanh  # noqa: A004
from .reduce import mean, sum  # noqa: A004

_REDUCTIONS = ("none", "mean", "sum")


def silu(input, inplace=False):  # noqa: A002
    return mul(input, sigmoid(input))


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return where(gt(input, 0.0), input, mul(input, negative_slope))


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    negative = mul(sub(exp(clamp(input, max=0.0)), 1.0), alpha)
    return where(gt(input, 0.0), input, negative)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    bx = mul(input, beta)
    soft = mul(log(exp(clamp(bx, max=threshold)) + 1.0), 1.0 / beta)
    return where(gt(bx, threshold), input, soft)


def mish(input, inplace=False):  # noqa: A002
    return mul(input, tanh(softplus(input)))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val ({min_val} > "
                         f"{max_val})")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # integers keep their dtype: the limits are truncated to ints (PyTorch)
        if input.dtype is _dt.uint8 and builtins.min(min_val, max_val) < 0:
            raise ValueError("hardtanh: cannot do hardtanh on an unsigned type (uint8) with "
                             "negative limits")
        min_val, max_val = int(min_val), int(max_val)
    return clamp(input, min_val, max_val)


def relu6(input, inplace=False):  # noqa: A002
    return hardtanh(input, 0.0, 6.0)


def logsigmoid(input):  # noqa: A002
    return neg(softplus(neg(input)))


def _reduce(op, loss, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if reduction == "none":
        return loss
    return sum(loss) if reduction == "sum" else mean(loss)


def _diff(op, input, target):
    check_tensor(op, input)
    check_tensor(op, target)
    return sub(input, target)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    return _reduce("l1_loss", abs(_diff("l1_loss", input, target)), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                   reduction="mean", beta=1.0):
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = _diff("smooth_l1_loss", input, target)
    a = abs(d)
    if beta == 0:
        return _reduce("smooth_l1_loss", a, reduction)
    loss = where(lt(a, beta), mul(mul(d, d), 0.5 / beta), sub(a, 0.5 * beta))
    return _reduce("smooth_l1_loss", loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = _diff("huber_loss", input, target)
    a = abs(d)
    loss = where(lt(a, delta), mul(mul(d, d), 0.5), mul(sub(a, 0.5 * delta), delta))
    return _reduce("huber_loss", loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
           log_target=False):
    """KL(target || exp(input)) pointwise: input holds log-probabilities. reduction='batchmean'
    divides the sum by the batch size (the mathematically right mean; 'mean' averages over every
    element, as PyTorch does)."""
    check_tensor("kl_div", input)
    check_tensor("kl_div", target)
    if log_target:
        loss = mul(exp(target), sub(target, input))
    else:
        positive = gt(target, 0.0)
        safe = where(positive, target, 1.0)             # log(1) = 0 where target is 0
        loss = sub(mul(target, log(safe)), mul(target, input))
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        return mul(sum(loss), 1.0 / n)
    return _reduce("kl_div", loss, reduction)


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



# ------------------------------------------------------- more everyday ops, composed

def log2(input):  # noqa: A002
    return mul(log(input), 1.0 / math.log(2.0))


def log10(input):  # noqa: A002
    return mul(log(input), 1.0 / math.log(10.0))


def lerp(input, end, weight):  # noqa: A002
    """input + weight * (end - input)."""
    return input + mul(sub(end, input), weight)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + mul(mul(tensor1, tensor2), value)


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + mul(tensor1 / tensor2, value)


def _scaled_sum(input, product, beta, alpha):
    if not input.dtype.is_floating_point:     # PyTorch casts the scalars to the integer type
        beta, alpha = int(beta), int(alpha)
    a = input if beta == 1 else mul(input, beta)
    b = product if alpha == 1 else mul(product, alpha)
    out = a + b
    return out if input.dtype.is_floating_point else out.to(input.dtype)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), mat1 (n, m), mat2 (m, p)."""
    from .matmul import mm
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    from .matmul import bmm
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def mv(input, vec):  # noqa: A002
    """(n, m) @ (m,) -> (n,)."""
    check_tensor("mv", input)
    check_tensor("mv", vec)
    from .matmul import matmul
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got shapes "
                           f"{tuple(input.shape)} and {tuple(vec.shape)}")
    return matmul(input, vec)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol |other| elementwise (equal infinities are close)."""
    from .compare import eq, le, logical_and, logical_or
    from .unary import isnan
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be greater than or equal to zero, got "
                           f"rtol={rtol}, atol={atol}")
    if input.dtype.name == "bool" or other.dtype.name == "bool":
        return eq(input, other)
    close = le(abs(sub(input, other)), abs(other) * rtol + atol)
    close = logical_or(close, eq(input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):  # noqa: A002
    """True when both have the same shape and the same elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all().item())


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal of the (dim1, dim2) matrices, as the last dim (a copy with a gradient)."""
    check_tensor("diagonal", input)
    from .. import _shapes
    from ..creation import arange
    d1 = _shapes.normalize_dim("diagonal", dim1, input.ndim)
    d2 = _shapes.normalize_dim("diagonal", dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal: dim1 and dim2 cannot be the same dimension ({dim1})")
    rest = [d for d in range(input.ndim) if d not in (d1, d2)]
    x = input.permute(*rest, d1, d2)                           # (..., n, m)
    n, m = x.shape[-2], x.shape[-1]
    import builtins
    k = builtins.max(0, builtins.min(n - builtins.max(0, -offset), m - builtins.max(0, offset)))
    rows = arange(k) + builtins.max(0, -offset)
    cols = arange(k) + builtins.max(0, offset)
    return x[(Ellipsis, rows, cols)]


def diag(input, diagonal=0):  # noqa: A002
    """1-D (n,) -> the (n + |k|) square matrix with it on diagonal k; 2-D -> its diagonal k."""
    check_tensor("diag", input)
    from ..creation import arange, zeros
    if input.ndim == 2:
        return globals()["diagonal"](input, diagonal)
    if input.ndim != 1:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got {input.ndim}-D")
    n = input.shape[0] + (diagonal if diagonal >= 0 else -diagonal)
    out = zeros(n, n, dtype=input.dtype)
    rows = arange(input.shape[0]) + (-diagonal if diagonal < 0 else 0)
    cols = arange(input.shape[0]) + (diagonal if diagonal > 0 else 0)
    out[rows, cols] = input
    return out


def trace(input):  # noqa: A002
    check_tensor("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, got a {input.ndim}-D tensor")
    return sum(diagonal(input))


def roll(input, shifts, dims=None):  # noqa: A002
    """Elements shifted along dims, wrapping around (dims None: over the flattened tensor)."""
    check_tensor("roll", input)
    from .layout import cat, narrow
    if dims is None:
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dims must have the same length, got {shifts} and "
                           f"{dims}")
    out = input
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return out


def repeat_interleave(input, repeats, dim=None, *, output_size=None):  # noqa: A002
    """Each element (along dim; of the flattened tensor when dim is None) repeated."""
    check_tensor("repeat_interleave", input)
    from ..creation import tensor
    from .indexing import index_select
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim
    n = x.shape[d]
    if isinstance(repeats, Tensor) and repeats.dtype not in (_dt.int64, _dt.int32):
        raise TypeError(f"repeat_interleave: repeats must be an int64 or int32 tensor, got "
                        f"{repeats.dtype} (as PyTorch)")
    counts = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    counts = [counts] * n if isinstance(counts, int) else list(counts)
    if len(counts) == 1 and n != 1:
        counts = counts * n
    if len(counts) != n or [c for c in counts if c < 0]:
        raise RuntimeError(f"repeat_interleave: repeats must have {n} non-negative entries")
    index = tensor([i for i, c in enumerate(counts) for _ in range(c)], dtype=_int64_dtype())
    if output_size is not None and output_size != index.numel():
        raise RuntimeError(f"repeat_interleave: output_size {output_size} is not the sum of the "
                           f"repeats ({index.numel()})")
    return index_select(x, d, index)


def _int64_dtype():
    from .. import dtypes
    return dtypes.int64


def tile(input, dims):  # noqa: A002
    check_tensor("tile", input)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return input.repeat(*dims)


def movedim(input, source, destination):  # noqa: A002
    check_tensor("movedim", input)
    from .. import _shapes
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source {src} and "
                           f"destination {dst} must have the same number of dims")
    src = [_shapes.normalize_dim("movedim", s, input.ndim) for s in src]
    dst = [_shapes.normalize_dim("movedim", s, input.ndim) for s in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    order = [d for d in range(input.ndim) if d not in src]
    for s, t in sorted(zip(dst, src)):
        order.insert(s, t)
    return input.permute(*order)


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """The indices of the non-zero elements: (count, ndim) int64, or one (count,) per dim."""
    check_tensor("nonzero", input)
    from ..creation import tensor
    flat = input.tolist_flat()
    shape = tuple(input.shape)
    if not shape:                     # a 0-d tensor: (1, 0) if it is non-zero, else (0, 0)
        from ..creation import zeros
        out = zeros(1 if flat[0] else 0, 0, dtype=_int64_dtype())
        if as_tuple:
            return (zeros(1 if flat[0] else 0, dtype=_int64_dtype()),)
        return out
    coords = []
    for pos, v in enumerate(flat):
        if v:
            c, rest = [], pos
            for n in reversed(shape):
                c.append(rest % n)
                rest //= n
            coords.append(c[::-1])
    dt = _int64_dtype()
    if as_tuple:
        return tuple(tensor([c[d] for c in coords], dtype=dt) for d in range(len(shape)))
    out = tensor(coords, dtype=dt) if coords else tensor([], dtype=dt).reshape(0, len(shape))
    return out


def masked_select(input, mask):  # noqa: A002
    """The elements of input where mask is True, as a 1-D tensor (both broadcast first)."""
    check_tensor("masked_select", input)
    check_tensor("masked_select", mask)
    from .. import _shapes
    shape = _shapes.broadcast_shapes("masked_select", input.shape, mask.shape) or (1,)
    return input.expand(*shape)[mask.expand(*shape)]


def take_along_dim(input, indices, dim=None):  # noqa: A002
    from .. import _shapes
    from .indexing import gather
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = _shapes.normalize_dim("take_along_dim", dim, input.ndim)
    indices = where(lt(indices, 0), indices + input.shape[d], indices)   # -1 is the last
    # broadcast every dim but d (PyTorch's rule), then gather
    a = list(input.shape)
    b = list(indices.shape)
    a[d] = b[d] = 1
    common = list(_shapes.broadcast_shapes("take_along_dim", tuple(a), tuple(b)))
    ia, ib = list(common), list(common)
    ia[d], ib[d] = input.shape[d], indices.shape[d]
    return gather(input.expand(*ia), d, indices.expand(*ib))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(||input||_p along dim, eps)."""
    from .reduce import norm
    return input / clamp(norm(input, p, dim, keepdim=True), min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim (broadcasting)."""
    from .reduce import norm
    n1 = clamp(norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = clamp(norm(x2, 2, dim, keepdim=True), min=eps)
    return sum(mul(x1 / n1, x2 / n2), dim)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 (PyTorch's guard against
    log 0). input must hold probabilities in [0, 1]."""
    check_tensor("binary_cross_entropy", input)
    lo = input.detach().amin().item() if input.numel() else 0.0
    hi = input.detach().amax().item() if input.numel() else 1.0
    if lo < 0 or hi > 1:
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 "
                           "and 1")
    log_x = clamp(log(input), min=-100.0)
    log_1mx = clamp(log(1.0 - input), min=-100.0)
    loss = neg(target * log_x + (1.0 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy", loss, reduction)


def glu(input, dim=-1):  # noqa: A002
    """a * sigmoid(b), with a and b the two halves of input along dim."""
    from .layout import chunk
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    a, b = chunk(input, 2, dim)
    return mul(a, sigmoid(b))


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """input / sqrt(mean(input^2 over the last len(normalized_shape) dims) + eps) * weight;
    eps defaults to the dtype's machine epsilon, as in PyTorch."""
    from .unary import rsqrt
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError("rms_norm: Expected normalized_shape to be at least 1-dimensional")
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm: expected input with trailing shape {shape}, got "
                           f"{tuple(input.shape)}")
    if eps is None:
        eps = 1.1920928955078125e-07 if input.dtype.name == "float32" else 2.220446049250313e-16
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = mul(input, rsqrt(mean(mul(input, input), dims, keepdim=True) + eps))
    return out if weight is None else mul(out, weight)


def cumprod(input, dim, dtype=None):  # noqa: A002
    """Running products along dim: one product per position (exact gradients with zeros)."""
    check_tensor("cumprod", input)
    from .layout import narrow
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.to(_dt.int64)      # integer and bool products in int64, as PyTorch
    if input.ndim == 0:
        return input.clone()
    from .. import _shapes
    d = _shapes.normalize_dim("cumprod", dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        return input.clone()
    acc = narrow(input, d, 0, 1)
    outs = [acc]
    for i in range(1, n):
        acc = mul(acc, narrow(input, d, i, 1))
        outs.append(acc)
    from .layout import cat
    return cat(outs, d)


def bernoulli(input, *, generator=None):  # noqa: A002
    """1 with probability input[i], else 0, in input's dtype."""
    from ..creation import rand_like
    return (rand_like(input, generator=generator) < input).to(input.dtype)
