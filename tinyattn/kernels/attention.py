"""The fused kernels of RNN attention (Bahdanau, Luong): the additive score and the context.

1. Bahdanau's additive score: e[b, s] = sum_a v[a] * tanh(pk[b, s, a] + q[b, a]).

pk (B, S, A) is the precomputed key side U h_s + b, q (B, A) the query side W s_t, v (A). Written
as ops this is add -> tanh -> matmul with v: three passes over a (B, S, A) tensor, once per
decoder step. Here it is one pass, keeping t = tanh(...) (B, S, A) for the backward:

    d pk[b, s, a] = g[b, s] * v[a] * (1 - t^2)      d q[b, a] = sum_s d pk[b, s, a]
    d v[a]        = sum_{b, s} g[b, s] * t[b, s, a]

2. The context: c[b, :] = sum_s w[b, s] * h[b, s, :].

w (B, S) are the attention weights of one decoder step, h (B, S, C) the encoder outputs, read
through their strides: h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c] (c contiguous), so transposed
encoder outputs need no copy. As ops it is a (B, 1, S) @ (B, S, C) product and two views.

    dw[b, s] = g[b, :] . h[b, s, :]          dh[b, s, :] = w[b, s] g[b, :]

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math

from . import kernel

__all__ = ["additive_score_forward", "additive_score_backward", "context_forward",
           "context_backward"]


@kernel
def additive_score_forward(pk, q, v, t, scores, B, S, A):
    """scores[b, s] = sum_a v[a] * t[b, s, a],  t = tanh(pk[b, s, a] + q[b, a]) (kept)."""
    for b in range(B):
        for s in range(S):
            e = 0.0
            for a in range(A):
                t[(b * S + s) * A + a] = math.tanh(pk[(b * S + s) * A + a] + q[b * A + a])
                e += v[a] * t[(b * S + s) * A + a]
            scores[b * S + s] = e


@kernel
def additive_score_backward(g, t, v, B, S, A, dpk, dq, dv):
    """dpk = g v (1 - t^2) (overwritten); dq += sum_s dpk; dv += sum_{b,s} g t (dq and dv
    zero-filled by the caller)."""
    for b in range(B):
        for s in range(S):
            for a in range(A):
                th = t[(b * S + s) * A + a]
                d = g[b * S + s] * v[a] * (1.0 - th * th)
                dpk[(b * S + s) * A + a] = d
                dq[b * A + a] += d
                dv[a] += g[b * S + s] * th


@kernel
def context_forward(w, h, h_off, hs0, hs1, out, B, S, C):
    """out[b, c] = sum_s w[b, s] h[b, s, c];  h[b, s, c] = h[h_off + b*hs0 + s*hs1 + c]."""
    for b in range(B):
        for c in range(C):
            acc = 0.0
            for s in range(S):
                acc += w[b * S + s] * h[h_off + b * hs0 + s * hs1 + c]
            out[b * C + c] = acc


@kernel
def context_backward(g, w, h, h_off, hs0, hs1, dw, dh, B, S, C):
    """dw[b, s] = g[b] . h[b, s];  dh[b, s, c] = w[b, s] g[b, c] (both overwritten; dh packed)."""
    for b in range(B):
        for s in range(S):
            dot = 0.0
            for c in range(C):
                dot += g[b * C + c] * h[h_off + b * hs0 + s * hs1 + c]
                dh[(b * S + s) * C + c] = w[b * S + s] * g[b * C + c]
            dw[b * S + s] = dot
