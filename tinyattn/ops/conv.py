"""Convolution, unfold / fold and pooling over (N, C, H, W) images.

    Unfold   cols[n, (c*KH + i)*KW + j, l] = x[n, c, oh*SH - PH + i*DH, ow*SW - PW + j*DW]
             (l = oh*OW + ow; 0 in the padding)            gradient: fold of the gradient
    Fold     its transpose: x[n, c, h, w] = sum of the column entries read from (h, w)
                                                            gradient: unfold of the gradient
    conv2d   out[n, o] = weight[o] . cols[n] + bias[o]  -- unfold, then one matmul per group
             (the fast backend does both, an image at a time); its gradients are those of
             unfold and matmul, nothing new to derive
    MaxPool2d    out = max over each window; dx gets g at the position that won (saved indices)
    AvgPool2d / AdaptiveAvgPool2d   out = mean over each window; dx gets g / window size

(batch_norm, the other layer of a CNN, is in ops/norm.py beside layer_norm: the same equations.)

Sizes: OH = floor((H + 2*PH - DH*(KH - 1) - 1) / SH) + 1 (ceil with ceil_mode, as PyTorch).
Every size, stride and padding is checked here, with the op's name, before a kernel runs.

Chapter 8 of the tour (docs/08-visual-attention.md) walks through this file.
"""
import builtins

from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..storage import TensorBase as Tensor, _empty, _zeros
from ._launch import packed
from ._recorded import adjoint, composed
from .layout import cat
from .pad import pad as _pad


