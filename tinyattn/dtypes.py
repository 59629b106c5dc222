"""The six dtypes of tinyattn and PyTorch's promotion rule between them.

Each dtype names the `array.array` typecode that stores it:

    dtype     typecode  bytes   used for
    bool      'B'       1       masks (0 or 1 in each byte)
    uint8     'B'       1       old PyTorch masks, bytes of images (0..255, wraps mod 256)
    int32     'i'       4       lengths and indices from other libraries (wraps mod 2**32)
    int64     'q'       8       indices and class targets (PyTorch's default integer)
    float32   'f'       4       the default float type (as in PyTorch)
    float64   'd'       8       gradient checks

Promotion (`promote_types`) is PyTorch's for these six: bool < uint8 < int32 < int64 < float32 <
float64, so uint8 + int32 is int32 and int32 + float32 is float32. A Python number does not widen a
tensor of its own kind (`scalar_result_type`): uint8 + 1 stays uint8, int32 * 2.5 is float32; nor
does a 0-d tensor widen a tensor with dims (`result_type`): uint8 + tensor(300) stays uint8.

**The dtype, not the typecode, says what a buffer holds.** bool and uint8 share 'B' (there is no
other one-byte unsigned typecode), so code that needs a dtype takes it from the tensor, never from
`buffer.typecode`; `BY_TYPECODE` maps each typecode to the dtype a *new* buffer of it means by
default (bool for 'B'). Sharing 'B' is what lets uint8 reuse every data-movement kernel already
compiled for bool masks (copy, gather, where, ...): their loops move bytes and do not care which.
Converting uint8 -> bool tests `!= 0` (ops/_launch.py copy_into), never copies bytes.

**Arithmetic on uint8 and int32 runs in int64, then wraps back** (`dtype.in_int64`): the op layer
converts the operands to int64, runs the int64 kernel, and converts the result back with
`to_dtype`, which keeps the low 8 or 32 bits (kernels/elementwise.py `convert_int`), as PyTorch's
native-width arithmetic does: for + - * and integer powers the low bits of the int64 result are the
narrow result (arithmetic mod 2**k), and // % of operands already in range are exact in int64. Why
not native width:

- compile time: the fast backend compiles one loop per (typecode, op); two more integer typecodes
  would double the integer specialisations, each compiled the first time a program touches it,
  for types that hold masks and lengths, not the numbers a model spends its time on;
- the interpreted reference backend (NUMBA_DISABLE_JIT=1): storing 300 into a 'B' array raises OverflowError
  in Python, so wrapping must be an explicit step in any case; one conversion kernel written with
  `& 0xFF` / `& 0xFFFFFFFF` wraps the same way compiled and interpreted;
- safety: the compiled entry points trust their buffers' typecode (fast/jit.py by_typecode),
  so fewer typecodes reaching arithmetic kernels means fewer ways to hand one the wrong buffer.

Kernels that only move elements (copy, cat, index_select, gather, where, flip, ...) do run on 'B'
and 'i' buffers directly, compiled lazily the first time such a tensor reaches them, so importing
tinyattn compiles nothing new. Index buffers are int64 ('q') in every kernel: an int32 index tensor
is converted to int64 before it reaches one (ops/indexing.py `checked_index`). Integer matmul runs
in float64, exact while partial sums stay below 2**53, and wraps back like the rest.

Python numbers going into a uint8 / int32 tensor follow PyTorch's two rules: arithmetic and
comparisons wrap the number (`wrap`: uint8 + 300 adds 44), while creating or filling a tensor
checks the range (`checked`: `tensor([300], dtype=uint8)`, `fill_(300)` raise; -255..255 is
accepted for uint8, negatives wrapping, as PyTorch accepts them).
"""
from array import array


class dtype:
    __slots__ = ("name", "typecode", "itemsize", "is_floating_point", "rank", "is_signed", "bits",
                 "in_int64")

    def __init__(self, name, typecode, itemsize, is_floating_point, rank, is_signed=True):
        self.name = name
        self.typecode = typecode
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.rank = rank  # promotion order: bool < uint8 < int32 < int64 < float32 < float64
        self.is_signed = is_signed
        self.bits = 8 * itemsize
        # uint8, int32: computed in int64, wrapped back (see the module docstring); an attribute,
        # so the float paths of the op layer pay one attribute read to ask
        self.in_int64 = not is_floating_point and name not in ("bool", "int64")

    def __repr__(self):
        return "tinyattn." + self.name

    def __reduce__(self):  # dtypes are singletons, also through copy/pickle
        return self.name


bool = dtype("bool", "B", 1, False, 0, False)  # noqa: A001 -- the name users expect: tinyattn.bool
uint8 = dtype("uint8", "B", 1, False, 1, False)
int32 = dtype("int32", "i", 4, False, 2)
int64 = dtype("int64", "q", 8, False, 3)
float32 = dtype("float32", "f", 4, True, 4)
float64 = dtype("float64", "d", 8, True, 5)

