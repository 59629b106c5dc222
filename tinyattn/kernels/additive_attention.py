"""Bahdanau's additive score, fused: e[b, s] = sum_a v[a] * tanh(pk[b, s, a] + q[b, a]).

pk (B, S, A) is the precomputed key side U h_s + b, q (B, A) the query side W s_t, v (A). Written as
ops this is add (B, S, A) -> tanh (B, S, A) -> matmul with v: three passes over a (B, S, A) tensor
and two more in backward, once per decoder step. Here it is one pass, keeping t = tanh(...) (B, S, A)
for the backward:

    d pk[b, s, a] = g[b, s] * v[a] * (1 - t^2)      d q[b, a] = sum_s d pk[b, s, a]
    d v[a]        = sum_{b, s} g[b, s] * t[b, s, a]

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
from .buffers import as_array
from .jit import kernel, vector_kernel
from .rnn import _tanh


# Rows are sliced out of the buffers and indexed from 0, so the loops over `a` vectorise (with the
# arithmetic exp inside _tanh; the forward's dot product with v may be summed in any order).
@vector_kernel
def additive_score_forward(pk, q, v, t, scores, B, S, A):
    PK, Q, V, TT, SC = as_array(pk), as_array(q), as_array(v), as_array(t), as_array(scores)
    for b in range(B):
        qb = Q[b * A:(b + 1) * A]
        for s in range(S):
            base = (b * S + s) * A
            pk_row = PK[base:base + A]
            t_row = TT[base:base + A]
            acc = 0.0
            for a in range(A):
                th = _tanh(pk_row[a] + qb[a])
                t_row[a] = th
                acc += V[a] * th
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
