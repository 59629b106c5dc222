"""Linear and Identity."""
import math

from .. import _devices as _dev
from ..creation import empty
from . import functional as F
from . import init
from .module import Module, Parameter


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x W^T + b.  x (*, in_features) -> y (*, out_features).

    weight (out_features, in_features) and bias (out_features) start as U(-1/sqrt(in), 1/sqrt(in)),
    PyTorch's default (kaiming_uniform_ with a = sqrt(5))."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _dev.check(device, "Linear")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype))
        self.bias = Parameter(empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's class of MultiheadAttention's out_proj (a Linear its dynamic quantization leaves
    alone), named so that programs that list it (safe_globals, isinstance) run; a Linear."""
