"""Reductions over the middle axis of a contiguous (O, R, I) buffer.

x is seen as O blocks of R rows of I numbers: the element (o, r, i) is x[o*R*I + r*I + i], and
the reduction runs over r. Any reduction over a run of adjacent dimensions has this shape: for x
of shape (2, 3, 4, 5) summed over dims (1, 2), O = 2, R = 3*4, I = 5. The op layer makes the input
contiguous and reduces one run of adjacent dims per call, so these few loops serve `sum`, `mean`,
`max`, `argmax`, ... over any `dim`:

    sum_dim:          out[o, i] = sum_r x[o, r, i]
    max_dim_forward:  values[o, i] = max_r x[o, r, i],  indices[o, i] = the first r reaching it
    max_dim_backward: dx[o, indices[o, i], i] += g[o, i]   (only the chosen element gets a gradient)

When I == 1 (reducing the last axis) each output is one pass over a contiguous row; otherwise the
loop runs over rows of I contiguous values and adds each into the output row, which keeps memory
access contiguous.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
from . import kernel

__all__ = ["sum_dim", "max_dim_forward", "max_dim_backward", "sum_of_squares"]


@kernel
def sum_dim(x, out, O, R, I):
    """out[o, i] = sum_r x[o, r, i]."""
    if I == 1:
        for o in range(O):
            s = 0.0  # a float64 accumulator: float32 sums of long rows stay accurate
            base = o * R
            for r in range(R):
                s += x[base + r]
            out[o] = s
        return
    for o in range(O):
        ob = o * I
        for i in range(I):
            out[ob + i] = 0
        for r in range(R):
            xb = (o * R + r) * I
            for i in range(I):
                out[ob + i] += x[xb + i]


@kernel
def max_dim_forward(x, values, indices, O, R, I, want_min):
    """values[o, i] = max_r x[o, r, i] (min when `want_min`), indices[o, i] = its first argmax.

    NaN wins, as in PyTorch: once a NaN is seen it is the result."""
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            best = x[base]
            arg = 0
            for r in range(1, R):
                v = x[base + r * I]
                if best != best:  # already NaN
                    break
                if v != v or (v < best if want_min else v > best):
                    best = v
                    arg = r
            values[o * I + i] = best
            indices[o * I + i] = arg


@kernel
def max_dim_backward(g, indices, out, O, R, I):
    """out[o, indices[o, i], i] += g[o, i]: the gradient of `max(dim)` flows to the chosen element."""
    for o in range(O):
        for i in range(I):
            out[(o * R + indices[o * I + i]) * I + i] += g[o * I + i]


@kernel
def sum_of_squares(x, n):
    """sum_i x[i]**2 over a contiguous buffer, in float64 (gradient-norm clipping)."""
    s = 0.0
    for i in range(n):
        v = x[i] * 1.0  # float64: numba's float() would keep a float32 a float32
        s += v * v
    return s
