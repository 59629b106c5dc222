"""Layer normalisation of the rows of a contiguous (N, D) buffer, forward and backward, fused.

Per row x of D elements (eps inside the square root, biased variance, as in PyTorch):

    mean = sum(x) / D          var = sum((x - mean)^2) / D          rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd   y = xhat * w + b

Backward, with upstream gradient g and gy = g * w (w = 1 when absent):

    dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
    dw = sum over rows of g * xhat          db = sum over rows of g

Composed from primitives this is ~10 ops forward and ~20 backward, each a pass over the whole
tensor; fused it is one pass (two loops over each row) each way.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import math

from .jit import kernel


@kernel
def layer_norm_forward(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
    """out = layer_norm(x) row by row; mean and rstd (N, float64) are kept for backward.
    w and b are read only when has_w / has_b (the caller passes some float buffer otherwise)."""
    for n in range(N):
        base = n * D
        s = 0.0
        for d in range(D):
            s += x[base + d]
        mu = s / D
        v = 0.0
        for d in range(D):
            c = x[base + d] - mu
            v += c * c
        denom = math.sqrt(v / D + eps)
        r = 1.0 / denom if denom > 0.0 else math.inf
        mean[n] = mu
        rstd[n] = r
        for d in range(D):
            y = (x[base + d] - mu) * r
            if has_w:
                y = y * w[d]
            if has_b:
                y = y + b[d]
            out[base + d] = y


@kernel
def layer_norm_backward(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
    """dx (N, D) from g and the saved mean / rstd; dw and db (D, float64, zeroed by the caller)
    accumulate over the rows."""
    for n in range(N):
        base = n * D
        mu = mean[n]
        r = rstd[n]
        s_gy = 0.0
        s_gy_xhat = 0.0
        for d in range(D):
            xhat = (x[base + d] - mu) * r
            gd = g[base + d]
            gy = gd * w[d] if has_w else gd
            s_gy += gy
            s_gy_xhat += gy * xhat
            dw[d] += gd * xhat
            db[d] += gd
        m_gy = s_gy / D
        m_gy_xhat = s_gy_xhat / D
        for d in range(D):
            xhat = (x[base + d] - mu) * r
            gd = g[base + d]
            gy = gd * w[d] if has_w else gd
            dx[base + d] = r * (gy - m_gy - xhat * m_gy_xhat)
