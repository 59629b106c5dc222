"""Softmax and log-softmax: one fused, numerically stable node each way.

    softmax(x)_i     = exp(x_i - m) / sum_j exp(x_j - m)          m = max_j x_j
    log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m))

    backward   softmax:      dx = y * (g - sum_j g_j y_j)
               log_softmax:  dx = g - exp(y) * sum_j g_j

Subtracting the row maximum m cancels mathematically and keeps every exp() argument <= 0, so
logits of 1e4 give no inf or NaN. A row that is entirely -inf (a query whose keys are all masked)
gives zeros (PyTorch: NaN). The loops are in kernels/softmax.py (and, vectorised and threaded, in
fast/softmax.py): x is seen as (O, R, I) -- O outer rows, R the softmax dim, I inner.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file; chapter 3 uses it.
"""
import warnings

from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import UnaryFunction
from ..storage import _empty
from ._launch import packed
from .unary import _floating
from .convert import to_dtype


class Softmax(UnaryFunction):
    """y = softmax(x) along `dim`, or log_softmax when `log`; see the module docstring."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, dim, log):
        x = packed(x)
        shape = x.shape
        O, R, I = _shapes.numel(shape[:dim]), shape[dim], _shapes.numel(shape[dim + 1:])
        out = _empty(shape, x.dtype)
        backend.softmax.softmax_forward(x._data, out._data, O, R, I, log)
        if ctx.needs_input_grad:
            ctx.op_name = "LogSoftmax" if log else "Softmax"
            ctx.save_for_backward(out.detach())
            ctx.layout = (O, R, I)
        return out

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        O, R, I = ctx.layout
        log = ctx.inputs[2]
        out = _empty(y.shape, y.dtype)
        backend.softmax.softmax_backward(packed(g)._data, y._data, out._data, O, R, I, log)
        return out, None, None


def _softmax_recorded(ctx, g):
    """create_graph=True: the backward formula as recorded ops on x's graph."""
    x, dim, log = ctx.inputs
    y = Softmax.apply(x, dim, log)
    if log:             # dx = g - softmax(x) sum(g)
        return g - y.exp() * g.sum(dim, keepdim=True), None, None
    return y * (g - (g * y).sum(dim, keepdim=True)), None, None


Softmax.differentiable_backward = _softmax_recorded


def softmax(x, dim, dtype=None):
    """exp(x_i) / sum_j exp(x_j) along dim. A row that is entirely -inf gives zeros (PyTorch: NaN)."""
    x = _floating("softmax", x if dtype is None else to_dtype(x, _dt.get(dtype)))
    return _apply(x, _shapes.normalize_dim("softmax", dim, x.ndim), False)


def log_softmax(x, dim, dtype=None):
    """x_i - log(sum_j exp(x_j)) along dim, without overflow for any logits."""
    x = _floating("log_softmax", x if dtype is None else to_dtype(x, _dt.get(dtype)))
    return _apply(x, _shapes.normalize_dim("log_softmax", dim, x.ndim), True)


def _implicit_dim(name, ndim, stacklevel):
    """PyTorch's rule for F.softmax(x) without dim, and its warning: dim 0 for a 0-, 1- or 3-d
    input, else dim 1 (for a batch of rows, and for (N, C, H, W) images)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def functional_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """torch.nn.functional.softmax, whose dim may be left out (see _implicit_dim)."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return softmax(input, dim, dtype)


def functional_log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """torch.nn.functional.log_softmax, whose dim may be left out (see _implicit_dim)."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return log_softmax(input, dim, dtype)


def _apply(x, dim, log):
    if x.ndim == 0:  # a 0-d tensor is a row of one number
        return Softmax.apply(x.reshape(1), 0, log).reshape(())
    return Softmax.apply(x, dim, log)
