"""The GRU: one step for a batch (a cell), and a layer's whole recurrence over a sequence.

With gi = x W_ih^T and gh = h W_hh^T, both (B, 3H) with the gates in PyTorch's order r | z | n,
and the biases b_ih, b_hh (3H), unit j of row b computes

    r  = sigmoid(gi_r + b_ir + gh_r + b_hr)                 reset gate
    z  = sigmoid(gi_z + b_iz + gh_z + b_hz)                 update gate
    n  = tanh(gi_n + b_in + r * (gh_n + b_hn))              candidate state
    h' = (1 - z) * n + z * h

and keeps r, z, n and gh_n + b_hn in ws (rows of 4H: r | z | n | gh_n + b_hn) for the backward.
Given dL/dh' = `total` (the upstream gradient plus what flows back from later steps):

    dz_ = total * (h - n) * z (1 - z)       dn_ = total * (1 - z) * (1 - n^2)
    dr_ = dn_ * (gh_n + b_hn) * r (1 - r)
    dgi = (dr_, dz_, dn_)      dgh = (dr_, dz_, dn_ * r)      dh = total * z  (the direct path)

and dL/dh also gets dgh @ W_hh, the path through the recurrent product. Buffers are packed, row
b of a (B, X) one at b*X; the sequence functions' (T, B, X) ones at (t*B + b)*X. A sequence has
a length per row (`lengths`, when `has_lengths`): at t >= lengths[b] row b keeps its state
(h' = h, ws = 0) and passes its gradient straight through. A GRU without biases gets zeros.
"""
import math

from . import kernel

__all__ = ["gru_cell_forward", "gru_cell_backward", "gru_sequence_forward",
           "gru_sequence_backward", "bi_gru_sequence_forward", "bi_gru_sequence_backward"]


@kernel
def _sigmoid(x):
    """1 / (1 + exp(-x)), written so that exp never overflows."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@kernel
def _unit_forward(a_r, a_z, x_n, g_n, h, out, o, ws, w, H):
    """out[o] = h' of one unit from its pre-activations a_r, a_z (r's and z's sums), x_n = gi_n +
    b_in and g_n = gh_n + b_hn; r, z, n, g_n go to ws[w], ws[w + H], ws[w + 2H], ws[w + 3H]."""
    r = _sigmoid(a_r)
    z = _sigmoid(a_z)
    n = math.tanh(x_n + r * g_n)
    ws[w], ws[w + H], ws[w + 2 * H], ws[w + 3 * H] = r, z, n, g_n
    out[o] = (1.0 - z) * n + z * h


@kernel
def _unit_backward(total, h, ws, w, dgi, dgh, d, H):
    """dgi[d + kH], dgh[d + kH] (k < 3) of one unit given total = dL/dh'; returns total * z."""
    r, z, n, g_n = ws[w], ws[w + H], ws[w + 2 * H], ws[w + 3 * H]
    dz = total * (h - n) * z * (1.0 - z)
    dn = total * (1.0 - z) * (1.0 - n * n)
    dr = dn * g_n * r * (1.0 - r)
    dgi[d], dgi[d + H], dgi[d + 2 * H] = dr, dz, dn
    dgh[d], dgh[d + H], dgh[d + 2 * H] = dr, dz, dn * r
    return total * z


@kernel
def gru_cell_forward(gi, gh, h, b_ih, b_hh, out, ws, B, H):
    """out (B, H) = h' from gi, gh (B, 3H), h (B, H); ws (B, 4H) saved for the backward."""
    for b in range(B):
        for j in range(H):
            p = b * 3 * H + j
            _unit_forward(gi[p] + b_ih[j] + gh[p] + b_hh[j],
                          gi[p + H] + b_ih[H + j] + gh[p + H] + b_hh[H + j],
                          gi[p + 2 * H] + b_ih[2 * H + j], gh[p + 2 * H] + b_hh[2 * H + j],
                          h[b * H + j], out, b * H + j, ws, b * 4 * H + j, H)


@kernel
def gru_cell_backward(g, h, ws, dh, dgi, dgh, B, H):
    """dgi, dgh (B, 3H) from g = dL/dh' (B, H), h and ws of the forward; dh (B, H) += the
    gradient along the direct path, g * z (the caller adds dgh @ W_hh)."""
    for b in range(B):
        for j in range(H):
            dh[b * H + j] += _unit_backward(g[b * H + j], h[b * H + j], ws, b * 4 * H + j,
                                            dgi, dgh, b * 3 * H + j, H)


