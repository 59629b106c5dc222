"""The Tensor: a strided view of a flat `array.array` buffer, plus what autograd needs.

    element (i0, ..., ik) lives at  _data[_offset + i0*_strides[0] + ... + ik*_strides[k]]

Strides let transpose, permute, expand, unsqueeze and slicing return views that share the buffer
instead of copying it (K transposed in Q K^T, heads split out of an embedding); a broadcast dimension
has stride 0. Kernels accept these strided views directly where that saves a copy.

Autograd state: `requires_grad`, `grad` (accumulated by backward), `grad_fn` (the Function node that
made this tensor; None for leaves). The op methods are thin: each calls the function of the same name
in tinyattn/ops/ (ops/softmax.py for `x.softmax(dim)`), where the op's forward, backward and kernel
call live.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import weakref as _weakref

from .fast import recycle as _recycle
from . import _shapes
from . import autograd as _ag
from . import _devices as _dev
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
    # _base: the tensor this one is a view of (None when it owns its elements' view)
    __slots__ = ("_data", "shape", "_strides", "_offset", "dtype", "_requires_grad", "grad",
                 "grad_fn", "_packed", "_base", "_view_clock", "__weakref__")

    def __new__(cls, *args, **kwargs):
        """PyTorch's legacy constructor: Tensor([1, 2]) copies data as float32, Tensor(2, 3) is
        a (2, 3) float32 tensor of zeros (PyTorch leaves it uninitialised), Tensor() is empty.
        New code should use tinyattn.tensor(data) and tinyattn.zeros(shape)."""
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}; use "
                            f"tinyattn.tensor(data, dtype=...)")
        if len(args) == 1 and not isinstance(args[0], int):
            t = _cr.tensor(args[0], dtype=_dt.float32)
        elif all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            t = _cr.zeros(*args) if args else _cr.zeros(0)
        else:
            raise TypeError(f"Tensor(): expected a sequence of numbers or sizes, got {args!r}")
        if cls is not Tensor:
            raise TypeError(f"{cls.__name__}(): subclass it through tinyattn.nn.Parameter")
        return t

    def __init__(self, *args, **kwargs):
        pass

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
            self.grad_fn._retained = _weakref.ref(self)
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

    @property
    def _version(self):
        """How many in-place changes this tensor's elements have had (shared by its views)."""
        return _ag.version(self)

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

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def sort(self, dim=-1, descending=False, *, stable=False):
        return _sort.sort(self, dim, descending, stable=stable)

    def argsort(self, dim=-1, descending=False, stable=False):
        return _sort.argsort(self, dim, descending, stable)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
        return _sort.topk(self, k, dim, largest, sorted)

    def cumsum(self, dim, dtype=None):
        return _sort.cumsum(self, dim, dtype)

    def log2(self, *args, **kwargs): return _comp.log2(self, *args, **kwargs)
    def log10(self, *args, **kwargs): return _comp.log10(self, *args, **kwargs)
    def lerp(self, *args, **kwargs): return _comp.lerp(self, *args, **kwargs)
    def addcmul(self, *args, **kwargs): return _comp.addcmul(self, *args, **kwargs)
    def addcdiv(self, *args, **kwargs): return _comp.addcdiv(self, *args, **kwargs)
    def addmm(self, *args, **kwargs): return _comp.addmm(self, *args, **kwargs)
    def baddbmm(self, *args, **kwargs): return _comp.baddbmm(self, *args, **kwargs)
    def mv(self, *args, **kwargs): return _comp.mv(self, *args, **kwargs)
    def isclose(self, *args, **kwargs): return _comp.isclose(self, *args, **kwargs)
    def allclose(self, *args, **kwargs): return _comp.allclose(self, *args, **kwargs)
    def equal(self, *args, **kwargs): return _comp.equal(self, *args, **kwargs)
    def diagonal(self, *args, **kwargs): return _comp.diagonal(self, *args, **kwargs)
    def diag(self, *args, **kwargs): return _comp.diag(self, *args, **kwargs)
    def trace(self, *args, **kwargs): return _comp.trace(self, *args, **kwargs)
    def roll(self, *args, **kwargs): return _comp.roll(self, *args, **kwargs)
    def repeat_interleave(self, *args, **kwargs): return _comp.repeat_interleave(self, *args, **kwargs)
    def tile(self, *dims):  # x.tile(2, 2) or x.tile((2, 2)), as PyTorch
        return _comp.tile(self, dims[0] if len(dims) == 1 else dims)
    def movedim(self, *args, **kwargs): return _comp.movedim(self, *args, **kwargs)
    def nonzero(self, *args, **kwargs): return _comp.nonzero(self, *args, **kwargs)
    def masked_select(self, *args, **kwargs): return _comp.masked_select(self, *args, **kwargs)
    def take_along_dim(self, *args, **kwargs): return _comp.take_along_dim(self, *args, **kwargs)
    def cumprod(self, *args, **kwargs): return _comp.cumprod(self, *args, **kwargs)
    def bernoulli(self, *args, **kwargs): return _comp.bernoulli(self, *args, **kwargs)
    def broadcast_to(self, *shape): return _lay.expand(self, *shape)

    def nelement(self):
        return self.numel()

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return _rops.multinomial(self, num_samples, replacement, generator=generator)

    def __format__(self, spec):
        """f"{loss:.4f}" formats a 0-d tensor's value, as in PyTorch; other tensors only with
        an empty spec."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def __repr__(self):
        from ._format import format_tensor  # here, not at the top: _format.py uses ops (cycle)
        return format_tensor(self)

    def __array__(self, *args, **kwargs):  # pragma: no cover - a clear message for np.asarray(t)
        raise TypeError("tinyattn tensors do not convert to NumPy implicitly; use .tolist()")

    # ------------------------------------------------------------------ dtype conversion
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
           memory_format=None):
        """to(dtype), to(device), to(device, dtype), to(other_tensor) (its dtype and device):
        converts when the dtype differs (copy=True: always a new tensor). Devices other than
        the CPU raise (tinyattn/_devices.py)."""
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif _dev.is_device(a):
                device = a
            elif isinstance(a, (_dt.dtype, str)):
                dtype = a
            else:
                raise TypeError(f"to: expected a dtype, a device or a tensor, got {a!r}")
        _dev.check(device, "to")
        _dev.check_memory_format(memory_format, "to")
        if dtype is None or _dt.get(dtype) is self.dtype:
            return self.clone() if copy else self
        return _lay.to_dtype(self, _dt.get(dtype))

    def cpu(self):
        return self

    def cuda(self, device=None, non_blocking=False):
        _dev.check("cuda" if device is None else device, "cuda")

    @property
    def device(self):
        return _dev.CPU

    is_cuda = False
    is_cpu = True

    def type(self, dtype):
        """x.type(tinyattn.int32), x.type("int32") or x.type(tinyattn.IntTensor)."""
        return self.to(_dt.get(dtype))

    def float(self):
        return _lay.to_dtype(self, _dt.float32)

    def double(self):
        return _lay.to_dtype(self, _dt.float64)

    def long(self):
        return _lay.to_dtype(self, _dt.int64)

    def int(self):
        """int32 (PyTorch's x.int()); values wrap mod 2**32, floats truncate."""
        return _lay.to_dtype(self, _dt.int32)

    def byte(self):
        """uint8 (PyTorch's x.byte()); values wrap mod 256: -1 -> 255, 300 -> 44."""
        return _lay.to_dtype(self, _dt.uint8)

    def bool(self):
        return _lay.to_dtype(self, _dt.bool)

    # ---------------------------------------------------------------- new tensors like this one
    # PyTorch's x.new_zeros(...) etc.: this tensor's dtype unless dtype= says otherwise. tinyattn
    # has only the CPU, so device may be None or "cpu".

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        _cpu_only("new_zeros", device)
        return _cr.zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        _cpu_only("new_ones", device)
        return _cr.ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        _cpu_only("new_empty", device)
        return _cr.empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        _cpu_only("new_full", device)
        return _cr.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        _cpu_only("new_tensor", device)
        return _cr.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def type_as(self, other):
        return self.to(other.dtype)

    def clone(self, *, memory_format=None):
        _dev.check_memory_format(memory_format, "clone")
        return _lay.clone(self)

    def contiguous(self, memory_format=None):
        _dev.check_memory_format(memory_format, "contiguous")
        return self if self._packed else _lay.contiguous(self)

    # The ops, written out: each method calls the function of the same name in ops/ (the file
    # named in the section header), where its forward, backward and kernel call live.
    # flake8: noqa: E704 (one-line methods read as the table they are)
    # ------------------------------------------ elementwise: ops/unary.py, arithmetic.py, compare.py
    def neg(self): return _un.neg(self)
    def abs(self): return _un.abs(self)
    def exp(self): return _un.exp(self)
    def log(self): return _un.log(self)
    def sqrt(self): return _un.sqrt(self)
    def rsqrt(self): return _un.rsqrt(self)
    def tanh(self): return _un.tanh(self)
    def sigmoid(self): return _un.sigmoid(self)
    def relu(self): return _un.relu(self)
    def gelu(self, approximate='none'): return _un.gelu(self, approximate)
    def sin(self): return _un.sin(self)
    def cos(self): return _un.cos(self)
    def sign(self): return _ar.sign(self)
    def square(self): return _ar.square(self)
    def reciprocal(self): return _ar.reciprocal(self)
    def clamp(self, min=None, max=None): return _ar.clamp(self, min, max)
    def clip(self, min=None, max=None): return _ar.clamp(self, min, max)
    def pow(self, exponent): return _ar.pow(self, exponent)
    def add(self, other, alpha=1): return _ar.add(self, other, alpha)
    def sub(self, other, alpha=1): return _ar.sub(self, other, alpha)
    def mul(self, other): return _ar.mul(self, other)
    def div(self, other, *, rounding_mode=None):
        return _ar.div(self, other, rounding_mode=rounding_mode)
    def remainder(self, other): return _ar.remainder(self, other)
    def floor_divide(self, other): return _ar.floor_divide(self, other)
    def maximum(self, other): return _ar.maximum(self, other)
    def minimum(self, other): return _ar.minimum(self, other)
    def masked_fill(self, mask, value): return _cmp.masked_fill(self, mask, value)
    def where(self, condition, other): return _cmp.where(condition, self, other)
    def eq(self, other): return _cmp.eq(self, other)
    def ne(self, other): return _cmp.ne(self, other)
    def lt(self, other): return _cmp.lt(self, other)
    def le(self, other): return _cmp.le(self, other)
    def gt(self, other): return _cmp.gt(self, other)
    def ge(self, other): return _cmp.ge(self, other)
    def logical_and(self, other): return _cmp.logical_and(self, other)
    def logical_or(self, other): return _cmp.logical_or(self, other)
    def logical_xor(self, other): return _cmp.logical_xor(self, other)
    def logical_not(self): return _cmp.logical_not(self)
    def isnan(self): return _un.isnan(self)
    def isinf(self): return _un.isinf(self)
    def isfinite(self): return _un.isfinite(self)

    # ---------------------------------------------------------------- reduce: ops/reduce.py
    def sum(self, dim=None, keepdim=False, dtype=None): return _red.sum(self, dim, keepdim, dtype)
    def mean(self, dim=None, keepdim=False): return _red.mean(self, dim, keepdim)
    def var(self, dim=None, unbiased=None, keepdim=False, correction=None):
        return _red.var(self, dim, unbiased, keepdim, correction)
    def std(self, dim=None, unbiased=None, keepdim=False, correction=None):
        return _red.std(self, dim, unbiased, keepdim, correction)
    def norm(self, p=2, dim=None, keepdim=False): return _red.norm(self, p, dim, keepdim)
    def max(self, dim=None, keepdim=False): return _red.max(self, dim, keepdim)
    def min(self, dim=None, keepdim=False): return _red.min(self, dim, keepdim)
    def amax(self, dim=(), keepdim=False): return _red.amax(self, dim, keepdim)
    def amin(self, dim=(), keepdim=False): return _red.amin(self, dim, keepdim)
    def argmax(self, dim=None, keepdim=False): return _red.argmax(self, dim, keepdim)
    def argmin(self, dim=None, keepdim=False): return _red.argmin(self, dim, keepdim)
    def logsumexp(self, dim, keepdim=False): return _red.logsumexp(self, dim, keepdim)
    def all(self, dim=None, keepdim=False): return _red.all(self, dim, keepdim)
    def any(self, dim=None, keepdim=False): return _red.any(self, dim, keepdim)
    def sum_to_size(self, *size): return _red.sum_to_size(self, *size)

    # ---------------------------------------------------------------- softmax: ops/softmax.py
    def softmax(self, dim, dtype=None): return _sm.softmax(self, dim, dtype)
    def log_softmax(self, dim, dtype=None): return _sm.log_softmax(self, dim, dtype)

    # ---------------------------------------------------------------- matmul: ops/matmul.py
    def matmul(self, other): return _mm.matmul(self, other)
    def mm(self, other): return _mm.mm(self, other)
    def bmm(self, other): return _mm.bmm(self, other)

    # ---------------------------------------------------------------- layout: ops/layout.py
    def reshape(self, *shape): return _lay.reshape(self, *shape)
    def view(self, *shape): return _lay.view(self, *shape)
    def view_as(self, other): return _lay.view_as(self, other)
    def reshape_as(self, other): return _lay.reshape_as(self, other)
    def flatten(self, start_dim=0, end_dim=-1): return _lay.flatten(self, start_dim, end_dim)
    def unflatten(self, dim, sizes): return _lay.unflatten(self, dim, sizes)
    def transpose(self, dim0, dim1): return _lay.transpose(self, dim0, dim1)
    def t(self): return _lay.t(self)
    def permute(self, *dims): return _lay.permute(self, *dims)
    def unsqueeze(self, dim): return _lay.unsqueeze(self, dim)
    def squeeze(self, dim=None): return _lay.squeeze(self, dim)
    def expand(self, *sizes): return _lay.expand(self, *sizes)
    def expand_as(self, other): return _lay.expand_as(self, other)
    def repeat(self, *sizes): return _lay.repeat(self, *sizes)
    def narrow(self, dim, start, length): return _lay.narrow(self, dim, start, length)
    def select(self, dim, index): return _lay.select(self, dim, index)
    def split(self, split_size, dim=0): return _lay.split(self, split_size, dim)
    def chunk(self, chunks, dim=0): return _lay.chunk(self, chunks, dim)
    def unbind(self, dim=0): return _lay.unbind(self, dim)

    # ---------------------------------------------------------------- indexing: ops/indexing.py
    def index_select(self, dim, index): return _idx.index_select(self, dim, index)
    def gather(self, dim, index): return _idx.gather(self, dim, index)
    def flip(self, dims): return _idx.flip(self, dims)
    def tril(self, diagonal=0): return _idx.tril(self, diagonal)
    def triu(self, diagonal=0): return _idx.triu(self, diagonal)
    def __getitem__(self, index): return _idx.getitem(self, index)
    def __setitem__(self, index, value): return _idx.setitem(self, index, value)

    # ---------------------------------------------------------------- scatter, unique: ops/scatter.py
    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        return _sc.scatter(self, dim, index, src, value, reduce=reduce)
    def scatter_add(self, dim, index, src): return _sc.scatter_add(self, dim, index, src)
    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return _sc.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)
    def index_add(self, dim, index, source, *, alpha=1):
        return _sc.index_add(self, dim, index, source, alpha=alpha)
    def index_fill(self, dim, index, value): return _sc.index_fill(self, dim, index, value)
    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return _sc.unique(self, sorted, return_inverse, return_counts, dim)
    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return _sc.unique_consecutive(self, return_inverse, return_counts, dim)
    # in place: tensors go positionally, so autograd sees them (ops/inplace.py `recorded`)
    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        return _sc.scatter_(self, dim, index, src, value, reduce=reduce)
    def scatter_add_(self, dim, index, src): return _sc.scatter_add_(self, dim, index, src)
    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return _sc.scatter_reduce_(self, dim, index, src, reduce, include_self=include_self)
    def index_add_(self, dim, index, source, *, alpha=1):
        return _sc.index_add_(self, dim, index, source, alpha=alpha)
    def index_fill_(self, dim, index, value): return _sc.index_fill_(self, dim, index, value)

    # ---------------------------------------------------------------- inplace: ops/inplace.py
    def zero_(self): return _inp.zero_(self)
    def fill_(self, value): return _inp.fill_(self, value)
    def copy_(self, src): return _inp.copy_(self, src)
    def add_(self, other, alpha=1): return _inp.add_(self, other, alpha)
    def sub_(self, other, alpha=1): return _inp.sub_(self, other, alpha)
    def mul_(self, other): return _inp.mul_(self, other)
    def div_(self, other): return _inp.div_(self, other)
    def masked_fill_(self, mask, value): return _inp.masked_fill_(self, mask, value)
    def clamp_(self, min=None, max=None): return _inp.clamp_(self, min, max)
    def exp_(self): return _inp.exp_(self)
    def relu_(self): return _inp.relu_(self)
    def uniform_(self, a=0.0, b=1.0, generator=None): return _inp.uniform_(self, a, b, generator)
    def normal_(self, mean=0.0, std=1.0, generator=None):
        return _inp.normal_(self, mean, std, generator)

    # ---------------------------------------------------------------- operators
    def __add__(self, other): return _ar.add(self, other)
    def __radd__(self, other): return _ar.add(_bound(self, "__radd__"), other)
    def __sub__(self, other): return _ar.sub(self, other)
    def __rsub__(self, other): return _ar.rsub(_bound(self, "__rsub__"), other)
    def __mul__(self, other): return _ar.mul(self, other)
    def __rmul__(self, other): return _ar.mul(_bound(self, "__rmul__"), other)
    def __truediv__(self, other): return _ar.div(self, other)
    def __rtruediv__(self, other): return _ar.rdiv(_bound(self, "__rtruediv__"), other)
    def __pow__(self, other): return _ar.pow(self, other)
    def __rpow__(self, other): return _ar.rpow(_bound(self, "__rpow__"), other)
    def __mod__(self, other): return _ar.remainder(self, other)
    def __rmod__(self, other): return _ar.remainder(other, _bound(self, "__rmod__"))
    def __floordiv__(self, other): return _ar.floor_divide(self, other)
    def __rfloordiv__(self, other): return _ar.floor_divide(other, _bound(self, "__rfloordiv__"))
    def __matmul__(self, other): return _mm.matmul(self, other)
    def __rmatmul__(self, other): return _mm.matmul(other, _bound(self, "__rmatmul__"))
    def __neg__(self): return _un.neg(self)
    def __abs__(self): return _un.abs(self)
    def __invert__(self): return _cmp.bitwise_not(self)
    def __and__(self, other): return _cmp.bitwise_and(self, other)
    def __or__(self, other): return _cmp.bitwise_or(self, other)
    def __xor__(self, other): return _cmp.bitwise_xor(self, other)
    def __rand__(self, other): return _cmp.bitwise_and(_bound(self, "__rand__"), other)
    def __ror__(self, other): return _cmp.bitwise_or(_bound(self, "__ror__"), other)
    def __rxor__(self, other): return _cmp.bitwise_xor(_bound(self, "__rxor__"), other)
    def bitwise_and(self, other): return _cmp.bitwise_and(self, other)
    def bitwise_or(self, other): return _cmp.bitwise_or(self, other)
    def bitwise_xor(self, other): return _cmp.bitwise_xor(self, other)
    def bitwise_not(self): return _cmp.bitwise_not(self)
    def floor(self): return _un.floor(self)
    def ceil(self): return _un.ceil(self)
    def trunc(self): return _un.trunc(self)
    def round(self, decimals=0): return _ar.round(self, decimals)
    def log1p(self): return _un.log1p(self)
    def expm1(self): return _un.expm1(self)
    def erf(self): return _un.erf(self)
    def atan(self): return _un.atan(self)
    def arctan(self): return _un.atan(self)
    def atan2(self, other): return _ar.atan2(self, other)
    def arctan2(self, other): return _ar.atan2(self, other)
    def prod(self, dim=None, keepdim=False, dtype=None):
        return _red.prod(self, dim, keepdim, dtype)
    def __eq__(self, other): return _cmp.eq(self, other)
    def __ne__(self, other): return _cmp.ne(self, other)
    def __lt__(self, other): return _cmp.lt(self, other)
    def __le__(self, other): return _cmp.le(self, other)
    def __gt__(self, other): return _cmp.gt(self, other)
    def __ge__(self, other): return _cmp.ge(self, other)
    def __iadd__(self, other): return _inp.iadd(self, other)
    def __isub__(self, other): return _inp.isub(self, other)
    def __imul__(self, other): return _inp.imul(self, other)
    def __itruediv__(self, other): return _inp.idiv(self, other)

    __hash__ = object.__hash__  # defining __eq__ would otherwise make tensors unhashable


