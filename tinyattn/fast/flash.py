"""Fused scaled dot-product attention, fast: kernels/flash.py's algorithm, tiled for the cache,
on the matmul micro-kernel, on all cores.

The equations, the buffer layout, the rules for masked rows (o_i = 0, lse_i = +inf, zero
gradients) and the algorithm (query tiles outside, key tiles inside, a running maximum m and sum
l per row, rescaled by exp(m_old - m_new); a backward that recomputes p from lse with key tiles
outside) are those of kernels/flash.py. What is different here:

1. Tiles of BR x BC (shrunk for short sequences, `block_sizes`). The scores of a tile pair,
   Q_t K_t^T, and its output product P_t V_t are small matmuls on the register-tiled micro-kernel
   of matmul.py (`_tile_mm`), with K^T and V packed once per head (`_pack_strips`, `_pack_head`)
   so that the micro-kernel reads contiguous 16-wide rows. Sums run in the buffers' precision.
2. Lazy rescaling (FlashAttention-4's conditional rescaling): the shift m need not be the true
   maximum, only close enough that e^(s_j - m) cannot overflow. After a row's first tile, a tile
   is exponentiated with the old m in the same pass that finds its maximum (`_exp_row`), and m
   moves (with the rescale) only when a score exceeds it by more than LAZY_RESCALE: one pass
   over the scores instead of two (measured: benchmarks/RESULTS.md, LAZY_RESCALE).
3. Vector loops: the exponentials are exp.py's arithmetic exp (float32 rows in float32 lanes),
   the row maximum an integer maximum over order-preserving keys (`row_key`).
4. Causal masks skip every key tile above the diagonal, as the reference does, and the forward
   computes a query tile's last key tile only up to its last visible key (rounded up to 16).
5. Backward: five micro-kernel matmuls per tile pair: S = Q K^T, dV += P^T dO, dP = dO V^T,
   dK += dS^T Q, dQ += dS K; dQ of a head accumulates in a per-head buffer.
6. Threads: the forward shares (head, query tile) units among the cores, the backward whole heads.
7. Dropout: the reference's factors z (`_dropout_factor`, its hash pasted here), a row at a time
   (`_dropout_row`): in the forward on a tile's p after its row sums, before P V; the backward
   keeps P Z beside P (one more tile) for dV += (P Z)^T dO and dS = P Z dP - P D.

Chapter 10 of the tour (docs/10-flash-attention.md) walks through kernels/flash.py, then this file.
"""
import array
import math
import threading

import numba

from . import threads
from .buffers import as_array
from .exp import exp_below_88, from_row_key, like, row_key
from ..kernels import flash as reference
from .jit import cached, inline, out_of_line, pasted, vector_kernel
from .matmul import MR, NR, _micro, tile_strips

__all__ = ["flash_forward", "flash_backward", "dropout_mask"]

# Tile sizes: a BR x BC tile of scores (32 KiB in fp32 at 64 x 128) and the BR x E tile of Q
# stay in L1/L2 while the micro-kernel runs over them. Multiples of MR (8) and NR (16).
# (measured: benchmarks/RESULTS.md, BR, BC)
BR = 64
BC = 128

# How far a score may exceed the row's shift m before m must move: the weights e^(s - m) stay
# <= e^16 ~ 9e6, so neither l nor o can overflow float32 (3.4e38) for any realistic S and |v|.
LAZY_RESCALE = 16.0


def _up(n, m):
    return (n + m - 1) // m * m


def block_sizes(L, S):
    """(br, bc): BR x BC, shrunk for short sequences so that a block is not mostly padding."""
    return min(BR, _up(max(L, 1), MR)), min(BC, _up(max(S, 1), NR))


