"""The GRU step as fused nodes: one step (GRUCell) and a whole sequence of one layer (GRUSequence).

    r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

An RNN at demo sizes is bound by per-op overhead, not arithmetic: one step here is one matmul
(h W_hh^T) plus one fused kernel (kernels/rnn.py) for the gates, and `GRUSequence` runs the whole
recurrence as one node, all T steps in one kernel call, whose backward is backpropagation through
time, again one kernel call (per step the step's kernel and one matmul), then dW_hh as one matmul
over all steps. `BiGRUSequence` is both directions of a bidirectional layer as one node: the two
kernel calls hold no GIL, so they run on two cores at once. nn/rnn.py builds GRUCell and GRU on
these.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
from array import array

from .. import dtypes as _dt
from ..autograd import Function
from ..fast import matmul as KM
from ..fast import rnn as KR
from ..fast import threads
from ..storage import _empty, _zeros
from ._launch import packed, transposed
from .elementwise import add, add_into
from .layout import cat, narrow, reshape, unsqueeze
from .matmul import mm_pair_raw, mm_raw
from .reduce import _sum


def _bias_buffers(b_ih, b_hh, dtype, H):
    """The two bias buffers (3H) for the step kernel; zeros for a GRU without biases."""
    if b_ih is None:
        zeros3h = _dt.zeros_buffer(dtype, 3 * H)
        return zeros3h, zeros3h
    return packed(b_ih)._data, packed(b_hh)._data


def _lengths_buffer(lengths):
    """(int64 buffer, has_lengths) for the kernels: a placeholder when every row runs all T steps."""
    return (lengths, True) if lengths is not None else (array("q", [0]), False)


def _direction_forward(gi, h0, w_hh, b_ih, b_hh, lengths, reverse):
    """One direction's forward: (hs, ws, run), where run(0, 1) fills hs (T, B, H) and ws
    (T, B, 4H) with one kernel call (all T steps, kernels/rnn.py) on whichever thread calls it."""
    T, B, H3 = gi.shape
    H = H3 // 3
    dt = gi.dtype
    tc = dt.typecode
    hs = _empty((T, B, H), dt)
    ws = _empty((T, B, 4 * H), dt)
    bi, bh = _bias_buffers(b_ih, b_hh, dt, H)
    lens, has_len = _lengths_buffer(lengths)
    gi, h0, w_hh, gh = packed(gi), packed(h0), packed(w_hh), _empty((B, H3), dt)

    def run(start, stop):       # (with the scratch buffer of the thread that runs it)
        KR.gru_sequence_forward(gi._data, h0._data, h0._offset, w_hh._data, bi, bh, lens,
                                has_len, reverse, hs._data, ws._data, gh._data, KM.scratch(tc),
                                T, B, H, tc == "f")
    return hs, ws, run


def _direction_backward(gi, h0, w_hh, b_ih, lengths, reverse, hs, ws, g):
    """One direction's backward: (run, finish): run(0, 1) walks the T steps back in one kernel
    call; finish() then returns (dgi, dh0, dw_hh, db_ih, db_hh)."""
    T, B, H3 = gi.shape
    H = H3 // 3
    dt = gi.dtype
    tc = dt.typecode
    g, h0 = packed(g), packed(h0.detach())
    lens, has_len = _lengths_buffer(lengths)
    dgi = _empty((T, B, H3), dt)
    dgh = _empty((T, B, H3), dt)
    carry = _zeros((B, H), dt)  # dL/dh along the direct path h_{t-1} -> h_t
    m = _zeros((B, H), dt)      # dL/dh along the path through h W_hh^T
    w = packed(w_hh)

    def run(start, stop):       # the step, then m = dgh_t W_hh, for every t
        KR.gru_sequence_backward(g._data, carry._data, m._data, h0._data, h0._offset, hs._data,
                                 ws._data, w._data, lens, has_len, reverse, dgi._data, dgh._data,
                                 KM.scratch(tc), T, B, H)

    def finish():
        dh0 = add(carry, m) if T else carry
        # Every step used the same W_hh: its gradient sums dgh_t^T h_{t-1} over t -- one matmul
        # of the (T*B, 3H) step gradients against the (T*B, H) states that entered each step.
        if reverse:
            prev_states = cat([narrow(hs, 0, 1, T - 1), unsqueeze(h0, 0)], 0)
        else:
            prev_states = cat([unsqueeze(h0, 0), narrow(hs, 0, 0, T - 1)], 0)
        dgh2 = reshape(dgh, (T * B, H3))
        dw_hh = mm_raw(transposed(dgh2), reshape(prev_states, (T * B, H)))
        db_ih = db_hh = None
        if b_ih is not None:
            db_ih = _sum(reshape(dgi, (T * B, H3)), (0,), False)
            db_hh = _sum(dgh2, (0,), False)
        return dgi, dh0, dw_hh, db_ih, db_hh
    return run, finish


class GRUSequence(Function):
    """The recurrence of one GRU layer in one direction over a whole sequence, as one graph node.

    gi (T, B, 3H) = x W_ih^T for all steps (no bias), h0 (B, H), w_hh (3H, H), b_ih / b_hh (3H) or
    None, lengths an int64 buffer (B) or None, reverse: walk t = T-1 .. 0.
    Returns hs (T, B, H): hs[t] = the state after reading x_t (carried unchanged past a length)."""

    op_name = "GRU"

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_ih, b_hh, lengths, reverse):
        hs, ws, run = _direction_forward(gi, h0, w_hh, b_ih, b_hh, lengths, reverse)
        run(0, 1)
        ctx.ws = ws
        ctx.hs = hs.detach()  # not hs itself: a node must not point to its own output
        return hs

    @staticmethod
    def backward(ctx, g):
        gi, h0, w_hh, b_ih, b_hh, lengths, reverse = ctx.inputs
        run, finish = _direction_backward(gi, h0, w_hh, b_ih, lengths, reverse, ctx.hs, ctx.ws, g)
        run(0, 1)
        return finish() + (None, None)


class BiGRUSequence(Function):
    """Both directions of a bidirectional GRU layer as one graph node, the two recurrences on two
    cores at once (threads.run_two: each is one kernel call, which holds no GIL).

    gi_f, gi_b (T, B, 3H), h0_f, h0_b (B, H), w_f, w_b (3H, H), the four biases (3H) or None,
    lengths as GRUSequence. Returns (T, B, 2H): the forward direction's states, then the
    reverse direction's, in each row (what a bidirectional layer outputs)."""

    op_name = "GRU"

    @staticmethod
    def forward(ctx, gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths):
        hs_f, ws_f, run_f = _direction_forward(gi_f, h0_f, w_f, bi_f, bh_f, lengths, False)
        hs_b, ws_b, run_b = _direction_forward(gi_b, h0_b, w_b, bi_b, bh_b, lengths, True)
        threads.run_two(run_f, run_b)
        ctx.state = (hs_f.detach(), ws_f, hs_b.detach(), ws_b)
        return cat([hs_f, hs_b], 2)

    @staticmethod
    def backward(ctx, g):
        gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths = ctx.inputs
        hs_f, ws_f, hs_b, ws_b = ctx.state
        H = hs_f.shape[2]
        run_f, finish_f = _direction_backward(gi_f, h0_f, w_f, bi_f, lengths, False, hs_f, ws_f,
                                              narrow(g, 2, 0, H))
        run_b, finish_b = _direction_backward(gi_b, h0_b, w_b, bi_b, lengths, True, hs_b, ws_b,
                                              narrow(g, 2, H, H))
        threads.run_two(run_f, run_b)
        dgi_f, dh0_f, dw_f, dbi_f, dbh_f = finish_f()
        dgi_b, dh0_b, dw_b, dbi_b, dbh_b = finish_b()
        return dgi_f, dgi_b, dh0_f, dh0_b, dw_f, dw_b, dbi_f, dbh_f, dbi_b, dbh_b, None


