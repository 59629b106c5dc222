"""LayerNorm.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
from ..creation import ones, zeros
from . import functional as F
from .module import Module, Parameter


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last dims `normalized_shape`.

    x (*, *normalized_shape); weight starts at 1 and bias at 0 (elementwise_affine=True)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, dtype=dtype))
            self.bias = Parameter(zeros(self.normalized_shape, dtype=dtype)) if bias else None
        else:
            self.weight = None
            self.bias = None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")
