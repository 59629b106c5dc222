"""Copies between strided views, with or without a change of type, and fills.

Source and destination are both 4-d views into flat buffers::

    element (i0, i1, i2, i3) of x is x[x_off + i0*xs0 + i1*xs1 + i2*xs2 + i3*xs3]

(and likewise out with o_off, os0..os3), walked over the shape (n0, n1, n2, n3). Copies make
`contiguous()`, `to(dtype)`, `cat`, the write of a gradient into a slice of zeros, and every
in-place write into a view (`x[i] = v`, `fill_`, `zero_`).

A copy into a buffer of another type converts each element as the assignment does (int to
float, float32 to float64 and back). The conversions PyTorch defines its own way are
`convert_int` and `convert_float`, by `mode` (dtypes.py explains the narrow types): to bool
(any non-zero value is True), to uint8 (the low 8 bits: 300 -> 44, -1 -> 255) and to int32 (the
low 32 bits, signed); and `to_int`, floats to int64, rounded toward zero. The wrap-arounds are
written with masks, so they give the same bits compiled and as Python (where storing 300 into a
byte buffer raises OverflowError).
"""
from . import kernel

__all__ = ["copy", "convert_int", "convert_float", "to_int", "fill"]

TO_BOOL, TO_UINT8, TO_INT32 = range(3)


@kernel
def copy(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """out = x, view into view (converting by assignment when the buffers' types differ)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = x[px + i3 * xs3]


@kernel
def _int_converted(mode, v):
    """An integer (or bool) v as a bool, uint8 or int32 (`mode`)."""
    if mode == TO_BOOL:
        return 1 if v != 0 else 0
    if mode == TO_UINT8:
        return v & 0xFF
    w = v & 0xFFFFFFFF                   # TO_INT32
    return w - 4294967296 if w >= 2147483648 else w


@kernel
def _float_converted(mode, v):
    """A float v as a bool, uint8 or int32 (`mode`), as PyTorch converts on x86."""
    if mode == TO_BOOL:                  # any non-zero value (NaN too) is True
        return 1 if v != 0 else 0
    if mode == TO_UINT8:                 # through int64 (NaN, out of its range: -2^63), low byte
        if v != v or v >= 9.2233720368547758e18 or v < -9.2233720368547758e18:
            return 0
        return int(v) & 0xFF
    if v != v or v >= 2147483648.0 or v < -2147483648.0:
        return -2147483648               # TO_INT32: out of range and NaN give -2^31
    return int(v)


@kernel
def convert_int(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3,
                mode):
    """`copy` of an integer or bool view into a bool, uint8 or int32 view, each element
    converted by `mode` (TO_BOOL, TO_UINT8, TO_INT32)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = _int_converted(mode, x[px + i3 * xs3])


@kernel
def convert_float(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3,
                  mode):
    """`convert_int` for a float32 / float64 view."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = _float_converted(mode, x[px + i3 * xs3])


@kernel
def to_int(x, x_off, xs0, xs1, xs2, xs3, out, o_off, os0, os1, os2, os3, n0, n1, n2, n3):
    """`copy` of a float view into an int64 view, each element rounded toward zero. (A loop of
    its own, not a fourth mode of `convert_float`: the fast backend runs these loops as they
    are, and a fourth mode slows the other three: benchmarks/RESULTS.md, to_int.)"""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                px = x_off + i0 * xs0 + i1 * xs1 + i2 * xs2
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = int(x[px + i3 * xs3])


@kernel
def fill(out, o_off, os0, os1, os2, os3, value, n0, n1, n2, n3):
    """Write `value` into every element of a strided view (`fill_`, `zero_`, masked writes)."""
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                po = o_off + i0 * os0 + i1 * os1 + i2 * os2
                for i3 in range(n3):
                    out[po + i3 * os3] = value
