"""In-place ops: x.zero_(), x.fill_(v), x.copy_(src), x.add_(y), x += y, ...

The result is computed out of place and written into x's own elements, through x's strides (a
view's writes land in its base tensor), and x's buffer goes up one version (autograd.py).

Autograd, as in PyTorch. A leaf that requires grad may only be changed under `no_grad()`
(parameter updates, initialisation). A tensor inside a graph may be changed in place: the op is
recorded, x's grad_fn becomes the op's node, and that node's input is x *as it was* (a copy of
its old values, carrying its old grad_fn), so `h.mul_(2)` differentiates like `h = h * 2` while
every other reference to h sees the new values. Ops that read h before the change keep sending
their gradients to h's old grad_fn. If one of them saved h's values for its backward, backward
raises PyTorch's "modified by an inplace operation" error instead of using the new ones.
Deliberate difference: an in-place change of a *view* of a tensor in the graph raises (PyTorch
rewrites the base's history to match); `x[index] = v` (setitem, ops/indexing.py) is the way to
write into part of such a tensor, and `view += y` falls back to `view = view + y` so that
`x[idx] += y` still works.

Chapter 1 of the tour (docs/01-autograd.md) explains why.
"""
from .. import _shapes
from .. import backend
from .. import dtypes as _dt
from ..autograd import bump_version, is_grad_enabled, no_grad
from ..creation import rand, randn
from ..storage import TensorBase as Tensor, _make
from ._launch import copy, copy_into
from .arithmetic import add, clamp, div, mul, sub
from .compare import masked_fill
from .convert import to_dtype
from .unary import ZeroGradient, exp, relu


def _needs_grad(args):
    return any(isinstance(a, Tensor) and a._requires_grad for a in args)


def check_overlap(t, op):
    """Raise, as PyTorch does, when several elements of t are one memory location (t is an
    expand()ed view): the result of op would depend on the order of the writes. (fill_, zero_
    and setitem write one value and are allowed, as in PyTorch; masked_fill_ and index_fill_
    warn there, and tinyattn lets them pass silently.)"""
    if any(st == 0 and n > 1 for n, st in zip(t.shape, t._strides)):
        raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                           f"written-to tensor refers to a single memory location (a tensor of "
                           f"shape {list(t.shape)} made by expand()). Please clone() the tensor "
                           f"before performing the operation.")


def recorded(t, op, *args):
    """True when autograd must record an in-place `op` on t (with tensor arguments args);
    raises where PyTorch does, and for views (see the module docstring)."""
    if not is_grad_enabled():
        return False
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad cannot be changed in place "
                           f"(do parameter updates inside `with tinyattn.no_grad():`)")
    if not (t._requires_grad or _needs_grad(args)):
        return False
    base = t._base
    if base is not None:
        raise RuntimeError(f"{op}: changing a view of a tensor in the autograd graph in place is "
                           f"not supported by tinyattn (PyTorch rewrites the base's history); "
                           f"write into the base with x[index] = value, or use the out-of-place "
                           f"{op.rstrip('_')}()")
    return True


def check_inplace(t, op):
    """The checks of `recorded` for a change that is never recorded (an error where the
    change would have to be)."""
    if recorded(t, op):
        raise RuntimeError(f"{op}: this tensor is part of the autograd graph and {op} cannot be "
                           f"recorded; use an out-of-place op")


def _record(t, compute, op):
    """t <- compute(old) with the graph: old is t as it was (its values copied, its grad_fn)."""
    old = copy(t)
    old.grad_fn, old._requires_grad = t.grad_fn, t._requires_grad
    result = compute(old)
    if result.dtype is not t.dtype:
        result = to_dtype(result, t.dtype)
    _write(t, result, op, rebound=True)
    t.grad_fn, t._requires_grad = result.grad_fn, result._requires_grad
    return t


def _constant(t, value, op):
    """t <- value, a constant, on a tensor in the graph: recorded, as PyTorch's ZeroBackward /
    FillBackward, with gradient 0 to t's old values (t stays in the graph: t.sum().backward()
    still works)."""
    def filled(old):
        if isinstance(value, Tensor):
            return copy(value.expand(old.shape), old.dtype)
        return _write(_make(_dt.zeros_buffer(old.dtype, old.numel()), old.shape, old.dtype),
                      value, op)
    return _record(t, lambda old: ZeroGradient.apply(old, filled), op)


