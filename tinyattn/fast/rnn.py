"""The GRU, fast: kernels/rnn.py's six functions, with each step fused and vectorised, a whole
sequence in one compiled call, and a bidirectional layer's two directions on two cores.

The equations, the layouts and the rule for rows past their length are those of kernels/rnn.py.
What is different here:

- One step (`_step_forward`, `_step_backward`) is every elementwise equation of the step for the
  batch, with the two products (gi = x W_ih^T outside, gh = h W_hh^T) made by the matmul kernel:
  a step costs two products and one kernel instead of ~15 small ops. The step reads gh as a
  packed (B, 3H) buffer; `ws` keeps r, z, n and gh_n + b_hn per row, (B, 4H), as in the
  reference.
- Each row's gates are sliced out of the buffers (`gi_r = GI[p:p + H]`, ...) and indexed from 0,
  one loop per equation, and exp is the arithmetic one (exp.py), so that LLVM turns each loop
  over j into vector code: the sigmoids and tanh are most of the work. float32 data are computed
  in float32 arithmetic (`single`, a compile-time constant: jit.by_typecode's F).
- A layer's recurrence is T steps of (product, step kernel). As a Python loop each step would also
  pay the product's op, its output and the kernel's dispatch; as one compiled call
  (`_sequence_forward`, `_sequence_backward`) it pays none of that (benchmarks/RESULTS.md,
  fast/rnn.py: _sequence_forward), and it runs without the GIL from its first step to its last.
  Steps big enough to split each product over the cores loop in Python instead, with the
  threaded product (`_split_steps`).
- A bidirectional layer's two directions are two such calls, which `threads.run_two` runs one on
  each core (bi_gru_sequence_forward / _backward).

    forward, t = 0 .. T-1 (T-1 .. 0 in reverse):  gh = h_prev @ W_hh^T ;  step_t
    backward, in the opposite order:  step_back_t (adds m to dL/dh') ;  m = dgh_t @ W_hh
"""
from array import array

from . import matmul, threads
from .buffers import as_array, scratch
from .elementwise import _exp, _sigmoid
from .exp import sigmoid_float32, tanh_float32
from .jit import by_typecode, inline, kernel
from .matmul import MR, _bmm_blocked, _bmm_few_rows, _scratch