@kernel
def gru_sequence_forward(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse,
                         hs, ws, T, B, H):
    """The T steps of one layer in one direction (t = T-1 .. 0 when `reverse`): hs (T, B, H) the
    states, ws (T, B, 4H), from gi (T, B, 3H) = x W_ih^T, the entering state h0 (B, H, at
    h0_off) and w_hh (3H, H). Each step's gh = h W_hh^T is summed where a unit needs it."""
    for s in range(T):
        t = T - 1 - s if reverse else s
        h, h_off = h0, h0_off                           # the state entering step t
        if s > 0:
            h, h_off = hs, (t + 1 if reverse else t - 1) * B * H
        for b in range(B):
            hb, row = h_off + b * H, t * B + b
            o, p, w = row * H, row * 3 * H, row * 4 * H      # row (t, b) of hs, gi, ws
            for j in range(H):
                if has_lengths and t >= lengths[b]:     # past this row's end: carry the state
                    hs[o + j] = h[hb + j]
                    for q in range(4):
                        ws[w + q * H + j] = 0.0
                    continue
                gh_r = gh_z = gh_n = 0.0                # row j of W_hh's three gate blocks . h
                for k in range(H):
                    hk = float(h[hb + k])
                    gh_r += hk * w_hh[j * H + k]
                    gh_z += hk * w_hh[(H + j) * H + k]
                    gh_n += hk * w_hh[(2 * H + j) * H + k]
                _unit_forward(gi[p + j] + b_ih[j] + gh_r + b_hh[j],
                              gi[p + H + j] + b_ih[H + j] + gh_z + b_hh[H + j],
                              gi[p + 2 * H + j] + b_ih[2 * H + j], gh_n + b_hh[2 * H + j],
                              h[hb + j], hs, o + j, ws, w + j, H)


@kernel
def gru_sequence_backward(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths, reverse,
                          dgi, dgh, T, B, H):
    """Backpropagation through the T steps, last step first: from g (T, B, H) = dL/dhs, dgi and
    dgh (T, B, 3H); carry (B, H, zeros on entry) = dL/dh0 along the direct paths, m (B, H) =
    dgh_first @ W_hh, the path through the recurrent product: dL/dh0 = carry + m."""
    for s in range(T):
        t = s if reverse else T - 1 - s
        h, h_off = h0, h0_off                           # the state that entered step t
        if s < T - 1:
            h, h_off = hs, (t + 1 if reverse else t - 1) * B * H
        for b in range(B):
            hb, row = h_off + b * H, t * B + b
            o, p, w = row * H, row * 3 * H, row * 4 * H      # row (t, b) of g, dgi, ws
            for j in range(H):
                total = carry[b * H + j] + g[o + j]      # dL/dh' of this step
                if s > 0:
                    total += m[b * H + j]               # (m: the later step's dgh @ W_hh)
                if has_lengths and t >= lengths[b]:     # carried through: so is the gradient
                    carry[b * H + j] = total
                    for q in range(3):
                        dgi[p + q * H + j] = 0.0
                        dgh[p + q * H + j] = 0.0
                    continue
                carry[b * H + j] = _unit_backward(total, h[hb + j], ws, w + j, dgi, dgh, p + j, H)
        for b in range(B):                              # m = dgh_t @ W_hh
            for k in range(H):
                acc = 0.0
                for q in range(3 * H):
                    acc += float(dgh[(t * B + b) * 3 * H + q]) * w_hh[q * H + k]
                m[b * H + k] = acc


@kernel
def bi_gru_sequence_forward(gi_f, h0_f, h0_f_off, w_f, bi_f, bh_f, hs_f, ws_f,
                            gi_b, h0_b, h0_b_off, w_b, bi_b, bh_b, hs_b, ws_b,
                            lengths, has_lengths, T, B, H):
    """Both directions of a bidirectional layer (_f forward in time, _b reverse), one after the
    other. The fast backend runs them one on each core."""
    gru_sequence_forward(gi_f, h0_f, h0_f_off, w_f, bi_f, bh_f, lengths, has_lengths, False,
                         hs_f, ws_f, T, B, H)
    gru_sequence_forward(gi_b, h0_b, h0_b_off, w_b, bi_b, bh_b, lengths, has_lengths, True,
                         hs_b, ws_b, T, B, H)


@kernel
def bi_gru_sequence_backward(g_f, carry_f, m_f, h0_f, h0_f_off, hs_f, ws_f, w_f, dgi_f, dgh_f,
                             g_b, carry_b, m_b, h0_b, h0_b_off, hs_b, ws_b, w_b, dgi_b, dgh_b,
                             lengths, has_lengths, T, B, H):
    """The backward of both directions, one after the other (on two cores in the fast backend)."""
    gru_sequence_backward(g_f, carry_f, m_f, h0_f, h0_f_off, hs_f, ws_f, w_f, lengths,
                          has_lengths, False, dgi_f, dgh_f, T, B, H)
    gru_sequence_backward(g_b, carry_b, m_b, h0_b, h0_b_off, hs_b, ws_b, w_b, lengths,
                          has_lengths, True, dgi_b, dgh_b, T, B, H)
