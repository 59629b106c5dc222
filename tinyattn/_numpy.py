"""NumPy at the boundary: arrays and buffers read into tensors, tensors handed out as NumPy arrays.

"NumPy-free" means: no module of tinyattn computes with NumPy or imports it to run. This file is
the one place that meets NumPy, and it does so in two directions without importing it to read:

- in: `read(obj)` takes the memory of a NumPy array or scalar, of any object with
  `__array_interface__`, and of any object exporting Python's buffer protocol (`array.array`,
  `memoryview`, `bytearray`), through `memoryview` (`.format`, `.shape`, `.strides`,
  `.tobytes()`) or the interface's pointer. A NumPy array is recognised by its class, looked up
  in `sys.modules`: if NumPy was never imported, nothing can be a NumPy array.
- out: `to_numpy(t)` builds a NumPy array over the tensor's own `array.array` buffer (no copy: it
  shares memory, as PyTorch's `.numpy()` does). It imports NumPy inside that call only, so only a
  program that asks for a NumPy array loads it (numba installs NumPy anyway).

The other direction cannot share: a tensor's storage is an `array.array`, which owns its memory
and cannot wrap another object's, so `from_numpy` and `as_tensor` copy (creation.py says so).

Which dtype an input gets is PyTorch's rule (torch/csrc/utils/tensor_new.cpp):
- a NumPy array or scalar keeps its dtype (float64 stays float64); tinyattn's six are float64,
  float32, int64, int32, uint8 and bool, and any other (float16, int16, complex, object, str, ...)
  raises TypeError naming it. As in PyTorch, arrays with a negative stride or the other byte order
  raise ValueError.
- any other buffer (`array.array('d', ...)`, a `memoryview`) is what PyTorch sees in it, a
  sequence of Python numbers: floats become float32 (the default float dtype), integers int64,
  `'?'` bool.
- an object with only `__array_interface__` (PyTorch: "Could not infer dtype") is read like a
  NumPy array of its `typestr`; its strides may be negative and its byte order either.
"""
import ctypes
import sys
from array import array

from . import dtypes as _dt

_NATIVE = "<" if sys.byteorder == "little" else ">"
# NumPy's (kind, itemsize) -> tinyattn dtype; kind is dtype.kind / typestr[1]
_KINDS = {("f", 8): _dt.float64, ("f", 4): _dt.float32, ("i", 8): _dt.int64, ("i", 4): _dt.int32,
          ("u", 1): _dt.uint8, ("b", 1): _dt.bool}
_NAMES = {"f": "float", "i": "int", "u": "uint", "c": "complex"}
SUPPORTED = "float64, float32, int64, int32, uint8, and bool"
# buffer-protocol formats, read as PyTorch reads a sequence of their Python numbers
_FLOAT_FORMATS, _INT_FORMATS = "fd", "bBhHiIlLqQnN"


def _numpy():
    return sys.modules.get("numpy")   # imported by someone else, or not at all


def is_numpy_array(obj):
    np = _numpy()
    return np is not None and isinstance(obj, np.ndarray)


def is_numpy_scalar(obj):
    np = _numpy()
    return np is not None and isinstance(obj, np.generic)


def is_integer_scalar(obj):
    """A NumPy integer scalar (np.int64(3)), which PyTorch takes as a size wherever an int is."""
    np = _numpy()
    return np is not None and isinstance(obj, np.integer)


def is_array_like(obj):
    """Whether `read` takes obj: a NumPy array or scalar, an object with `__array_interface__`,
    or any buffer but bytes (which PyTorch refuses, as it does str)."""
    if isinstance(obj, (list, tuple, range, int, float, str, bytes)) and not is_numpy_scalar(obj):
        return False
    if is_numpy_array(obj) or is_numpy_scalar(obj) or hasattr(obj, "__array_interface__"):
        return True
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _dtype_of(kind, itemsize, name, op):
    dt = _KINDS.get((kind, itemsize))
    if dt is None:
        raise TypeError(f"{op}: can't convert np.ndarray of type numpy.{name}. The only "
                        f"supported types are: {SUPPORTED}.")
    return dt


def _kind_name(kind, itemsize):
    if kind == "b":
        return "bool"
    if kind in _NAMES:
        return f"{_NAMES[kind]}{8 * itemsize}"
    return {"O": "object_", "U": "str_", "S": "bytes_", "V": "void", "M": "datetime64",
            "m": "timedelta64"}.get(kind, kind)


def _from_bytes(dt, raw, swap=False):
    buf = array(dt.typecode)
    buf.frombytes(raw)
    if swap and buf.itemsize > 1:
        buf.byteswap()
    return buf


def dtype_of(obj, op="tensor"):
    """The dtype `read` gives obj, without reading its elements."""
    if is_numpy_array(obj) or is_numpy_scalar(obj):
        d = obj.dtype
        return _dtype_of(d.kind, d.itemsize, d.type.__name__, op)
    if hasattr(obj, "__array_interface__"):
        typestr = obj.__array_interface__["typestr"]
        kind, size = typestr[1], int(typestr[2:])
        return _dtype_of(kind, size, _kind_name(kind, size), op)
    return _buffer_dtype(memoryview(obj), obj, op)


