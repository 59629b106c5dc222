"""Fused scaled dot-product attention: the FlashAttention algorithm (Dao et al., 2022; Dao, 2023)
in plain loops.

For one batch entry (a head) with queries Q (L, E), keys K (S, E) and values V (S, Ev):

    s[i, j] = scale * q_i . k_j + mask[i, j]        (causal: s[i, j] = -inf for j > i)
    p[i, j] = exp(s[i, j] - lse_i),                  lse_i = log sum_j exp(s[i, j])
    o_i     = sum_j p[i, j] v_j                                                    out (L, Ev)

With dropout (dropout_p > 0), o_i = sum_j p[i, j] z[i, j] v_j, z[i, j] = keep[i, j] / (1 - p):
the softmax (m, l, lse) is the one without dropout. Backward, with g_i = dL/do_i and
D_i = g_i . o_i (which equals sum_j p[i, j] z[i, j] g_i . v_j, dropout included):

    dv_j = sum_i p[i, j] z[i, j] g_i         ds[i, j] = p[i, j] (z[i, j] g_i . v_j - D_i)
    dq_i = scale * sum_j ds[i, j] k_j        dk_j = scale * sum_i ds[i, j] q_i

z is never stored: z[i, j] is a function of the draw's two keys (k1, k2) and of the element's
index (b L + i) S + j (`_dropout_factor`), so the backward draws the same mask again.

Neither s nor p, both (L, S), is ever stored. The forward takes the queries in tiles of BR rows
(outer loop) and the keys in tiles of BC (inner loop), and keeps three running values per query
row: the largest score so far m, the sum so far l = sum_j exp(s_ij - m), and the weighted sum so
far o = sum_j exp(s_ij - m) v_j. When a key tile brings a larger maximum, l and o are rescaled by
exp(m_old - m_new): the online softmax (Milakov and Gimelshein, 2018). After the last tile, o / l
is the output and lse = m + log l is all the backward needs: it recomputes p, tile by tile, as
exp(s - lse). Extra memory: a few tiles, and in the backward D and dq of one head (L numbers
and L x E).

A row whose keys are all masked gets o_i = 0 and lse_i = +inf (so that the backward's p is
exp(s - inf) = 0) and zero gradients, where PyTorch's kernels give NaN.

Buffers: q (nb, L, E), k (nb, S, E), v (nb, S, Ev), out (nb, L, Ev), dq/dk/dv like q/k/v, all
contiguous; lse (nb, L). The mask, when `has_mask`, is a strided view: element (b, i, j) is
mask[m_off + (b // nb1)*m_s0 + (b % nb1)*m_s1 + i*m_sl + j*m_ss] (a batch of (nb0, nb1) entries,
e.g. (B, H); any stride may be 0 for broadcast). The caller validates every shape and stride.
Sums run in float64, so that this file is the oracle the fast backend is held to.
`dropout_mask` writes the mask z itself, (nb, L, S), for the tests and the tour.

Chapter 10 of the tour (docs/10-flash-attention.md) walks through this file.
"""
import math

from . import kernel

__all__ = ["flash_forward", "flash_backward", "dropout_mask"]

# Queries and keys per tile. Any sizes give the same results; small ones make even the tests'
# short sequences span several tiles. (fast/flash.py picks larger ones, for the cache.)
BR = 16
BC = 32

_M32 = 0xFFFFFFFF


@kernel
def _hash32(x):
    """kernels/random.py's 32-bit integer hash of x in [0, 2**32) (a kernel file calls only
    functions of its own file; tests/ops/test_flash_dropout.py holds the two equal)."""
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _M32
    return (x >> 16) ^ x


@kernel
def _dropout_factor(k1, k2, p, idx):
    """z = keep / (1 - p) of element idx of the draw keyed (k1, k2): 0 if u < p, else 1 / (1 - p),
    where u = H(H(lo ^ k1 ^ H(hi)) + k2) / 2^24 with 24 bits of a 32-bit hash H, lo and hi the
    low and high 32 bits of idx. H(0) = 0, so below idx = 2^32 this is the draw of
    kernels/random.py's dropout: the fused kernel drops the weights the composed ops drop."""
    x = _hash32(((idx & _M32) ^ k1 ^ _hash32(idx >> 32)) & _M32)
    u = (_hash32((x + k2) & _M32) >> 8) * (1.0 / 16777216.0)
    return 0.0 if u < p else 1.0 / (1.0 - p)


