"""Convolution and pooling over (N, C, H, W) images stored as flat, packed buffers.

A 2-d convolution is a matrix product in disguise. Unfold ("im2col") copies, for every output
position (oh, ow), the KH x KW patch of every input channel that the kernel sees into one column:

    cols[n, (c*KH + i)*KW + j, oh*OW + ow] = x[n, c, oh*SH - PH + i*DH, ow*SW - PW + j*DW]
                                                                  (0 where that falls in the padding)

(the kernels take the columns' layout as two strides: entry (n, row, l) sits at n*NS + row*RS + l,
so F.unfold's (N, K, L) has NS = K*L, RS = L, and K x L columns of all images side by side,
(K, N*L), have NS = L, RS = N*L)

and then   out[n, o, :] = weight[o, :] @ cols[n] + bias[o]        (weight viewed as (O, C*KH*KW)).

Fold ("col2im") is unfold's transpose: it adds every column entry back to the pixel it came from,

    x[n, c, h, w] += cols[n, (c*KH + i)*KW + j, oh*OW + ow]       for every (i, j, oh, ow) reading it

so the gradient of unfold is fold of the gradient, and the other way round. The matrix product
is the library's matmul (kernels/matmul.py): convolution's fast tier needs no multiply loop of
its own. It unfolds one image at a time into a scratch that stays in the L2 cache and runs the
matmul kernel on it there (conv2d_forward / conv2d_backward, the images shared among the cores);
its reference tier is the definition itself, the sum over (c, i, j) as seven plain loops.

Pooling slides the same window but keeps one number per window and channel: the largest (max
pooling remembers where it was, and its backward sends the gradient there) or the mean.

Tiers: the reference loops visit (n, c, i, j, oh, ow) and test every read against the image
bounds, as the equation reads. The fast unfold / fold work out, once per (c, i, j), which output
columns read inside the image, so the inner loop is a branch-free strided copy (a contiguous one
at stride 1), and zero only the padding columns. The fast max pooling scans windows that lie
inside the image without bounds tests; the rest of pooling has one version (the window loop is the
whole computation; it is registered for both tiers).

Chapter 8 of the tour (docs/08-visual-attention.md) walks through this file.
"""
import array
import threading

from . import threads
from .buffers import as_array
from .jit import by_typecode, inline, kernel
from .matmul import _bmm_blocked
from .matmul import _scratch as _mm_scratch
from .tiers import register


