"""Making tensors: from Python data, NumPy arrays and buffers (`tensor`, `as_tensor`,
`from_numpy`, `asarray`, `frombuffer`), filled (`zeros`, `full`, `eye`, `arange`), random
(`rand`, `randn`, `randint`, `randperm`, `bernoulli`), and PyTorch's legacy typed constructors
(`FloatTensor`, `LongTensor`, ...).

Random functions draw from the global generator seeded by `tinyattn.manual_seed(n)` unless a
`generator=` is passed. This module sits with the ops (it fills tensors with ops/random.py's
kernels) and below tinyattn.Tensor, whose legacy constructor `Tensor([1, 2])` calls it."""
import builtins
import math
from array import array

from . import _numpy as _np
from . import _shapes
from . import _devices as _device
from . import dtypes as _dt
from .ops import convert as _convert
from .ops import random as _random_ops
from .storage import TensorBase as Tensor, _make


def _size(op, size):
    """Accept f(2, 3), f((2, 3)) and f([2, 3]) as PyTorch does."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        size = tuple(int(s) for s in size)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: size must be ints, got {size!r}") from None
    if builtins.any(s < 0 for s in size):
        raise ValueError(f"{op}: negative dimension in size {size}")
    return size


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


_SEQ = (list, tuple, range)
_NUMBER = (int, float, builtins.bool)


def _plain(v, op):
    """A tensor, NumPy array or scalar, or buffer as Python lists or a number."""
    if isinstance(v, Tensor):
        return v.tolist()
    if _np.is_numpy_scalar(v):
        return v.item()
    if not isinstance(v, _SEQ) and _np.is_array_like(v):
        buf, shape, dt, _ = _np.read(v, op)
        return _make(buf, shape, dt).tolist()
    return v


def _flatten(op, data):
    """Nested lists -> (shape, flat list, typed). Ragged nesting raises ValueError naming the dim.
    typed: some element was a tensor, a NumPy array or scalar or a buffer, whose dtype counts in
    the result's (`_infer_nested`)."""
    shape = []
    level = [data]
    typed = False
    # a level of sequences or tensors, or of arrays (a NumPy scalar too: `_plain` makes it a number)
    while level and (isinstance(level[0], (list, tuple, range, Tensor)) or (
            type(level[0]) not in _NUMBER and _np.is_array_like(level[0]))):
        if builtins.any(not isinstance(v, _SEQ) for v in level):
            typed = True
            level = [_plain(v, op) for v in level]
            if not isinstance(level[0], _SEQ):
                break
        n = len(level[0])
        for v in level:
            if not isinstance(v, _SEQ) or len(v) != n:
                got = len(v) if isinstance(v, _SEQ) else type(v).__name__
                raise ValueError(f"{op}: expected a sequence of length {n} at dim {len(shape)} "
                                 f"(got {got}); nested lists must be rectangular")
        shape.append(n)
        level = [x for v in level for x in v]
    for i, v in enumerate(level):
        if type(v) in _NUMBER:
            continue
        if not isinstance(v, _SEQ) and (isinstance(v, Tensor) or _np.is_array_like(v)):
            typed = True
            v = level[i] = _plain(v, op)
        if isinstance(v, (list, tuple, range)):
            raise ValueError(f"{op}: nested lists must be rectangular (mixed depths)")
        if not isinstance(v, (int, float)):
            raise TypeError(f"{op}: cannot make a tensor from an element of type "
                            f"{type(v).__name__} ({v!r})")
    return tuple(shape), level, typed


def _infer_dtype(values):
    if values and builtins.all(type(v) is builtins.bool for v in values):
        return _dt.bool
    if builtins.all(isinstance(v, int) for v in values) and values:
        return _dt.int64
    return _dt.float32


def _infer_nested(data, op):
    """PyTorch's dtype of nested data holding tensors or arrays: the promotion of every element's
    dtype, a tensor's or array's own, bool / int64 / float32 for a Python bool, int, float."""
    found = None
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, _SEQ):
            stack.extend(v)
            continue
        d = (v.dtype if isinstance(v, Tensor) else _dt.bool if type(v) is builtins.bool
             else _dt.int64 if type(v) is int else _dt.float32 if type(v) is float
             else _np.dtype_of(v, op))
        found = d if found is None else _dt.promote_types(found, d)
    return found or _dt.float32


