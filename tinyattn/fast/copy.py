"""Copies, fast: kernels/copy.py's functions, with same-type copies done by rows.

A copy between buffers of one type whose rows are contiguous on both sides (`contiguous()` of a
slice, `cat`, a gradient written into a slice of zeros) copies each row as a slice indexed from 0,
a loop LLVM turns into vector moves; copies that convert by assignment are the reference loop.
Conversions and fills are the reference's own functions: their loops vectorise as they are.
"""
from ..kernels import copy as reference
from ..kernels.copy import (  # noqa: F401  (used as they are; the modes read here too)
    TO_BOOL, TO_INT32, TO_UINT8, convert_float, convert_int, fill, to_int)
from .buffers import as_array
from .jit import by_typecode, kernel, reuse

__all__ = ["copy", "convert_int", "convert_float", "to_int", "fill"]

reuse(reference)


@kernel
def _copy_same(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    X, O = as_array(x), as_array(out)
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                if xs3 == 1 and os3 == 1:
                    src = X[px:px + n3]
                    dst = O[po:po + n3]
                    for i3 in range(n3):
                        dst[i3] = src[i3]
                else:
                    for i3 in range(n3):
                        out[po + i3 * os3] = x[px + i3 * xs3]


_COPY_SAME = by_typecode(_copy_same, "T i i i i i T i i i i i i i i i")
_copy_same_entries = _COPY_SAME.entries()


def copy(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """out = x, view into view (converting by assignment when the buffers' types differ)."""
    typecode = x.typecode
    if typecode == out.typecode:
        _copy_same_entries[typecode](x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3,
                                     n0, n1, n2, n3)
    else:
        reference.copy(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3,
                       n0, n1, n2, n3)
