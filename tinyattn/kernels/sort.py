"""Sorting rows, for sort / argsort / topk (ops/sort.py), and running sums, for cumsum.

    argsort_rows   idx[r, :] = the positions of row r of x in sorted order: stable (equal values
                   keep their order), NaN counted larger than every number (PyTorch's order)
    cumsum_rows    y[r, j] = x[r, 0] + ... + x[r, j]

A stable merge sort: runs of width 1, 2, 4, ... merged from `idx` into `tmp` and back, each merge
taking from the left run while its value is not larger (that keeps equal values in order).
Descending order compares the other way round, NaN then first. O(n log n) per row, which matters
on the 50,000-token rows of a language model's vocabulary (an insertion sort would be O(n^2)).

Both kernels see x as `rows` contiguous rows of n values: the element (r, j) is x[r*n + j].
"""
from . import kernel

__all__ = ["argsort_rows", "cumsum_rows"]


@kernel
def _before(a, b, descending):
    """Does value a go strictly before value b? NaN is the largest value."""
    if descending:
        if a != a:
            return b == b
        return b == b and a > b
    if b != b:
        return a == a
    return a == a and a < b


@kernel
def argsort_rows(x, rows, n, idx, tmp, descending):
    """idx[r, :] = the positions j of row r in sorted order; tmp is scratch of idx's size."""
    for r in range(rows):
        base = r * n
        for j in range(n):
            idx[base + j] = j
        width = 1
        src_is_idx = True
        while width < n:
            for lo in range(0, n, 2 * width):
                mid = min(lo + width, n)
                hi = min(lo + 2 * width, n)
                i, j, k = lo, mid, lo
                while k < hi:
                    if src_is_idx:
                        take_left = j >= hi or (i < mid and not _before(
                            x[base + idx[base + j]], x[base + idx[base + i]], descending))
                        if take_left:
                            tmp[base + k] = idx[base + i]
                            i += 1
                        else:
                            tmp[base + k] = idx[base + j]
                            j += 1
                    else:
                        take_left = j >= hi or (i < mid and not _before(
                            x[base + tmp[base + j]], x[base + tmp[base + i]], descending))
                        if take_left:
                            idx[base + k] = tmp[base + i]
                            i += 1
                        else:
                            idx[base + k] = tmp[base + j]
                            j += 1
                    k += 1
            src_is_idx = not src_is_idx
            width *= 2
        if not src_is_idx:
            for j in range(n):
                idx[base + j] = tmp[base + j]


@kernel
def cumsum_rows(x, rows, n, out):
    """out[r, j] = x[r, 0] + ... + x[r, j], in x's type (x[.] * 0 starts the sum as 0 of it)."""
    for r in range(rows):
        acc = x[r * n] * 0
        for j in range(n):
            acc += x[r * n + j]
            out[r * n + j] = acc
