"""Comparisons, logic and selection, elementwise: a < b, a and b, a & b, `a where c else b`.

Operands are 4-d views into flat buffers, broadcast by zero strides, as in elementwise.py::

    element (i0, i1, i2, i3) of a is a[a_off + i0*as0 + i1*as1 + i2*as2 + i3*as3]

and the output is contiguous (n0, n1, n2, n3). Comparisons and logic write bools (bytes 0 / 1).
The op is an integer code; comparison codes count from 200, after elementwise.py's unary (0..)
and binary (100..) codes, so no two codes mean the same.
"""
from . import kernel

__all__ = ["compare", "bitwise", "where"]

EQ, NE, LT, LE, GT, GE, AND, OR, XOR = range(200, 209)   # logic: non-zero is True
BITWISE_AND, BITWISE_OR, BITWISE_XOR = range(209, 212)


@kernel
def _compare_value(op, a, b):
    """a (op) b, a bool."""
    if op == EQ:
        return a == b
    if op == NE:
        return a != b
    if op == LT:
        return a < b
    if op == LE:
        return a <= b
    if op == GT:
        return a > b
    if op == GE:
        return a >= b
    if op == AND:
        return (a != 0) and (b != 0)
    if op == OR:
        return (a != 0) or (b != 0)
    return (a != 0) != (b != 0)          # XOR


@kernel
def compare(op, a, a_off, as0, as1, as2, as3, b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a (op) b as 0 / 1 bytes (a bool tensor), broadcast by zero strides."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    out[o + i3] = 1 if _compare_value(op, a[pa + i3 * as3], b[pb + i3 * bs3]) else 0
                o += n3


@kernel
def bitwise(op, a, b, out, n):
    """out[i] = a[i] & b[i], a[i] | b[i] or a[i] ^ b[i] (`op`), bit by bit, on integer or bool
    buffers of n elements (the ops broadcast first)."""
    for i in range(n):
        if op == BITWISE_AND:
            out[i] = a[i] & b[i]
        elif op == BITWISE_OR:
            out[i] = a[i] | b[i]
        else:
            out[i] = a[i] ^ b[i]


@kernel
def where(c, c_off, cs0, cs1, cs2, cs3, a, a_off, as0, as1, as2, as3,
          b, b_off, bs0, bs1, bs2, bs3, out, n0, n1, n2, n3):
    """out = a where c else b (c a bool buffer), all three broadcast by zero strides."""
    o = 0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                pc = c_off + i0 * cs0 + i1 * cs1 + i2 * cs2
                pa = a_off + i0 * as0 + i1 * as1 + i2 * as2
                pb = b_off + i0 * bs0 + i1 * bs1 + i2 * bs2
                for i3 in range(n3):
                    out[o + i3] = a[pa + i3 * as3] if c[pc + i3 * cs3] else b[pb + i3 * bs3]
                o += n3
