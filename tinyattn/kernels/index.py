"""Integer indexing: bounds checks, row gathers and scatter-adds.

Every integer-index operation of the tensor layer (advanced indexing `x[idx]`, `x[rows, cols]`,
`embedding`, `index_select`, boolean masks) is reduced to "pick whole rows of a contiguous
(rows, row_len) matrix", so these kernels are all it needs. numba does not bounds-check, so
`wrap_indices` runs first and the caller raises IndexError before any gather touches memory.
"""
from . import kernel

__all__ = ["wrap_indices", "gather_rows", "scatter_add_rows", "nonzero_flat", "put"]


@kernel
def wrap_indices(idx, idx_off, idx_stride, n, size, out, allow_negative):
    """out[j] = idx[j] (+ size when negative and allowed). Returns the position of the first index
    outside [-size, size) (or [0, size)), or -1 when all are valid."""
    for j in range(n):
        v = idx[idx_off + j * idx_stride]
        if v < 0 and allow_negative:
            v += size
        if v < 0 or v >= size:
            return j
        out[j] = v
    return -1


@kernel
def gather_rows(src, rows, out, n, row_len):
    """out[j, :] = src[rows[j], :] for contiguous src (?, row_len) and out (n, row_len)."""
    for j in range(n):
        s = rows[j] * row_len
        o = j * row_len
        for k in range(row_len):
            out[o + k] = src[s + k]


@kernel
def scatter_add_rows(g, rows, out, n, row_len):
    """out[rows[j], :] += g[j, :]: the gradient of `gather_rows` (repeated rows add up)."""
    for j in range(n):
        s = rows[j] * row_len
        o = j * row_len
        for k in range(row_len):
            out[s + k] += g[o + k]


@kernel
def nonzero_flat(mask, n, out):
    """Write the positions j where mask[j] != 0 into out; return how many there were."""
    c = 0
    for j in range(n):
        if mask[j] != 0:
            out[c] = j
            c += 1
    return c


@kernel
def put(positions, values, out, n):
    """out[positions[j]] = values[j] (assignment through an index: x[idx] = v)."""
    for j in range(n):
        out[positions[j]] = values[j]