def _bound(self, name):
    """self of a reflected operator, checked: `Tensor.__radd__(2, t)` called unbound would
    otherwise compute 2 + t where PyTorch raises."""
    if not isinstance(self, Tensor):
        raise TypeError(f"Tensor.{name}: self must be a tensor, got {type(self).__name__}")
    return self


def _cpu_only(op, device):
    if device is not None and str(device).split(":")[0] != "cpu":
        raise NotImplementedError(f"{op}: device {device!r}: tinyattn runs on the CPU only")


def _make(data, shape, dtype, strides=None, offset=0, packed=None):
    """Wrap a buffer as a tensor without copying (the one internal constructor)."""
    t = _new_tensor(Tensor)
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
    every element. A big buffer may be a dead output's (tinyattn/_recycle.py), which saves the
    zero-fill that a fresh array.array costs; ops that need zeros ask for them (``_zeros``).

    `_make(_recycle.take(zero, numel(shape)), shape, dtype)`, written out: every op's output comes
    from here, and at small sizes the function calls would cost more than the kernel's work."""
    n = 1
    for d in shape:
        n *= d
    strides = _STRIDES.get(shape)
    if strides is None:
        strides = _strides_for(shape)
    t = _new_tensor(Tensor)
    zero = _ZERO_BUFFERS[dtype]
    t._data = zero * n if n < _SMALL else _take(zero, n)
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


