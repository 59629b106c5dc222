"""The fused kernels of RNN attention (Bahdanau / Luong): the additive score and the context.

1. Bahdanau's additive score, fused: e[b, s] = sum_a v[a] * tanh(pk[b, s, a] + q[b, a]).

pk (B, S, A) is the precomputed key side U h_s + b, q (B, A) the query side W s_t, v (A). Written as
ops this is add (B, S, A) -> tanh (B, S, A) -> matmul with v: three passes over a (B, S, A) tensor
and two more in backward, once per decoder step. Here it is one pass, keeping t = tanh(...) (B, S, A)
for the backward:

    d pk[b, s, a] = g[b, s] * v[a] * (1 - t^2)      d q[b, a] = sum_s d pk[b, s, a]
    d v[a]        = sum_{b, s} g[b, s] * t[b, s, a]


2. The context of RNN attention, fused: c[b, :] = sum_s w[b, s] * h[b, s, :].

w (B, S) are the attention weights of one decoder step, h (B, S, C) the encoder outputs. As ops
this is a batched (B, 1, S) @ (B, S, C) product wrapped in two views, whose gradient needs two
more products and views; here it is one loop each way:

    forward    c[b, :]      = sum_s w[b, s] h[b, s, :]          (an axpy per source position)
    backward   dw[b, s]     = g[b, :] . h[b, s, :]              (a dot product)
               dh[b, s, :]  = w[b, s] g[b, :]

h is read through its strides (h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c], c contiguous), so the
transposed encoder outputs need no copy. Rows are sliced out of the buffers and indexed from 0,
so the loops over c vectorise.

Tiers: the reference kernels index the flat buffers as the equations read; the fast ones slice
rows out (indexed from 0) so that the loops over `a` and `c` vectorise, with the arithmetic tanh.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math

from .buffers import as_array
from .jit import by_typecode, kernel, vector_kernel
from .rnn import _tanh
from .tiers import register


# ============================================================================ reference tier


@kernel
def additive_score_forward_reference(pk, q, v, t, scores, B, S, A, single):
    """scores[b, s] = sum_a v[a] * t[b, s, a],  t = tanh(pk[b, s, a] + q[b, a]) (kept). (`single`,
    "float32 buffers", is for the fast twin.)"""
    for b in range(B):
        for s in range(S):
            e = 0.0
            for a in range(A):
                t[(b * S + s) * A + a] = math.tanh(pk[(b * S + s) * A + a] + q[b * A + a])
                e += v[a] * t[(b * S + s) * A + a]
            scores[b * S + s] = e


@kernel
def additive_score_backward_reference(g, t, v, B, S, A, dpk, dq, dv):
    """dpk = g v (1 - t^2) (overwritten); dq += sum_s dpk; dv += sum_{b,s} g t (zeroed by caller)."""
    for b in range(B):
        for s in range(S):
            for a in range(A):
                th = t[(b * S + s) * A + a]
                d = g[b * S + s] * v[a] * (1.0 - th * th)
                dpk[(b * S + s) * A + a] = d
                dq[b * A + a] += d
                dv[a] += g[b * S + s] * th


@kernel
def context_forward_reference(w, h, h_off, hs0, hs1, out, B, S, C):
    """out[b, c] = sum_s w[b, s] h[b, s, c];  h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c]."""
    for b in range(B):
        for c in range(C):
            acc = 0.0
            for s in range(S):
                acc += w[b * S + s] * h[h_off + b * hs0 + s * hs1 + c]
            out[b * C + c] = acc


@kernel
def context_backward_reference(g, w, h, h_off, hs0, hs1, dw, dh, B, S, C):
    """dw[b, s] = g[b] . h[b, s];  dh[b, s, c] = w[b, s] g[b, c] (both overwritten)."""
    for b in range(B):
        for s in range(S):
            dot = 0.0
            for c in range(C):
                dot += g[b * C + c] * h[h_off + b * hs0 + s * hs1 + c]
                dh[(b * S + s) * C + c] = w[b * S + s] * g[b * C + c]
            dw[b * S + s] = dot


# ============================================================================ fast tier



# Rows are sliced out of the buffers and indexed from 0, so the loops over `a` vectorise (with the
# arithmetic exp inside _tanh; the forward's dot product with v may be summed in any order). Two
# loops, not one: fused, the tanh and the dot product vectorised worse (Zen 3, fp32, 64 x 12 x 64:
# 135 us fused, 76 us as two loops; 180 us before _tanh had its float32 form).
@vector_kernel
def additive_score_forward_fast(pk, q, v, t, scores, B, S, A, single):
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
def additive_score_backward_fast(g, t, v, B, S, A, dpk, dq, dv):
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


# ============================================================================ the interface
_CF, _CB = "T T i i i T i i i", "T T T i i i T T i i i"
_AF = "T T T T T i i i F"
register(globals(),
         reference=dict(ADDITIVE_SCORE_FORWARD=by_typecode(additive_score_forward_reference, _AF),
                        additive_score_backward=additive_score_backward_reference,
                        CONTEXT_FORWARD=by_typecode(context_forward_reference, _CF),
                        CONTEXT_BACKWARD=by_typecode(context_backward_reference, _CB)),
         fast=dict(ADDITIVE_SCORE_FORWARD=by_typecode(additive_score_forward_fast, _AF),
                   additive_score_backward=additive_score_backward_fast,
                   CONTEXT_FORWARD=by_typecode(context_forward, _CF),
                   CONTEXT_BACKWARD=by_typecode(context_backward, _CB)))
