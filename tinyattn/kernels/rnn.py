"""One GRU time step for a batch, fused: gates, candidate and new state in one pass (and back).

With gi = x W_ih^T (the input projection) and gh = h W_hh^T (the recurrent one), both (B, 3H) with
the gates in PyTorch's order r | z | n, and biases b_ih, b_hh (3H):

    r  = sigmoid(gi_r + b_ir + gh_r + b_hr)                 reset gate
    z  = sigmoid(gi_z + b_iz + gh_z + b_hz)                 update gate
    n  = tanh(gi_n + b_in + r * (gh_n + b_hn))              candidate state
    h' = (1 - z) * n + z * h

The two matmuls stay outside (they are the expensive part and use the matmul kernel); everything
elementwise is here, so one step costs two matmuls and one kernel instead of ~15 small ops.
`ws` keeps r, z, n and gh_n + b_hn per row, (B, 4H), for the backward pass.

Variable-length batches: row b is *active* at step t when t < lengths[b]. An inactive row keeps its
state (h' = h) and passes its gradient straight through, so a padded position changes nothing.

Backward, given dL/dh' = `total` (the upstream gradient plus what flows back from later steps):

    dh    = total * z                                       (the direct path h -> h')
    dz_   = total * (h - n) * z (1 - z)                     (through the sigmoid: pre-activation)
    dn_   = total * (1 - z) * (1 - n^2)                     (through the tanh)
    dr_   = dn_ * (gh_n + b_hn) * r (1 - r)
    dgi   = (dr_, dz_, dn_)         dgh = (dr_, dz_, dn_ * r)

and the caller adds dgh @ W_hh to dh (the path through the recurrent matmul).
"""
from .elementwise import _exp, _sigmoid
from .jit import inline, kernel


@inline
def _tanh(x):
    """tanh(x) = 1 - 2 / (exp(2x) + 1): one exp (~5 ns) instead of libm's tanh (~25 ns here).

    exp(2x) = inf for large x gives 1, exp(2x) = 0 for very negative x gives -1: no NaN. Near 0 the
    subtraction loses relative (not absolute) precision: the error stays below 1e-16."""
    return 1.0 - 2.0 / (_exp(2.0 * x) + 1.0)


@kernel
def gru_step_forward(gi, gi_off, gh, h, h_off, b_ih, b_hh, has_bias, lengths, has_lengths, t,
                     out, out_off, ws, ws_off, B, H):
    """out[b] = h'[b] (rows of H at out_off + b*H); gi rows of 3H at gi_off, gh packed (B, 3H),
    h rows of H at h_off; ws rows of 4H at ws_off."""
    H3 = 3 * H
    H4 = 4 * H
    for b in range(B):
        pi = gi_off + b * H3
        ph = b * H3
        ps = h_off + b * H
        po = out_off + b * H
        pw = ws_off + b * H4
        if has_lengths and t >= lengths[b]:
            for j in range(H):
                out[po + j] = h[ps + j]
                ws[pw + j] = 0.0
                ws[pw + H + j] = 0.0
                ws[pw + 2 * H + j] = 0.0
                ws[pw + 3 * H + j] = 0.0
            continue
        for j in range(H):
            a_r = gi[pi + j] + gh[ph + j]
            a_z = gi[pi + H + j] + gh[ph + H + j]
            a_n = gi[pi + 2 * H + j]
            ghn = gh[ph + 2 * H + j]
            if has_bias:
                a_r += b_ih[j] + b_hh[j]
                a_z += b_ih[H + j] + b_hh[H + j]
                a_n += b_ih[2 * H + j]
                ghn += b_hh[2 * H + j]
            r = _sigmoid(a_r)
            z = _sigmoid(a_z)
            n = _tanh(a_n + r * ghn)
            out[po + j] = (1.0 - z) * n + z * h[ps + j]
            ws[pw + j] = r
            ws[pw + H + j] = z
            ws[pw + 2 * H + j] = n
            ws[pw + 3 * H + j] = ghn


@kernel
def gru_step_backward(g, g_off, use_g, carry, m, use_m, h, h_off, ws, ws_off, lengths,
                      has_lengths, t, dgi, dgi_off, dgh, dgh_off, B, H):
    """Backward of one step. In: g (upstream dL/dh' rows at g_off, when use_g), carry (B, H) packed
    (dL/dh' from the direct path of the next step), m (B, H) packed (dgh_next @ W_hh, when use_m).
    Out: dgi, dgh rows of 3H at their offsets, and carry overwritten with dL/dh (direct path only)."""
    H3 = 3 * H
    H4 = 4 * H
    for b in range(B):
        active = not (has_lengths and t >= lengths[b])
        pc = b * H
        pg = g_off + b * H
        ps = h_off + b * H
        pw = ws_off + b * H4
        pi = dgi_off + b * H3
        ph = dgh_off + b * H3
        for j in range(H):
            total = carry[pc + j]
            if use_g:
                total += g[pg + j]
            if use_m:
                total += m[pc + j]
            if not active:  # the state was only carried through: so is its gradient
                carry[pc + j] = total
                dgi[pi + j] = 0.0
                dgi[pi + H + j] = 0.0
                dgi[pi + 2 * H + j] = 0.0
                dgh[ph + j] = 0.0
                dgh[ph + H + j] = 0.0
                dgh[ph + 2 * H + j] = 0.0
                continue
            r = ws[pw + j]
            z = ws[pw + H + j]
            n = ws[pw + 2 * H + j]
            ghn = ws[pw + 3 * H + j]
            dz = total * (h[ps + j] - n) * z * (1.0 - z)
            dn = total * (1.0 - z) * (1.0 - n * n)
            dr = dn * ghn * r * (1.0 - r)
            carry[pc + j] = total * z
            dgi[pi + j] = dr
            dgi[pi + H + j] = dz
            dgi[pi + 2 * H + j] = dn
            dgh[ph + j] = dr
            dgh[ph + H + j] = dz
            dgh[ph + 2 * H + j] = dn * r