_new_tensor = object.__new__   # a bare Tensor; Tensor.__new__ is the legacy constructor
_take = _recycle.take
# Fewer elements than this never reach _recycle.MIN_BYTES (8-byte dtypes are the largest): no
# call to take, which would cost more than the fill (~0.1 us of a 4 x 4 op's ~2).
_SMALL = _recycle.MIN_BYTES // 8
_ZERO_BUFFERS = _dt._ZERO  # dtype -> a 1-element zero buffer; `buf * n` makes n zeros (fastest way)



# tensor.py and ops/ need each other: ops make Tensors, and Tensor's methods call ops. The ops
# modules are imported here, after Tensor, _make and _empty exist, because they import those names.
from . import creation as _cr  # noqa: E402
from .ops import arithmetic as _ar  # noqa: E402
from .ops import compare as _cmp  # noqa: E402
from .ops import indexing as _idx  # noqa: E402
from .ops import inplace as _inp  # noqa: E402
from .ops import layout as _lay  # noqa: E402
from .ops import matmul as _mm  # noqa: E402
from .ops import reduce as _red  # noqa: E402
from .ops import random as _rops  # noqa: E402
from .ops import composite as _comp  # noqa: E402
from .ops import softmax as _sm  # noqa: E402
from .ops import sort as _sort  # noqa: E402
from .ops import unary as _un  # noqa: E402
from .ops import scatter as _sc  # noqa: E402
