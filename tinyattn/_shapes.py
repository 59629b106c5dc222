"""Pure functions on shapes and strides (tuples of ints): broadcasting, dims, kernel layouts.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""


def contiguous_strides(shape):
    """Row-major element strides: the last dimension moves fastest."""
    strides = []
    s = 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return tuple(reversed(strides))


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def broadcast_shapes(op, *shapes):
    """NumPy/PyTorch broadcasting: align trailing dims; each pair must be equal or contain a 1."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            m = out[off + i]
            if n != m:
                if m == 1:
                    out[off + i] = n
                elif n != 1:
                    shown = " and ".join(str(tuple(x)) for x in shapes)
                    raise ValueError(
                        f"{op}: shapes {shown} cannot be broadcast together "
                        f"(dimension {i - len(s)}: {m} vs {n})")
    return tuple(out)


def broadcast_strides(shape, strides, out_shape):
    """Strides that read a tensor of `shape` as if it had `out_shape` (0 on broadcast dims)."""
    off = len(out_shape) - len(shape)
    res = [0] * off
    for n, st, m in zip(shape, strides, out_shape[off:]):
        res.append(st if n == m else 0)
    return tuple(res)


def normalize_dim(op, dim, ndim):
    """Turn a possibly negative dim into 0..ndim-1, or raise IndexError naming the op."""
    if not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
                         f"(expected {-n} <= dim < {n})")
    return dim + n if dim < 0 else dim


def normalize_dims(op, dim, ndim):
    """dim=None -> all dims; an int or a tuple -> a sorted tuple of distinct non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(sorted(normalize_dim(op, d, ndim) for d in dim))
    if ndim == 0:  # a 0-d tensor accepts dim 0 / -1 (as PyTorch) and has nothing to reduce
        return ()
    if len(set(dims)) != len(dims):
        raise ValueError(f"{op}: dim {tuple(dim)} names a dimension twice")
    return dims


def reduction_dims(op, dim, ndim):
    """normalize_dims for a reduction, which (as in PyTorch) takes tensors of at most 64 dims."""
    if ndim > 64:
        raise RuntimeError(f"{op}: only tensors with up to 64 dims are supported, got {ndim}")
    return normalize_dims(op, dim, ndim)


def kernel_layout(shape, *strides_list):
    """Merge and pad dimensions for the 4-d strided kernels.

    Adjacent dims i, i+1 merge when, in every operand, stepping once along i equals stepping
    shape[i+1] times along i+1; size-1 dims vanish. Returns (shape4, [strides4, ...]) when the
    result has at most 4 dims, else (merged_shape, [merged_strides, ...]) for the caller to loop."""
    if len(strides_list) == 2:
        return _layout_of_two(shape, *strides_list)
    dims = [i for i, n in enumerate(shape) if n != 1]
    mshape = []
    mstrides = [[] for _ in strides_list]
    for i in dims:
        n = shape[i]
        if mshape and all(ms[-1] == st[i] * n for ms, st in zip(mstrides, strides_list)):
            mshape[-1] *= n
            for ms, st in zip(mstrides, strides_list):
                ms[-1] = st[i]
            continue
        mshape.append(n)
        for ms, st in zip(mstrides, strides_list):
            ms.append(st[i])
    k = len(mshape)
    if k <= 4:
        pad = 4 - k
        return ((1,) * pad + tuple(mshape), [(0,) * pad + tuple(ms) for ms in mstrides])
    return tuple(mshape), [tuple(ms) for ms in mstrides]


def _layout_of_two(shape, sa, sb):
    """kernel_layout of two operands (a copy, a binary op's inputs), written out: it runs before
    most kernels of a training step, where the general loop was most of a small copy's time
    (measured: benchmarks/RESULTS.md, _shapes.py: _layout_of_two)."""
    ms, ma, mb = [], [], []
    for n, a, b in zip(shape, sa, sb):
        if n == 1:
            continue
        if ms and ma[-1] == a * n and mb[-1] == b * n:
            ms[-1] *= n
            ma[-1] = a
            mb[-1] = b
        else:
            ms.append(n)
            ma.append(a)
            mb.append(b)
    k = len(ms)
    if k <= 4:
        pad = (1, 1, 1, 1)[k:]
        zeros = (0, 0, 0, 0)[k:]
        return pad + tuple(ms), [zeros + tuple(ma), zeros + tuple(mb)]
    return tuple(ms), [tuple(ma), tuple(mb)]
