"""The context of RNN attention, fused: c[b, :] = sum_s w[b, s] * h[b, s, :].

w (B, S) are the attention weights of one decoder step, h (B, S, C) the encoder outputs. As ops
this is a batched (B, 1, S) @ (B, S, C) product wrapped in two views, whose gradient needs two
more products and views; here it is one loop each way:

    forward    c[b, :]      = sum_s w[b, s] h[b, s, :]          (an axpy per source position)
    backward   dw[b, s]     = g[b, :] . h[b, s, :]              (a dot product)
               dh[b, s, :]  = w[b, s] g[b, :]

h is read through its strides (h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c], c contiguous), so the
transposed encoder outputs need no copy. Rows are sliced out of the buffers and indexed from 0,
so the loops over c vectorise.
"""
from .buffers import as_array
from .jit import by_typecode, vector_kernel


@vector_kernel
def context_forward(w, h, h_off, hs0, hs1, out, B, S, C):
    W, Hb, O = as_array(w), as_array(h), as_array(out)
    for b in range(B):
        c = O[b * C:(b + 1) * C]
        for j in range(C):
            c[j] = 0.0
        for s in range(S):
            p = h_off + b * hs0 + s * hs1
            row = Hb[p:p + C]
            a = W[b * S + s]
            for j in range(C):
                c[j] += a * row[j]


@vector_kernel
def context_backward(g, w, h, h_off, hs0, hs1, dw, dh, B, S, C):
    """dw (B, S) and dh (B, S, C, packed) are overwritten."""
    G, W, Hb, DW, DH = as_array(g), as_array(w), as_array(h), as_array(dw), as_array(dh)
    for b in range(B):
        gb = G[b * C:(b + 1) * C]
        for s in range(S):
            p = h_off + b * hs0 + s * hs1
            row = Hb[p:p + C]
            d_row = DH[(b * S + s) * C:(b * S + s + 1) * C]
            a = W[b * S + s]
            dot = 0.0
            for j in range(C):
                dot += gb[j] * row[j]
                d_row[j] = a * gb[j]
            DW[b * S + s] = dot


FORWARD = by_typecode(context_forward, "T T i i i T i i i")
BACKWARD = by_typecode(context_backward, "T T T i i i T T i i i")
