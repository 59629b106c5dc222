"""A tensor's data: a strided view of a flat `array.array` buffer, and where new buffers come from.

    element (i0, ..., ik) lives at  _data[_offset + i0*_strides[0] + ... + ik*_strides[k]]

Strides let transpose, permute, expand, unsqueeze and slicing return views that share the buffer
instead of copying it (K transposed in Q K^T, heads split out of an embedding); a broadcast dimension
has stride 0. Kernels accept these strided views directly where that saves a copy.

Two classes make a tensor, as in PyTorch (torch._C.TensorBase and torch.Tensor):

- `TensorBase`, here: the slots (buffer, shape, strides, offset, dtype, and the autograd state
  `requires_grad`, `grad`, `grad_fn`), the metadata (`numel`, `size`, `stride`, ...) and the
  conversion to Python numbers (`tolist`, `item`). It knows nothing of ops, so the autograd
  engine and the ops, which sit above this module and below the user's class, can use it.
- `tinyattn.Tensor` (tensor.py), a subclass with every op as a method. tensor.py `register`s it
  here, so every tensor that `_make` and `_empty` create (every op's output) is a
  `tinyattn.Tensor`. The modules below tensor.py import `TensorBase as Tensor` for their
  isinstance checks: every tensor is one.

New buffers. An op writes its result into `_empty(shape, dtype)`, a packed tensor with arbitrary
contents. Python can only make an `array.array` filled, so a fresh buffer costs a zero-fill that
the kernel then overwrites; the fast backend installs a pool that hands a dead output's buffer to
the next output of its size instead (`set_allocator`, tinyattn/fast/recycle.py). With
TINYATTN_POISON=1 every buffer `_empty` gives out, on either backend, is first filled with NaN
(floats) or a large number (integers and bool): an op that leaves an element of its output
unwritten then fails the tests instead of passing on a lucky zero.
"""
import math
import os
import sys
import weakref as _weakref
from array import array

from . import _shapes
from . import dtypes as _dt

_STRIDES = {}  # shape -> contiguous strides: training reuses a few shapes, so they are cached


def _strides_for(shape):
    s = _STRIDES.get(shape)
    if s is None:
        if len(_STRIDES) > 4096:
            _STRIDES.clear()
        s = _STRIDES[shape] = _shapes.contiguous_strides(shape)
    return s


class TensorBase:
    """A tensor's data and metadata, without the ops (those are tinyattn.Tensor's, tensor.py)."""

    # _base: the tensor this one is a view of (None when it owns its elements' view)
    __slots__ = ("_data", "shape", "_strides", "_offset", "dtype", "_requires_grad", "grad",
                 "grad_fn", "_packed", "_base", "_view_clock", "__weakref__")

    # ------------------------------------------------------------------ metadata
    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        return _shapes.numel(self.shape)

    def nelement(self):
        return self.numel()

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[_shapes.normalize_dim("size", dim, len(self.shape))]

    def stride(self, dim=None):
        if dim is None:
            return self._strides
        return self._strides[_shapes.normalize_dim("stride", dim, len(self.shape))]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self):
        return self._packed or all(
            st == c for n, st, c in zip(self.shape, self._strides, _strides_for(self.shape)) if n != 1)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def element_size(self):
        return self.dtype.itemsize

    # ------------------------------------------------------------------ autograd state
    # The slots autograd.py reads and writes; backward() itself is tinyattn.Tensor's.
    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(f"requires_grad: only floating-point tensors can require gradients, "
                               f"this one is {self.dtype}")
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("requires_grad: cannot turn off requires_grad on a non-leaf tensor "
                               "(use .detach())")
        self._requires_grad = bool(requires_grad)
        return self

    def retain_grad(self):
        """Keep this non-leaf tensor's gradient in `.grad` during backward (for inspection)."""
        if self.grad_fn is not None:
            self.grad_fn._retained = _weakref.ref(self)
        return self

    @property
    def data(self):
        return self.detach()

    def detach(self):
        """The same data (shared buffer), cut from the graph."""
        return _make(self._data, self.shape, self.dtype, self._strides, self._offset, self._packed)

    def detach_(self):
        self.grad_fn = None
        self._requires_grad = False
        return self

    # ------------------------------------------------------------------ conversion to Python
    def _positions(self):
        """Buffer positions of the elements in row-major order."""
        if self._packed:
            return range(self.numel())
        pos = [self._offset]
        for n, st in zip(self.shape, self._strides):
            pos = [p + i * st for p in pos for i in range(n)]
        return pos

    def _unravel(self, flat):
        idx = []
        for n in reversed(self.shape):
            idx.append(flat % n)
            flat //= n
        return tuple(reversed(idx))

    def tolist_flat(self):
        if self._packed:
            vals = self._data[: self.numel()].tolist()
        else:
            data = self._data
            vals = [data[p] for p in self._positions()]
        if self.dtype is _dt.bool:
            vals = [v != 0 for v in vals]
        return vals

    def tolist(self):
        """Nested Python lists of numbers (a Python number for a 0-d tensor)."""
        vals = self.tolist_flat()
        if not self.shape:
            return vals[0]
        if not vals:               # a size-0 dim somewhere: build the empty nesting
            def empty(shape):
                return [] if shape[0] == 0 or len(shape) == 1 else [empty(shape[1:])
                                                                     for _ in range(shape[0])]
            return empty(self.shape)
        for n in reversed(self.shape[1:]):
            vals = [vals[i:i + n] for i in range(0, len(vals), n)]
        return vals

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item: only a tensor with one element can be converted to a Python "
                             f"number, this one has shape {tuple(self.shape)}")
        v = self._data[self._offset]
        return (v != 0) if self.dtype is _dt.bool else v

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.numel()} elements is "
                               f"ambiguous (shape {tuple(self.shape)}); use .any() or .all()")
        return bool(self.item())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]