def _buffer(dtype, values, op="tensor"):
    if dtype is _dt.bool:
        return array("B", [1 if v else 0 for v in values])
    if dtype is _dt.int64:
        try:
            return array("q", [v if type(v) is int else int(v) for v in values])
        except OverflowError:
            raise OverflowError(f"{op}: a value does not fit in int64") from None
    if _dt.computes_in_int64(dtype):   # uint8 / int32: PyTorch's range check (dtypes.checked)
        return array(dtype.typecode, [_dt.checked(dtype, v, op) for v in values])
    return array(dtype.typecode, values)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor (a copy) from a number, nested lists of numbers, a Tensor, or an array: a
    NumPy array or scalar, a buffer, an `__array_interface__` (read by tinyattn/_numpy.py).

    dtype as in PyTorch: bools -> bool, ints -> int64, any float -> float32; a NumPy array or
    scalar keeps its own (float16 and others tinyattn lacks raise TypeError); a mix promotes."""
    _device.check(device, "tensor")
    if isinstance(data, Tensor):
        t = data.detach().clone() if dtype is None else data.detach().to(_dt.get(dtype)).clone()
        return _finish(t, requires_grad)
    if not isinstance(data, (list, tuple, range, int, float)) and _np.is_array_like(data):
        return _finish(_from_array("tensor", data, dtype), requires_grad)
    shape, values, typed = _flatten("tensor", data)
    if dtype is not None:
        dt = _dt.get(dtype)
    else:
        dt = _infer_nested(data, "tensor") if typed else _infer_dtype(values)
    return _finish(_make(_buffer(dt, values), shape, dt), requires_grad)


def _from_array(op, obj, dtype):
    """A new tensor from the memory of an array-like (tinyattn/_numpy.py `read`). Converted to
    another dtype, an array is cast (uint8 wraps 300 to 44) and a NumPy scalar range-checked
    like a Python number, as in PyTorch."""
    buf, shape, dt, numpy_scalar = _np.read(obj, op)
    if dtype is None or _dt.get(dtype) is dt:
        return _make(buf, shape, dt)
    if numpy_scalar:                  # converted as a Python number: range-checked
        return _make(_buffer(_dt.get(dtype), [obj.item()], op), (), _dt.get(dtype))
    return _convert.to_dtype(_make(buf, shape, dt), _dt.get(dtype))


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor: a Tensor of the dtype asked for is returned itself, shared (as in
    PyTorch); anything else is made with `tensor`.

    Differs from PyTorch: a NumPy array is copied, never shared. A tensor's storage is an
    `array.array`, which owns its memory and cannot wrap the array's: writing into one
    afterwards does not change the other."""
    _device.check(device, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or _dt.get(dtype) is data.dtype else \
            _convert.to_dtype(data, _dt.get(dtype))
    return tensor(data, dtype)


def from_numpy(ndarray):
    """A tensor of the NumPy array's dtype, shape and values.

    Differs from PyTorch: a copy, not a tensor sharing the array's memory (an `array.array`
    cannot wrap foreign memory); writing into one afterwards does not change the other."""
    if not _np.is_numpy_array(ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(ndarray).__name__})")
    return _from_array("from_numpy", ndarray, None)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor of `buffer`'s bytes, from `offset`, read as `count` elements of dtype
    (-1: as many as fit).

    Differs from PyTorch: a copy of the bytes, not a tensor over the buffer's memory."""
    dt = _dt.get(dtype)
    buf, shape = _np.frombuffer(buffer, dt, count, offset)
    return _finish(_make(buf, shape, dt), requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """`obj` as a tensor, by PyTorch's rules: a Tensor is returned itself when no conversion or
    copy is asked for; a NumPy array or scalar keeps its dtype; any other buffer is read as
    raw bytes of `dtype` (default float32), as `frombuffer`; a sequence as by `tensor`.
    copy=True always copies; copy=False refuses whatever would need a copy.

    Differs from PyTorch: a NumPy array or buffer cannot be shared (an `array.array` owns its
    memory), so with copy=False it raises ValueError where PyTorch would share it."""
    _device.check(device, "asarray")
    if isinstance(obj, Tensor):
        if dtype is not None and _dt.get(dtype) is not obj.dtype:
            if copy is False:
                raise ValueError(f"asarray: can't alias tensor with dtype {obj.dtype} into "
                                 f"dtype {_dt.get(dtype)}.")
            t = _convert.to_dtype(obj, _dt.get(dtype))
        else:
            t = obj.clone() if copy else obj
        return _finish(t, requires_grad)
    if copy is False:
        raise ValueError(f"asarray: can't alias a {type(obj).__name__} into a tensor: tinyattn "
                         f"copies every array, buffer and sequence (copy=None copies)")
    if type(obj) not in _NUMBER and not isinstance(obj, _SEQ) and not (
            _np.is_numpy_array(obj) or _np.is_numpy_scalar(obj)) and _np.is_array_like(obj) \
            and not hasattr(obj, "__array_interface__"):
        return frombuffer(obj, dtype=dtype or _dt.float32, requires_grad=requires_grad)
    return tensor(obj, dtype=dtype, requires_grad=requires_grad)


def _filled(op, size, value, dtype, requires_grad):
    shape = _size(op, size)
    if dtype is None:
        dtype = (_dt.bool if isinstance(value, bool) else
                 _dt.int64 if isinstance(value, int) else _dt.float32)
    dtype = _dt.get(dtype)
    if dtype is _dt.bool:
        value = 1 if value else 0
    elif not dtype.is_floating_point:
        value = int(_dt.checked(dtype, value, op))
    buf = array(dtype.typecode, [value]) * _shapes.numel(shape)
    return _finish(_make(buf, shape, dtype), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    _device.check(device, "zeros")
    return _filled("zeros", size, 0.0, dtype or _dt.float32, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    _device.check(device, "ones")
    return _filled("ones", size, 1.0, dtype or _dt.float32, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size (zero-filled here; do not rely on the contents)."""
    _device.check(device, "empty")
    return _filled("empty", size, 0.0, dtype or _dt.float32, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    _device.check(device, "full")
    return _filled("full", (size,) if isinstance(size, int) else tuple(size), fill_value, dtype,
                   requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    _device.check(device, "zeros_like")
    _device.check_memory_format(memory_format, "zeros_like")
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    _device.check(device, "ones_like")
    _device.check_memory_format(memory_format, "ones_like")
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    _device.check(device, "empty_like")
    _device.check_memory_format(memory_format, "empty_like")
    return zeros_like(t, dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    _device.check(device, "full_like")
    _device.check_memory_format(memory_format, "full_like")
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values start, start+step, ... below end (int64 for int arguments, float32 otherwise).

    For an integer dtype, as in PyTorch, start, end and step are first truncated to integers:
    `arange(0.0, -8.000001, -4.0, dtype=int64)` is [0, -4]; float dtypes count in doubles."""
    _device.check(device, "arange")
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _dt.int64 if builtins.all(isinstance(v, int) for v in (start, end, step)) \
            else _dt.float32
    dtype = _dt.get(dtype)
    integral = _dt.is_integer(dtype)
    x0, x1, dx = (int(start), int(end), int(step)) if integral else (start, end, step)
    if dx == 0:
        raise ValueError(f"arange: step must be nonzero (step={step} as {dtype})")
    if (x1 - x0) * dx < 0:   # PyTorch raises here rather than returning an empty tensor
        raise ValueError(f"arange: upper bound and lower bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    if dtype is _dt.int64:   # PyTorch counts int64 lengths in integers, other dtypes in doubles
        sign = (dx > 0) - (dx < 0)
        n = (x1 - x0 + dx - sign) // dx   # exact: both signs agree, so floor is C's truncation
    else:
        n = math.ceil((end - start) / step)
    if integral:
        buf = _buffer(dtype, (x0 + i * dx for i in range(n)), "arange")
    else:
        buf = array(dtype.typecode, [start + i * step for i in range(n)])
    return _finish(_make(buf, (len(buf),), dtype), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end inclusive (start and end may be numbers or
    0-d tensors, whose value is used, counted in doubles)."""
    _device.check(device, "linspace")
    start, end = _end_value("linspace", "start", start), _end_value("linspace", "end", end)
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"linspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"linspace: steps must be non-negative, got {steps}")
    dtype = _dt.get(dtype or _dt.float32)
    if steps == 1:
        vals = [start]
    else:
        if not dtype.is_floating_point:      # PyTorch casts the ends to the dtype first
            start, end = int(start), int(end)
        d = (end - start) / (steps - 1)   # the second half counted back from end (PyTorch)
        half = steps // 2
        vals = [start + i * d if i < half else end - (steps - 1 - i) * d for i in range(steps)]
    if not dtype.is_floating_point:          # computed in floats, truncated, as in PyTorch
        vals = [int(v) for v in vals] if dtype is not _dt.bool else [v != 0 for v in vals]
        vals = [_dt.wrap(dtype, v) for v in vals]
    return _finish(_make(array(dtype.typecode, vals), (steps,), dtype), requires_grad)


def _end_value(op, name, v):
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise RuntimeError(f"{op}(): argument '{name}' must be a 0-D tensor, got shape "
                               f"{tuple(v.shape)}")
        return v._data[v._offset]
    return v


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    _device.check(device, "eye")
    m = n if m is None else m
    t = zeros(n, m, dtype=dtype)
    for i in range(builtins.min(n, m)):
        t._data[i * m + i] = 1
    return _finish(t, requires_grad)


# --------------------------------------------------------------------------- random


def _random_float(op, size, dtype, generator):
    shape = _size(op, size)
    dtype = _dt.get(dtype or _dt.float32)
    if not dtype.is_floating_point:
        raise TypeError(f"{op}: dtype must be float32 or float64, got {dtype}")
    return _make(_dt.zeros_buffer(dtype, _shapes.numel(shape)), shape, dtype)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None, low=0.0,
         high=1.0):
    """Uniform samples in [low, high) (default [0, 1))."""
    _device.check(device, "rand")
    t = _random_float("rand", size, dtype, generator)
    return _finish(_random_ops.uniform_fill(t, low, high, generator), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None, mean=0.0,
          std=1.0):
    """Standard normal samples (mean 0, std 1)."""
    _device.check(device, "randn")
    t = _random_float("randn", size, dtype, generator)
    return _finish(_random_ops.normal_fill(t, mean, std, generator), requires_grad)


def rand_like(t, dtype=None, device=None, requires_grad=False, generator=None,
              memory_format=None):
    _device.check(device, "rand_like")
    _device.check_memory_format(memory_format, "rand_like")
    return rand(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, generator=generator)


def randn_like(t, dtype=None, device=None, requires_grad=False, generator=None,
               memory_format=None):
    _device.check(device, "randn_like")
    _device.check_memory_format(memory_format, "randn_like")
    return randn(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, generator=generator)


def randint(low=0, high=None, size=None, dtype=None, generator=None, device=None):
    """Integers uniform on [low, high): randint(high, size) or randint(low, high, size)."""
    _device.check(device, "randint")
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint: size must be given, e.g. randint(10, (3,)) or "
                            "randint(0, 10, (3,))")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    shape = _size("randint", (size,))
    dtype = _dt.get(dtype or _dt.int64)
    t = _make(_dt.zeros_buffer(_dt.int64, _shapes.numel(shape)), shape, _dt.int64)
    _random_ops.randint_fill(t, low, high, generator)
    return t if dtype is _dt.int64 else t.to(dtype)


def randperm(n, dtype=None, generator=None, device=None):
    """A random permutation of 0..n-1."""
    _device.check(device, "randperm")
    t = _make(_dt.zeros_buffer(_dt.int64, n), (n,), _dt.int64)
    _random_ops.randperm_fill(t, generator)
    return t if dtype is None else t.to(dtype)


def bernoulli_mask(shape, p, dtype, generator=None):
    """A tensor of 1/(1-p) with probability 1-p and 0 otherwise (inverted dropout's mask)."""
    t = _make(_dt.zeros_buffer(dtype, _shapes.numel(shape)), tuple(shape), dtype)
    return _random_ops.bernoulli_scale_fill(t, p, generator)


def bernoulli(input, *, generator=None):  # noqa: A002
    """1 with probability input[i], else 0, in input's dtype."""
    return (rand_like(input, generator=generator) < input).to(input.dtype)


# --------------------------------------------------------------------------- legacy constructors


def is_size(a):
    """An int, or a NumPy integer: a size to PyTorch's legacy constructors (LongTensor(n))."""
    return isinstance(a, int) or _np.is_integer_scalar(a)


def _legacy(dtype, name):
    def make(*args):
        """PyTorch's legacy typed constructor: LongTensor([1, 2]) or LongTensor(2, 3); data
        (a list, a NumPy array) is converted to the type: FloatTensor(float64 array) is
        float32."""
        if len(args) == 1 and not is_size(args[0]):
            return tensor(args[0], dtype=make.dtype)
        return zeros(*(int(a) for a in args), dtype=make.dtype)
    make.dtype = dtype   # x.type(IntTensor) converts to it (dtypes.get)
    make.__name__ = make.__qualname__ = name
    return make


FloatTensor, DoubleTensor = _legacy(_dt.float32, "FloatTensor"), _legacy(_dt.float64, "DoubleTensor")
LongTensor, BoolTensor = _legacy(_dt.int64, "LongTensor"), _legacy(_dt.bool, "BoolTensor")
IntTensor, ByteTensor = _legacy(_dt.int32, "IntTensor"), _legacy(_dt.uint8, "ByteTensor")
