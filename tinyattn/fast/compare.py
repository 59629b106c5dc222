"""Comparisons, logic and selection, fast: kernels/compare.py's loops, called without numba's
type dispatch.

The loops are the reference's own (a comparison is one instruction; there is nothing to win
inside them). What this file adds is the cheap call: each function picks the machine code
compiled for its buffers' typecode (`jit.by_typecode`) instead of letting numba work out the
types of some twenty arguments on every call, which costs more than a small mask takes to fill.
"""
from ..kernels import compare as reference
from ..kernels.compare import (  # noqa: F401  (the op codes, read here as in the reference)
    AND, BITWISE_AND, BITWISE_OR, BITWISE_XOR, EQ, GE, GT, LE, LT, NE, OR, XOR)
from .jit import by_typecode, reuse

__all__ = ["compare", "bitwise", "where"]

reuse(reference)

_COMPARE = by_typecode(reference.compare, "i T i i i i i T i i i i i @B i i i i")
_BITWISE = by_typecode(reference.bitwise, "i T T T i")
_WHERE = by_typecode(reference.where, "@B i i i i i T i i i i i T i i i i i T i i i i")
_compare, _bitwise, _where = _COMPARE.entries(), _BITWISE.entries(), _WHERE.entries()


def compare(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (op) b as 0 / 1 bytes (a bool tensor), broadcast by zero strides."""
    _compare[a.typecode](op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out,
                         n0, n1, n2, n3)


def bitwise(op, a, b, out, n):
    """out[i] = a[i] & b[i], a[i] | b[i] or a[i] ^ b[i] (`op`) over n elements."""
    _bitwise[a.typecode](op, a, b, out, n)


def where(c, c_off, cs0, cs1, cs2, cs3, a, a_off, as0, as1, as2, as3,
          b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a where c else b (c a bool buffer), all three broadcast by zero strides."""
    _where[a.typecode](c, c_off, cs0, cs1, cs2, cs3, a, a_off, as0, as1, as2, as3,
                       b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3)
