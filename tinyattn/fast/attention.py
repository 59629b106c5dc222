"""The fused kernels of RNN attention, fast: kernels/attention.py's four functions, vectorised.

The equations and the buffer layouts are those of kernels/attention.py. What is different here:
rows are sliced out of the buffers and indexed from 0 (no negative-index check per element), so
the loops over `a` and `c` vectorise; the tanh is rnn.py's arithmetic `_tanh` (float32 rows in
float32 lanes), which LLVM vectorises where `math.tanh` is a call into the C library; and each
function is compiled once per buffer typecode (`jit.by_typecode`: the ops' calls skip numba's
type dispatch).

Chapter 4 of the tour (docs/04-seq2seq.md) walks through kernels/attention.py.
"""
from .buffers import as_array
from .jit import by_typecode, kernel, vector_kernel
from .rnn import _tanh

__all__ = ["additive_score_forward", "additive_score_backward", "context_forward",
           "context_backward"]


# Two loops per row, not one: fused into one loop, the tanh and the dot product with v vectorised
# worse (measured: benchmarks/RESULTS.md, _additive_score_forward). The dot product may be
# summed in any order (vector_kernel).
@vector_kernel
def _additive_score_forward(pk, q, v, t, scores, B, S, A, single):
    PK, Q, V, TT, SC = as_array(pk), as_array(q), as_array(v), as_array(t), as_array(scores)
    for b in range(B):
        qb = Q[b * A:(b + 1) * A]
        for s in range(S):
            base = (b * S + s) * A
            pk_row = PK[base:base + A]
            t_row = TT[base:base + A]
            for a in range(A):
                t_row[a] = _tanh(pk_row[a] + qb[a], single)
            acc = 0.0
            for a in range(A):
                acc += V[a] * t_row[a]
            SC[b * S + s] = acc


@kernel
def additive_score_backward(g, t, v, B, S, A, dpk, dq, dv):
    """dpk (B, S, A) is overwritten; dq (B, A) and dv (A) must arrive zero-filled (they accumulate)."""
    G, TT, V, DPK, DQ, DV = as_array(g), as_array(t), as_array(v), as_array(dpk), as_array(dq), \
        as_array(dv)
    for b in range(B):
        dq_b = DQ[b * A:(b + 1) * A]
        for s in range(S):
            base = (b * S + s) * A
            t_row = TT[base:base + A]
            d_row = DPK[base:base + A]
            gs = G[b * S + s]
            for a in range(A):
                th = t_row[a]
                d = gs * V[a] * (1.0 - th * th)
                d_row[a] = d
                dq_b[a] += d
                DV[a] += gs * th


@vector_kernel
def _context_forward(w, h, h_off, hs0, hs1, out, B, S, C):
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
def _context_backward(g, w, h, h_off, hs0, hs1, dw, dh, B, S, C):
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


_ADDITIVE_SCORE_FORWARD = by_typecode(_additive_score_forward, "T T T T T i i i F")
_CONTEXT_FORWARD = by_typecode(_context_forward, "T T i i i T i i i")
_CONTEXT_BACKWARD = by_typecode(_context_backward, "T T T i i i T T i i i")


def additive_score_forward(pk, q, v, t, scores, B, S, A):
    """scores[b, s] = sum_a v[a] * t[b, s, a],  t = tanh(pk[b, s, a] + q[b, a]) (kept)."""
    _ADDITIVE_SCORE_FORWARD[pk.typecode](pk, q, v, t, scores, B, S, A, pk.typecode == "f")


def context_forward(w, h, h_off, hs0, hs1, out, B, S, C):
    """out[b, c] = sum_s w[b, s] h[b, s, c];  h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c]."""
    _CONTEXT_FORWARD[h.typecode](w, h, h_off, hs0, hs1, out, B, S, C)


def context_backward(g, w, h, h_off, hs0, hs1, dw, dh, B, S, C):
    """dw[b, s] = g[b] . h[b, s];  dh[b, s, c] = w[b, s] g[b, c] (both overwritten; dh packed)."""
    _CONTEXT_BACKWARD[h.typecode](g, w, h, h_off, hs0, hs1, dw, dh, B, S, C)
