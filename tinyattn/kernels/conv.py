"""Convolution, unfold / fold and pooling over (N, C, H, W) images in flat, packed buffers.

Pixel (n, c, h, w) of an image batch is x[((n*C + c)*H + h)*W + w]. A window of KH x KW taps
with stride (SH, SW), padding (PH, PW) and dilation (DH, DW) puts output position (oh, ow)'s
tap (i, j) on the pixel

    h = oh*SH - PH + i*DH,      w = ow*SW - PW + j*DW            (outside the image: padding)

Unfold ("im2col") copies every window into a column, 0 for the padding,

    cols[n, (c*KH + i)*KW + j, oh*OW + ow] = x[n, c, h, w]

where the entry (n, row, l) of the columns sits at cols[n*NS + row*RS + l] (F.unfold's
(N, K, L): NS = K*L, RS = L). Fold ("col2im") is its transpose: it adds every column entry back
onto the pixel it was read from, so each is the other's gradient. A convolution is a sum over
one window of every input channel of its group (g = o // (O/G) for output channel o):

    out[n, o, oh, ow] = bias[o] + sum over c < C/G, i, j of w[o, c, i, j] * x[n, g*C/G + c, h, w]

which is unfold followed by a matrix product per group (what the fast backend computes); here it
is the sum itself. Pooling keeps one number per window and channel: the largest (max pooling,
which remembers where it was for the backward) or the mean.
"""
from . import kernel

__all__ = ["im2col", "col2im", "conv2d_forward", "conv2d_backward", "max_pool2d_forward",
           "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
           "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward"]


@kernel
def im2col(x, cols, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
    """cols (N, C*KH*KW, OH*OW) from x (N, C, H, W): the window each output position sees."""
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
def col2im(cols, x, N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, NS, RS):
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


@kernel
def conv2d_forward(x, w, bias, has_bias, out, N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW,
                   OH, OW):
    """out (N, O, OH, OW) from x (N, C, H, W), w (O, C/G, KH, KW) and, if has_bias, bias (O,)."""
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
                                    s += (float(w[((o * Cg + c) * KH + i) * KW + j])
                                          * x[((n * C + g * Cg + c) * H + h) * W + v])
                    if has_bias:
                        s += bias[o]
                    out[((n * O + o) * OH + oh) * OW + ow] = s


@kernel
def conv2d_backward(x, w, g, dx, dw, db, need_x, need_w, need_b, N, C, H, W, O, G, KH, KW,
                    SH, SW, PH, PW, DH, DW, OH, OW):
    """The forward's sum read backwards: every term w * x of out[n, o, oh, ow] sends
    gv = g[n, o, oh, ow] times its other factor back to where that factor came from,

        dx[n, g*C/G + c, h, v] += w[o, c, i, j] * gv      dw[o, c, i, j] += x[n, ..., h, v] * gv
        db[o] += gv

    Only the gradients asked for (need_x, need_w, need_b) are written; they are overwritten."""
    Cg, Og = C // G, O // G
    for q in range(N * C * H * W if need_x else 0):
        dx[q] = 0.0
    for q in range(O * Cg * KH * KW if need_w else 0):
        dw[q] = 0.0
    for q in range(O if need_b else 0):
        db[q] = 0.0
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
def max_pool2d_forward(x, out, index, P, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW):
    """out[p, oh, ow] = the largest pixel of the window of plane p (P = N*C planes; padding
    never wins); index[p, oh, ow] = its h*W + w, the first one on ties (PyTorch's indices).
    A window holding a NaN gives NaN, as in PyTorch."""
    for p in range(P):
        for oh in range(OH):
            for ow in range(OW):
                best = -1
                bv = 0.0
                for i in range(KH):
                    for j in range(KW):
                        h = oh * SH - PH + i * DH
                        w = ow * SW - PW + j * DW
                        if 0 <= h < H and 0 <= w < W:
                            v = x[(p * H + h) * W + w]
                            if best < 0 or v > bv or (v != v and bv == bv):
                                best = h * W + w
                                bv = v
                out[(p * OH + oh) * OW + ow] = bv
                index[(p * OH + oh) * OW + ow] = best


@kernel
def max_pool2d_backward(g, index, dx, P, HW, L):
    """dx (P, HW, zeroed by the caller)[p, index[p, l]] += g[p, l]: each window's gradient goes
    to the pixel that won it."""
    for p in range(P):
        for l in range(L):
            dx[p * HW + index[p * L + l]] += g[p * L + l]


@kernel
def _window(o, stride, pad, k, size):
    """Output position o's window along one axis: (start, end) clipped to the image, and its
    length clipped to the padded image (PyTorch's divisor when padding counts)."""
    start = o * stride - pad
    end = min(start + k, size + pad)
    return max(start, 0), min(end, size), end - start


@kernel
def avg_pool2d_forward(x, out, P, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad,
                       divisor):
    """out[p, oh, ow] = the sum over the window of plane p / d: d = divisor if > 0, else the
    window's size counting the padding (count_include_pad) or only the pixels in the image."""
    for p in range(P):
        for oh in range(OH):
            h0, h1, hp = _window(oh, SH, PH, KH, H)
            for ow in range(OW):
                w0, w1, wp = _window(ow, SW, PW, KW, W)
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
    """dx (zeroed by the caller) += g[p, oh, ow] / d on every pixel of the window: the mean's
    gradient, with the forward's d."""
    for p in range(P):
        for oh in range(OH):
            h0, h1, hp = _window(oh, SH, PH, KH, H)
            for ow in range(OW):
                w0, w1, wp = _window(ow, SW, PW, KW, W)
                d = divisor
                if d <= 0:
                    d = hp * wp if count_include_pad else (h1 - h0) * (w1 - w0)
                if d > 0:
                    gv = g[(p * OH + oh) * OW + ow] / d
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            dx[(p * H + h) * W + w] += gv


@kernel
def adaptive_avg_pool2d_forward(x, out, P, H, W, OH, OW):
    """out[p, oh, ow] = the mean of plane p over the rows [floor(oh*H/OH), ceil((oh+1)*H/OH)) and
    the columns alike: OH x OW windows that cover the image, whatever its size."""
    for p in range(P):
        for oh in range(OH):
            h0, h1 = (oh * H) // OH, ((oh + 1) * H + OH - 1) // OH
            for ow in range(OW):
                w0, w1 = (ow * W) // OW, ((ow + 1) * W + OW - 1) // OW
                s = 0.0
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        s += x[(p * H + h) * W + w]
                out[(p * OH + oh) * OW + ow] = s / ((h1 - h0) * (w1 - w0))


@kernel
def adaptive_avg_pool2d_backward(g, dx, P, H, W, OH, OW):
    """dx (zeroed by the caller) += g / the window's size, on every pixel of each window."""
    for p in range(P):
        for oh in range(OH):
            h0, h1 = (oh * H) // OH, ((oh + 1) * H + OH - 1) // OH
            for ow in range(OW):
                w0, w1 = (ow * W) // OW, ((ow + 1) * W + OW - 1) // OW
                gv = g[(p * OH + oh) * OW + ow] / ((h1 - h0) * (w1 - w0))
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        dx[(p * H + h) * W + w] += gv
