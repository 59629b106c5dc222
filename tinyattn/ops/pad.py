"""F.pad: a tensor grown (or cropped) at its edges, composed of indexing ops.

    constant    a new tensor filled with a value, the input written into its region (setitem)
    reflect, replicate, circular    each output position reads one input position (index_select)

The gradients are those of setitem (CopySlices) and index_select: each output position sends its
gradient back to the input position it read.
"""
from array import array

from .. import dtypes as _dt
from ..creation import full
from ..storage import _make
from ._launch import check_tensor
from .indexing import getitem, index_select, setitem

_int64 = _dt.int64


def pad(input, pad, mode="constant", value=None):  # noqa: A002 - PyTorch's argument names
    """F.pad: `pad` = (left, right) for the last dim, then (top, bottom) for the one before, ...

    mode='constant' (default): a new tensor filled with `value` (default 0) with input written
    into its region (the gradient flows back through setitem, CopySlices); a negative amount crops.
    mode='reflect' / 'replicate' / 'circular': each output position i along a padded dim of size
    n reads input position f(i), i in [-left, n + right):
        reflect     f(i) = -i for i < 0, 2(n-1) - i for i >= n  (mirror, the edge not repeated;
                    needs left, right < n)
        replicate   f(i) = min(max(i, 0), n - 1)                  (the edge repeated; needs n > 0)
        circular    f(i) = i mod n      (wrap around; needs left, right <= n; a negative amount
                    crops first and the rest wraps around what is left, as PyTorch)
    done with index_select, whose gradient adds each output's gradient into the input it read.
    As PyTorch, these modes pad the last 1, 2 or 3 dims of a (C, ...) or (N, C, ...) input:
    len(pad) = 2 for a 2-d or 3-d input, 4 for 3-d or 4-d, 6 for 4-d or 5-d; value must be None."""
    check_tensor("pad", input)
    if (not isinstance(pad, (tuple, list)) or len(pad) % 2 or len(pad) // 2 > input.ndim
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in pad)):
        raise ValueError(f"pad: pad must be a tuple of an even number of ints, at most "
                         f"{2 * input.ndim} for a {input.ndim}-d input, got {pad!r}")
    if mode == "constant":
        return _pad_constant(input, pad, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', "
                         f"got {mode!r}")
    if value is not None and value != 0:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in value argument")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of an input with 1 or 2 more dims "
            f"(len(pad) 2: 2-d or 3-d input, 4: 3-d or 4-d, 6: 4-d or 5-d); got len(pad) "
            f"{len(pad)} for a {input.ndim}-d input of shape {tuple(input.shape)}")
    first = 1 if input.ndim == k + 2 else 0   # the batch dim may be 0
    if any(n == 0 for n in input.shape[first:]):
        raise ValueError(f"pad: mode {mode!r} expects non-zero sizes apart from the batch "
                         f"dim, got input shape {tuple(input.shape)}")
    if input.numel() == 0:   # an empty batch: only the shape changes
        return _pad_constant(input, pad, 0)
    out = input
    for i in range(k):
        d = input.ndim - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], input.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise ValueError(f"pad: padding size should be less than the corresponding input "
                             f"dimension, but got padding {(lo, hi)} at dimension {d} of input "
                             f"shape {tuple(input.shape)}")
        if mode == "circular" and (lo > n - max(0, -hi) or hi > n - max(0, -lo)):
            raise ValueError(f"pad: circular padding {(lo, hi)} at dimension {d} of input shape "
                             f"{tuple(input.shape)} would wrap around more than once")
        if n + lo + hi < 1:
            raise ValueError(f"pad: mode {mode!r}: padding {(lo, hi)} leaves dimension {d} of "
                             f"size {n} empty (input shape {tuple(input.shape)})")
        if mode == "reflect":
            src = [-j if j < 0 else (2 * (n - 1) - j if j >= n else j) for j in range(-lo, n + hi)]
        elif mode == "replicate":
            src = [min(max(j, 0), n - 1) for j in range(-lo, n + hi)]
        else:   # as PyTorch: a negative amount first crops, then the rest wraps around
            c0, m = max(0, -lo), n - max(0, -lo) - max(0, -hi)
            src = [c0 + j % m for j in range(-max(0, lo), m + max(0, hi))]
        if src != list(range(n)):
            out = index_select(out, d, _make(array("q", src), (len(src),), _int64))
    return out if out is not input else input.clone()


def _pad_constant(input, pad, value):  # noqa: A002
    shape = list(input.shape)
    src = [slice(None)] * input.ndim
    dst = [slice(None)] * input.ndim
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[d]
        if n + lo + hi < 0:
            raise ValueError(f"pad: padding {(lo, hi)} makes dim {d} of size {n} negative")
        s0, s1 = max(0, -lo), max(max(0, -lo), n - max(0, -hi))
        src[d], dst[d] = slice(s0, s1), slice(max(0, lo), max(0, lo) + s1 - s0)
        shape[d] = n + lo + hi
    from_ = getitem(input, tuple(src))
    out = full(tuple(shape), 0 if value is None else value, dtype=input.dtype)
    if from_.numel():
        setitem(out, tuple(dst), from_)
    elif input.requires_grad:   # nothing of input is left: still in the graph (gradient 0), as
        out = out + from_.sum()  # PyTorch; the sum of no elements is exactly 0
    return out
