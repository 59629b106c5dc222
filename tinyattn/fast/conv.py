"""Convolution, unfold / fold and pooling, fast: kernels/conv.py's ten functions.

The equations and the layouts are those of kernels/conv.py. What is different here:

- Unfold and fold (`_im2col`, `_col2im`) work out, once per (c, i, j), which output columns read
  inside the image (`_inside`), so that the inner loop is a branch-free strided copy (a
  contiguous one at stride 1), and zero only the padding columns; the reference tests every read
  against the image's bounds, as the equation reads.
- A convolution is unfold followed by a matrix product per group, made by the matmul kernel
  (matmul.py): no multiply loop of its own. It works one image at a time: the image's columns go
  to a scratch buffer that stays in the L2 cache, the matmul kernel runs on them there, and the
  images are shared among the cores (conv2d_forward / conv2d_backward). Unfolding the whole batch
  first would write and re-read megabytes through memory, and keep them for the backward
  (benchmarks/RESULTS.md, fast/conv.py: one image at a time).
- Max pooling scans the windows that lie inside the image without bounds tests
  (`_max_pool2d_forward`). The rest of pooling is the reference's loops (the window loop is the
  whole computation), called through their machine code per typecode (jit.by_typecode).

Chapter 8 of the tour (docs/08-visual-attention.md) walks through this file.
"""
import array

from . import threads
from ..kernels import conv as reference
from .buffers import as_array, scratch
from .jit import by_typecode, inline, kernel
from .matmul import _bmm_blocked, _scratch

__all__ = ["im2col", "col2im", "conv2d_forward", "conv2d_backward", "max_pool2d_forward",
           "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
           "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward"]


@inline
def _inside(o_count, stride, pad, offset, size):
    """The range [lo, hi) of output positions o whose input position o*stride - pad + offset lies
    in [0, size): worked out once, so the loops over o need no bounds test."""
    lo = 0
    first = offset - pad
    if first < 0:
        lo = (-first + stride - 1) // stride
    hi = 0
    if size - 1 - first >= 0:
        hi = (size - 1 - first) // stride + 1
    if hi > o_count:
        hi = o_count
    if lo > hi:
        lo = hi
    return lo, hi


