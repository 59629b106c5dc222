"""Scatter and unique: writes through a list of flat positions, and runs of equal values.

Every scatter-like op of ops/scatter.py (scatter, scatter_add, scatter_reduce, index_add,
index_fill) is reduced to one loop: "for each value j, combine values[j] into out[positions[j]]",
where `positions` are flat offsets into a packed output. The op layer computes (and
bounds-checks) the positions in Python first: numba does not bounds-check, so a bad index must
never reach this loop.

    mode ASSIGN  out[p] = v          (scatter, index_fill: the last write to a position wins)
    mode ADD     out[p] += v         (scatter_add, index_add, scatter_reduce 'sum' / 'mean')
    mode MUL     out[p] *= v         (scatter_reduce 'prod', scatter(reduce='multiply'))
    mode MAX     out[p] = max(out[p], v)   NaN wins, as PyTorch's amax
    mode MIN     out[p] = min(out[p], v)

`runs` finds the runs of equal neighbours in a flat buffer: unique_consecutive directly, and
unique after a sort.
"""
from . import kernel

__all__ = ["scatter_flat", "runs"]

ASSIGN, ADD, MUL, MAX, MIN = range(5)   # the modes of scatter_flat (the ops read them from here)


@kernel
def scatter_flat(positions, values, out, n, mode):
    """out[positions[j]] (op) values[j] for j < n, in order (see the module docstring)."""
    for j in range(n):
        p = positions[j]
        v = values[j]
        if mode == ASSIGN:
            out[p] = v
        elif mode == ADD:
            out[p] += v
        elif mode == MUL:
            out[p] *= v
        elif mode == MAX:
            o = out[p]
            if v > o or v != v:
                out[p] = v
        else:
            o = out[p]
            if v < o or v != v:
                out[p] = v


@kernel
def runs(x, n, first, group, counts):
    """Runs of equal neighbours in x[0:n]: first[r] = the value of run r, counts[r] its length,
    group[j] = the run element j belongs to. Returns the number of runs. (NaN equals nothing,
    so each NaN is a run of its own, as in PyTorch.)"""
    r = -1
    for j in range(n):
        if j == 0 or x[j] != x[j - 1]:
            r += 1
            first[r] = x[j]
            counts[r] = 0
        counts[r] += 1
        group[j] = r
    return r + 1