long = int64
int = int32  # noqa: A001 -- torch.int is int32
float = float32  # noqa: A001
double = float64

ALL = (bool, uint8, int32, int64, float32, float64)
NARROW_INTS = (uint8, int32)
BY_NAME = {d.name: d for d in ALL}
# The dtype a new buffer of each typecode means by default; 'B' is bool (uint8 shares it: a
# tensor's own .dtype, not its buffer's typecode, says which one it is).
BY_TYPECODE = {"B": bool, "i": int32, "q": int64, "f": float32, "d": float64}
_ZERO = {d: array(d.typecode, [0]) for d in ALL}


def zeros_buffer(dt, n):
    """A fresh zero-filled buffer of n elements (repeating a 1-element array is the fastest way)."""
    return _ZERO[dt] * n


def computes_in_int64(dt):
    """uint8 and int32: arithmetic converts them to int64 and wraps the result back."""
    return dt.in_int64


def is_integer(dt):
    """uint8, int32, int64 (not bool, not floats)."""
    return not dt.is_floating_point and dt is not bool


def promote_types(a, b):
    """The dtype of `a (op) b`: the higher of the two in
    bool < uint8 < int32 < int64 < float32 < float64."""
    return a if a.rank >= b.rank else b


def result_type(a, b):
    """The dtype of `a (op) b` for two tensors, as PyTorch: a 0-d tensor against a tensor with
    dims counts like a number, widening it only into a higher category (bool < integer <
    float): uint8 + tensor(300) stays uint8, float32 * tensor(2.0, dtype=float64) stays float32,
    int32 + tensor(1.5, dtype=float64) is float64. Otherwise `promote_types`."""
    if (a.ndim == 0) == (b.ndim == 0):
        return promote_types(a.dtype, b.dtype)
    dim, zero = (a.dtype, b.dtype) if b.ndim == 0 else (b.dtype, a.dtype)
    if dim.is_floating_point:
        return dim
    if dim is bool or zero.is_floating_point:
        return promote_types(dim, zero)
    return dim


def scalar_result_type(t, s):
    """The dtype of `tensor (op) python_number`, as in PyTorch: the number does not widen a tensor
    of the same kind (float32 * 2.5 stays float32, uint8 + 1 stays uint8), but a float number
    makes an integer tensor float32, and an int number makes a bool tensor int64."""
    if isinstance(s, builtins_bool):
        return t
    if isinstance(s, builtins_int):
        return int64 if t is bool else t
    return t if t.is_floating_point else float32


def wrap(dt, v):
    """The Python int v as dt holds it after PyTorch's arithmetic cast: the low 8 / 32 / 64 bits
    (uint8: 300 -> 44, -1 -> 255; int32: 2**31 -> -2**31). Other dtypes: v unchanged."""
    if dt.is_floating_point or dt is bool:
        return v
    v &= (1 << dt.bits) - 1
    if dt.is_signed and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def checked(dt, v, op):
    """A Python number converted to dt for creating or filling a tensor, with PyTorch's range
    check: a value dt cannot hold raises RuntimeError naming the op. uint8 accepts -255..255 from
    an int (a negative one wraps: -1 -> 255) and 0..255 from a float; int32 accepts its own range;
    floats are truncated toward zero."""
    if dt.is_floating_point or dt is bool or dt is int64:
        return v
    if isinstance(v, builtins_bool):
        return builtins_int(v)
    hi = (1 << (dt.bits - 1)) - 1 if dt.is_signed else (1 << dt.bits) - 1
    if isinstance(v, builtins_int):
        lo = -hi - 1 if dt.is_signed else -hi
    else:
        lo = -hi - 1 if dt.is_signed else 0
    if not (lo <= v <= hi):   # NaN fails this too
        raise RuntimeError(f"{op}: value {v!r} cannot be converted to type {dt.name} without "
                           f"overflow")
    return wrap(dt, builtins_int(v))


def get(d):
    """Accept a dtype or its name ('float32', 'float', 'long', 'uint8', ...); a legacy tensor type
    such as tinyattn.IntTensor stands for its dtype (as in `x.type(torch.IntTensor)`)."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str) and d in _ALIASES:
        return _ALIASES[d]
    if isinstance(getattr(d, "dtype", None), dtype) and callable(d):
        return d.dtype
    raise TypeError(f"unknown dtype {d!r}; expected one of tinyattn.float32, float64, int64, "
                    f"int32, uint8, bool")


import builtins as _b  # noqa: E402

builtins_bool = _b.bool
builtins_int = _b.int
_ALIASES = dict(BY_NAME, float=float32, double=float64, long=int64, int=int32, byte=uint8)
