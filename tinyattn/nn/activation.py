"""Activation modules: thin wrappers around the functions of the same name."""
from . import functional as F
from .module import Module


class ReLU(Module):
    """max(0, x)."""

    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """x * Phi(x) (approximate='none') or its tanh approximation (approximate='tanh')."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim if self.dim is not None else -1)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim if self.dim is not None else -1)
