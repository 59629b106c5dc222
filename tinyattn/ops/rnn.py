"""The GRU step as fused nodes: one step (GRUCell) and a whole sequence of one layer (GRUSequence).

    r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

An RNN at demo sizes is bound by per-op overhead, not arithmetic: one step here is one matmul
(h W_hh^T) plus one fused kernel (kernels/rnn.py) for the gates, and `GRUSequence` runs the whole
recurrence as one node, all T steps in one kernel call, whose backward is backpropagation through
time, again one kernel call, then dW_hh as one matmul over all steps. `BiGRUSequence` is both
directions of a bidirectional layer as one node and one kernel call (which the fast backend runs
on two cores at once). nn/rnn.py builds GRUCell and GRU on these.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
from array import array

from .. import backend
from .. import dtypes as _dt
from ..autograd import Function
from ..storage import _empty, _make, _zeros
from ._launch import packed, transposed
from ._recorded import composed
from .arithmetic import add, add_into
from .compare import where
from .layout import cat, narrow, reshape, stack, unsqueeze
from .matmul import mm_pair_raw, mm_raw
from .reduce import _sum


def _bias_buffers(b_ih, b_hh, dtype, H):
    """The two bias buffers (3H) for the kernels; zeros for a GRU without biases."""
    if b_ih is None:
        zeros3h = _dt.zeros_buffer(dtype, 3 * H)
        return zeros3h, zeros3h
    return packed(b_ih)._data, packed(b_hh)._data


def _lengths_buffer(lengths):
    """(int64 buffer, has_lengths) for the kernels: a placeholder when every row runs all T steps."""
    return (lengths, True) if lengths is not None else (array("q", [0]), False)


def _forward_buffers(gi, h0, w_hh, b_ih, b_hh):
    """One direction's forward: (hs, ws, buffers), hs (T, B, H) and ws (T, B, 4H) to be filled
    by the kernel, buffers its inputs (gi, h0, h0_off, w_hh, b_ih, b_hh)."""
    T, B, H3 = gi.shape
    dt = gi.dtype
    hs = _empty((T, B, H3 // 3), dt)
    ws = _empty((T, B, 4 * (H3 // 3)), dt)
    gi, h0, w_hh = packed(gi), packed(h0), packed(w_hh)
    return hs, ws, (gi._data, h0._data, h0._offset, w_hh._data) + _bias_buffers(
        b_ih, b_hh, dt, H3 // 3)


def _backward_buffers(gi, h0, w_hh, hs, ws, g):
    """One direction's backward: (dgi, dgh, carry, m, buffers) with buffers the kernel's
    (g, carry, m, h0, h0_off, hs, ws, w_hh)."""
    T, B, H3 = gi.shape
    dt = gi.dtype
    g, h0 = packed(g), packed(h0.detach())
    dgi = _empty((T, B, H3), dt)
    dgh = _empty((T, B, H3), dt)
    carry = _zeros((B, H3 // 3), dt)    # dL/dh along the direct path h_{t-1} -> h_t
    m = _zeros((B, H3 // 3), dt)        # dL/dh along the path through h W_hh^T
    return dgi, dgh, carry, m, (g._data, carry._data, m._data, h0._data, h0._offset, hs._data,
                                ws._data, packed(w_hh)._data)


def _weight_gradients(gi, h0, b_ih, reverse, hs, dgi, dgh, carry, m):
    """(dgi, dh0, dw_hh, db_ih, db_hh) of one direction once its kernel has run."""
    T, B, H3 = gi.shape
    H = H3 // 3
    h0 = h0.detach()
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


def _gru_step(gi, gh, h):
    """h' from the input and hidden projections gi, gh (B, 3H, biases in), recorded ops."""
    H = h.shape[-1]
    r = (gi.narrow(-1, 0, H) + gh.narrow(-1, 0, H)).sigmoid()
    z = (gi.narrow(-1, H, H) + gh.narrow(-1, H, H)).sigmoid()
    n = (gi.narrow(-1, 2 * H, H) + r * gh.narrow(-1, 2 * H, H)).tanh()
    return (1.0 - z) * n + z * h


