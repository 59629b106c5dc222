"""tinyattn.Tensor: the tensor a program holds, with every op as a method.

Its data -- a strided view of a flat `array.array` buffer, and the autograd state
`requires_grad`, `grad`, `grad_fn` -- is `TensorBase`'s (storage.py); this class adds the ops. The
methods are thin: each calls the function of the same name in tinyattn/ops/ (ops/softmax.py for
`x.softmax(dim)`), where the op's forward, backward and kernel call live. This module sits above
the ops, so it imports them; the ops, which make tensors, import only storage.py, and the tensors
they make are Tensors all the same: the class is `register`ed with storage below.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
from . import _devices as _dev
from . import _numpy
from . import autograd as _ag
from . import creation as _cr
from . import dtypes as _dt
from . import storage as _storage
from ._format import format_tensor
from .ops import blend as _blend
from .ops import convert as _cv
from .ops import angle as _angle
from .ops import arithmetic as _ar
from .ops import compare as _cmp
from .ops import indexing as _idx
from .ops import inplace as _inp
from .ops import isclose as _close
from .ops import layout as _lay
from .ops import logarithm as _logb
from .ops import matmul as _mm
from .ops import norm as _norm
from .ops import product as _prod
from .ops import random as _rops
from .ops import reduce as _red
from .ops import scatter as _sc
from .ops import softmax as _sm
from .ops import sort as _sort
from .ops import unary as _un
from .storage import TensorBase


class Tensor(TensorBase):
    """A tensor: its data and metadata are TensorBase's (storage.py), its ops are the methods
    below. Every tensor tinyattn makes is one of these (or an nn.Parameter)."""

    __slots__ = ()  # the slots are TensorBase's; no per-tensor __dict__

    def __new__(cls, *args, **kwargs):
        """PyTorch's legacy constructor: Tensor([1, 2]) copies data as float32, Tensor(2, 3) is
        a (2, 3) float32 tensor of zeros (PyTorch leaves it uninitialised), Tensor() is empty.
        New code should use tinyattn.tensor(data) and tinyattn.zeros(shape)."""
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}; use "
                            f"tinyattn.tensor(data, dtype=...)")
        if len(args) == 1 and not _cr.is_size(args[0]):
            t = _cr.tensor(args[0], dtype=_dt.float32)
        elif all(_cr.is_size(a) and not isinstance(a, bool) for a in args):
            t = _cr.zeros(*(int(a) for a in args)) if args else _cr.zeros(0)
        else:
            raise TypeError(f"Tensor(): expected a sequence of numbers or sizes, got {args!r}")
        if cls is not Tensor:
            raise TypeError(f"{cls.__name__}(): subclass it through tinyattn.nn.Parameter")
        return t

    def __init__(self, *args, **kwargs):
        pass

    @property
    def T(self):
        """All dims reversed (the transpose of a matrix)."""
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self):
        """The last two dims swapped: a batch of transposed matrices."""
        return self.transpose(-2, -1)

    # ------------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Compute d(self)/d(leaf) for every leaf that requires grad (only for `inputs`, when
        given), accumulating into `.grad`; with create_graph the gradients are differentiable."""
        if create_graph or inputs is not None:
            _ag.backward_into(self, gradient, retain_graph, create_graph, inputs)
        else:
            _ag.backward(self, gradient, bool(retain_graph))

    @property
    def _version(self):
        """How many in-place changes this tensor's elements have had (shared by its views)."""
        return _ag.version(self)

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

    # ---------------------------------------------------------------- composed of other ops
    # (in their families' files: ops/logarithm.py, blend.py, matmul.py, isclose.py, indexing.py,
    # layout.py, product.py; bernoulli in creation.py)
    def log2(self, *args, **kwargs): return _logb.log2(self, *args, **kwargs)
    def log10(self, *args, **kwargs): return _logb.log10(self, *args, **kwargs)
    def lerp(self, *args, **kwargs): return _blend.lerp(self, *args, **kwargs)
    def addcmul(self, *args, **kwargs): return _blend.addcmul(self, *args, **kwargs)
    def addcdiv(self, *args, **kwargs): return _blend.addcdiv(self, *args, **kwargs)
    def addmm(self, *args, **kwargs): return _mm.addmm(self, *args, **kwargs)
    def baddbmm(self, *args, **kwargs): return _mm.baddbmm(self, *args, **kwargs)
    def mv(self, *args, **kwargs): return _mm.mv(self, *args, **kwargs)
    def isclose(self, *args, **kwargs): return _close.isclose(self, *args, **kwargs)
    def allclose(self, *args, **kwargs): return _close.allclose(self, *args, **kwargs)
    def equal(self, *args, **kwargs): return _close.equal(self, *args, **kwargs)
    def diagonal(self, *args, **kwargs): return _idx.diagonal(self, *args, **kwargs)
    def diag(self, *args, **kwargs): return _idx.diag(self, *args, **kwargs)
    def trace(self, *args, **kwargs): return _idx.trace(self, *args, **kwargs)
    def roll(self, *args, **kwargs): return _lay.roll(self, *args, **kwargs)
    def repeat_interleave(self, *args, **kwargs): return _idx.repeat_interleave(self, *args, **kwargs)
    def tile(self, *dims):  # x.tile(2, 2) or x.tile((2, 2)), as PyTorch
        return _lay.tile(self, dims[0] if len(dims) == 1 else dims)
    def movedim(self, *args, **kwargs): return _lay.movedim(self, *args, **kwargs)
    def nonzero(self, *args, **kwargs): return _idx.nonzero(self, *args, **kwargs)
    def masked_select(self, *args, **kwargs): return _idx.masked_select(self, *args, **kwargs)
    def take_along_dim(self, *args, **kwargs): return _idx.take_along_dim(self, *args, **kwargs)
    def cumprod(self, *args, **kwargs): return _prod.cumprod(self, *args, **kwargs)
    def bernoulli(self, *args, **kwargs): return _cr.bernoulli(self, *args, **kwargs)
    def broadcast_to(self, *shape): return _lay.expand(self, *shape)

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
        return format_tensor(self)

    # ------------------------------------------------------------------ NumPy (tinyattn/_numpy.py)
    __array_priority__ = 1000   # ndarray + tensor asks the tensor first (PyTorch's value)

    def numpy(self, *, force=False):
        """A NumPy array sharing this tensor's memory (its shape, strides and dtype), as in
        PyTorch: writing into one changes the other. NumPy is imported by this call only.
        A tensor that requires grad raises unless force=True (PyTorch's rule)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return _numpy.to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t) and np.array(t): `.numpy()` (shared memory), converted to dtype if
        asked; copy=True always copies, copy=False refuses a conversion (NumPy 2's protocol)."""
        a = self.numpy()
        if dtype is not None and a.dtype != dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {self.dtype} to {dtype} needs a copy, "
                                 f"and copy=False was asked for")
            return a.astype(dtype)
        return a.copy() if copy else a

    # ------------------------------------------------------------------ dtype conversion
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
           memory_format=None):
        """to(dtype), to(device), to(device, dtype), to(other_tensor) (its dtype and device):
        converts when the dtype differs (copy=True: always a new tensor). Devices other than
        the CPU raise (tinyattn/_devices.py)."""
        flags = [a for a in args if isinstance(a, bool)]  # to(dtype, non_blocking, copy)
        copy = copy or (len(flags) > 1 and flags[1])
        for a in (a for a in args if not isinstance(a, bool)):
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
        return _cv.to_dtype(self, _dt.get(dtype))

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
        return _cv.to_dtype(self, _dt.float32)

    def double(self):
        return _cv.to_dtype(self, _dt.float64)

    def long(self):
        return _cv.to_dtype(self, _dt.int64)

    def int(self):
        """int32 (PyTorch's x.int()); values wrap mod 2**32, floats truncate."""
        return _cv.to_dtype(self, _dt.int32)

    def byte(self):
        """uint8 (PyTorch's x.byte()); values wrap mod 256: -1 -> 255, 300 -> 44."""
        return _cv.to_dtype(self, _dt.uint8)

    def bool(self):
        return _cv.to_dtype(self, _dt.bool)

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
    def positive(self): return _un.positive(self)
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
    def norm(self, p=2, dim=None, keepdim=False): return _norm.norm(self, p, dim, keepdim)
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
    def div_(self, other, *, rounding_mode=None):
        return _inp.div_(self, other, rounding_mode=rounding_mode)
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
    def __pos__(self): return _un.positive(self)
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
    def atan2(self, other): return _angle.atan2(self, other)
    def arctan2(self, other): return _angle.atan2(self, other)
    def prod(self, dim=None, keepdim=False, dtype=None):
        return _prod.prod(self, dim, keepdim, dtype)
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


_storage.register(Tensor)   # every tensor the ops make (storage._make, _empty) is a Tensor
