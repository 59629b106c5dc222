"""Layer normalisation of the rows of a contiguous (N, D) buffer, and batch normalisation of the
channels of a contiguous (N, C, L) buffer, forward and backward, fused.

Layer norm, per row x of D elements (eps inside the square root, biased variance, as PyTorch):

    mean = sum(x) / D          var = sum((x - mean)^2) / D          rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd   y = xhat * w + b

Backward, with upstream gradient g and gy = g * w (w = 1 when absent):

    dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
    dw = sum over rows of g * xhat          db = sum over rows of g

Batch norm: the same per channel c, over the N*L values of c (element (n, c, i) is
x[(n*C + c)*L + i], L = H*W for images). With the batch's statistics (training) dx is the formula
above with the means over those N*L values; with given (running) statistics, mean and rstd are
constants and dx = rstd * gy.

Composed from primitives this is ~10 ops forward and ~20 backward, each a pass over the whole
tensor; fused it is a few loops over each row (or channel): the mean, the variance and the output
forward, two backward. mean and rstd are float64 buffers, kept by the op for the backward.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import math

from . import kernel

__all__ = ["layer_norm_forward", "layer_norm_backward", "batch_norm_stats", "batch_norm_forward",
           "batch_norm_backward"]


@kernel
def layer_norm_forward(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
    """out = layer_norm(x) row by row; mean and rstd (N, float64) are kept for backward.
    w and b are read only when has_w / has_b (the caller passes some float buffer otherwise)."""
    for n in range(N):
        row = n * D
        mu = 0.0
        for d in range(D):
            mu += x[row + d]
        mu /= D
        var = 0.0
        for d in range(D):
            var += (x[row + d] - mu) ** 2
        var /= D
        denom = math.sqrt(var + eps)
        r = 1.0 / denom if denom > 0.0 else math.inf
        mean[n] = mu
        rstd[n] = r
        for d in range(D):
            y = (x[row + d] - mu) * r
            if has_w:
                y *= w[d]
            if has_b:
                y += b[d]
            out[row + d] = y


@kernel
def layer_norm_backward(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
    """dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) per row, gy = g * w; dw, db (D,
    float64, zeroed by the caller) accumulate sum g * xhat and sum g over the rows."""
    for n in range(N):
        row = n * D
        mean_gy = 0.0
        mean_gy_xhat = 0.0
        for d in range(D):
            xhat = (x[row + d] - mean[n]) * rstd[n]
            gy = g[row + d] * (w[d] if has_w else 1.0)
            mean_gy += gy / D
            mean_gy_xhat += gy * xhat / D
            dw[d] += g[row + d] * xhat
            db[d] += g[row + d]
        for d in range(D):
            xhat = (x[row + d] - mean[n]) * rstd[n]
            gy = g[row + d] * (w[d] if has_w else 1.0)
            dx[row + d] = rstd[n] * (gy - mean_gy - xhat * mean_gy_xhat)


@kernel
def batch_norm_stats(x, mean, rstd, N, C, L, eps):
    """mean[c] and rstd[c] = 1 / sqrt(biased var + eps) over the N*L values of channel c."""
    M = N * L
    for c in range(C):
        mu = 0.0
        for n in range(N):
            for i in range(L):
                mu += x[(n * C + c) * L + i]
        mu /= M
        var = 0.0
        for n in range(N):
            for i in range(L):
                var += (x[(n * C + c) * L + i] - mu) ** 2
        var /= M
        mean[c] = mu
        denom = math.sqrt(var + eps)
        rstd[c] = 1.0 / denom if denom > 0.0 else math.inf


@kernel
def batch_norm_forward(x, mean, rstd, w, b, out, N, C, L):
    """out = (x - mean[c]) * rstd[c] * w[c] + b[c] (the caller passes w = 1, b = 0 when absent;
    mean, rstd, w, b are float64 (C,))."""
    for n in range(N):
        for c in range(C):
            for i in range(L):
                p = (n * C + c) * L + i
                out[p] = (x[p] - mean[c]) * rstd[c] * w[c] + b[c]


@kernel
def batch_norm_backward(g, x, mean, rstd, w, batch_stats, dx, dw, db, N, C, L):
    """dx (overwritten), and dw[c] = sum g * xhat, db[c] = sum g (float64, overwritten). The
    terms through the batch statistics only when `batch_stats`."""
    M = N * L
    for c in range(C):
        sum_g = 0.0
        sum_g_xhat = 0.0
        for n in range(N):
            for i in range(L):
                p = (n * C + c) * L + i
                sum_g += g[p]
                sum_g_xhat += g[p] * (x[p] - mean[c]) * rstd[c]
        dw[c] = sum_g_xhat
        db[c] = sum_g
        mean_gy = sum_g * w[c] / M if batch_stats else 0.0           # mean(gy), gy = g * w
        mean_gy_xhat = sum_g_xhat * w[c] / M if batch_stats else 0.0
        for n in range(N):
            for i in range(L):
                p = (n * C + c) * L + i
                xhat = (x[p] - mean[c]) * rstd[c]
                dx[p] = rstd[c] * (g[p] * w[c] - mean_gy - xhat * mean_gy_xhat)
