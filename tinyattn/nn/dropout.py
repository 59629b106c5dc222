"""Dropout: active in training mode, the identity in eval mode."""
from . import functional as F
from .module import Module


class Dropout(Module):
    """Zero each element with probability p during training, scaling the survivors by 1/(1-p)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace=False"