@kernel
def im2col_reference(x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """cols (N, C*KH*KW, OH*OW) from x (N, C, H, W): the patch each output position sees."""
    for n in range(N):
        for c in range(C):
            for i in range(KH):
                for j in range(KW):
                    row = (c * KH + i) * KW + j
                    for oh in range(OH):
                        for ow in range(OW):
                            h = oh * SH - PH + i * DH
                            w = ow * SW - PW + j * DW
                            v = 0.0
                            if 0 <= h < H and 0 <= w < W:
                                v = x[((n * C + c) * H + h) * W + w]
                            cols[n * NS + row * RS + oh * OW + ow] = v


@kernel
def col2im_reference(cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """x (N, C, H, W, zeroed by the caller) += every column entry, at the pixel it was read from."""
    for n in range(N):
        for c in range(C):
            for i in range(KH):
                for j in range(KW):
                    row = (c * KH + i) * KW + j
                    for oh in range(OH):
                        for ow in range(OW):
                            h = oh * SH - PH + i * DH
                            w = ow * SW - PW + j * DW
                            if 0 <= h < H and 0 <= w < W:
                                x[((n * C + c) * H + h) * W + w] += cols[n * NS + row * RS
                                                                         + oh * OW + ow]


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
def im2col(x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """cols (N, C*KH*KW, OH*OW) from x (N, C, H, W); same result as `im2col_reference`.
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
def col2im(cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """x (N, C, H, W, zeroed by the caller) += the columns; same result as `col2im_reference`."""
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
#
# conv2d's interface: conv2d_forward / conv2d_backward over whole batches. The reference tier is
# the definition as plain loops; the fast tier works one image at a time: unfold that image into
# a (C*KH*KW, OH*OW) scratch that stays in L2, run the matmul kernel on it, and go on. Unfolding
# the whole batch first (one (K, N*L) matrix, what ops/conv.py did before) wrote and re-read
# megabytes through memory and kept them for the backward: 1.6-2.3x slower on the benchmark's
# batches (benchmarks/run.py --only conv, 2-core AMD EPYC: 26 / 58 / 82 against 59 / 133 / 127
# GFLOP/s, forward + backward).


@kernel
def conv2d_forward_reference(x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW, PH, PW,
                             DH, DW, OH, OW):
    """out (N, O, OH, OW) from x (N, C, H, W), w (O, C/G, KH, KW), bias (O,):

        out[n, o, oh, ow] = bias[o] + sum over c < C/G, i < KH, j < KW of
                            w[o, c, i, j] * x[n, g*C/G + c, oh*SH - PH + i*DH, ow*SW - PW + j*DW]

    with g = o // (O/G) the group of output channel o, and x = 0 in the padding."""
    Cg, Og = C // G, O // G
    for n in range(N):
        for o in range(O):
            g = o // Og
            for oh in range(OH):
                for ow in range(OW):
                    s = 0.0
                    for c in range(Cg):
                        for i in range(KH):
                            for j in range(KW):
                                h = oh * SH - PH + i * DH
                                v = ow * SW - PW + j * DW
                                if 0 <= h < H and 0 <= v < W:
                                    s += (w[((o * Cg + c) * KH + i) * KW + j]
                                          * x[((n * C + g * Cg + c) * H + h) * W + v])
                    if has_bias:
                        s += bias[o]
                    out[((n * O + o) * OH + oh) * OW + ow] = s


@kernel
def conv2d_backward_reference(x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O, G,
                              KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """The forward's sum read backwards: every term w * x that made out[n, o, oh, ow] sends
    g[n, o, oh, ow] times its other factor back,

        dx[n, g*C/G + c, h, v] += w[o, c, i, j] * g[n, o, oh, ow]
        dw[o, c, i, j]         += x[n, g*C/G + c, h, v] * g[n, o, oh, ow]
        db[o]                  += g[n, o, oh, ow]

    (h, v the pixel the term read). Only the outputs asked for are written (overwritten)."""
    Cg, Og = C // G, O // G
    if need_x:
        for q in range(N * C * H * W):
            dx[q] = 0.0
    if need_w:
        for q in range(O * Cg * KH * KW):
            dw[q] = 0.0
    if need_b:
        for o in range(O):
            db[o] = 0.0
    for n in range(N):
        for o in range(O):
            gr = o // Og
            for oh in range(OH):
                for ow in range(OW):
                    gv = g[((n * O + o) * OH + oh) * OW + ow]
                    if need_b:
                        db[o] += gv
                    for c in range(Cg):
                        for i in range(KH):
                            for j in range(KW):
                                h = oh * SH - PH + i * DH
                                v = ow * SW - PW + j * DW
                                if 0 <= h < H and 0 <= v < W:
                                    wi = ((o * Cg + c) * KH + i) * KW + j
                                    xi = ((n * C + gr * Cg + c) * H + h) * W + v
                                    if need_x:
                                        dx[xi] += w[wi] * gv
                                    if need_w:
                                        dw[wi] += x[xi] * gv


@kernel
def _conv2d_forward_images(x, w, bias, has_bias, out, cols, mm, N, C, H, W, O, G, KH, KW, SH, SW,
                           PH, PW, DH, DW, OH, OW, n0, n1):
    """Images n0 <= n < n1 of `conv2d_forward_reference`'s out, each as
    cols = unfold(x[n]) (K, L) then out[n, group] = w[group] (O/G, K/G) @ cols[group] (K/G, L).

    The matmul kernel's batch index t = n*G + group lands its (O/G, L) result at
    out[(t*O/G)*L:], which is exactly out[n, group*O/G:]: no copy, no transpose."""
    X, OUT, BIAS = as_array(x), as_array(out), as_array(bias)
    L, K, CHW = OH * OW, C * KH * KW, C * H * W
    Kg, Og = K // G, O // G
    for n in range(n0, n1):
        im2col(X[n * CHW:(n + 1) * CHW], cols, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW,
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
            col2im(dcols, plane, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, K * L, L)
        if need_w:
            im2col(X[n * CHW:(n + 1) * CHW], cols, 1, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW,
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


_images = threading.local()


def _image_scratch(typecode, n, which):
    """This thread's scratch `which` (0: cols, 1: dcols, 2: dw^T of one image), >= n elements:
    kept between calls, so a training step allocates nothing."""
    bufs = getattr(_images, typecode, None)
    if bufs is None:
        bufs = [array.array(typecode) for _ in range(3)]
        setattr(_images, typecode, bufs)
    if len(bufs[which]) < n:
        bufs[which] = array.array(typecode, bytes(n * bufs[which].itemsize))
    return bufs[which]


def conv2d_forward(x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW,
                   OH, OW):
    """`conv2d_forward_reference`'s out, the images shared among the cores."""
    typecode = x.typecode
    kern = _FORWARD_IMAGES[typecode]
    size = C * KH * KW * OH * OW

    def run(n0, n1):
        kern(x, w, bias, has_bias, out, _image_scratch(typecode, size, 0), _mm_scratch(typecode),
             N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, n0, n1)

    threads.parallel_for(run, N)


def conv2d_backward(x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O, G, KH, KW, SH,
                    SW, PH, PW, DH, DW, OH, OW):
    """`conv2d_backward_reference`'s outputs, the images shared among the cores; each core sums
    its own dw and db, and the parts are added at the end (in block order: deterministic)."""
    typecode = x.typecode
    kern = _BACKWARD_IMAGES[typecode]
    K, L = C * KH * KW, OH * OW
    Kg, Og = K // G, O // G
    blocks = threads.split(N, threads.num_threads())
    index = {start: p for p, (start, _) in enumerate(blocks)}
    size = K * Og + O
    part = array.array(typecode, bytes(len(blocks) * size * array.array(typecode).itemsize))

    def run(n0, n1):
        kern(x, w, g, dx, part, index[n0] * size,
             _image_scratch(typecode, K * L, 0), _image_scratch(typecode, K * L, 1),
             _image_scratch(typecode, K * Og, 2), _mm_scratch(typecode), need_x, need_w, need_b,
             N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, n0, n1)

    threads.parallel_for(run, N)
    if need_w or need_b:
        _SUM_PARTS[typecode](part, len(blocks), dw, db, need_w, need_b, O, G, Kg)


def conv2d_forward_plain(x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH,
                         DW, OH, OW):
    _FORWARD_REFERENCE[x.typecode](x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW,
                                   PH, PW, DH, DW, OH, OW)


def conv2d_backward_plain(x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O, G, KH, KW,
                          SH, SW, PH, PW, DH, DW, OH, OW):
    _BACKWARD_REFERENCE[x.typecode](x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O,
                                    G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW)


# --------------------------------------------------------------------------- pooling


@kernel
def max_pool2d_forward(x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """out[p, oh, ow] = max over the window of x[p] (P = N*C planes; padding counts as -inf);
    index[p, oh, ow] = h*W + w of the maximum (the first one on ties), as PyTorch's indices.
    A window with a NaN gives NaN (PyTorch propagates NaN)."""
    for p in range(P):
        for oh in range(OH):
            for ow in range(OW):
                best = -1
                bv = 0.0
                for i in range(KH):
                    h = oh * SH - PH + i * DH
                    if h < 0 or h >= H:
                        continue
                    for j in range(KW):
                        w = ow * SW - PW + j * DW
                        if w < 0 or w >= W:
                            continue
                        v = x[(p * H + h) * W + w]
                        if best < 0 or v > bv or (v != v and bv == bv):
                            best = h * W + w
                            bv = v
                o = (p * OH + oh) * OW + ow
                out[o] = bv
                index[o] = best


@kernel
def max_pool2d_forward_fast(x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """`max_pool2d_forward`, where every window that lies inside the image (all of them without
    padding) is scanned with no bounds tests; windows over the padding take the checked loop."""
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
                    # MaxPool2d(2), the common case, unrolled (1.8 ms against 3.6 ms for the
                    # loops below on a 64x16x32x32 batch)
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
                            # made the branch unpredictable, 15x slower (measured)
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


@kernel
def max_pool2d_backward(g, index, dx, P, HW, L):
    """dx[p, index[p, l]] += g[p, l]: each window's gradient goes to the element that won it."""
    for p in range(P):
        for l in range(L):
            dx[p * HW + index[p * L + l]] += g[p * L + l]


@inline
def _avg_window(o, stride, pad, k, size):
    """The window of output position o: [start, end) clipped to the image, and the length of the
    window clipped to the padded image (PyTorch's divisor when padding is counted)."""
    start = o * stride - pad
    end = start + k
    if end > size + pad:
        end = size + pad
    padded = end - start
    if start < 0:
        start = 0
    if end > size:
        end = size
    return start, end, padded


@kernel
def avg_pool2d_forward(x, out, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad,
                       divisor):
    """out[p, oh, ow] = sum of x[p] over the window / d, where d is `divisor` when > 0, else the
    window's size counting the padding (count_include_pad) or only the pixels inside the image."""
    for p in range(P):
        for oh in range(OH):
            h0, h1, hp = _avg_window(oh, SH, PH, KH, H)
            for ow in range(OW):
                w0, w1, wp = _avg_window(ow, SW, PW, KW, W)
                s = 0.0
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        s += x[(p * H + h) * W + w]
                d = divisor
                if d <= 0:
                    d = hp * wp if count_include_pad else (h1 - h0) * (w1 - w0)
                out[(p * OH + oh) * OW + ow] = s / d if d > 0 else 0.0


@kernel
def avg_pool2d_backward(g, dx, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad,
                        divisor):
    """dx (zeroed by the caller) += g[p, oh, ow] / d over each window: the mean's gradient."""
    for p in range(P):
        for oh in range(OH):
            h0, h1, hp = _avg_window(oh, SH, PH, KH, H)
            for ow in range(OW):
                w0, w1, wp = _avg_window(ow, SW, PW, KW, W)
                d = divisor
                if d <= 0:
                    d = hp * wp if count_include_pad else (h1 - h0) * (w1 - w0)
                if d <= 0:
                    continue
                gv = g[(p * OH + oh) * OW + ow] / d
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        dx[(p * H + h) * W + w] += gv


@kernel
def adaptive_avg_pool2d_forward(x, out, P, H, W, OH, OW):
    """out[p, oh, ow] = mean of x[p] over rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) and the
    columns alike: OH x OW windows that cover the image, whatever its size."""
    for p in range(P):
        for oh in range(OH):
            h0 = (oh * H) // OH
            h1 = ((oh + 1) * H + OH - 1) // OH
            for ow in range(OW):
                w0 = (ow * W) // OW
                w1 = ((ow + 1) * W + OW - 1) // OW
                s = 0.0
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        s += x[(p * H + h) * W + w]
                out[(p * OH + oh) * OW + ow] = s / ((h1 - h0) * (w1 - w0))


@kernel
def adaptive_avg_pool2d_backward(g, dx, P, H, W, OH, OW):
    """dx (zeroed by the caller) += g / window size over each window."""
    for p in range(P):
        for oh in range(OH):
            h0 = (oh * H) // OH
            h1 = ((oh + 1) * H + OH - 1) // OH
            for ow in range(OW):
                w0 = (ow * W) // OW
                w1 = ((ow + 1) * W + OW - 1) // OW
                gv = g[(p * OH + oh) * OW + ow] / ((h1 - h0) * (w1 - w0))
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        dx[(p * H + h) * W + w] += gv


_COLS = "T T i i i i i i i i i i i i i i i i"
_MAX = "T T @q i i i i i i i i i i i i i"
_POOLING = dict(
    MAX_POOL_BACKWARD=by_typecode(max_pool2d_backward, "T @q T i i i"),
    AVG_POOL_FORWARD=by_typecode(avg_pool2d_forward, "T T i i i i i i i i i i i b i"),
    AVG_POOL_BACKWARD=by_typecode(avg_pool2d_backward, "T T i i i i i i i i i i i b i"),
    ADAPTIVE_AVG_FORWARD=by_typecode(adaptive_avg_pool2d_forward, "T T i i i i i"),
    ADAPTIVE_AVG_BACKWARD=by_typecode(adaptive_avg_pool2d_backward, "T T i i i i i"))
_GEO = " i" * 16     # N C H W O G KH KW SH SW PH PW DH DW OH OW
_FORWARD_REFERENCE = by_typecode(conv2d_forward_reference, "T T T b T" + _GEO)
_BACKWARD_REFERENCE = by_typecode(conv2d_backward_reference, "T T T T T T b b b" + _GEO)
_FORWARD_IMAGES = by_typecode(_conv2d_forward_images, "T T T b T T T" + _GEO + " i i")
_BACKWARD_IMAGES = by_typecode(_conv2d_backward_images,
                               "T T T T T i T T T T b b b" + _GEO + " i i")
_SUM_PARTS = by_typecode(_conv2d_sum_parts, "T i T T b b i i i")
register(globals(),
         reference=dict(conv2d_forward=conv2d_forward_plain,
                        conv2d_backward=conv2d_backward_plain,
                        IM2COL=by_typecode(im2col_reference, _COLS),
                        COL2IM=by_typecode(col2im_reference, _COLS),
                        MAX_POOL_FORWARD=by_typecode(max_pool2d_forward, _MAX), **_POOLING),
         fast=dict(conv2d_forward=conv2d_forward, conv2d_backward=conv2d_backward,
                   IM2COL=by_typecode(im2col, _COLS), COL2IM=by_typecode(col2im, _COLS),
                   MAX_POOL_FORWARD=by_typecode(max_pool2d_forward_fast, _MAX), **_POOLING))
