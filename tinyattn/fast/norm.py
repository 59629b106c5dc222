"""Layer norm and batch norm, fast: kernels/norm.py's five functions, vectorised.

The equations and the buffer layouts are those of kernels/norm.py. What is different here: each
row (a row of layer norm, an (n, c) row of L values for batch norm) is sliced out of its buffer
and indexed from 0 (no negative-index check per element), the branches on has_w / has_b sit
outside the loops, and sums may be reordered (`vector_kernel`), so every loop vectorises. Batch
norm's forward folds the four per-channel numbers into one multiply-add per element. Each function
is compiled once per buffer typecode (`jit.by_typecode`: the ops' calls skip numba's type
dispatch).

Chapter 5 of the tour (docs/05-transformer.md) walks through kernels/norm.py.
"""
import math

from .buffers import as_array
from .jit import by_typecode, vector_kernel

__all__ = ["layer_norm_forward", "layer_norm_backward", "batch_norm_stats", "batch_norm_forward",
           "batch_norm_backward"]


@vector_kernel
def _layer_norm_forward(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
    """out = layer_norm(x) row by row; mean and rstd (N, float64) are kept for backward.
    w and b are read only when has_w / has_b (the caller passes some float buffer otherwise)."""
    X, W, Bb, Y = as_array(x), as_array(w), as_array(b), as_array(out)
    for n in range(N):
        xr = X[n * D:(n + 1) * D]
        yr = Y[n * D:(n + 1) * D]
        s = 0.0
        for d in range(D):
            s += xr[d]
        mu = s / D
        v = 0.0
        for d in range(D):
            c = xr[d] - mu
            v += c * c
        denom = math.sqrt(v / D + eps)
        r = 1.0 / denom if denom > 0.0 else math.inf
        mean[n] = mu
        rstd[n] = r
        if has_w and has_b:
            for d in range(D):
                yr[d] = (xr[d] - mu) * r * W[d] + Bb[d]
        elif has_w:
            for d in range(D):
                yr[d] = (xr[d] - mu) * r * W[d]
        elif has_b:
            for d in range(D):
                yr[d] = (xr[d] - mu) * r + Bb[d]
        else:
            for d in range(D):
                yr[d] = (xr[d] - mu) * r


@vector_kernel
def _layer_norm_backward(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
    """dx (N, D) from g and the saved mean / rstd; dw and db (D, float64, zeroed by the caller)
    accumulate over the rows."""
    G, X, W, DX = as_array(g), as_array(x), as_array(w), as_array(dx)
    DW, DB = as_array(dw), as_array(db)
    for n in range(N):
        gr = G[n * D:(n + 1) * D]
        xr = X[n * D:(n + 1) * D]
        dxr = DX[n * D:(n + 1) * D]
        mu = mean[n]
        r = rstd[n]
        s_gy = 0.0
        s_gy_xhat = 0.0
        for d in range(D):
            xhat = (xr[d] - mu) * r
            gy = gr[d] * W[d] if has_w else gr[d]
            s_gy += gy
            s_gy_xhat += gy * xhat
            DW[d] += gr[d] * xhat
            DB[d] += gr[d]
        m_gy = s_gy / D
        m_gy_xhat = s_gy_xhat / D
        if has_w:
            for d in range(D):
                xhat = (xr[d] - mu) * r
                dxr[d] = r * (gr[d] * W[d] - m_gy - xhat * m_gy_xhat)
        else:
            for d in range(D):
                xhat = (xr[d] - mu) * r
                dxr[d] = r * (gr[d] - m_gy - xhat * m_gy_xhat)


# --------------------------------------------------------------------------- batch norm


@vector_kernel
def _batch_norm_stats(x, mean, rstd, N, C, L, eps):
    """mean[c] and rstd[c] = 1 / sqrt(biased var + eps) over the N*L values of channel c."""
    X = as_array(x)
    M = N * L
    for c in range(C):
        s = 0.0
        for n in range(N):
            row = X[(n * C + c) * L:(n * C + c + 1) * L]
            for i in range(L):
                s += row[i]
        mu = s / M
        v = 0.0
        for n in range(N):
            row = X[(n * C + c) * L:(n * C + c + 1) * L]
            for i in range(L):
                d = row[i] - mu
                v += d * d
        mean[c] = mu
        denom = math.sqrt(v / M + eps)
        rstd[c] = 1.0 / denom if denom > 0.0 else math.inf


@vector_kernel
def _batch_norm_forward(x, mean, rstd, w, b, out, N, C, L):
    """out = (x - mean[c]) * rstd[c] * w[c] + b[c] (the caller passes w = 1, b = 0 when absent)."""
    X, Y = as_array(x), as_array(out)
    for n in range(N):
        for c in range(C):
            scale = rstd[c] * w[c]
            shift = b[c] - mean[c] * scale
            xr = X[(n * C + c) * L:(n * C + c + 1) * L]
            yr = Y[(n * C + c) * L:(n * C + c + 1) * L]
            for i in range(L):
                yr[i] = xr[i] * scale + shift


@vector_kernel
def _batch_norm_backward(g, x, mean, rstd, w, batch_stats, dx, dw, db, N, C, L):
    """dx, and dw[c] = sum g * xhat, db[c] = sum g (float64, zeroed by the caller)."""
    G, X, DX = as_array(g), as_array(x), as_array(dx)
    M = N * L
    for c in range(C):
        mu, r = mean[c], rstd[c]
        s_g = 0.0
        s_gx = 0.0
        for n in range(N):
            gr = G[(n * C + c) * L:(n * C + c + 1) * L]
            xr = X[(n * C + c) * L:(n * C + c + 1) * L]
            for i in range(L):
                s_g += gr[i]
                s_gx += gr[i] * (xr[i] - mu) * r
        dw[c] = s_gx
        db[c] = s_g
        k = r * w[c]
        m_gy = s_g * w[c] / M if batch_stats else 0.0
        m_gyx = s_gx * w[c] / M if batch_stats else 0.0
        for n in range(N):
            gr = G[(n * C + c) * L:(n * C + c + 1) * L]
            xr = X[(n * C + c) * L:(n * C + c + 1) * L]
            dr = DX[(n * C + c) * L:(n * C + c + 1) * L]
            for i in range(L):
                xhat = (xr[i] - mu) * r
                dr[i] = k * gr[i] - r * (m_gy + xhat * m_gyx)


_LAYER_NORM_FORWARD = by_typecode(_layer_norm_forward, "T T T b b T @d @d i i f")
_LAYER_NORM_BACKWARD = by_typecode(_layer_norm_backward, "T T T b @d @d T @d @d i i")
_BATCH_NORM_STATS = by_typecode(_batch_norm_stats, "T @d @d i i i f")
_BATCH_NORM_FORWARD = by_typecode(_batch_norm_forward, "T @d @d @d @d T i i i")
_BATCH_NORM_BACKWARD = by_typecode(_batch_norm_backward, "T T @d @d @d b T @d @d i i i")


def layer_norm_forward(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
    """out = layer_norm(x) row by row; mean and rstd (N, float64) are kept for backward."""
    _LAYER_NORM_FORWARD[x.typecode](x, w, b, has_w, has_b, out, mean, rstd, N, D, eps)


def layer_norm_backward(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
    """dx per row; dw, db (D, float64, zeroed by the caller) accumulate over the rows."""
    _LAYER_NORM_BACKWARD[x.typecode](g, x, w, has_w, mean, rstd, dx, dw, db, N, D)


def batch_norm_stats(x, mean, rstd, N, C, L, eps):
    """mean[c] and rstd[c] = 1 / sqrt(biased var + eps) over the N*L values of channel c."""
    _BATCH_NORM_STATS[x.typecode](x, mean, rstd, N, C, L, eps)


def batch_norm_forward(x, mean, rstd, w, b, out, N, C, L):
    """out = (x - mean[c]) * rstd[c] * w[c] + b[c]."""
    _BATCH_NORM_FORWARD[x.typecode](x, mean, rstd, w, b, out, N, C, L)


def batch_norm_backward(g, x, mean, rstd, w, batch_stats, dx, dw, db, N, C, L):
    """dx, and dw[c] = sum g * xhat, db[c] = sum g (float64)."""
    _BATCH_NORM_BACKWARD[x.typecode](g, x, mean, rstd, w, batch_stats, dx, dw, db, N, C, L)
