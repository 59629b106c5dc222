"""In-place ops: x.zero_(), x.fill_(v), x.copy_(src), x.add_(y), x += y, ...

The result is computed out of place (no graph) and written into x's own elements, through x's
strides (a view's writes land in its base tensor). Autograd: an in-place change of a tensor that is
part of a graph raises, because a value saved for backward could change under it (PyTorch tracks
versions instead); `x += y` on such a tensor falls back to `x = x + y`. A leaf that requires grad
may only be changed under `no_grad()` (parameter updates, initialisation). One exception, as in
PyTorch: `x[index] = v` with v requiring grad records the write in the graph (CopySlices,
ops/indexing.py), so buffers filled in a loop pass gradients back.

Chapter 1 of the tour (docs/01-autograd.md) explains why.
"""
from .. import _shapes
from .. import dtypes as _dt
from ..autograd import is_grad_enabled, no_grad
from ..creation import rand, randn
from ..kernels import elementwise as KE
from ..tensor import Tensor, _make
from ._launch import copy, copy_into
from .elementwise import add, clamp, div, exp, masked_fill, mul, relu, sub


def check_inplace(t, op):
    if is_grad_enabled() and t._requires_grad:
        if t.grad_fn is None:
            raise RuntimeError(f"{op}: a leaf tensor that requires grad cannot be changed in place "
                               f"(do parameter updates inside `with tinyattn.no_grad():`)")
        raise RuntimeError(f"{op}: this tensor is part of the autograd graph; changing it in place "
                           f"would corrupt values saved for backward. Use the out-of-place "
                           f"{op.rstrip('_')}() instead")


def _assign(t, value, op):
    """Write `value` (a Tensor broadcast to t.shape, or a number) into t's elements in place."""
    check_inplace(t, op)
    if isinstance(value, Tensor):
        if _shapes.broadcast_shapes(op, t.shape, value.shape) != t.shape:
            raise ValueError(f"{op}: a value of shape {tuple(value.shape)} cannot be written into "
                             f"a tensor of shape {tuple(t.shape)}")
        src = value if value.dtype is t.dtype else copy(value, t.dtype)
        src = _make(src._data, t.shape, t.dtype,
                    _shapes.broadcast_strides(src.shape, src._strides, t.shape), src._offset, False)
        copy_into(src, t._data, t._offset, t._strides)
    else:
        v = (value != 0) if t.dtype is _dt.bool else (float(value) if t.dtype.is_floating_point
                                                   else int(value))
        shape4, st = _shapes.kernel_layout(t.shape, t._strides)
        if len(shape4) == 4:
            KE.fill(t._data, t._offset, *st[0], v, *shape4)
        else:
            for i, pos in enumerate(t._positions()):
                t._data[pos] = v
    return t


def zero_(t):
    return _assign(t, 0, "zero_")


def fill_(t, value):
    return _assign(t, value, "fill_")


def copy_(t, src):
    return _assign(t, src, "copy_")


def _inplace(op_fn, name):
    def method(t, other, *args, **kwargs):
        check_inplace(t, name)
        with no_grad():
            result = op_fn(t, other, *args, **kwargs)
        return _assign(t, result, name)
    method.__name__ = name
    method.__doc__ = f"In-place {name.rstrip('_')}: the result is written into this tensor."
    return method


add_ = _inplace(add, "add_")
sub_ = _inplace(sub, "sub_")
mul_ = _inplace(mul, "mul_")
div_ = _inplace(div, "div_")
masked_fill_ = _inplace(masked_fill, "masked_fill_")


def clamp_(t, min=None, max=None):  # noqa: A002
    check_inplace(t, "clamp_")
    with no_grad():
        return _assign(t, clamp(t, min, max), "clamp_")


def exp_(t):
    check_inplace(t, "exp_")
    with no_grad():
        return _assign(t, exp(t), "exp_")


def relu_(t):
    check_inplace(t, "relu_")
    with no_grad():
        return _assign(t, relu(t), "relu_")


def uniform_(t, a=0.0, b=1.0, generator=None):
    check_inplace(t, "uniform_")
    return _assign(t, rand(t.shape, dtype=t.dtype, low=a, high=b, generator=generator), "uniform_")


def normal_(t, mean=0.0, std=1.0, generator=None):
    check_inplace(t, "normal_")
    return _assign(t, randn(t.shape, dtype=t.dtype, mean=mean, std=std, generator=generator),
                   "normal_")


def _augmented(op_fn, inplace_fn):
    """`x += y`: in place when allowed; on a tensor inside the graph, out of place (x is rebound)."""
    def method(t, other):
        if is_grad_enabled() and t._requires_grad and t.grad_fn is not None:
            return op_fn(t, other)
        return inplace_fn(t, other)
    return method


iadd = _augmented(add, add_)
isub = _augmented(sub, sub_)
imul = _augmented(mul, mul_)
idiv = _augmented(div, div_)

