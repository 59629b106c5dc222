"""The Tensor: a strided view of a flat `array.array` buffer, plus what autograd needs.

    element (i0, ..., ik) lives at  _data[_offset + i0*_strides[0] + ... + ik*_strides[k]]

Strides let transpose, permute, expand, unsqueeze and slicing return views that share the buffer
instead of copying it (K transposed in Q K^T, heads split out of an embedding); a broadcast dimension
has stride 0. Kernels accept these strided views directly where that saves a copy.

Autograd state: `requires_grad`, `grad` (accumulated by backward), `grad_fn` (the Function node that
made this tensor; None for leaves). The op methods are thin: each calls the function of the same name
in tinyattn/functions.py, where the primitives and their gradients live.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

from . import _shapes
from . import autograd as _ag
from . import dtypes as _dt


_STRIDES = {}  # shape -> contiguous strides: training reuses a few shapes, so they are cached


def _strides_for(shape):
    s = _STRIDES.get(shape)
    if s is None:
        if len(_STRIDES) > 4096:
            _STRIDES.clear()
        s = _STRIDES[shape] = _shapes.contiguous_strides(shape)
    return s


class Tensor:
    __slots__ = ("_data", "shape", "_strides", "_offset", "dtype", "_requires_grad", "grad",
                 "grad_fn", "_packed", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("create tensors with tinyattn.tensor(data), tinyattn.zeros(shape), ...")

    # ------------------------------------------------------------------ metadata
    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        return _shapes.numel(self.shape)

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
            import weakref
            self.grad_fn._retained = weakref.ref(self)
        return self

    @property
    def T(self):
        """All dims reversed (the transpose of a matrix)."""
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self):
        """The last two dims swapped: a batch of transposed matrices."""
        return self.transpose(-2, -1)

    @property
    def data(self):
        return self.detach()

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=False):
        """Compute d(self)/d(leaf) for every leaf that requires grad, accumulating into `.grad`."""
        _ag.backward(self, gradient, retain_graph)

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

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self):
        from ._format import format_tensor
        return format_tensor(self)

    def __array__(self, *args, **kwargs):  # pragma: no cover - a clear message for np.asarray(t)
        raise TypeError("tinyattn tensors do not convert to NumPy implicitly; use .tolist()")

    # ------------------------------------------------------------------ dtype conversion
    def to(self, *args, dtype=None, **kwargs):
        """to(dtype) converts; to('cpu') / to(device) returns self (tinyattn only has the CPU)."""
        for a in args:
            if isinstance(a, (_dt.dtype, str)) and not (isinstance(a, str) and a.startswith("cpu")):
                dtype = a
        return self if dtype is None else F.to_dtype(self, _dt.get(dtype))

    def cpu(self):
        return self

    def type(self, dtype):
        return self.to(dtype)

    def float(self):
        return F.to_dtype(self, _dt.float32)

    def double(self):
        return F.to_dtype(self, _dt.float64)

    def long(self):
        return F.to_dtype(self, _dt.int64)

    def bool(self):
        return F.to_dtype(self, _dt.bool)

    def clone(self):
        return F.clone(self)

    def contiguous(self):
        return self if self._packed else F.contiguous(self)


def _make(data, shape, dtype, strides=None, offset=0, packed=None):
    """Wrap a buffer as a tensor without copying (the one internal constructor)."""
    t = Tensor.__new__(Tensor)
    t._data = data
    t.shape = shape
    t.dtype = dtype
    t._requires_grad = False
    t.grad = None
    t.grad_fn = None
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
    """A fresh packed tensor whose contents will be overwritten by a kernel.

    `_make(zeros_buffer(dtype, numel(shape)), shape, dtype)`, written out: every op's output comes
    from here, and at small sizes the function calls would cost more than the kernel's work."""
    n = 1
    for d in shape:
        n *= d
    strides = _STRIDES.get(shape)
    if strides is None:
        strides = _strides_for(shape)
    t = _new_tensor(Tensor)
    t._data = _ZERO_BUFFERS[dtype] * n
    t.shape = shape
    t.dtype = dtype
    t._requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._strides = strides
    t._offset = 0
    t._packed = True
    return t


_new_tensor = Tensor.__new__
_ZERO_BUFFERS = _dt._ZERO  # dtype -> a 1-element zero buffer; `buf * n` makes n zeros (fastest way)


def _install_methods():
    """Attach the op library to Tensor as methods and operators: `x.exp()`, `x + y`, `x @ w`, ..."""
    names = """
        neg abs exp log sqrt rsqrt tanh sigmoid relu gelu sin cos clamp clip pow square reciprocal
        add sub mul div remainder floor_divide maximum minimum masked_fill masked_fill_ eq ne lt le gt ge
        logical_and logical_or logical_not logical_xor isnan isinf isfinite
        matmul mm bmm sum mean max min amax amin var std argmax argmin logsumexp all any norm
        softmax log_softmax reshape view view_as reshape_as transpose permute unsqueeze squeeze
        expand expand_as flatten unflatten narrow split chunk unbind index_select gather repeat
        sum_to_size flip select zero_ fill_ copy_ add_ sub_ mul_ div_ clamp_ uniform_ normal_
        __getitem__ __setitem__ tril triu sign exp_ relu_
    """.split()
    for name in names:
        fn = getattr(F, name.strip("_") if name.startswith("__") else name, None)
        if name == "__getitem__":
            fn = F.getitem
        elif name == "__setitem__":
            fn = F.setitem
        if fn is None:
            raise AttributeError(f"functions.{name} is missing")
        setattr(Tensor, name, fn)
    ops = {
        "__add__": F.add, "__radd__": lambda a, b: F.add(a, b), "__sub__": F.sub,
        "__rsub__": lambda a, b: F.rsub(a, b), "__mul__": F.mul, "__rmul__": lambda a, b: F.mul(a, b),
        "__truediv__": F.div, "__rtruediv__": lambda a, b: F.rdiv(a, b), "__pow__": F.pow,
        "__rpow__": lambda a, b: F.rpow(a, b), "__matmul__": F.matmul,
        "__mod__": F.remainder, "__rmod__": lambda a, b: F.remainder(b, a),
        "__floordiv__": F.floor_divide, "__rfloordiv__": lambda a, b: F.floor_divide(b, a),
        "__rmatmul__": lambda a, b: F.matmul(b, a), "__neg__": F.neg, "__abs__": F.abs,
        "__eq__": F.eq, "__ne__": F.ne, "__lt__": F.lt, "__le__": F.le, "__gt__": F.gt, "__ge__": F.ge,
        "__and__": F.logical_and, "__or__": F.logical_or, "__xor__": F.logical_xor,
        "__invert__": F.logical_not, "__iadd__": F.iadd, "__isub__": F.isub, "__imul__": F.imul,
        "__itruediv__": F.idiv,
        "where": lambda self, condition, other: F.where(condition, self, other),
    }
    for name, fn in ops.items():
        setattr(Tensor, name, fn)
    Tensor.__hash__ = object.__hash__


from . import functions as F  # noqa: E402  (functions.py needs Tensor defined above)

_install_methods()