_cls = TensorBase   # the class `_make` and `_empty` create: tinyattn.Tensor once tensor.py registers it


def register(cls):
    """Make `cls` (a subclass of TensorBase: tinyattn.Tensor) the class of every new tensor."""
    global _cls
    if not issubclass(cls, TensorBase):
        raise TypeError(f"register: {cls.__name__} is not a subclass of TensorBase")
    _cls = cls


def _make(data, shape, dtype, strides=None, offset=0, packed=None):
    """Wrap a buffer as a tensor without copying (the one internal constructor)."""
    t = _new_tensor(_cls)
    t._data = data
    t.shape = shape
    t.dtype = dtype
    t._requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._base = None
    if strides is None:
        t._strides = _strides_for(shape)
        t._offset = 0
        t._packed = True
    else:
        t._strides = strides
        t._offset = offset
        t._packed = (offset == 0 and strides == _strides_for(shape)) if packed is None else packed
    return t


def _empty(shape, dtype):
    """A packed tensor for a kernel to fill: its contents are arbitrary, and the kernel must write
    every element. A big buffer may be a dead output's (the fast backend's pool, see
    `set_allocator`), which saves the zero-fill that a fresh array.array costs; ops that need
    zeros ask for them (``_zeros``).

    `_make(allocate(zero, numel(shape)), shape, dtype)`, written out: every op's output comes
    from here, and at small sizes the function calls would cost more than the kernel's work."""
    n = 1
    for d in shape:
        n *= d
    strides = _STRIDES.get(shape)
    if strides is None:
        strides = _strides_for(shape)
    t = _new_tensor(_cls)
    zero = _ZERO_BUFFERS[dtype]
    t._data = zero * n if n < _SMALL else _allocate(zero, n)
    t.shape = shape
    t.dtype = dtype
    t._requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._base = None
    t._strides = strides
    t._offset = 0
    t._packed = True
    return t


def _zeros(shape, dtype):
    """A fresh packed tensor of zeros: for a kernel that adds into its output, or leaves some of
    it untouched."""
    return _make(_dt.zeros_buffer(dtype, _shapes.numel(shape)), shape, dtype)


_new_tensor = object.__new__   # a bare tensor; tinyattn.Tensor.__new__ is the legacy constructor
_ZERO_BUFFERS = _dt._ZERO  # dtype -> a 1-element zero buffer; `buf * n` makes n zeros (fastest way)

# ---------------------------------------------------------------------------- where buffers come from

# TINYATTN_RECYCLE=poison is the same switch under the name the buffer pool's users know.
POISON = (os.environ.get("TINYATTN_POISON", "0") not in ("", "0")
          or os.environ.get("TINYATTN_RECYCLE") == "poison")
_POISON = {"f": math.nan, "d": math.nan, "B": 0xA5, "i": -0x5A5A5A5A,
           "q": -0x5A5A5A5A5A5A5A5A}


def poisoned(zero, n):
    """n elements of zero's typecode that no op would write: NaN, or a large number."""
    return array(zero.typecode, [_POISON[zero.typecode]]) * n


def set_allocator(allocate=None, min_elements=0):
    """Take the buffers of `_empty` tensors of at least `min_elements` elements from
    `allocate(zero, n)`: n elements of the typecode of `zero` (a 1-element array), with any
    contents. Smaller ones are `zero * n`, which costs less than a call. None: fresh buffers.
    In poison mode every buffer comes from the allocator (or is poisoned here)."""
    global _allocate, _SMALL
    if allocate is None:
        allocate, min_elements = (poisoned, 0) if POISON else (None, sys.maxsize)
    _allocate = allocate
    _SMALL = 0 if POISON else min_elements


def on_reuse(buffer):
    """An allocator calls this as it hands out `buffer` again: a dead tensor's buffer that Python
    never freed. The autograd engine, which keeps its record of in-place writes by buffer, puts
    its `forget` here (autograd.py), as it forgets a buffer that is freed."""


set_allocator(None)