@cached(nogil=True, error_model="numpy", fastmath={"contract"})
def _tile_mm(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, M, N, accumulate):
    """C[:M, :N] (+)= A[:M, :kc] @ B[:kc, :N] with the micro-kernel of matmul.py; M a multiple of
    MR, N of NR. A[i, p] = a[a_pos + i*a_rs + p*a_ps], C[i, j] = c[c_pos + i*c_rs + j], and B in
    16-wide strips: B[p, s*NR + t] = b[b_pos + s*b_ss + p*b_ps + t] (a row-major B has b_ss = NR;
    a packed one b_ps = NR, b_ss = NR * kc). Every element must be in bounds (nothing is checked).
    A function of its own on every CPU (`out_of_line`): whether LLVM inlines it depends on its
    cost model for the target CPU, and inlined into the forward and backward it ran slower
    (measured: benchmarks/RESULTS.md, _tile_mm); the five matmuls of the backward share one copy."""
    out_of_line()
    tw = NR * tile_strips(c)                 # a tile's columns: 16, or 32 (two strips)
    for j in range(0, N, tw):                # a 16- or 32-wide strip of B stays in L1 ...
        b_strip = b_pos + (j // NR) * b_ss
        wide = N - j > NR
        for i in range(0, M, MR):            # ... while the row strips of A pass over it
            _micro(a, a_pos + i * a_rs, a_rs, a_ps, b, b_strip, b_ss, b_ps, kc,
                   c, c_pos + i * c_rs + j, c_rs, wide, accumulate)


@inline
def _visible(S, j0, bc, gi, causal):
    """How many keys of the block starting at key j0 query gi may see: the block's real keys
    (not padding), and with a causal mask only those at positions <= gi (<= 0: none)."""
    nv = min(bc, S - j0)
    if causal:
        nv = min(nv, gi - j0 + 1)
    return nv


@vector_kernel
def _online_row(srow, nv, n, scale, mk, m_pos, m_ss, has_mask, m_old):
    """One row of a block pair in the forward: raw scores q_i . k_j in srow[:nv] become
    p_j = exp(s_j - m_new), s_j = scale * srow[j] + mask_j, with m_new = max(m_old, max_j s_j);
    srow[nv:n] = 0. Returns (m_new, sum_j p_j); (-inf, 0) when every s_j so far is -inf."""
    sc = scale
    if has_mask or scale <= 0.0:        # s_j must be formed (and stored) before its maximum
        sc = 1.0
        s_row = like(scale, srow)
        if has_mask:
            for j in range(nv):
                srow[j] = srow[j] * s_row + mk[m_pos + j * m_ss]
        else:
            for j in range(nv):
                srow[j] = srow[j] * s_row
    # max_j s_j = scale * max_j srow[j] (scale > 0), as a vectorised integer maximum (exp.py)
    key = row_key(like(-math.inf, srow))
    for j in range(nv):
        key = max(key, row_key(srow[j]))
    top = float(from_row_key(key))
    m_new = max(m_old, top * sc)
    total = 0.0
    if m_new == -math.inf:
        for j in range(n):
            srow[j] = 0.0
        return m_new, total
    total, _ = _exp_row(srow, nv, n, sc, mk, m_pos, m_ss, False, m_new, False)
    return m_new, total


@vector_kernel
def _exp_row(srow, nv, n, scale, mk, m_pos, m_ss, has_mask, shift, want_max):
    """srow[j] = e^(s_j - shift) with s_j = scale * srow[j] (+ mask_j if has_mask) for j < nv,
    0 for nv <= j < n; returns (sum_j e^(s_j - shift), max_j s_j if want_max else -inf), in the
    row's own precision (exp.py's `like`, `row_key`, `exp_below_88`). s_j - shift must stay
    below 88. Three uses: the forward's block after the maximum is known (`_online_row`); the
    forward's lazy pass, which keeps an old shift and checks max_j s_j - shift <= LAZY_RESCALE
    afterwards (else the scores are recomputed by `_row_scores`); the backward's p = e^(s - lse)
    without a mask (`_probs_row`). has_mask and want_max hold for the whole loop: LLVM compiles
    one loop per case."""
    sc = like(scale, srow)
    sh = like(shift, srow)
    total = like(0.0, srow)
    key = row_key(like(-math.inf, srow))
    for j in range(nv):
        x = srow[j] * sc
        if has_mask:
            x += mk[m_pos + j * m_ss]
        if want_max:
            key = max(key, row_key(x))
        e = exp_below_88(x - sh)
        srow[j] = e
        total += e
    for j in range(nv, n):
        srow[j] = 0.0
    return float(total), float(from_row_key(key))


@cached(nogil=True, error_model="numpy", fastmath={"contract"})
def _row_scores(a, a_pos, kt, kt_pos, E, srow, n):
    """srow[j] = q . k_j for the n keys of a block: q = a[a_pos:a_pos+E], k_j from K^T in the
    16-wide strips of `_pack_strips` starting at kt_pos. The scores of one row again, for the
    rare block whose maximum is far above the row's shift (its exps overwrote them): summed in
    the same order, precision and fused multiply-adds as the micro-kernel, so the same numbers."""
    for j in range(n):
        base = kt_pos + (j // NR) * NR * E + j % NR
        acc = like(0.0, srow)
        for e in range(E):
            acc += a[a_pos + e] * kt[base + e * NR]
        srow[j] = acc


@vector_kernel
def _probs_row(srow, nv, n, scale, mk, m_pos, m_ss, has_mask, lse):
    """One row of a block pair in the backward: srow[j] = exp(scale * srow[j] + mask_j - lse)
    for j < nv (the forward's weights, recomputed), 0 for nv <= j < n. With a mask, a loop of
    its own: inside `_exp_row` the same work ran slower (measured: benchmarks/RESULTS.md,
    _probs_row)."""
    if not has_mask:
        _exp_row(srow, nv, n, scale, mk, m_pos, m_ss, False, lse, False)
        return
    sc = like(scale, srow)
    sh = like(lse, srow)
    for j in range(nv):
        srow[j] = exp_below_88(srow[j] * sc + mk[m_pos + j * m_ss] - sh)
    for j in range(nv, n):
        srow[j] = 0.0


_hash32 = pasted(reference._hash32)


@vector_kernel
def _dropout_row(row, n, idx0, k1, k2, p):
    """row[j] *= z(idx0 + j) for j < n, z the reference's `_dropout_factor` (0 if u < p, else
    1 / (1 - p)), with u < p as the integer test h < ceil(p 2^24) on u's 24 bits h. The hash of
    the index's high half is taken once per row for the two halves a row can span (its first
    index's, and the next one's from `edge` on): one loop, which LLVM vectorises."""
    factor = like(1.0 / (1.0 - p) if p < 1.0 else 0.0, row)
    zero = like(0.0, row)
    thr = int(math.ceil(p * 16777216.0))
    hi = idx0 >> 32
    hk0 = (k1 ^ _hash32(hi)) & 0xFFFFFFFF
    hk1 = (k1 ^ _hash32(hi + 1)) & 0xFFFFFFFF
    edge = ((hi + 1) << 32) - idx0                  # the first j whose index has high half hi + 1
    for j in range(n):
        x = _hash32(((idx0 + j) & 0xFFFFFFFF) ^ (hk0 if j < edge else hk1))
        row[j] = row[j] * (zero if (_hash32((x + k2) & 0xFFFFFFFF) >> 8) < thr else factor)


@cached(nogil=True, error_model="numpy")
def _mask_rows(k1, k2, p, out, rows, S):
    """out (rows, S) = the dropout factors z of elements 0 .. rows S - 1."""
    O = as_array(out)
    for r in range(rows):
        row = O[r * S:(r + 1) * S]
        for j in range(S):
            row[j] = 1.0
        _dropout_row(row, S, r * S, k1, k2, p)


def dropout_mask(k1, k2, dropout_p, out, nb, L, S):
    """out[(b L + i) S + j] = z[b, i, j], the dropout factors of flash_forward (nb, L, S)."""
    _mask_rows(k1, k2, dropout_p, out, nb * L, S)


@vector_kernel
def _scale_row(row, n, alpha):
    for c in range(n):
        row[c] *= alpha


@vector_kernel
def _pack_head(src, pos, rows, cols, dst, d_pos, d_rows, d_cols, transpose):
    """dst (d_rows, d_cols) = src[pos:] (rows, cols) zero-padded, or its transpose (d_rows >= cols,
    d_cols >= rows) when `transpose`."""
    for t in range(d_rows * d_cols):
        dst[d_pos + t] = 0.0
    if transpose:
        for r in range(rows):
            for c in range(cols):
                dst[d_pos + c * d_cols + r] = src[pos + r * cols + c]
    else:
        for r in range(rows):
            d_row = dst[d_pos + r * d_cols:d_pos + r * d_cols + cols]
            s_row = src[pos + r * cols:pos + (r + 1) * cols]
            for c in range(cols):
                d_row[c] = s_row[c]


@vector_kernel
def _pack_strips(src, pos, rows, cols, dst, d_pos, d_rows):
    """The transpose of src[pos:] (rows, cols) in 16-wide strips, the layout the micro-kernel
    reads best: dst[d_pos + t*NR*cols + c*NR + u] = src[pos + (t*NR + u)*cols + c], zero for
    rows <= t*NR + u < d_rows (a multiple of NR). Row r of src becomes column r of the result;
    the rows of a strip are NR floats apart (not d_rows: no 4 KiB aliasing of long rows)."""
    for t in range(d_rows * cols):
        dst[d_pos + t] = 0.0
    for r in range(rows):
        base = d_pos + (r // NR) * NR * cols + r % NR
        for c in range(cols):
            dst[base + c * NR] = src[pos + r * cols + c]


def forward_scratch_size(L, S, E, Ev, br, bc):
    return E * _up(S, bc) + _up(S, bc) * _up(Ev, NR) + br * E + br * bc + br * _up(Ev, NR) + 2 * br


@cached(nogil=True, error_model="numpy")
def _forward_units(q, k, v, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask, causal, scale,
                   dropout_p, k1, k2, out, lse, nb1, L, S, E, Ev, br, bc, u0, u1, scratch):
    """Units u0 <= u < u1 of the forward: unit u is query block (u % nqb) of head u // nqb."""
    Q = as_array(q)
    K = as_array(k)
    V = as_array(v)
    Mk = as_array(mask)
    O = as_array(out)
    LSE = as_array(lse)
    W = as_array(scratch)
    Sp = (S + bc - 1) // bc * bc
    Evp = (Ev + NR - 1) // NR * NR
    kt = 0                       # K^T of the head in 16-wide strips (E, Sp), zero-padded
    vp = kt + E * Sp             # V of the head (Sp, Evp), zero-padded
    qb = vp + Sp * Evp           # a short last block of Q, zero-padded (br, E)
    sb = qb + br * E             # scores, then p, of one block pair (br, bc)
    ob = sb + br * bc            # the block's output accumulator (br, Evp)
    mr = ob + br * Evp           # running maximum per row (br,)
    lr = mr + br                 # running normaliser per row (br,)
    nqb = (L + br - 1) // br
    head = -1
    for u in range(u0, u1):
        b = u // nqb
        i0 = (u - b * nqb) * br
        rows = min(br, L - i0)
        if b != head:            # pack K^T and V once per head
            head = b
            _pack_strips(K, b * S * E, S, E, W, kt, Sp)
            _pack_head(V, b * S * Ev, S, Ev, W, vp, Sp, Evp, False)
        if rows == br:           # read Q in place
            a_src, a_pos = Q, (b * L + i0) * E
        else:
            _pack_head(Q, (b * L + i0) * E, rows, E, W, qb, br, E, False)
            a_src, a_pos = W, qb
        for t in range(br * Evp):
            W[ob + t] = 0.0
        for i in range(br):
            W[mr + i] = -math.inf
            W[lr + i] = 0.0
        m_base = m_off + (b // nb1) * m_s0 + (b % nb1) * m_s1
        n_keys = min(S, i0 + rows) if causal else S     # causal: no key beyond the last row
        for j0 in range(0, n_keys, bc):
            # Only the block's columns up to its last visible key (rounded up to the tile's 16):
            # the last block of a causal row, or of a sequence that is not a multiple of bc
            # (measured: benchmarks/RESULTS.md, nc).
            nc = min(bc, (n_keys - j0 + NR - 1) // NR * NR)
            # scores of the block pair: (br, E) @ (E, nc)
            _tile_mm(a_src, a_pos, E, 1, W, kt + j0 * E, NR * E, NR, E, W, sb, bc, br, nc, False)
            for i in range(br):
                srow = W[sb + i * bc:sb + (i + 1) * bc]
                gi = i0 + i
                nv = _visible(S, j0, bc, gi, causal)
                if i >= rows or nv <= 0:    # padding row, or no key of this block is visible
                    for j in range(nc):
                        srow[j] = 0.0
                    continue
                m_old = W[mr + i]
                m_pos = m_base + gi * m_sl + j0 * m_ss
                if m_old > -math.inf:       # lazy: exponentiate with the old shift, one pass
                    l_blk, top = _exp_row(srow, nv, nc, scale, Mk, m_pos, m_ss, has_mask,
                                          m_old, True)
                    if top <= m_old + LAZY_RESCALE:     # (False for NaN: the general path)
                        W[lr + i] += l_blk
                        continue
                    _row_scores(a_src, a_pos + i * E, W, kt + j0 * E, E, srow, nc)
                m_new, l_blk = _online_row(srow, nv, nc, scale, Mk, m_pos, m_ss, has_mask,
                                           m_old)
                if m_new == -math.inf:      # all keys so far masked
                    continue
                if m_new != m_old:          # a larger maximum: rescale what was summed so far
                    alpha = math.exp(m_old - m_new)
                    W[lr + i] *= alpha
                    _scale_row(W[ob + i * Evp:ob + (i + 1) * Evp], Evp, alpha)
                W[lr + i] += l_blk
                W[mr + i] = m_new
            if dropout_p > 0.0:             # p Z: after the row sums, before p @ V
                for i in range(rows):
                    _dropout_row(W[sb + i * bc:sb + (i + 1) * bc], nc, (b * L + i0 + i) * S + j0,
                                 k1, k2, dropout_p)
            # output accumulator += p @ V_blk: (br, nc) @ (nc, Evp)
            _tile_mm(W, sb, bc, 1, W, vp + j0 * Evp, NR, Evp, nc, W, ob, Evp, br, Evp, True)
        for i in range(rows):
            o = (b * L + i0 + i) * Ev
            total = W[lr + i]
            if total == 0.0:                # every key masked
                for c in range(Ev):
                    O[o + c] = 0.0
                LSE[b * L + i0 + i] = math.inf
                continue
            inv = 1.0 / total
            for c in range(Ev):
                O[o + c] = W[ob + i * Evp + c] * inv
            LSE[b * L + i0 + i] = W[mr + i] + math.log(total)


def backward_scratch_size(L, S, E, Ev, br, bc):
    Lp, Sp, Ep, Evp = _up(L, br), _up(S, bc), _up(E, NR), _up(Ev, NR)
    return (2 * Lp * Ep + Sp * Ep + E * Sp + Ev * Sp + Lp * Evp + 2 * Lp + 3 * br * bc
            + bc * Ep + bc * Evp)


@cached(nogil=True, error_model="numpy")
def _backward_heads(q, k, v, out, dout, lse, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask,
                    causal, scale, dropout_p, k1, k2, dq, dk, dv, nb1, L, S, E, Ev, br, bc, b0,
                    b1, scratch):
    """Heads b0 <= b < b1 of the backward."""
    Q = as_array(q)
    K = as_array(k)
    V = as_array(v)
    O = as_array(out)
    G = as_array(dout)
    LSE = as_array(lse)
    Mk = as_array(mask)
    DQ = as_array(dq)
    DK = as_array(dk)
    DV = as_array(dv)
    W = as_array(scratch)
    Lp = (L + br - 1) // br * br
    Sp = (S + bc - 1) // bc * bc
    Ep = (E + NR - 1) // NR * NR
    Evp = (Ev + NR - 1) // NR * NR
    qp = 0                       # Q (Lp, Ep)
    dqp = qp + Lp * Ep           # dQ accumulator (Lp, Ep)
    kp = dqp + Lp * Ep           # K (Sp, Ep)
    kt = kp + Sp * Ep            # K^T in strips (E, Sp)
    vt = kt + E * Sp             # V^T in strips (Ev, Sp)
    gp = vt + Ev * Sp            # dO (Lp, Evp)
    lp = gp + Lp * Evp           # lse (Lp,), +inf on padding rows
    dd = lp + Lp                 # D_i = dO_i . O_i (Lp,)
    pb = dd + Lp                 # p of one block pair (br, bc)
    sb = pb + br * bc            # dP, then dS (br, bc)
    dkb = sb + br * bc           # dK of one key block (bc, Ep)
    dvb = dkb + bc * Ep          # dV of one key block (bc, Evp)
    zb = dvb + bc * Evp          # with dropout: P Z of one block pair (br, bc)
    pz = zb if dropout_p > 0.0 else pb
    for b in range(b0, b1):
        _pack_head(Q, b * L * E, L, E, W, qp, Lp, Ep, False)
        _pack_head(K, b * S * E, S, E, W, kp, Sp, Ep, False)
        _pack_strips(K, b * S * E, S, E, W, kt, Sp)
        _pack_strips(V, b * S * Ev, S, Ev, W, vt, Sp)
        _pack_head(G, b * L * Ev, L, Ev, W, gp, Lp, Evp, False)
        for t in range(Lp * Ep):
            W[dqp + t] = 0.0
        for i in range(Lp):
            if i < L:
                W[lp + i] = LSE[b * L + i]
                acc = 0.0
                for c in range(Ev):
                    acc += G[(b * L + i) * Ev + c] * O[(b * L + i) * Ev + c]
                W[dd + i] = acc
            else:
                W[lp + i] = math.inf
                W[dd + i] = 0.0
        m_base = m_off + (b // nb1) * m_s0 + (b % nb1) * m_s1
        for j0 in range(0, S, bc):
            for t in range(bc * Ep):
                W[dkb + t] = 0.0
            for t in range(bc * Evp):
                W[dvb + t] = 0.0
            # causal: rows above j0 see none of these keys
            i_first = (j0 // br) * br if causal else 0
            for i0 in range(i_first, L, br):
                # p = exp(scale * Q K^T + mask - lse), recomputed: (br, E) @ (E, bc)
                _tile_mm(W, qp + i0 * Ep, Ep, 1, W, kt + j0 * E, NR * E, NR, E, W, pb, bc, br, bc,
                         False)
                for i in range(br):
                    prow = W[pb + i * bc:pb + (i + 1) * bc]
                    gi = i0 + i
                    nv = _visible(S, j0, bc, gi, causal)
                    if gi >= L or nv <= 0:
                        for j in range(bc):
                            prow[j] = 0.0
                        continue
                    _probs_row(prow, nv, bc, scale, Mk, m_base + gi * m_sl + j0 * m_ss, m_ss,
                               has_mask, W[lp + gi])
                if dropout_p > 0.0:         # P Z, the forward's dropout mask drawn again
                    for i in range(br):
                        zrow = W[zb + i * bc:zb + (i + 1) * bc]
                        zrow[:] = W[pb + i * bc:pb + (i + 1) * bc]
                        _dropout_row(zrow, bc, (b * L + i0 + i) * S + j0, k1, k2, dropout_p)
                # dV_blk += (P Z)^T dO: (bc, br) @ (br, Evp)
                _tile_mm(W, pz, 1, bc, W, gp + i0 * Evp, NR, Evp, br, W, dvb, Evp, bc, Evp, True)
                # dP = dO V^T: (br, Ev) @ (Ev, bc)
                _tile_mm(W, gp + i0 * Evp, Evp, 1, W, vt + j0 * Ev, NR * Ev, NR, Ev, W, sb, bc, br,
                         bc, False)
                # dS = P * (dP - D), with dropout P Z dP - P D
                for i in range(br):
                    d_i = W[dd + i0 + i]
                    prow = W[pb + i * bc:pb + (i + 1) * bc]
                    srow = W[sb + i * bc:sb + (i + 1) * bc]
                    if dropout_p > 0.0:
                        zrow = W[zb + i * bc:zb + (i + 1) * bc]
                        for j in range(bc):
                            srow[j] = zrow[j] * srow[j] - prow[j] * d_i
                    else:
                        for j in range(bc):
                            srow[j] = prow[j] * (srow[j] - d_i)
                # dK_blk += dS^T Q: (bc, br) @ (br, Ep)
                _tile_mm(W, sb, 1, bc, W, qp + i0 * Ep, NR, Ep, br, W, dkb, Ep, bc, Ep, True)
                # dQ += dS K_blk: (br, bc) @ (bc, Ep)
                _tile_mm(W, sb, bc, 1, W, kp + j0 * Ep, NR, Ep, bc, W, dqp + i0 * Ep, Ep, br, Ep,
                         True)
            for j in range(min(bc, S - j0)):
                r = (b * S + j0 + j)
                for e in range(E):
                    DK[r * E + e] = W[dkb + j * Ep + e] * scale
                for c in range(Ev):
                    DV[r * Ev + c] = W[dvb + j * Evp + c]
        for i in range(L):
            for e in range(E):
                DQ[(b * L + i) * E + e] = W[dqp + i * Ep + e] * scale


_compiled = {}
_compile_lock = threading.Lock()


def _kernel(backward, typecode):
    """The forward's (or the backward's) machine code for typecode, called without numba's
    argument dispatch. Each is compiled when it is first called, not both at the first forward:
    on a first run the compile-ahead process (ahead.py) can compile the backward meanwhile."""
    got = _compiled.get((backward, typecode))
    if got is not None:
        return got
    with _compile_lock:
        if (backward, typecode) not in _compiled:
            fn = _backward_heads if backward else _forward_units
            if not numba.config.DISABLE_JIT:
                buf = numba.typeof(array.array(typecode))
                i, f, bl = numba.int64, numba.float64, numba.boolean
                if backward:
                    sig = (buf, buf, buf, buf, buf, buf, buf, i, i, i, i, i, bl, bl, f, f, i, i,
                           buf, buf, buf, i, i, i, i, i, i, i, i, i, buf)
                else:
                    sig = (buf, buf, buf, buf, i, i, i, i, i, bl, bl, f, f, i, i, buf, buf,
                           i, i, i, i, i, i, i, i, i, buf)
                fn = fn.compile(sig)
            _compiled[backward, typecode] = fn
    return _compiled[backward, typecode]


def _scratch(typecode, n):
    return array.array(typecode, bytes(n * array.array(typecode).itemsize))


def flash_forward(q, k, v, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask, causal, scale,
                  dropout_p, k1, k2, out, lse, nb1, nb, L, S, E, Ev):
    """out (nb, L, Ev) and lse (nb, L) of attention (module docstring), tiled, on all cores."""
    typecode = q.typecode
    fwd = _kernel(False, typecode)
    br, bc = block_sizes(L, S)
    size = forward_scratch_size(L, S, E, Ev, br, bc)
    units = nb * ((L + br - 1) // br)

    def run(u0, u1):
        fwd(q, k, v, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask, causal, scale,
            dropout_p, k1, k2, out, lse, nb1, L, S, E, Ev, br, bc, u0, u1,
            _scratch(typecode, size))

    threads.parallel_for(run, units)


def flash_backward(q, k, v, out, dout, lse, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask,
                   causal, scale, dropout_p, k1, k2, dq, dk, dv, nb1, nb, L, S, E, Ev):
    """dq, dk, dv of attention (module docstring), tiled, heads shared among the cores."""
    typecode = q.typecode
    bwd = _kernel(True, typecode)
    br, bc = block_sizes(L, S)
    size = backward_scratch_size(L, S, E, Ev, br, bc)

    def run(b0, b1):
        bwd(q, k, v, out, dout, lse, mask, m_off, m_s0, m_s1, m_sl, m_ss, has_mask,
            causal, scale, dropout_p, k1, k2, dq, dk, dv, nb1, L, S, E, Ev, br, bc, b0, b1,
            _scratch(typecode, size))

    threads.parallel_for(run, nb)
