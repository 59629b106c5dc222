"""The four dtypes of tinyattn and PyTorch's promotion rule between them.

Each dtype names the `array.array` typecode that stores it. float32 is the default float type (as in
PyTorch); float64 exists mostly for gradient checks; int64 holds indices and class targets; bool
holds masks (one byte per element, 0 or 1).
"""
from array import array


class dtype:
    __slots__ = ("name", "typecode", "itemsize", "is_floating_point", "rank")

    def __init__(self, name, typecode, itemsize, is_floating_point, rank):
        self.name = name
        self.typecode = typecode
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.rank = rank  # promotion order: bool < int64 < float32 < float64

    def __repr__(self):
        return "tinyattn." + self.name

    def __reduce__(self):  # dtypes are singletons, also through copy/pickle
        return self.name


bool = dtype("bool", "B", 1, False, 0)  # noqa: A001 -- the name users expect: tinyattn.bool
int64 = dtype("int64", "q", 8, False, 1)
float32 = dtype("float32", "f", 4, True, 2)
float64 = dtype("float64", "d", 8, True, 3)

long = int64
float = float32  # noqa: A001
double = float64

ALL = (bool, int64, float32, float64)
BY_NAME = {d.name: d for d in ALL}
BY_TYPECODE = {d.typecode: d for d in ALL}
_ZERO = {d: array(d.typecode, [0]) for d in ALL}


def zeros_buffer(dt, n):
    """A fresh zero-filled buffer of n elements (repeating a 1-element array is the fastest way)."""
    return _ZERO[dt] * n


def promote_types(a, b):
    """The dtype of `a (op) b`: the higher of the two in bool < int64 < float32 < float64."""
    return a if a.rank >= b.rank else b


def scalar_result_type(t, s):
    """The dtype of `tensor (op) python_number`, as in PyTorch: the number does not widen a tensor
    of the same kind (float32 * 2.5 stays float32), but a float number makes an integer tensor float."""
    if isinstance(s, builtins_bool):
        return t
    if isinstance(s, int):
        return int64 if t is bool else t
    return t if t.is_floating_point else float32


def get(d):
    """Accept a dtype or its name ('float32', 'float', 'long', ...)."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str) and d in _ALIASES:
        return _ALIASES[d]
    raise TypeError(f"unknown dtype {d!r}; expected one of tinyattn.float32, float64, int64, bool")


import builtins as _b  # noqa: E402

builtins_bool = _b.bool
_ALIASES = dict(BY_NAME, float=float32, double=float64, long=int64)
