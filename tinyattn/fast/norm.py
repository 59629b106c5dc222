"""Layer normalisation of the rows of a contiguous (N, D) buffer, forward and backward, fused;
and batch normalisation of the channels of an (N, C, L) buffer (at the end of the file).

Per row x of D elements (eps inside the square root, biased variance, as in PyTorch):

    mean = sum(x) / D          var = sum((x - mean)^2) / D          rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd   y = xhat * w + b

Backward, with upstream gradient g and gy = g * w (w = 1 when absent):

    dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
    dw = sum over rows of g * xhat          db = sum over rows of g

Composed from primitives this is ~10 ops forward and ~20 backward, each a pass over the whole
tensor; fused it is one pass (two loops over each row) each way.

Tiers: `layer_norm_forward_reference` / `_backward_reference` index the flat buffers directly and
follow the equations line by line; the fast kernels slice each row out (indexed from 0, no
negative-index check), keep the weight / bias branches outside the loops and let the sums be
reordered, so every loop vectorises.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import math

from .buffers import as_array
from .jit import by_typecode, kernel, vector_kernel
from .tiers import register


@kernel
def layer_norm_forward_reference(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
    """out = layer_norm(x) row by row; mean and rstd (N, float64) are kept for backward."""
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
def layer_norm_backward_reference(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
    """dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) per row, gy = g * w; dw, db (zeroed by
    the caller) accumulate sum g * xhat and sum g over the rows."""
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


# Rows are sliced out of the buffers and indexed from 0, the branches on has_w / has_b sit
# outside the loops, and sums may be reordered (vector_kernel): so every loop vectorises.
@vector_kernel
def layer_norm_forward(x, w, b, has_w, has_b, out, mean, rstd, N, D, eps):
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
def layer_norm_backward(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
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
# The same equations per channel c of an (N, C, L) buffer (L = H*W), over the N*L values of c:
#     y = (x - mean_c) * rstd_c * w_c + b_c
#     dx = rstd_c * (gy - mean(gy) - xhat * mean(gy * xhat)),  gy = g * w_c   (batch statistics)
#     dx = rstd_c * gy                                                          (running statistics)
# One version, registered for both tiers: each (n, c) row of L values is a slice indexed from 0.


@vector_kernel
def batch_norm_stats(x, mean, rstd, N, C, L, eps):
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
def batch_norm_apply(x, mean, rstd, w, b, out, N, C, L):
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
def batch_norm_backward(g, x, mean, rstd, w, batch_stats, dx, dw, db, N, C, L):
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


_FWD, _BWD = "T T T b b T @d @d i i f", "T T T b @d @d T @d @d i i"
_BN = dict(BN_STATS=by_typecode(batch_norm_stats, "T @d @d i i i f"),
           BN_APPLY=by_typecode(batch_norm_apply, "T @d @d @d @d T i i i"),
           BN_BACKWARD=by_typecode(batch_norm_backward, "T T @d @d @d b T @d @d i i i"))
register(globals(),
         reference=dict(FORWARD=by_typecode(layer_norm_forward_reference, _FWD),
                        BACKWARD=by_typecode(layer_norm_backward_reference, _BWD), **_BN),
         fast=dict(FORWARD=by_typecode(layer_norm_forward, _FWD),
                   BACKWARD=by_typecode(layer_norm_backward, _BWD), **_BN))