__all__ = ["gru_cell_forward", "gru_cell_backward", "gru_sequence_forward",
           "gru_sequence_backward", "bi_gru_sequence_forward", "bi_gru_sequence_backward"]


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
def _step_forward(gi, gi_off, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
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
def _step_backward(g, g_off, use_g, carry, m, use_m, h, h_off, ws, ws_off, lengths,
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


# ------------------------------------------------------------------ one step: the cell

_STEP_FORWARD = by_typecode(_step_forward, "T i T T i T T @q b i T i T i i i F")
_NO_LENGTHS = array("q", [0])   # the lengths buffer when every row runs every step


def gru_cell_forward(gi, gh, h, b_ih, b_hh, out, ws, B, H):
    """out (B, H) = h' from gi, gh (B, 3H), h (B, H); ws (B, 4H) saved for the backward."""
    tc = gi.typecode
    _STEP_FORWARD[tc](gi, 0, gh, h, 0, b_ih, b_hh, _NO_LENGTHS, False, 0, out, 0, ws, 0, B, H,
                      tc == "f")


def gru_cell_backward(g, h, ws, dh, dgi, dgh, B, H):
    """dgi, dgh (B, 3H) from g = dL/dh' (B, H), h and ws of the forward; dh (B, H) += g * z."""
    _step_backward(g, 0, True, dh, dh, False, h, 0, ws, 0, _NO_LENGTHS, False, 0, dgi, 0, dgh, 0,
                   B, H)


# ------------------------------------------------------------------ a whole sequence, one call

@kernel
def _recurrent_product(a, a_off, a_sm, a_sk, b, b_sk, b_sn, out, M, N, K, mm_scratch):
    """out (M, N) = a (M, K) @ b (K, N), b from offset 0: the matmul's kernels, called from
    compiled code (the few-rows one below a tile's 8 rows)."""
    if M < MR:
        _bmm_few_rows(a, a_off, 0, 0, a_sm, a_sk, b, 0, 0, 0, b_sk, b_sn, out, 1, M, N, K, 0, 1)
    else:
        _bmm_blocked(a, a_off, 0, 0, a_sm, a_sk, b, 0, 0, 0, b_sk, b_sn, out, 1, M, N, K, M, N,
                     0, 1, mm_scratch)


@kernel
def _sequence_forward(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse,
                      hs, ws, gh, mm_scratch, T, B, H, single):
    """gru_sequence_forward's T steps in one compiled call (the blocked product, one thread);
    gh (B, 3H) and mm_scratch (the product's) are working space."""
    for s in range(T):
        t = T - 1 - s if reverse else s
        prev = t + 1 if reverse else t - 1
        if s == 0:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        _recurrent_product(h, h_off, H, 1, w_hh, 1, H, gh, B, 3 * H, H, mm_scratch)
        _step_forward(gi, t * B * 3 * H, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
                      hs, t * B * H, ws, t * B * 4 * H, B, H, single)


@kernel
def _sequence_backward(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths, reverse,
                       dgi, dgh, mm_scratch, T, B, H):
    """gru_sequence_backward's T steps in one compiled call (the blocked product, one thread)."""
    for s in range(T):
        t = s if reverse else T - 1 - s
        prev = t + 1 if reverse else t - 1
        if s == T - 1:
            h, h_off = h0, h0_off
        else:
            h, h_off = hs, prev * B * H
        _step_backward(g, t * B * H, True, carry, m, s > 0, h, h_off, ws, t * B * 4 * H,
                       lengths, has_lengths, t, dgi, t * B * 3 * H, dgh, t * B * 3 * H, B, H)
        _recurrent_product(dgh, t * B * 3 * H, 3 * H, 1, w_hh, H, 1, m, B, H, 3 * H, mm_scratch)


_SEQ_FORWARD = by_typecode(_sequence_forward, "T T i T T T @q b b T T T T i i i F")
_SEQ_BACKWARD = by_typecode(_sequence_backward, "T T T T i T T T @q b b T T T i i i")


def _split_steps(typecode, B, H):
    """Whether each step's product is worth cutting in two (matmul.py's threshold) and the
    workers are free to take half: then the steps loop in Python, each product on every thread.
    Else (small steps, one thread, or the other direction of a bidirectional layer already on the
    second core) the whole sequence is one compiled call."""
    return (B >= MR and B * 3 * H * H >= matmul.parallel_min_work(typecode)
            and threads.num_threads() > 1 and not threads.busy())


def gru_sequence_forward(gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse,
                         hs, ws, T, B, H):
    """hs (T, B, H), ws (T, B, 4H): the T steps of one layer in one direction (kernels/rnn.py)."""
    tc = gi.typecode
    gh = scratch("gru gh", tc, B * 3 * H)
    if not _split_steps(tc, B, H):
        _SEQ_FORWARD[tc](gi, h0, h0_off, w_hh, b_ih, b_hh, lengths, has_lengths, reverse, hs,
                         ws, gh, _scratch(tc), T, B, H, tc == "f")
        return
    step = _STEP_FORWARD[tc]
    for s in range(T):
        t = T - 1 - s if reverse else s
        h, h_off = (h0, h0_off) if s == 0 else (hs, (t + 1 if reverse else t - 1) * B * H)
        matmul.mm(h, h_off, H, 1, w_hh, 0, 1, H, gh, B, 3 * H, H)
        step(gi, t * B * 3 * H, gh, h, h_off, b_ih, b_hh, lengths, has_lengths, t,
             hs, t * B * H, ws, t * B * 4 * H, B, H, tc == "f")


def gru_sequence_backward(g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths, reverse,
                          dgi, dgh, T, B, H):
    """dgi, dgh (T, B, 3H), carry + m = dL/dh0: backpropagation through the T steps."""
    tc = g.typecode
    if not _split_steps(tc, B, H):
        _SEQ_BACKWARD[tc](g, carry, m, h0, h0_off, hs, ws, w_hh, lengths, has_lengths, reverse,
                          dgi, dgh, _scratch(tc), T, B, H)
        return
    for s in range(T):
        t = s if reverse else T - 1 - s
        h, h_off = (h0, h0_off) if s == T - 1 else (hs, (t + 1 if reverse else t - 1) * B * H)
        _step_backward(g, t * B * H, True, carry, m, s > 0, h, h_off, ws, t * B * 4 * H,
                       lengths, has_lengths, t, dgi, t * B * 3 * H, dgh, t * B * 3 * H, B, H)
        matmul.mm(dgh, t * B * 3 * H, 3 * H, 1, w_hh, 0, H, 1, m, B, H, 3 * H)


def bi_gru_sequence_forward(gi_f, h0_f, h0_f_off, w_f, bi_f, bh_f, hs_f, ws_f,
                            gi_b, h0_b, h0_b_off, w_b, bi_b, bh_b, hs_b, ws_b,
                            lengths, has_lengths, T, B, H):
    """Both directions of a bidirectional layer at once: each is one compiled call that holds no
    GIL, so threads.run_two runs the forward one here and the reverse one on a worker."""
    threads.run_two(
        lambda u0, u1: gru_sequence_forward(gi_f, h0_f, h0_f_off, w_f, bi_f, bh_f, lengths,
                                            has_lengths, False, hs_f, ws_f, T, B, H),
        lambda u0, u1: gru_sequence_forward(gi_b, h0_b, h0_b_off, w_b, bi_b, bh_b, lengths,
                                            has_lengths, True, hs_b, ws_b, T, B, H))


def bi_gru_sequence_backward(g_f, carry_f, m_f, h0_f, h0_f_off, hs_f, ws_f, w_f, dgi_f, dgh_f,
                             g_b, carry_b, m_b, h0_b, h0_b_off, hs_b, ws_b, w_b, dgi_b, dgh_b,
                             lengths, has_lengths, T, B, H):
    """The backward of both directions at once, one on each core, as the forward."""
    threads.run_two(
        lambda u0, u1: gru_sequence_backward(g_f, carry_f, m_f, h0_f, h0_f_off, hs_f, ws_f, w_f,
                                             lengths, has_lengths, False, dgi_f, dgh_f, T, B, H),
        lambda u0, u1: gru_sequence_backward(g_b, carry_b, m_b, h0_b, h0_b_off, hs_b, ws_b, w_b,
                                             lengths, has_lengths, True, dgi_b, dgh_b, T, B, H))