def _pair(op, name, value, n=2):
    """An int or a tuple of n ints -> a tuple of n ints (PyTorch's `_pair`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (tuple, list)) and len(value) == 1 and n > 1:   # (k,) means (k, k)
        value = tuple(value) * n
    if (isinstance(value, (tuple, list)) and len(value) == n
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return tuple(value)
    raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}")


def _positive(op, name, values):
    if builtins.min(values) <= 0:
        raise ValueError(f"{op}: {name} must be positive, got {values}")


def _out_size(op, size, k, s, p, d, ceil_mode=False, what="input"):
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        raise ValueError(f"{op}: the kernel (size {k}, dilation {d}) does not fit the padded "
                         f"{what} (size {size} + 2*{p}); the output would be empty")
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside the input
        out -= 1
    return out


def _image(op, x, dims=(4,), names="(N, C, H, W)", also=()):
    """Check an image-like input: a tensor of one of `dims` dims, floating point or one of the
    dtypes in `also` (PyTorch's CPU kernels take int64 in conv and pooling, bool in unfold/fold).

    Those are computed by the float kernels: int64 as float64 (exact while every sum stays below
    2^53), bool as float32; so no kernel is compiled for integer buffers."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in dims:
        raise ValueError(f"{op}: expected a {names} tensor, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point and x.dtype not in also:
        kinds = ", ".join(["float32", "float64"] + [d.name for d in also])
        raise TypeError(f"{op}: expected a {kinds} tensor, got {x.dtype}")


class _Geometry:
    """Kernel size, stride, padding and dilation of a sliding window, and the output size."""

    def __init__(self, op, H, W, kernel_size, stride, padding, dilation, ceil_mode=False):
        self.KH, self.KW = _pair(op, "kernel_size", kernel_size)
        self.SH, self.SW = _pair(op, "stride", stride)
        self.PH, self.PW = _pair(op, "padding", padding)
        self.DH, self.DW = _pair(op, "dilation", dilation)
        _positive(op, "kernel_size", (self.KH, self.KW))
        _positive(op, "stride", (self.SH, self.SW))
        _positive(op, "dilation", (self.DH, self.DW))
        if builtins.min(self.PH, self.PW) < 0:
            raise ValueError(f"{op}: padding must be non-negative, got {(self.PH, self.PW)}")
        self.H, self.W = H, W
        self.OH = _out_size(op, H, self.KH, self.SH, self.PH, self.DH, ceil_mode, "height")
        self.OW = _out_size(op, W, self.KW, self.SW, self.PW, self.DW, ceil_mode, "width")

    def args(self):
        return (self.H, self.W, self.KH, self.KW, self.SH, self.SW, self.PH, self.PW, self.DH,
                self.DW, self.OH, self.OW)


# ---------------------------------------------------------------------------- unfold / fold


def _layout(side_by_side, N, K, L):
    """(shape, NS, RS) of the columns: (N, K, L) as F.unfold returns them, or, side_by_side,
    (K, N*L), every image's columns next to each other (convolution's one large matmul)."""
    return ((K, N * L), L, N * L) if side_by_side else ((N, K, L), K * L, L)


class Unfold(Function):
    """(N, C, H, W) -> (N, C*KH*KW, OH*OW) columns, or (C*KH*KW, N*OH*OW) with side_by_side:
    every patch as a column; gradient = fold."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, geo, side_by_side=False):
        N, C = x.shape[0], x.shape[1]
        shape, NS, RS = _layout(side_by_side, N, C * geo.KH * geo.KW, geo.OH * geo.OW)
        out = _empty(shape, x.dtype)
        backend.conv.im2col(packed(x)._data, out._data, N, C, *geo.args(), NS, RS)
        return out

    @staticmethod
    def backward(ctx, g):
        x, geo, side_by_side = (ctx.inputs + (False,))[:3]
        N, C = x.shape[0], x.shape[1]
        _, NS, RS = _layout(side_by_side, N, C * geo.KH * geo.KW, geo.OH * geo.OW)
        dx = _zeros(x.shape, x.dtype)
        backend.conv.col2im(packed(g)._data, dx._data, N, C, *geo.args(), NS, RS)
        return dx, None, None


class Fold(Function):
    """(N, C*KH*KW, OH*OW) -> (N, C, H, W): columns summed back into pixels; gradient = unfold."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, cols, geo, C):
        N, K, L = cols.shape
        out = _zeros((N, C, geo.H, geo.W), cols.dtype)
        backend.conv.col2im(packed(cols)._data, out._data, N, C, *geo.args(), K * L, L)
        return out

    @staticmethod
    def backward(ctx, g):
        cols, geo, C = ctx.inputs
        N, K, L = cols.shape
        dcols = _empty(cols.shape, cols.dtype)
        backend.conv.im2col(packed(g)._data, dcols._data, N, C, *geo.args(), K * L, L)
        return dcols, None, None


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """F.unfold: (N, C, H, W) or (C, H, W) -> (N, C*KH*KW, L) (or (C*KH*KW, L)), L = OH*OW: the
    patch every output position of a convolution sees, as a column."""
    _image("unfold", input, (3, 4), "(N, C, H, W) or (C, H, W)", (_dt.bool,))
    if input.dtype is _dt.bool:
        return unfold(input.to(_dt.float32), kernel_size, dilation, padding, stride) != 0
    x = input.unsqueeze(0) if input.ndim == 3 else input
    geo = _Geometry("unfold", x.shape[2], x.shape[3], kernel_size, stride, padding, dilation)
    out = Unfold.apply(x, geo)
    return out.squeeze(0) if input.ndim == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """F.fold: (N, C*KH*KW, L) or (C*KH*KW, L) -> (N, C, H, W) (or (C, H, W)) with
    (H, W) = output_size; overlapping entries are summed (unfold's transpose)."""
    _image("fold", input, (2, 3), "(N, C*KH*KW, L) or (C*KH*KW, L)", (_dt.bool,))
    if input.dtype is _dt.bool:     # overlapping entries OR together, as PyTorch's bool sum
        return fold(input.to(_dt.float32), output_size, kernel_size, dilation, padding,
                    stride) != 0
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    H, W = _pair("fold", "output_size", output_size)
    geo = _Geometry("fold", H, W, kernel_size, stride, padding, dilation)
    k = geo.KH * geo.KW
    if cols.shape[1] % k:
        raise ValueError(f"fold: the input's dim 1 ({cols.shape[1]}) must be divisible by the "
                         f"kernel's size KH*KW = {k}")
    if cols.shape[2] != geo.OH * geo.OW:
        raise ValueError(f"fold: output_size {(H, W)} with this kernel, stride, padding and "
                         f"dilation gives {geo.OH}x{geo.OW} = {geo.OH * geo.OW} blocks, but the "
                         f"input has {cols.shape[2]} (its last dim)")
    out = Fold.apply(cols, geo, cols.shape[1] // k)
    return out.squeeze(0) if input.ndim == 2 else out


# ---------------------------------------------------------------------------- convolution


class Conv2d(Function):
    """out[n, o] = weight[o] . unfold(x)[n] + bias[o], per group (kernels/conv.py: conv2d_forward).

    Backward, with g (N, O, OH, OW), per image and group (the matmul's gradients, then fold):

        dx = fold(weight^T @ g[n])      dweight = sum over n of g[n] @ unfold(x)[n]^T      dbias = sum of g

    Nothing is saved but the inputs: the backward unfolds each image again, in cache, which costs
    less than keeping every image's columns (C*KH*KW times the image) from the forward."""

    @staticmethod
    def forward(ctx, x, weight, bias, geo, G):
        N, C = x.shape[0], x.shape[1]
        O = weight.shape[0]
        out = _empty((N, O, geo.OH, geo.OW), x.dtype)
        b = packed(bias)._data if bias is not None else _empty((1,), x.dtype)._data
        backend.conv.conv2d_forward(packed(x)._data, packed(weight)._data, b, bias is not None,
                                    out._data, N, C, geo.H, geo.W, O, G, *geo.args()[2:])
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, bias, geo, G = ctx.inputs
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        need_b = need_b and bias is not None
        N, C = x.shape[0], x.shape[1]
        O = weight.shape[0]
        dx = _zeros(x.shape, x.dtype) if need_x else None
        dw = _zeros(weight.shape, x.dtype) if need_w else None
        db = _zeros((O,), x.dtype) if need_b else None
        spare = _empty((1,), x.dtype)._data     # stands in for the outputs not asked for
        backend.conv.conv2d_backward(packed(x)._data, packed(weight)._data, packed(g)._data,
                                     dx._data if need_x else spare, dw._data if need_w else spare,
                                     db._data if need_b else spare, need_x, need_w, need_b,
                                     N, C, geo.H, geo.W, O, G, *geo.args()[2:])
        return dx, dw, db, None, None


def _conv2d_composed(x, weight, bias, geo, G):
    """Conv2d as recorded ops: per group, the (O/G, C/G*KH*KW) weights times the columns."""
    N, O = x.shape[0], weight.shape[0]
    cols = Unfold.apply(x, geo)                                  # (N, C*KH*KW, OH*OW)
    K, Og = cols.shape[1] // G, O // G
    outs = [weight.narrow(0, j * Og, Og).reshape(Og, K) @ cols.narrow(1, j * K, K)
            for j in range(G)]
    out = (outs[0] if G == 1 else cat(outs, 1)).reshape(N, O, geo.OH, geo.OW)
    return out if bias is None else out + bias.reshape(1, O, 1, 1)


def _same_padding(op, k, d):
    """padding='same': total d*(k-1), split as PyTorch does (the extra one on the right/bottom)."""
    total = d * (k - 1)
    return total // 2, total - total // 2


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """F.conv2d: input (N, C, H, W) or (C, H, W), weight (O, C/groups, KH, KW), bias (O,) ->
    (N, O, OH, OW). padding is an int, a pair, 'valid' (0) or 'same' (output size = input size,
    stride 1 only). Computed as unfold + one matmul per group (cross-correlation, as PyTorch)."""
    op = "conv2d"
    _image(op, input, (3, 4), "(N, C, H, W) or (C, H, W)", (_dt.int64,))
    if (input.dtype is _dt.int64 and isinstance(weight, Tensor) and weight.dtype is _dt.int64
            and (bias is None or isinstance(bias, Tensor) and bias.dtype is _dt.int64)):
        return conv2d(input.double(), weight.double(), bias.double() if isinstance(
            bias, Tensor) else bias, stride, padding, dilation, groups).long()
    if not isinstance(weight, Tensor) or weight.ndim != 4:
        raise ValueError(f"{op}: weight must be a 4-d tensor (O, C/groups, KH, KW), got "
                         f"{tuple(weight.shape) if isinstance(weight, Tensor) else weight!r}")
    if weight.dtype is not input.dtype:
        raise TypeError(f"{op}: input ({input.dtype}) and weight ({weight.dtype}) must have the "
                        f"same dtype")
    x = input.unsqueeze(0) if input.ndim == 3 else input
    N, C, H, W = x.shape
    O, Cg, KH, KW = weight.shape
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    if C != Cg * groups or O % groups:
        raise ValueError(f"{op}: input with {C} channels and weight of shape "
                         f"{tuple(weight.shape)} with groups={groups}: expected the input to "
                         f"have C/groups*groups = {Cg * groups} channels and O ({O}) divisible "
                         f"by groups")
    if bias is not None and (not isinstance(bias, Tensor) or tuple(bias.shape) != (O,)
                             or bias.dtype is not input.dtype):
        raise ValueError(f"{op}: bias must be a ({O},) tensor of dtype {input.dtype}, got "
                         f"{f'{tuple(bias.shape)} {bias.dtype}' if isinstance(bias, Tensor) else repr(bias)}")
    DH, DW = _pair(op, "dilation", dilation)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if _pair(op, "stride", stride) != (1, 1):
                raise ValueError(f"{op}: padding='same' is not supported for strided "
                                 f"convolutions (stride={stride!r}), as in PyTorch")
            (t, b), (l, r) = _same_padding(op, KH, DH), _same_padding(op, KW, DW)
            if t != b or l != r:  # asymmetric: pad explicitly, then convolve without padding
                x = _pad(x, (l, r, t, b))
                H, W = x.shape[2], x.shape[3]
                t = l = 0
            padding = (t, l)
        else:
            raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got "
                             f"{padding!r}")
    geo = _Geometry(op, H, W, (KH, KW), stride, padding, (DH, DW))
    out = Conv2d.apply(x, weight, bias, geo, groups)                 # (N, O, OH, OW)
    return out.squeeze(0) if input.ndim == 3 else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """F.conv1d: input (N, C, L) or (C, L), weight (O, C/groups, K) -> (N, O, L_out): conv2d on
    a height-1 image."""
    _image("conv1d", input, (2, 3), "(N, C, L) or (C, L)", (_dt.int64,))
    if not isinstance(weight, Tensor) or weight.ndim != 3:
        raise ValueError(f"conv1d: weight must be a 3-d tensor (O, C/groups, K), got "
                         f"{tuple(weight.shape) if isinstance(weight, Tensor) else weight!r}")
    if isinstance(padding, str):
        padding2 = padding
    else:
        padding2 = (0, _pair("conv1d", "padding", padding, 1)[0])
    stride2 = (1, _pair("conv1d", "stride", stride, 1)[0])
    dilation2 = (1, _pair("conv1d", "dilation", dilation, 1)[0])
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, stride2, padding2, dilation2,
                 groups)
    return out.squeeze(-2)


# ---------------------------------------------------------------------------- pooling


def _pool_input(op, input, also=()):
    _image(op, input, (3, 4), "(N, C, H, W) or (C, H, W)", also)
    return input.unsqueeze(0) if input.ndim == 3 else input


def _check_pool_padding(op, geo):
    if geo.PH * 2 > geo.KH or geo.PW * 2 > geo.KW:
        raise ValueError(f"{op}: padding {(geo.PH, geo.PW)} must be at most half the kernel "
                         f"size {(geo.KH, geo.KW)}")


class MaxPool2d(Function):
    """out = max over each window; the gradient goes to the element that won (saved index)."""

    @staticmethod
    def forward(ctx, x, geo, index):
        """`index` is an empty list that receives the (N, C, OH, OW) int64 positions h*W + w."""
        N, C = x.shape[0], x.shape[1]
        out = _empty((N, C, geo.OH, geo.OW), x.dtype)
        where = _empty((N, C, geo.OH, geo.OW), _dt.int64)
        backend.conv.max_pool2d_forward(packed(x)._data, out._data, where._data, N * C,
                                        *geo.args())
        index.append(where)
        return out

    @staticmethod
    def backward(ctx, g):
        x, geo, index = ctx.inputs
        dx = _zeros(x.shape, x.dtype)
        backend.conv.max_pool2d_backward(packed(g)._data, index[0]._data, dx._data,
                                         x.shape[0] * x.shape[1], geo.H * geo.W, geo.OH * geo.OW)
        return dx, None, None


def _winners(u, index):
    """u (N, C, H, W) at the positions h*W + w of `index` (N, C, OH, OW), recorded."""
    N, C = u.shape[0], u.shape[1]
    flat = u.reshape(N, C, -1).gather(2, index.reshape(N, C, -1))
    return flat.reshape(index.shape)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """F.max_pool2d: (N, C, H, W) -> (N, C, OH, OW), the largest value of each window (stride
    defaults to kernel_size; padding counts as -inf); with return_indices also the position
    h*W + w of each maximum (int64), as PyTorch."""
    op = "max_pool2d"
    x = _pool_input(op, input, (_dt.int64, _dt.int32, _dt.uint8))
    if not x.dtype.is_floating_point:   # a maximum is one of the values: nothing rounds or wraps
        out = max_pool2d(input.double(), kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
        return (out[0].to(x.dtype), out[1]) if return_indices else out.to(x.dtype)
    stride = kernel_size if stride is None or stride in ([], ()) else stride
    geo = _Geometry(op, x.shape[2], x.shape[3], kernel_size, stride, padding, dilation, ceil_mode)
    _check_pool_padding(op, geo)
    index = []
    out = MaxPool2d.apply(x, geo, index)
    index = index[0]
    if input.ndim == 3:
        out, index = out.squeeze(0), index.squeeze(0)
    return (out, index) if return_indices else out


class AvgPool2d(Function):
    """out = mean over each window (divisor: see avg_pool2d); gradient g / divisor per window."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, geo, count_include_pad, divisor):
        N, C = x.shape[0], x.shape[1]
        out = _empty((N, C, geo.OH, geo.OW), x.dtype)
        backend.conv.avg_pool2d_forward(packed(x)._data, out._data, N * C, *geo.args()[:8],
                                        geo.OH, geo.OW, count_include_pad, divisor)
        return out

    @staticmethod
    def backward(ctx, g):
        x, geo, count_include_pad, divisor = ctx.inputs
        dx = _zeros(x.shape, x.dtype)
        backend.conv.avg_pool2d_backward(packed(g)._data, dx._data, x.shape[0] * x.shape[1],
                                         *geo.args()[:8], geo.OH, geo.OW, count_include_pad,
                                         divisor)
        return dx, None, None, None


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """F.avg_pool2d: (N, C, H, W) -> (N, C, OH, OW), the mean of each window (stride defaults to
    kernel_size). The divisor is divisor_override if given, else the window's size counting the
    zero padding (count_include_pad=True) or only the pixels inside the image."""
    op = "avg_pool2d"
    x = _pool_input(op, input, (_dt.int64,))
    if x.dtype is _dt.int64:    # the float mean, truncated toward 0 (PyTorch's integer division)
        return avg_pool2d(input.double(), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override).long()
    stride = kernel_size if stride is None or stride in ([], ()) else stride
    geo = _Geometry(op, x.shape[2], x.shape[3], kernel_size, stride, padding, 1, ceil_mode)
    _check_pool_padding(op, geo)
    if divisor_override is not None and (not isinstance(divisor_override, int)
                                         or divisor_override == 0):
        raise ValueError(f"{op}: divisor_override must be a non-zero int, got "
                         f"{divisor_override!r}")
    if divisor_override is not None and divisor_override < 0:   # sum / -d = -(sum / d)
        return -avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           -divisor_override)
    out = AvgPool2d.apply(x, geo, bool(count_include_pad), divisor_override or 0)
    return out.squeeze(0) if input.ndim == 3 else out


class AdaptiveAvgPool2d(Function):
    """out[oh, ow] = mean over rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) x the same for columns."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, OH, OW):
        N, C, H, W = x.shape
        out = _empty((N, C, OH, OW), x.dtype)
        backend.conv.adaptive_avg_pool2d_forward(packed(x)._data, out._data, N * C, H, W, OH, OW)
        return out

    @staticmethod
    def backward(ctx, g):
        x, OH, OW = ctx.inputs
        N, C, H, W = x.shape
        dx = _zeros(x.shape, x.dtype)
        backend.conv.adaptive_avg_pool2d_backward(packed(g)._data, dx._data, N * C, H, W, OH, OW)
        return dx, None, None


# Under create_graph=True: the linear ops' backwards are differentiated by the ops themselves;
# convolution's by its composed form (ops/_recorded.py).
Unfold.differentiable_backward = adjoint(lambda ctx, u: Unfold.apply(u, *ctx.inputs[1:]))
Fold.differentiable_backward = adjoint(lambda ctx, u: Fold.apply(u, *ctx.inputs[1:]))
MaxPool2d.differentiable_backward = adjoint(lambda ctx, u: _winners(u, ctx.inputs[2][0]))
AvgPool2d.differentiable_backward = adjoint(lambda ctx, u: AvgPool2d.apply(u, *ctx.inputs[1:]))
AdaptiveAvgPool2d.differentiable_backward = adjoint(
    lambda ctx, u: AdaptiveAvgPool2d.apply(u, *ctx.inputs[1:]))
Conv2d.differentiable_backward = composed(_conv2d_composed)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """F.adaptive_avg_pool2d: (N, C, H, W) -> (N, C, OH, OW) for any H, W; output_size is an int,
    a pair, and None in the pair keeps that input size."""
    op = "adaptive_avg_pool2d"
    x = _pool_input(op, input)
    size = (output_size, output_size) if not isinstance(output_size, (tuple, list)) else tuple(
        output_size)
    if len(size) != 2:
        raise ValueError(f"{op}: output_size must be an int or a pair, got {output_size!r}")
    OH, OW = (x.shape[2] if size[0] is None else size[0]), (x.shape[3] if size[1] is None
                                                            else size[1])
    _pair(op, "output_size", (OH, OW))
    _positive(op, "output_size", (OH, OW))
    if x.shape[2] == 0 or x.shape[3] == 0:
        raise ValueError(f"{op}: expected a non-empty image, got shape {tuple(input.shape)}")
    out = AdaptiveAvgPool2d.apply(x, OH, OW)
    return out.squeeze(0) if input.ndim == 3 else out
