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

Each row's gates are sliced out of the buffers (`gi_r = GI[p:p + H]`, ...) and indexed from 0, and
exp is the arithmetic one (kernels/exp.py), so that LLVM turns the loop over j into vector code:
the sigmoids and tanh are most of the work.

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
from .buffers import as_array
from .elementwise import _exp, _sigmoid
from .exp import sigmoid_float32, tanh_float32
from .jit import by_typecode, inline, kernel
from . import matmul, threads
from .matmul import MR, _bmm_blocked, _bmm_few_rows, mm_reference
from .tiers import register


@inline
def _tanh(x, single):
    """tanh(x) in arithmetic that vectorises (libm's tanh is a call per element).

    float64: 1 - 2 / (exp(2x) + 1), one exp. exp(2x) = inf for large x gives 1, exp(2x) = 0 for very
    negative x gives -1: no NaN. Near 0 the subtraction loses relative (not absolute) precision:
    the error stays below 1e-16. float32 data (`single`, a compile-time constant): tanh_float32,
    in float32 arithmetic (twice the lanes per instruction, within ~2 ulp of float32)."""
    if single:
        return tanh_float32(x)
    return 1.0 - 2.0 / (_exp(2.0 * x) + 1.0)


@inline
def _gate(x, single):
    """sigmoid(x), a GRU gate; in float32 arithmetic for float32 data, as _tanh."""
    if single:
        return sigmoid_float32(x)
    return _sigmoid(x)


@kernel
def gru_step_forward(gi, gi_off, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
                     out, out_off, ws, ws_off, B, H, single):
    """out[b] = h'[b] (rows of H at out_off + b*H); gi rows of 3H at gi_off, gh packed (B, 3H),
    h rows of H at h_off; b_ih, b_hh (3H) (zeros for a GRU without biases); ws rows of 4H at ws_off."""
    GI, GH, HS, O, WS = as_array(gi), as_array(gh), as_array(h), as_array(out), as_array(ws)
    BI, BH = as_array(b_ih), as_array(b_hh)
    b_ir, b_iz, b_in = BI[0:H], BI[H:2 * H], BI[2 * H:3 * H]
    b_hr, b_hz, b_hn = BH[0:H], BH[H:2 * H], BH[2 * H:3 * H]
    for b in range(B):
        pi = gi_off + b * 3 * H
        ph = b * 3 * H
        pw = ws_off + b * 4 * H
        h_prev = HS[h_off + b * H:h_off + (b + 1) * H]
        h_new = O[out_off + b * H:out_off + (b + 1) * H]
        w_r, w_z = WS[pw:pw + H], WS[pw + H:pw + 2 * H]
        w_n, w_g = WS[pw + 2 * H:pw + 3 * H], WS[pw + 3 * H:pw + 4 * H]
        if has_lengths and t >= lengths[b]:  # past this sequence's end: carry the state
            for j in range(H):
                h_new[j] = h_prev[j]
                w_r[j] = 0.0
                w_z[j] = 0.0
                w_n[j] = 0.0
                w_g[j] = 0.0
            continue
        gi_r, gi_z, gi_n = GI[pi:pi + H], GI[pi + H:pi + 2 * H], GI[pi + 2 * H:pi + 3 * H]
        gh_r, gh_z, gh_n = GH[ph:ph + H], GH[ph + H:ph + 2 * H], GH[ph + 2 * H:ph + 3 * H]
        # One loop per equation: a loop touching a dozen arrays is not vectorised (LLVM would
        # have to check every pair for overlap first), one touching four or five is.
        for j in range(H):
            w_r[j] = _gate(gi_r[j] + b_ir[j] + gh_r[j] + b_hr[j], single)
        for j in range(H):
            w_z[j] = _gate(gi_z[j] + b_iz[j] + gh_z[j] + b_hz[j], single)
        for j in range(H):
            w_g[j] = gh_n[j] + b_hn[j]
        for j in range(H):
            w_n[j] = _tanh(gi_n[j] + b_in[j] + w_r[j] * w_g[j], single)
        for j in range(H):
            h_new[j] = (1.0 - w_z[j]) * w_n[j] + w_z[j] * h_prev[j]