def read(obj, op="tensor"):
    """(buffer, shape, dtype, numpy_scalar) of an array-like: a copy of its elements in row-major
    order in a new `array.array`. numpy_scalar: obj is a NumPy scalar, which PyTorch converts
    like a Python number (a range check into a narrower dtype), not like an array (a cast)."""
    if is_numpy_array(obj) or is_numpy_scalar(obj):
        return _read_numpy(obj, op) + (is_numpy_scalar(obj),)
    if hasattr(obj, "__array_interface__"):
        return _read_interface(obj, op) + (False,)
    return _read_buffer(obj, op) + (False,)


def _read_numpy(a, op):
    d = a.dtype
    dt = _dtype_of(d.kind, d.itemsize, d.type.__name__, op)
    if d.byteorder not in ("=", "|", _NATIVE):
        raise ValueError(f"{op}: given numpy array has byte order different from the native byte "
                         f"order. Conversion between byte orders is currently not supported.")
    if any(s < 0 for s in a.strides):
        raise ValueError(f"{op}: at least one stride in the given numpy array is negative, and "
                         f"tensors with negative strides are not currently supported. (You can "
                         f"probably work around this by making a copy of your array with "
                         f"array.copy().)")
    # tobytes() walks any strides (Fortran order, slices, broadcasts) in C order
    return _from_bytes(dt, memoryview(a).tobytes()), tuple(a.shape), dt


def _read_interface(obj, op):
    ai = obj.__array_interface__
    typestr, shape = ai["typestr"], tuple(ai["shape"])
    kind, size = typestr[1], int(typestr[2:])
    dt = _dtype_of(kind, size, _kind_name(kind, size), op)
    strides = ai.get("strides")
    c_strides, n = [], 1
    for d in reversed(shape):
        c_strides.insert(0, n * size)
        n *= d
    strides = tuple(c_strides) if strides is None else tuple(strides)
    # byte offsets of the elements, row-major, from the first element's address
    pos = [0]
    for d, s in zip(shape, strides):
        pos = [p + i * s for p in pos for i in range(d)]
    lo, hi = (min(pos), max(pos) + size) if n else (0, 0)
    data = ai.get("data")
    if isinstance(data, tuple):      # (address, read-only flag)
        raw = ctypes.string_at(data[0] + lo, hi - lo) if hi > lo else b""
    else:                            # a buffer (or None: obj itself exports one), plus an offset
        mem = memoryview(obj if data is None else data).cast("B")
        start = ai.get("offset", 0) + lo
        raw = mem[start:start + hi - lo].tobytes()
    if strides != tuple(c_strides):
        raw = b"".join(raw[p - lo:p - lo + size] for p in pos)
    swap = typestr[0] not in ("|", "=", _NATIVE)
    return _from_bytes(dt, raw, swap), shape, dt


def _read_buffer(obj, op):
    m = memoryview(obj)
    dt = _buffer_dtype(m, obj, op)
    fmt = m.format.lstrip("@")
    src = array("B" if fmt == "?" else fmt)
    src.frombytes(m.tobytes())
    if src.typecode == dt.typecode:
        return src, tuple(m.shape), dt
    try:
        return array(dt.typecode, src), tuple(m.shape), dt
    except OverflowError:
        raise OverflowError(f"{op}: a value of the {type(obj).__name__} does not fit in int64") \
            from None


def _buffer_dtype(m, obj, op):
    fmt = m.format.lstrip("@")
    if fmt == "?":
        return _dt.bool
    if len(fmt) == 1 and fmt in _FLOAT_FORMATS:
        return _dt.float32              # a sequence of Python floats: the default float dtype
    if len(fmt) == 1 and fmt in _INT_FORMATS:
        return _dt.int64
    raise TypeError(f"{op}: cannot read a buffer of format {m.format!r} ({type(obj).__name__}); "
                    f"readable formats are {_FLOAT_FORMATS}, {_INT_FORMATS} and ?")


def frombuffer(obj, dt, count, offset, op="frombuffer"):
    """The bytes of a buffer, from `offset`, read as `count` elements of dt (-1: all that fit)."""
    try:
        mem = memoryview(obj).cast("B")
    except TypeError:
        raise ValueError(f"{op}: object does not implement Python buffer protocol.") from None
    n, k = len(mem), dt.itemsize
    if n == 0 or count == 0:
        raise ValueError(f"{op}: both buffer length ({n}) and count ({count}) must not be 0")
    if not 0 <= offset < n:
        raise ValueError(f"{op}: offset ({offset} bytes) must be non-negative and no greater "
                         f"than buffer length ({n} bytes) minus 1")
    if count < 0:
        if (n - offset) % k:
            raise ValueError(f"{op}: buffer length ({n - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({k})")
        count = (n - offset) // k
    elif offset + count * k > n:
        raise ValueError(f"{op}: requested buffer length ({count} * {k} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({n} bytes)")
    buf = _from_bytes(dt, mem[offset:offset + count * k].tobytes())
    if dt is _dt.bool:                 # a bool buffer holds 0 or 1 in each byte
        buf = array("B", [1 if v else 0 for v in buf])
    return buf, (count,)


def to_numpy(t):
    """A NumPy array over the tensor's buffer: the same memory, the tensor's shape and strides."""
    import numpy  # the project's one import of NumPy, paid only by a caller of .numpy()
    k = t.dtype.itemsize
    return numpy.ndarray(t.shape, numpy.dtype(t.dtype.name), buffer=t._data,
                         offset=t._offset * k, strides=tuple(s * k for s in t._strides))