class GRUCell(Function):
    """One GRU step as one graph node: x (B, I), h (B, H), w_ih (3H, I), w_hh (3H, H), b_ih / b_hh
    (3H) or None -> h' (B, H).

    forward:  gi = x W_ih^T, gh = h W_hh^T (two matmuls), then the fused kernel.
    backward: the kernel gives dgi, dgh (B, 3H) and the direct dh = dh' * z; then
              dx = dgi W_ih,  dh += dgh W_hh,  dW_ih = dgi^T x,  dW_hh = dgh^T h,
              db_ih = sum_b dgi,  db_hh = sum_b dgh."""

    op_name = "GRUCell"

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh):
        B, H = h.shape
        dt = x.dtype
        gi = mm_raw(x, transposed(w_ih))  # (B, 3H)
        gh = mm_raw(h, transposed(w_hh))  # (B, 3H)
        h = packed(h)
        bi, bh = _bias_buffers(b_ih, b_hh, dt, H)
        out = _empty((B, H), dt)
        ws = _empty((B, 4 * H), dt)
        KR.GRU_STEP_FORWARD[dt.typecode](gi._data, 0, gh._data, h._data, 0, bi, bh,
                                         array("q", [0]), False, 0, out._data, 0, ws._data, 0,
                                         B, H, dt.typecode == "f")
        ctx.ws = ws
        ctx.h = h
        return out

    @staticmethod
    def backward(ctx, g):
        x, _, w_ih, w_hh, b_ih, b_hh = ctx.inputs
        need_x, need_h, need_wih, need_whh = ctx.needs_input_grad[:4]
        h = ctx.h
        B, H = h.shape
        dt = h.dtype
        g = packed(g)
        dgi = _empty((B, 3 * H), dt)
        dgh = _empty((B, 3 * H), dt)
        dh = _zeros((B, H), dt)
        KR.gru_step_backward(g._data, 0, True, dh._data, dh._data, False, h._data, 0,
                             ctx.ws._data, 0, array("q", [0]), False, 0, dgi._data, 0, dgh._data,
                             0, B, H)
        # The products and sums below are raw kernels (backward builds no graph anyway).
        # Each input's gradient and its weight's are two products of equal work, which
        # mm_pair_raw may run one on each core.
        if need_x and need_wih:
            dx, dw_ih = mm_pair_raw(dgi, w_ih, transposed(dgi), x)
        else:
            dx = mm_raw(dgi, w_ih) if need_x else None
            dw_ih = mm_raw(transposed(dgi), x) if need_wih else None
        if need_h and need_whh:
            dh_w, dw_hh = mm_pair_raw(dgh, w_hh, transposed(dgh), h)
        else:
            dh_w = mm_raw(dgh, w_hh) if need_h else None
            dw_hh = mm_raw(transposed(dgh), h) if need_whh else None
        if need_h:
            add_into(dh, dh_w)  # dh is ours: add in place
        else:
            dh = None
        db_ih = _sum(dgi, (0,), False) if b_ih is not None else None
        db_hh = _sum(dgh, (0,), False) if b_hh is not None else None
        return dx, dh, dw_ih, dw_hh, db_ih, db_hh


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """h' = one GRU step of input (B, I) from hx (B, H) with the given weights (module docstring)."""
    if input.dtype is not hx.dtype or w_ih.dtype is not input.dtype:
        raise TypeError(f"gru_cell: input, hx and weights must share a dtype, got {input.dtype}, "
                        f"{hx.dtype} and {w_ih.dtype}")
    return GRUCell.apply(input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_sequence(gi, h0, w_hh, b_ih, b_hh, lengths=None, reverse=False):
    """hs (T, B, H): one GRU layer and direction over a sequence whose input projections
    gi = x W_ih^T (T, B, 3H) are computed; lengths: one int per sequence or None (GRUSequence)."""
    lens = None if lengths is None else array("q", lengths)
    return GRUSequence.apply(gi, h0, w_hh, b_ih, b_hh, lens, reverse)


def bi_gru_sequence(gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths=None):
    """(T, B, 2H): both directions of a bidirectional GRU layer, the forward direction's states
    then the reverse one's in each row (BiGRUSequence: the two recurrences run at once)."""
    lens = None if lengths is None else array("q", lengths)
    return BiGRUSequence.apply(gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lens)