def _assign(t, value, op):
    """Write `value` into t in place: recorded when value needs grad, else a constant."""
    if recorded(t, op, value):
        if isinstance(value, Tensor) and value._requires_grad:
            return _record(t, lambda old: value.expand(t.shape) if value.shape != t.shape
                           else value.clone(), op)
        return _constant(t, value, op)
    return _write(t, value, op)


def _write(t, value, op, rebound=False):
    """Write `value` (a Tensor broadcast to t.shape, or a number) into t's elements in place."""
    if isinstance(value, Tensor):
        shape = _shapes.broadcast_shapes(op, t.shape, value.shape)
        if shape != t.shape:  # PyTorch's error
            raise RuntimeError(f"{op}: output with shape {list(t.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        src = value if value.dtype is t.dtype else copy(value, t.dtype)
        src = _make(src._data, t.shape, t.dtype,
                    _shapes.broadcast_strides(src.shape, src._strides, t.shape), src._offset, False)
        copy_into(src, t._data, t._offset, t._strides)
    else:
        v = (value != 0) if t.dtype is _dt.bool else (float(value) if t.dtype.is_floating_point
                                                   else int(_dt.checked(t.dtype, value, op)))
        shape4, st = _shapes.kernel_layout(t.shape, t._strides)
        if len(shape4) == 4:
            backend.copy.fill(t._data, t._offset, *st[0], v, *shape4)
        else:
            for i, pos in enumerate(t._positions()):
                t._data[pos] = v
    bump_version(t, rebound)
    return t


def zero_(t):
    return _assign(t, 0, "zero_")


def fill_(t, value):
    return _assign(t, value, "fill_")


def copy_(t, src):
    check_overlap(t, "copy_")
    return _assign(t, src, "copy_")


def _inplace(op_fn, name):
    def method(t, *args, **kwargs):
        if name not in ("masked_fill_", "index_fill_"):
            check_overlap(t, name)
        if recorded(t, name, *args):
            return _record(t, lambda old: op_fn(old, *args, **kwargs), name)
        with no_grad():
            result = op_fn(t, *args, **kwargs)
        if result.dtype.is_floating_point and not t.dtype.is_floating_point:
            raise RuntimeError(f"{name}: result type {result.dtype} can't be cast to the "
                               f"desired output type {t.dtype} (as in PyTorch)")
        return _write(t, result, name)
    method.__name__ = name
    method.__doc__ = f"In-place {name.rstrip('_')}: the result is written into this tensor."
    return method


add_ = _inplace(add, "add_")
sub_ = _inplace(sub, "sub_")
mul_ = _inplace(mul, "mul_")
div_ = _inplace(div, "div_")
masked_fill_ = _inplace(masked_fill, "masked_fill_")
exp_ = _inplace(exp, "exp_")
relu_ = _inplace(relu, "relu_")
_clamp_ = _inplace(clamp, "clamp_")


def clamp_(t, min=None, max=None):  # noqa: A002
    return _clamp_(t, min, max)


def uniform_(t, a=0.0, b=1.0, generator=None):
    check_overlap(t, "uniform_")
    return _assign(t, rand(t.shape, dtype=t.dtype, low=a, high=b, generator=generator), "uniform_")


def normal_(t, mean=0.0, std=1.0, generator=None):
    check_overlap(t, "normal_")
    return _assign(t, randn(t.shape, dtype=t.dtype, mean=mean, std=std, generator=generator),
                   "normal_")


def _augmented(op_fn, inplace_fn):
    """`x += y`: in place, recorded as in PyTorch; on a view of a tensor in the graph, out of
    place (x is rebound), so `x[idx] += y` works through setitem."""
    def method(t, other):
        if t._base is not None and is_grad_enabled() and (
                t._requires_grad or (isinstance(other, Tensor) and other._requires_grad)):
            # on a copy: the write-back into the base (setitem) must not change what op saved
            return op_fn(t.clone(), other)
        return inplace_fn(t, other)
    return method


iadd = _augmented(add, add_)
isub = _augmented(sub, sub_)
imul = _augmented(mul, mul_)
idiv = _augmented(div, div_)