@kernel
def gru_step_backward(g, g_off, use_g, carry, m, use_m, h, h_off, ws, ws_off, lengths,
                      has_lengths, t, dgi, dgi_off, dgh, dgh_off, B, H):
    """Backward of one step. In: g (upstream dL/dh' rows at g_off, when use_g), carry (B, H) packed
    (dL/dh' from the direct path of the next step), m (B, H) packed (dgh_next @ W_hh, when use_m).
    Out: dgi, dgh rows of 3H at their offsets, and carry overwritten with dL/dh (direct path only)."""
    G, C, MM, HS, WS = as_array(g), as_array(carry), as_array(m), as_array(h), as_array(ws)
    DI, DH = as_array(dgi), as_array(dgh)
    for b in range(B):
        c = C[b * H:(b + 1) * H]
        mb = MM[b * H:(b + 1) * H]
        gb = G[g_off + b * H:g_off + (b + 1) * H]
        h_prev = HS[h_off + b * H:h_off + (b + 1) * H]
        pw = ws_off + b * 4 * H
        w_r, w_z = WS[pw:pw + H], WS[pw + H:pw + 2 * H]
        w_n, w_g = WS[pw + 2 * H:pw + 3 * H], WS[pw + 3 * H:pw + 4 * H]
        pi = dgi_off + b * 3 * H
        ph = dgh_off + b * 3 * H
        di_r, di_z, di_n = DI[pi:pi + H], DI[pi + H:pi + 2 * H], DI[pi + 2 * H:pi + 3 * H]
        dh_r, dh_z, dh_n = DH[ph:ph + H], DH[ph + H:ph + 2 * H], DH[ph + 2 * H:ph + 3 * H]
        if use_g:  # total = dL/dh' = carry (+ g) (+ m), kept in c until the last loop
            for j in range(H):
                c[j] += gb[j]
        if use_m:
            for j in range(H):
                c[j] += mb[j]
        if has_lengths and t >= lengths[b]:  # the state was only carried through: so is its gradient
            for j in range(H):
                di_r[j] = 0.0
                di_z[j] = 0.0
                di_n[j] = 0.0
                dh_r[j] = 0.0
                dh_z[j] = 0.0
                dh_n[j] = 0.0
            continue
        # one loop per equation, as in the forward
        for j in range(H):
            di_z[j] = c[j] * (h_prev[j] - w_n[j]) * w_z[j] * (1.0 - w_z[j])
        for j in range(H):
            di_n[j] = c[j] * (1.0 - w_z[j]) * (1.0 - w_n[j] * w_n[j])
        for j in range(H):
            di_r[j] = di_n[j] * w_g[j] * w_r[j] * (1.0 - w_r[j])
        for j in range(H):
            dh_r[j] = di_r[j]
            dh_z[j] = di_z[j]
            dh_n[j] = di_n[j] * w_r[j]
        for j in range(H):
            c[j] = c[j] * w_z[j]


# ------------------------------------------------------------------ a whole sequence, one call
# A layer's recurrence is T steps of (product, step kernel). Written as a Python loop, each step
# also pays ~4 us of Python (the product's op, its output, the kernel's dispatch); as one kernel
# it pays nothing of that, and it runs without the GIL from its first step to its last, so the two
# directions of a bidirectional layer can run on two cores at once (ops/rnn.py).
#
#   forward, t = 0 .. T-1 (T-1 .. 0 in reverse):  gh = h_prev @ W_hh^T ;  step_t
#   backward, in the opposite order:  step_back_t (adds m to dL/dh') ;  m = dgh_t @ W_hh

def gru_sequence_forward_reference(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths,
                                   reverse, hs, ws, gh, scratch, T, B, H, single, mm=mm_reference):
    """The T steps of one GRU direction. gi (T, B, 3H) = x W_ih^T, h0 rows of H at h0_off, w_hh
    (3H, H); out: hs (T, B, H), ws (T, B, 4H); gh (B, 3H) and scratch are working space (the
    product's). Plain loops: the product (`mm`: the reference one), then the step kernel."""
    for s in range(T):
        t = T - 1 - s if reverse else s
        prev = t + 1 if reverse else t - 1
        if s == 0:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        mm(h, h_off, H, 1, w_hh, 0, 1, H, gh, B, 3 * H, H)
        gru_step_forward(gi, t * B * 3 * H, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
                         hs, t * B * H, ws, t * B * 4 * H, B, H, single)


def gru_sequence_backward_reference(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths,
                                    reverse, dgi, dgh, scratch, T, B, H, mm=mm_reference):
    """Backpropagation through the T steps: g (T, B, H) the upstream gradient of hs; out: dgi,
    dgh (T, B, 3H), carry (B, H) = dL/dh0 along the direct path and m (B, H) = dgh_first @ W_hh
    (their sum is dL/dh0). carry starts at zeros; m is working space until the end."""
    for s in range(T):
        t = s if reverse else T - 1 - s
        prev = t + 1 if reverse else t - 1
        if s == T - 1:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        gru_step_backward(g, t * B * H, True, carry, m, s > 0, h, h_off, ws, t * B * 4 * H,
                          lengths, has_lengths, t, dgi, t * B * 3 * H, dgh, t * B * 3 * H, B, H)
        mm(dgh, t * B * 3 * H, 3 * H, 1, w_hh, 0, H, 1, m, B, H, 3 * H)


