"""Bahdanau's additive score, fused: e[b, s] = sum_a v[a] * tanh(pk[b, s, a] + q[b, a]).

pk (B, S, A) is the precomputed key side U h_s + b, q (B, A) the query side W s_t, v (A). Written as
ops this is add (B, S, A) -> tanh (B, S, A) -> matmul with v: three passes over a (B, S, A) tensor
and two more in backward, once per decoder step. Here it is one pass, keeping t = tanh(...) (B, S, A)
for the backward:

    d pk[b, s, a] = g[b, s] * v[a] * (1 - t^2)      d q[b, a] = sum_s d pk[b, s, a]
    d v[a]        = sum_{b, s} g[b, s] * t[b, s, a]

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
from .jit import kernel
from .rnn import _tanh


@kernel
def additive_score_forward(pk, q, v, t, scores, B, S, A):
    for b in range(B):
        for s in range(S):
            base = (b * S + s) * A
            acc = 0.0
            for a in range(A):
                th = _tanh(pk[base + a] + q[b * A + a])
                t[base + a] = th
                acc += v[a] * th
            scores[b * S + s] = acc


@kernel
def additive_score_backward(g, t, v, B, S, A, dpk, dq, dv):
    """dpk (B, S, A) is overwritten; dq (B, A) and dv (A) must arrive zero-filled (they accumulate)."""
    for b in range(B):
        for s in range(S):
            base = (b * S + s) * A
            gs = g[b * S + s]
            for a in range(A):
                th = t[base + a]
                d = gs * v[a] * (1.0 - th * th)
                dpk[base + a] = d
                dq[b * A + a] += d
                dv[a] += gs * th