def _gru_sequence_composed(gi, h0, w_hh, b_ih, b_hh, lengths, reverse):
    """GRUSequence as recorded ops, one step at a time (a row past its length keeps its state)."""
    T, B = gi.shape[0], gi.shape[1]
    h, hs = h0, [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        x_t = gi[t] if b_ih is None else gi[t] + b_ih
        gh = h @ w_hh.t() if b_hh is None else h @ w_hh.t() + b_hh
        new = _gru_step(x_t, gh, h)
        if lengths is not None:
            keep = [t < lengths[b] for b in range(B)]
            new = where(_make(array("b", keep), (B, 1), _dt.bool), new, h)
        h = hs[t] = new
    return stack(hs) if T else gi.narrow(-1, 0, 0) * 0.0


def _bi_gru_sequence_composed(gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths):
    return cat([_gru_sequence_composed(gi_f, h0_f, w_f, bi_f, bh_f, lengths, False),
                _gru_sequence_composed(gi_b, h0_b, w_b, bi_b, bh_b, lengths, True)], 2)


def _gru_cell_composed(x, h, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.t() if b_ih is None else x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() if b_hh is None else h @ w_hh.t() + b_hh
    return _gru_step(gi, gh, h)


class GRUSequence(Function):
    """The recurrence of one GRU layer in one direction over a whole sequence, as one graph node.

    gi (T, B, 3H) = x W_ih^T for all steps (no bias), h0 (B, H), w_hh (3H, H), b_ih / b_hh (3H) or
    None, lengths an int64 buffer (B) or None, reverse: walk t = T-1 .. 0.
    Returns hs (T, B, H): hs[t] = the state after reading x_t (carried unchanged past a length)."""

    op_name = "GRU"

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_ih, b_hh, lengths, reverse):
        T, B, H3 = gi.shape
        hs, ws, buffers = _forward_buffers(gi, h0, w_hh, b_ih, b_hh)
        backend.rnn.gru_sequence_forward(*buffers, *_lengths_buffer(lengths), reverse, hs._data,
                                         ws._data, T, B, H3 // 3)
        ctx.ws = ws
        ctx.hs = hs.detach()  # not hs itself: a node must not point to its own output
        return hs

    @staticmethod
    def backward(ctx, g):
        gi, h0, w_hh, b_ih, b_hh, lengths, reverse = ctx.inputs
        T, B, H3 = gi.shape
        dgi, dgh, carry, m, buffers = _backward_buffers(gi, h0, w_hh, ctx.hs, ctx.ws, g)
        backend.rnn.gru_sequence_backward(*buffers, *_lengths_buffer(lengths), reverse, dgi._data,
                                          dgh._data, T, B, H3 // 3)
        return _weight_gradients(gi, h0, b_ih, reverse, ctx.hs, dgi, dgh, carry, m) + (None, None)


class BiGRUSequence(Function):
    """Both directions of a bidirectional GRU layer as one graph node (the fast backend runs the
    two recurrences on two cores at once).

    gi_f, gi_b (T, B, 3H), h0_f, h0_b (B, H), w_f, w_b (3H, H), the four biases (3H) or None,
    lengths as GRUSequence. Returns (T, B, 2H): the forward direction's states, then the
    reverse direction's, in each row (what a bidirectional layer outputs)."""

    op_name = "GRU"

    @staticmethod
    def forward(ctx, gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths):
        T, B, H3 = gi_f.shape
        hs_f, ws_f, forward = _forward_buffers(gi_f, h0_f, w_f, bi_f, bh_f)
        hs_b, ws_b, reverse = _forward_buffers(gi_b, h0_b, w_b, bi_b, bh_b)
        backend.rnn.bi_gru_sequence_forward(*forward, hs_f._data, ws_f._data,
                                            *reverse, hs_b._data, ws_b._data,
                                            *_lengths_buffer(lengths), T, B, H3 // 3)
        ctx.state = (hs_f.detach(), ws_f, hs_b.detach(), ws_b)
        return cat([hs_f, hs_b], 2)

    @staticmethod
    def backward(ctx, g):
        gi_f, gi_b, h0_f, h0_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b, lengths = ctx.inputs
        hs_f, ws_f, hs_b, ws_b = ctx.state
        T, B, H3 = gi_f.shape
        H = H3 // 3
        *grads_f, forward = _backward_buffers(gi_f, h0_f, w_f, hs_f, ws_f, narrow(g, 2, 0, H))
        *grads_b, reverse = _backward_buffers(gi_b, h0_b, w_b, hs_b, ws_b, narrow(g, 2, H, H))
        backend.rnn.bi_gru_sequence_backward(*forward, grads_f[0]._data, grads_f[1]._data,
                                             *reverse, grads_b[0]._data, grads_b[1]._data,
                                             *_lengths_buffer(lengths), T, B, H)
        dgi_f, dh0_f, dw_f, dbi_f, dbh_f = _weight_gradients(gi_f, h0_f, bi_f, False, hs_f,
                                                             *grads_f)
        dgi_b, dh0_b, dw_b, dbi_b, dbh_b = _weight_gradients(gi_b, h0_b, bi_b, True, hs_b,
                                                             *grads_b)
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
        backend.rnn.gru_cell_forward(gi._data, gh._data, h._data, bi, bh, out._data, ws._data,
                                     B, H)
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
        backend.rnn.gru_cell_backward(g._data, h._data, ctx.ws._data, dh._data, dgi._data,
                                      dgh._data, B, H)
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


# Under create_graph=True their backwards are the composed steps, differentiated.
GRUSequence.differentiable_backward = composed(_gru_sequence_composed)
BiGRUSequence.differentiable_backward = composed(_bi_gru_sequence_composed)
GRUCell.differentiable_backward = composed(_gru_cell_composed)


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