@kernel
def _recurrent_product(a, a_off, a_sm, a_sk, b, b_sk, b_sn, out, M, N, K, scratch):
    """out (M, N) = a (M, K) @ b (K, N), b from offset 0: the matmul's kernels, called from
    compiled code (the few-rows one below a tile's 8 rows)."""
    if M < MR:
        _bmm_few_rows(a, a_off, 0, 0, a_sm, a_sk, b, 0, 0, 0, b_sk, b_sn, out, 1, M, N, K, 0, 1)
    else:
        _bmm_blocked(a, a_off, 0, 0, a_sm, a_sk, b, 0, 0, 0, b_sk, b_sn, out, 1, M, N, K, M, N,
                     0, 1, scratch)


@kernel
def _sequence_forward_compiled(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse,
                               hs, ws, gh, scratch, T, B, H, single):
    """gru_sequence_forward_reference, compiled: the blocked product (one thread)."""
    for s in range(T):
        t = T - 1 - s if reverse else s
        prev = t + 1 if reverse else t - 1
        if s == 0:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        _recurrent_product(h, h_off, H, 1, w_hh, 1, H, gh, B, 3 * H, H, scratch)
        gru_step_forward(gi, t * B * 3 * H, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
                         hs, t * B * H, ws, t * B * 4 * H, B, H, single)


@kernel
def _sequence_backward_compiled(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths,
                                reverse, dgi, dgh, scratch, T, B, H):
    """gru_sequence_backward_reference, compiled: the blocked product (one thread)."""
    for s in range(T):
        t = s if reverse else T - 1 - s
        prev = t + 1 if reverse else t - 1
        if s == T - 1:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        gru_step_backward(g, t * B * H, True, carry, m, s > 0, h, h_off, ws, t * B * 4 * H,
                          lengths, has_lengths, t, dgi, t * B * 3 * H, dgh, t * B * 3 * H, B, H)
        _recurrent_product(dgh, t * B * 3 * H, 3 * H, 1, w_hh, H, 1, m, B, H, 3 * H, scratch)


_SEQ_FORWARD = by_typecode(_sequence_forward_compiled, "T T i T T T @q b b T T T T i i i F")
_SEQ_BACKWARD = by_typecode(_sequence_backward_compiled, "T T T T i T T T @q b b T T T i i i")


def _split_steps(typecode, B, H):
    """Whether each step's product is worth cutting in two (kernels/matmul.py's threshold) and the
    workers are free to take half: then the steps loop in Python, each product on every thread.
    Else (small steps, one thread, or the other direction of a bidirectional layer already on the
    second core) the whole sequence is one compiled call."""
    return (B >= MR and B * 3 * H * H >= matmul.parallel_min_work(typecode)
            and threads.num_threads() > 1 and not threads.busy())


def gru_sequence_forward_fast(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse,
                              hs, ws, gh, scratch, T, B, H, single):
    """gru_sequence_forward_reference with the fast product: one compiled call, or a loop of
    threaded products for big steps (_split_steps)."""
    if _split_steps(gi.typecode, B, H):
        gru_sequence_forward_reference(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths,
                                       reverse, hs, ws, gh, scratch, T, B, H, single,
                                       matmul.mm_fast)
    else:
        _SEQ_FORWARD[gi.typecode](gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths,
                                  reverse, hs, ws, gh, scratch, T, B, H, single)


def gru_sequence_backward_fast(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths,
                               reverse, dgi, dgh, scratch, T, B, H):
    """gru_sequence_backward_reference with the fast product, as gru_sequence_forward_fast."""
    if _split_steps(g.typecode, B, H):
        gru_sequence_backward_reference(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths,
                                        has_lengths, reverse, dgi, dgh, scratch, T, B, H,
                                        matmul.mm_fast)
    else:
        _SEQ_BACKWARD[g.typecode](g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths,
                                  reverse, dgi, dgh, scratch, T, B, H)


# The interface (kernels/tiers.py). The step kernels have one version: these loops are already
# the plain ones, so the reference and fast tiers bind the same functions. The forward is compiled
# per typecode with `single` a constant (jit.by_typecode's F), so float32 steps keep only their
# float32 loops. The sequences: the reference's loops call the reference product; the fast ones
# call the compiled loops above through their entry points (by_typecode), or loop with the
# threaded product.
_STEPS = dict(GRU_STEP_FORWARD=by_typecode(gru_step_forward, "T i T T i T T @q b i T i T i i i F"),
              gru_step_backward=gru_step_backward)
register(globals(),
         reference=dict(_STEPS, gru_sequence_forward=gru_sequence_forward_reference,
                        gru_sequence_backward=gru_sequence_backward_reference),
         fast=dict(_STEPS, gru_sequence_forward=gru_sequence_forward_fast,
                   gru_sequence_backward=gru_sequence_backward_fast))