@kernel
def _im2col(x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """cols (N, C*KH*KW, OH*OW) from x (N, C, H, W), as kernels/conv.py's im2col.
    Each (oh) run of OW outputs is a slice, written as zeros | a strided copy | zeros."""
    X, COLS = as_array(x), as_array(cols)
    L = OH * OW
    for n in range(N):
        for c in range(C):
            plane = X[(n * C + c) * H * W:(n * C + c + 1) * H * W]
            for i in range(KH):
                h_lo, h_hi = _inside(OH, SH, PH, i * DH, H)
                for j in range(KW):
                    w_lo, w_hi = _inside(OW, SW, PW, j * DW, W)
                    base = n * NS + ((c * KH + i) * KW + j) * RS
                    rows = COLS[base:base + L]
                    for k in range(h_lo * OW):
                        rows[k] = 0.0
                    for k in range(h_hi * OW, L):
                        rows[k] = 0.0
                    if SH == 1 and SW == 1 and OW == W and h_lo < h_hi:
                        # source = destination + a constant: one contiguous copy of the whole
                        # block (the edge columns first read a neighbouring row's pixels, then
                        # are zeroed), instead of one short copy per output row
                        delta = (i * DH - PH) * W + j * DW - PW
                        lo = h_lo * OW + w_lo
                        hi = (h_hi - 1) * OW + w_hi
                        if lo < hi:
                            dst = rows[lo:hi]
                            src = plane[lo + delta:hi + delta]
                            for k in range(hi - lo):
                                dst[k] = src[k]
                        for oh in range(h_lo, h_hi):
                            for ow in range(w_lo):
                                rows[oh * OW + ow] = 0.0
                            for ow in range(w_hi, OW):
                                rows[oh * OW + ow] = 0.0
                        continue
                    for oh in range(h_lo, h_hi):
                        out = rows[oh * OW:(oh + 1) * OW]
                        start = (oh * SH - PH + i * DH) * W - PW + j * DW
                        for ow in range(w_lo):
                            out[ow] = 0.0
                        for ow in range(w_hi, OW):
                            out[ow] = 0.0
                        if SW == 1:
                            src = plane[start + w_lo:start + w_hi]
                            for ow in range(w_hi - w_lo):
                                out[w_lo + ow] = src[ow]
                        else:
                            for ow in range(w_lo, w_hi):
                                out[ow] = plane[start + ow * SW]


@kernel
def _col2im(cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """x (N, C, H, W, zeroed by the caller) += the columns, as kernels/conv.py's col2im."""
    X, COLS = as_array(x), as_array(cols)
    for n in range(N):
        for c in range(C):
            plane = X[(n * C + c) * H * W:(n * C + c + 1) * H * W]
            for i in range(KH):
                h_lo, h_hi = _inside(OH, SH, PH, i * DH, H)
                for j in range(KW):
                    w_lo, w_hi = _inside(OW, SW, PW, j * DW, W)
                    base = n * NS + ((c * KH + i) * KW + j) * RS
                    for oh in range(h_lo, h_hi):
                        src = COLS[base + oh * OW + w_lo:base + oh * OW + w_hi]
                        start = (oh * SH - PH + i * DH) * W - PW + j * DW
                        if SW == 1:
                            dst = plane[start + w_lo:start + w_hi]
                            for ow in range(w_hi - w_lo):
                                dst[ow] += src[ow]
                        else:
                            for ow in range(w_hi - w_lo):
                                plane[start + (w_lo + ow) * SW] += src[ow]


# --------------------------------------------------------------------------- convolution


@kernel
def _conv2d_forward_images(x, w, bias, has_bias, out, cols, mm, N, C, H, W, O, G, KH, KW, SH, SW,
                           PH, PW, DH, DW, OH, OW, n0, n1):
    """Images n0 <= n < n1 of conv2d_forward's out, each as
    cols = unfold(x[n]) (K, L) then out[n, group] = w[group] (O/G, K/G) @ cols[group] (K/G, L).

    The matmul kernel's batch index t = n*G + group lands its (O/G, L) result at
    out[(t*O/G)*L:], which is exactly out[n, group*O/G:]: no copy, no transpose."""
    X, OUT, BIAS = as_array(x), as_array(out), as_array(bias)
    L, K, CHW = OH * OW, C * KH * KW, C * H * W
    Kg, Og = K // G, O // G
    for n in range(n0, n1):
        _im2col(X[n * CHW:(n + 1) * CHW], cols, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW,
                OH, OW, K * L, L)
        _bmm_blocked(w, 0, 0, Og * Kg, Kg, 1,            # a = w[group]: (Og, Kg), any image
                     cols, 0, 0, Kg * L, L, 1,           # b = cols[group]: (Kg, L)
                     out, G, Og, L, Kg, Og, L, n * G, (n + 1) * G, mm)
        if has_bias:
            for o in range(O):
                row = OUT[(n * O + o) * L:(n * O + o + 1) * L]
                bo = BIAS[o]
                for q in range(L):
                    row[q] += bo


@kernel
def _conv2d_backward_images(x, w, g, dx, part, p0, cols, dcols, tmp, mm, need_x, need_w, need_b,
                            N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, n0, n1):
    """Images n0 <= n < n1 of the backward, per image and group (g[n] is (O, L)):

        dcols (K/G, L)   = w[group]^T @ g[n, group]      then dx[n] = fold(dcols)
        dw^T  (K/G, O/G) += unfold(x[n])[group] @ g[n, group]^T
        db               += g[n] summed over L

    dx is written; dw^T (G, K/G, O/G) and db (O,) are added into part[p0:], this thread's
    partial sums (the caller adds the threads' parts and transposes dw^T)."""
    X, DX, GR = as_array(x), as_array(dx), as_array(g)
    TMP = as_array(tmp)
    L, K, CHW = OH * OW, C * KH * KW, C * H * W
    Kg, Og = K // G, O // G
    PART = as_array(part)[p0:p0 + K * Og + O]
    for n in range(n0, n1):
        if need_x:
            _bmm_blocked(w, 0, 0, Og * Kg, 1, Kg,            # a = w[group]^T: (Kg, Og)
                         g, n * O * L, 0, Og * L, L, 1,      # b = g[n, group]: (Og, L)
                         dcols, G, Kg, L, Og, Kg, L, 0, G, mm)
            plane = DX[n * CHW:(n + 1) * CHW]
            for q in range(CHW):
                plane[q] = 0.0
            _col2im(dcols, plane, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, K * L, L)
        if need_w:
            _im2col(X[n * CHW:(n + 1) * CHW], cols, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW,
                    OH, OW, K * L, L)
            _bmm_blocked(cols, 0, 0, Kg * L, L, 1,           # a = cols[group]: (Kg, L)
                         g, n * O * L, 0, Og * L, 1, L,      # b = g[n, group]^T: (L, Og)
                         tmp, G, Kg, Og, L, Kg, Og, 0, G, mm)
            for q in range(K * Og):
                PART[q] += TMP[q]
        if need_b:
            for o in range(O):
                row = GR[(n * O + o) * L:(n * O + o + 1) * L]
                s = 0.0
                for q in range(L):
                    s += row[q]
                PART[K * Og + o] += s


@kernel
def _conv2d_sum_parts(part, P, dw, db, need_w, need_b, O, G, Kg):
    """dw[group, o, k] = sum over the P threads' parts of dw^T[group, k, o]; db likewise."""
    Og = O // G
    size = G * Kg * Og + O
    if need_w:
        for gr in range(G):
            for o in range(Og):
                for k in range(Kg):
                    s = 0.0
                    for p in range(P):
                        s += part[p * size + (gr * Kg + k) * Og + o]
                    dw[(gr * Og + o) * Kg + k] = s
    if need_b:
        for o in range(O):
            s = 0.0
            for p in range(P):
                s += part[p * size + G * Kg * Og + o]
            db[o] = s


def conv2d_forward(x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW,
                   OH, OW):
    """out (N, O, OH, OW) as kernels/conv.py's conv2d_forward, the images shared among the cores."""
    typecode = x.typecode
    kern = _FORWARD_IMAGES[typecode]
    size = C * KH * KW * OH * OW

    def run(n0, n1):    # (each thread with its own scratch buffers)
        kern(x, w, bias, has_bias, out, scratch("conv cols", typecode, size), _scratch(typecode),
             N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, n0, n1)

    threads.parallel_for(run, N)


def conv2d_backward(x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O, G, KH, KW, SH,
                    SW, PH, PW, DH, DW, OH, OW):
    """The gradients of kernels/conv.py's conv2d_backward, the images shared among the cores; each
    core sums its own dw and db, and the parts are added at the end (in block order:
    deterministic)."""
    typecode = x.typecode
    kern = _BACKWARD_IMAGES[typecode]
    K, L = C * KH * KW, OH * OW
    Kg, Og = K // G, O // G
    blocks = threads.split(N, threads.num_threads())
    index = {start: p for p, (start, _) in enumerate(blocks)}
    size = K * Og + O
    part = array.array(typecode, bytes(len(blocks) * size * array.array(typecode).itemsize))

    def run(n0, n1):
        kern(x, w, g, dx, part, index[n0] * size, scratch("conv cols", typecode, K * L),
             scratch("conv dcols", typecode, K * L), scratch("conv dw", typecode, K * Og),
             _scratch(typecode), need_x, need_w, need_b,
             N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, n0, n1)

    threads.parallel_for(run, N)
    if need_w or need_b:
        _SUM_PARTS[typecode](part, len(blocks), dw, db, need_w, need_b, O, G, Kg)


# --------------------------------------------------------------------------- pooling


@kernel
def _max_pool2d_forward(x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """kernels/conv.py's max_pool2d_forward, where every window that lies inside the image (all
    of them without padding) is scanned with no bounds tests; windows over the padding take the
    checked loop."""
    X = as_array(x)
    for p in range(P):
        plane = X[p * H * W:(p + 1) * H * W]
        for oh in range(OH):
            h0 = oh * SH - PH
            for ow in range(OW):
                w0 = ow * SW - PW
                o = (p * OH + oh) * OW + ow
                inside = (h0 >= 0 and w0 >= 0 and h0 + (KH - 1) * DH < H
                          and w0 + (KW - 1) * DW < W)
                if inside and KH == 2 and KW == 2 and DH == 1 and DW == 1:
                    # MaxPool2d(2), the common case, unrolled: half the time of the loops below
                    # (benchmarks/RESULTS.md, fast/conv.py: _max_pool2d_forward)
                    q0 = h0 * W + w0
                    a, b, c, d = plane[q0], plane[q0 + 1], plane[q0 + W], plane[q0 + W + 1]
                    if a == a and b == b and c == c and d == d:
                        best, bv = q0, a
                        best, bv = (q0 + 1, b) if b > bv else (best, bv)
                        best, bv = (q0 + W, c) if c > bv else (best, bv)
                        best, bv = (q0 + W + 1, d) if d > bv else (best, bv)
                        out[o] = bv
                        index[o] = best
                        continue
                if inside:
                    best = h0 * W + w0
                    bv = plane[best]
                    nans = 0
                    for i in range(KH):
                        row = (h0 + i * DH) * W + w0
                        for j in range(KW):
                            v = plane[row + j * DW]
                            # NaNs are only counted here: testing for them in the comparison
                            # makes the branch unpredictable, and the loop many times slower
                            nans += v != v
                            gt = v > bv     # selects, not a branch: random data mispredicts
                            best = row + j * DW if gt else best
                            bv = v if gt else bv
                    if nans:    # rare: the window's first NaN is its maximum, as in PyTorch
                        for i in range(KH):
                            row = (h0 + i * DH) * W + w0
                            for j in range(KW):
                                v = plane[row + j * DW]
                                if v != v and bv == bv:
                                    best = row + j * DW
                                    bv = v
                    out[o] = bv
                    index[o] = best
                    continue
                best = -1
                bv = 0.0
                for i in range(KH):
                    h = h0 + i * DH
                    if h < 0 or h >= H:
                        continue
                    for j in range(KW):
                        w = w0 + j * DW
                        if w < 0 or w >= W:
                            continue
                        v = plane[h * W + w]
                        if best < 0 or v > bv or (v != v and bv == bv):
                            best = h * W + w
                            bv = v
                out[o] = bv
                index[o] = best


# --------------------------------------------------------------------------- the interface
# Each kernel's machine code per typecode (jit.by_typecode): the calls skip numba's dispatch.

_COLS = "T T i i i i i i i i i i i i i i i i"
_IM2COL = by_typecode(_im2col, _COLS)
_COL2IM = by_typecode(_col2im, _COLS)
_GEO = " i" * 16     # N C H W O G KH KW SH SW PH PW DH DW OH OW
_FORWARD_IMAGES = by_typecode(_conv2d_forward_images, "T T T b T T T" + _GEO + " i i")
_BACKWARD_IMAGES = by_typecode(_conv2d_backward_images,
                               "T T T T T i T T T T b b b" + _GEO + " i i")
_SUM_PARTS = by_typecode(_conv2d_sum_parts, "T i T T b b i i i")
_MAX_POOL_FORWARD = by_typecode(_max_pool2d_forward, "T T @q i i i i i i i i i i i i i")
_MAX_POOL_BACKWARD = by_typecode(reference.max_pool2d_backward, "T @q T i i i")
_AVG_POOL_FORWARD = by_typecode(reference.avg_pool2d_forward, "T T i i i i i i i i i i i b i")
_AVG_POOL_BACKWARD = by_typecode(reference.avg_pool2d_backward, "T T i i i i i i i i i i i b i")
_ADAPTIVE_FORWARD = by_typecode(reference.adaptive_avg_pool2d_forward, "T T i i i i i")
_ADAPTIVE_BACKWARD = by_typecode(reference.adaptive_avg_pool2d_backward, "T T i i i i i")


def im2col(x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """cols (N, C*KH*KW, OH*OW) from x (N, C, H, W): the window each output position sees."""
    _IM2COL[x.typecode](x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS)


def col2im(cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """x (N, C, H, W, zeroed by the caller) += every column entry, at the pixel it was read from."""
    _COL2IM[x.typecode](cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS)


def max_pool2d_forward(x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """out, index (P, OH, OW): each window's largest pixel and where it was."""
    _MAX_POOL_FORWARD[x.typecode](x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW)


def max_pool2d_backward(g, index, dx, P, HW, L):
    """dx (P, HW, zeroed by the caller) += each window's gradient, at the pixel that won it."""
    _MAX_POOL_BACKWARD[g.typecode](g, index, dx, P, HW, L)


def avg_pool2d_forward(x, out, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad,
                       divisor):
    """out (P, OH, OW): each window's sum / its divisor (kernels/conv.py)."""
    _AVG_POOL_FORWARD[x.typecode](x, out, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW,
                                  count_include_pad, divisor)


def avg_pool2d_backward(g, dx, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad,
                        divisor):
    """dx (zeroed by the caller) += g / the divisor on every pixel of each window."""
    _AVG_POOL_BACKWARD[g.typecode](g, dx, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW,
                                   count_include_pad, divisor)


def adaptive_avg_pool2d_forward(x, out, P, H, W, OH, OW):
    """out (P, OH, OW): the mean of each of the OH x OW windows that cover the image."""
    _ADAPTIVE_FORWARD[x.typecode](x, out, P, H, W, OH, OW)


def adaptive_avg_pool2d_backward(g, dx, P, H, W, OH, OW):
    """dx (zeroed by the caller) += g / the window's size, on every pixel of each window."""
    _ADAPTIVE_BACKWARD[g.typecode](g, dx, P, H, W, OH, OW)
