"""Conv1d and Conv2d: PyTorch's parameter shapes, initialisation and state_dict keys.

    Conv2d   (N, C_in, H, W) -> (N, C_out, OH, OW)     weight (C_out, C_in/groups, KH, KW), bias (C_out,)
    Conv1d   (N, C_in, L) -> (N, C_out, L_out)          weight (C_out, C_in/groups, K)

Both start as PyTorch's: weight kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in))
with fan_in = C_in/groups * KH * KW, and bias from the same range.

Chapter 8 of the tour (docs/08-visual-attention.md) walks through this file.
"""
import math

from .. import _devices as _dev
from ..creation import empty
from . import functional as F
from . import init
from .module import Module, Parameter


def _tuple(value, n, name, cls):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (tuple, list)) and len(value) == n:
        return tuple(value)
    raise TypeError(f"{cls}: {name} must be an int or a tuple of {n} ints, got {value!r}")


class _ConvNd(Module):
    _n = 2
    _functional = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _dev.check(device, type(self).__name__)
        cls, n = type(self).__name__, self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{cls}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{cls}: padding_mode={padding_mode!r}; tinyattn has "
                                      f"'zeros' only")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{cls}: padding must be 'same', 'valid' or ints, got {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, "kernel_size", cls)
        self.stride = _tuple(stride, n, "stride", cls)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n, "padding", cls)
        self.dilation = _tuple(dilation, n, "dilation", cls)
        self.padding_mode = padding_mode
        self.weight = Parameter(empty(out_channels, in_channels // groups, *self.kernel_size,
                                      dtype=dtype))
        self.bias = Parameter(empty(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.numel() // self.weight.shape[0]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):  # noqa: A002
        return type(self)._functional(input, self.weight, self.bias, self.stride, self.padding,
                                      self.dilation, self.groups)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in ((0,) * self._n, "valid"):
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else \
                f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    """2-d cross-correlation: out[n, o] = bias[o] + sum over c, i, j of
    weight[o, c, i, j] * x[n, c, oh*SH - PH + i*DH, ow*SW - PW + j*DW] (F.conv2d)."""
    _n = 2
    _functional = staticmethod(F.conv2d)


class Conv1d(_ConvNd):
    """1-d cross-correlation over (N, C, L) sequences (F.conv1d)."""
    _n = 1
    _functional = staticmethod(F.conv1d)