@kernel
def dropout_mask(k1, k2, dropout_p, out, nb, L, S):
    """out[(b L + i) S + j] = z[b, i, j], the dropout factors of flash_forward (nb, L, S)."""
    for idx in range(nb * L * S):
        out[idx] = _dropout_factor(k1, k2, dropout_p, idx)


@kernel
def _score(q, k, mask, m_row, m_ss, has_mask, causal, scale, qi, kj, i, j, E):
    """s[i, j] = scale * q_i . k_j + mask[i, j], or -inf when causal and j > i. q_i starts at
    q[qi], k_j at k[kj]; mask[i, j] is mask[m_row + j * m_ss]."""
    if causal and j > i:
        return -math.inf
    s = 0.0
    for e in range(E):
        s += float(q[qi + e]) * float(k[kj + e])
    s *= scale
    if has_mask:
        s += mask[m_row + j * m_ss]
    return s


@kernel
def flash_forward(q, k, v, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask, causal, scale,
                  dropout_p, k1, k2, out, lse, nb1, nb, L, S, E, Ev):
    """out (nb, L, Ev) and lse (nb, L) of attention (module docstring): tiles of queries outside,
    tiles of keys inside, an online softmax per query row; dropout_p > 0 drops weights after
    they are summed into l (the draw keyed k1, k2)."""
    s = [0.0] * (BR * BC)       # the scores, then the weights, of one tile pair (BR, BC)
    m = [0.0] * BR              # per query row of the tile: the running maximum m,
    l = [0.0] * BR              # the running sum l = sum_j exp(s_ij - m),
    o = [0.0] * (BR * Ev)       # and the running sum o = sum_j exp(s_ij - m) v_j (BR, Ev)
    for b in range(nb):
        m_base = m_off + (b // nb1) * m_s0 + (b % nb1) * m_s1
        for i0 in range(0, L, BR):                  # the query tile: rows i0 <= i < i0 + rows
            rows = min(BR, L - i0)
            for r in range(rows):
                m[r] = -math.inf
                l[r] = 0.0
                for c in range(Ev):
                    o[r * Ev + c] = 0.0
            # causal: a key tile that starts after the tile's last query is all masked: skipped
            n_keys = min(S, i0 + rows) if causal else S
            for j0 in range(0, n_keys, BC):         # the key tile: keys j0 <= j < j0 + cols
                cols = min(BC, S - j0)
                # 1. the tile's scores  S_t = scale * Q_t K_t^T + mask  (rows, cols)
                for r in range(rows):
                    i = i0 + r
                    for t in range(cols):
                        s[r * BC + t] = _score(q, k, mask, m_base + i * m_sl, m_ss, has_mask,
                                               causal, scale, (b * L + i) * E,
                                               (b * S + j0 + t) * E, i, j0 + t, E)
                # 2. per row: the new maximum, the rescale of l and o, the tile's weights
                for r in range(rows):
                    m_new = m[r]
                    for t in range(cols):
                        m_new = max(m_new, s[r * BC + t])
                    if m_new == -math.inf:          # every key so far masked: nothing to add
                        for t in range(cols):
                            s[r * BC + t] = 0.0
                        continue
                    alpha = math.exp(m[r] - m_new)  # e^(-inf) = 0 while nothing is summed
                    l[r] *= alpha
                    for c in range(Ev):
                        o[r * Ev + c] *= alpha
                    for t in range(cols):
                        s[r * BC + t] = math.exp(s[r * BC + t] - m_new)
                        l[r] += s[r * BC + t]
                    m[r] = m_new
                # 3. o += P_t V_t  (rows, cols) @ (cols, Ev), dropout on P_t (not on l)
                for r in range(rows):
                    for t in range(cols):
                        p = s[r * BC + t]
                        if dropout_p > 0.0:
                            p *= _dropout_factor(k1, k2, dropout_p, (b * L + i0 + r) * S + j0 + t)
                        for c in range(Ev):
                            o[r * Ev + c] += p * v[(b * S + j0 + t) * Ev + c]
            # every key tile done: out = o / l, lse = m + log l
            for r in range(rows):
                i = b * L + i0 + r
                if l[r] == 0.0:                     # every key masked: output 0, lse +inf
                    for c in range(Ev):
                        out[i * Ev + c] = 0.0
                    lse[i] = math.inf
                    continue
                for c in range(Ev):
                    out[i * Ev + c] = o[r * Ev + c] / l[r]
                lse[i] = m[r] + math.log(l[r])


@kernel
def flash_backward(q, k, v, out, dout, lse, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask,
                   causal, scale, dropout_p, k1, k2, dq, dk, dv, nb1, nb, L, S, E, Ev):
    """dq, dk, dv (overwritten) of attention (module docstring), dout = dL/dout: tiles of keys
    outside, tiles of queries inside (FlashAttention-2's order), p recomputed from lse."""
    p = [0.0] * (BR * BC)       # the weights of one tile pair, recomputed (BR, BC)
    ds = [0.0] * (BR * BC)      # their gradient dS (BR, BC)
    z = [1.0] * (BR * BC)       # their dropout factors (1.0: no dropout)
    dk_t = [0.0] * (BC * E)     # dK and dV of one key tile, summed over the query tiles
    dv_t = [0.0] * (BC * Ev)
    d = [0.0] * L               # D_i = g_i . o_i of one head
    dq_h = [0.0] * (L * E)      # dQ / scale of one head, summed over the key tiles
    for b in range(nb):
        m_base = m_off + (b // nb1) * m_s0 + (b % nb1) * m_s1
        for i in range(L):
            d[i] = 0.0
            for c in range(Ev):
                d[i] += float(dout[(b * L + i) * Ev + c]) * float(out[(b * L + i) * Ev + c])
            for e in range(E):
                dq_h[i * E + e] = 0.0
        for j0 in range(0, S, BC):                  # the key tile: keys j0 <= j < j0 + cols
            cols = min(BC, S - j0)
            for t in range(cols * E):
                dk_t[t] = 0.0
            for t in range(cols * Ev):
                dv_t[t] = 0.0
            # causal: a query tile that ends before key j0 sees none of the tile: skipped
            i_first = j0 // BR * BR if causal else 0
            for i0 in range(i_first, L, BR):        # the query tile: rows i0 <= i < i0 + rows
                rows = min(BR, L - i0)
                # P_t = exp(S_t - lse): the forward's weights again (0 where masked)
                for r in range(rows):
                    i = i0 + r
                    for t in range(cols):
                        p[r * BC + t] = math.exp(
                            _score(q, k, mask, m_base + i * m_sl, m_ss, has_mask, causal, scale,
                                   (b * L + i) * E, (b * S + j0 + t) * E, i, j0 + t, E)
                            - lse[b * L + i])
                        if dropout_p > 0.0:         # the forward's dropout mask, drawn again
                            z[r * BC + t] = _dropout_factor(k1, k2, dropout_p,
                                                            (b * L + i) * S + j0 + t)
                # dV_t += (P_t Z_t)^T dO_t  (cols, rows) @ (rows, Ev)
                for r in range(rows):
                    for t in range(cols):
                        p_rt = p[r * BC + t] * z[r * BC + t]
                        for c in range(Ev):
                            dv_t[t * Ev + c] += p_rt * dout[(b * L + i0 + r) * Ev + c]
                # dS_t = P_t * (Z_t dP_t - D),  dP_t = dO_t V_t^T  (rows, Ev) @ (Ev, cols)
                for r in range(rows):
                    for t in range(cols):
                        dp = 0.0
                        for c in range(Ev):
                            dp += (float(dout[(b * L + i0 + r) * Ev + c])
                                   * float(v[(b * S + j0 + t) * Ev + c]))
                        ds[r * BC + t] = p[r * BC + t] * (dp * z[r * BC + t] - d[i0 + r])
                # dQ_t += dS_t K_t  and  dK_t += dS_t^T Q_t  (the factor scale comes at the end)
                for r in range(rows):
                    for t in range(cols):
                        ds_rt = ds[r * BC + t]
                        for e in range(E):
                            dq_h[(i0 + r) * E + e] += ds_rt * k[(b * S + j0 + t) * E + e]
                            dk_t[t * E + e] += ds_rt * q[(b * L + i0 + r) * E + e]
            for t in range(cols):
                j = b * S + j0 + t
                for e in range(E):
                    dk[j * E + e] = dk_t[t * E + e] * scale
                for c in range(Ev):
                    dv[j * Ev + c] = dv_t[t * Ev + c]
        for i in range(L):
            for e in range(E):
                dq[(b * L + i) * E + e] = dq_h[i * E + e] * scale
