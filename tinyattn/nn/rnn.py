"""GRUCell and GRU, with PyTorch's parameter names, shapes, initialisation and equations.

    r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
    z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
    n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

weight_ih (3H, I) stacks W_ir | W_iz | W_in, weight_hh (3H, H) stacks W_hr | W_hz | W_hn, and every
weight and bias starts as U(-1/sqrt(H), 1/sqrt(H)), as in PyTorch.

How it is made fast. An RNN at demo sizes is bound by per-op overhead, not arithmetic, so:
  - the input projections x_t W_ih^T of *all* time steps are one matmul before the loop;
  - one time step is one matmul (h W_hh^T) plus one fused kernel (kernels/rnn.py);
  - `GRU` runs the whole recurrence of a layer and direction as a single autograd node,
    `_GRUSequence`, whose backward is backpropagation through time written out as a loop:
    per step one fused kernel and one matmul, then dW_hh as *one* matmul over all steps.
`GRUCell` (one step, used by decoders that need something between steps, like attention) is one
node too, `_GRUCell`: its two matmuls and the fused kernel, and their gradients.

Variable-length batches (beyond PyTorch, which uses packed sequences for this): `GRU.forward(...,
lengths=)` takes a padded batch and the true length of each sequence. A sequence's state stops
changing after its last token, outputs past it are zero, and the reverse direction starts at each
sequence's own last token; so `h_n` is the state at the true end, in both directions, exactly as
running every sequence alone would give.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math
from array import array

from .. import dtypes as _dt
from .. import functions as _f
from ..autograd import Function
from ..creation import empty, zeros
from ..kernels import rnn as KR
from ..tensor import Tensor, _empty, _make
from . import functional as F
from . import init
from .module import Module, Parameter


def _rows(t, offset, shape):
    """A (rows, cols) view of t's buffer from `offset`: one time step of a (T, B, X) buffer."""
    return _make(t._data, shape, t.dtype, (shape[1], 1), offset)


def _bias_buffers(b_ih, b_hh, dtype, H):
    """The two bias buffers (3H) for the step kernel; zeros for a GRU without biases."""
    if b_ih is None:
        zeros3h = _dt.zeros_buffer(dtype, 3 * H)
        return zeros3h, zeros3h
    return _f._packed(b_ih)._data, _f._packed(b_hh)._data


class _GRUSequence(Function):
    """The recurrence of one GRU layer in one direction over a whole sequence, as one graph node.

    gi (T, B, 3H) = x W_ih^T for all steps (no bias), h0 (B, H), w_hh (3H, H), b_ih / b_hh (3H) or
    None, lengths an int64 buffer (B) or None, reverse: walk t = T-1 .. 0.
    Returns hs (T, B, H): hs[t] = the state after reading x_t (carried unchanged past a length)."""

    op_name = "GRU"

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_ih, b_hh, lengths, reverse):
        T, B, H3 = gi.shape
        H = H3 // 3
        dt = gi.dtype
        hs = _empty((T, B, H), dt)
        ws = _empty((T, B, 4 * H), dt)
        bi, bh = _bias_buffers(b_ih, b_hh, dt, H)
        lens, has_len = (lengths, True) if lengths is not None else (array("q", [0]), False)
        w_hh_t = _f._transposed(w_hh)  # (H, 3H), a view
        h = _f._packed(h0)  # the state entering the step: h0, then a row block of hs
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            gh = _f._matmul_raw(h, w_hh_t)  # (B, 3H)
            KR.gru_step_forward(gi._data, t * B * H3, gh._data, h._data, h._offset, bi, bh,
                                lens, has_len, t, hs._data, t * B * H, ws._data,
                                t * B * 4 * H, B, H)
            h = _rows(hs, t * B * H, (B, H))
        ctx.ws = ws
        ctx.hs = hs.detach()  # not hs itself: a node must not point to its own output
        return hs

    @staticmethod
    def backward(ctx, g):
        gi, h0, w_hh, b_ih, b_hh, lengths, reverse = ctx.inputs
        T, B, H3 = gi.shape
        H = H3 // 3
        dt = gi.dtype
        hs, ws = ctx.hs, ctx.ws
        g = _f._packed(g)
        h0 = _f._packed(h0.detach())
        lens, has_len = (lengths, True) if lengths is not None else (array("q", [0]), False)
        dgi = _empty((T, B, H3), dt)
        dgh = _empty((T, B, H3), dt)
        carry = _empty((B, H), dt)  # dL/dh along the direct path h_{t-1} -> h_t
        m = carry  # dL/dh along the path through h W_hh^T (none before the first step back)
        w = w_hh
        order = range(T) if reverse else range(T - 1, -1, -1)  # the forward order, reversed
        first = True
        for t in order:
            prev = t + 1 if reverse else t - 1
            h_prev = h0 if prev in (-1, T) else _rows(hs, prev * B * H, (B, H))
            KR.gru_step_backward(g._data, t * B * H, True, carry._data, m._data, not first,
                                 h_prev._data, h_prev._offset, ws._data, t * B * 4 * H, lens,
                                 has_len, t, dgi._data, t * B * H3, dgh._data, t * B * H3, B, H)
            m = _f._matmul_raw(_rows(dgh, t * B * H3, (B, H3)), w)  # (B, H)
            first = False
        dh0 = _f.add(carry, m) if T else carry
        # Every step used the same W_hh: its gradient sums dgh_t^T h_{t-1} over t -- one matmul
        # of the (T*B, 3H) step gradients against the (T*B, H) states that entered each step.
        if reverse:
            prev_states = _f.cat([_f.narrow(hs, 0, 1, T - 1), _f.unsqueeze(h0, 0)], 0)
        else:
            prev_states = _f.cat([_f.unsqueeze(h0, 0), _f.narrow(hs, 0, 0, T - 1)], 0)
        dgh2 = _f.reshape(dgh, (T * B, H3))
        dw_hh = _f._matmul_raw(_f._transposed(dgh2), _f.reshape(prev_states, (T * B, H)))
        db_ih = db_hh = None
        if b_ih is not None:
            db_ih = _f._sum(_f.reshape(dgi, (T * B, H3)), (0,), False)
            db_hh = _f._sum(dgh2, (0,), False)
        return dgi, dh0, dw_hh, db_ih, db_hh, None, None


class _GRUCell(Function):
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
        gi = _f._matmul_raw(x, _f._transposed(w_ih))  # (B, 3H)
        gh = _f._matmul_raw(h, _f._transposed(w_hh))  # (B, 3H)
        h = _f._packed(h)
        bi, bh = _bias_buffers(b_ih, b_hh, dt, H)
        out = _empty((B, H), dt)
        ws = _empty((B, 4 * H), dt)
        KR.gru_step_forward(gi._data, 0, gh._data, h._data, 0, bi, bh,
                            array("q", [0]), False, 0, out._data, 0, ws._data, 0, B, H)
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
        g = _f._packed(g)
        dgi = _empty((B, 3 * H), dt)
        dgh = _empty((B, 3 * H), dt)
        dh = _empty((B, H), dt)
        KR.gru_step_backward(g._data, 0, True, dh._data, dh._data, False, h._data, 0,
                             ctx.ws._data, 0, array("q", [0]), False, 0, dgi._data, 0, dgh._data,
                             0, B, H)
        # The products and sums below are raw kernels (backward builds no graph anyway).
        dx = _f._matmul_raw(dgi, w_ih) if need_x else None
        if need_h:
            _f.add_into(dh, _f._matmul_raw(dgh, w_hh))  # dh is ours: add in place
        else:
            dh = None
        dw_ih = _f._matmul_raw(_f._transposed(dgi), x) if need_wih else None
        dw_hh = _f._matmul_raw(_f._transposed(dgh), h) if need_whh else None
        db_ih = _f._sum(dgi, (0,), False) if b_ih is not None else None
        db_hh = _f._sum(dgh, (0,), False) if b_hh is not None else None
        return dx, dh, dw_ih, dw_hh, db_ih, db_hh


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """h' = one GRU step of input (B, I) from hx (B, H) with the given weights (module docstring)."""
    if input.dtype is not hx.dtype or w_ih.dtype is not input.dtype:
        raise TypeError(f"gru_cell: input, hx and weights must share a dtype, got {input.dtype}, "
                        f"{hx.dtype} and {w_ih.dtype}")
    return _GRUCell.apply(input, hx, w_ih, w_hh, b_ih, b_hh)


def _gru_init(module, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class GRUCell(Module):
    """One GRU step: h' = GRUCell(x, h).  input (B, I) or (I,), hx (B, H) or (H,) (zeros if None).

    Parameters: weight_ih (3H, I), weight_hh (3H, H), bias_ih (3H), bias_hh (3H), gates r | z | n."""

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(3 * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(3 * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(3 * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(empty(3 * hidden_size, dtype=dtype))
        else:
            self.bias_ih = None
            self.bias_hh = None
        self.reset_parameters()

    def reset_parameters(self):
        _gru_init(self, self.hidden_size)

    def forward(self, input, hx=None):  # noqa: A002
        if not isinstance(input, Tensor) or input.ndim not in (1, 2):
            raise ValueError(f"GRUCell: expected input of shape (batch, {self.input_size}) or "
                             f"({self.input_size},), got "
                             f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"GRUCell: input has {input.shape[-1]} features (shape "
                             f"{tuple(input.shape)}), expected input_size={self.input_size}")
        unbatched = input.ndim == 1
        x = _f.unsqueeze(input, 0) if unbatched else input
        B = x.shape[0]
        if hx is None:
            h = zeros(B, self.hidden_size, dtype=x.dtype)
        else:
            h = _f.unsqueeze(hx, 0) if unbatched else hx
            if tuple(h.shape) != (B, self.hidden_size):
                raise ValueError(f"GRUCell: hx must have shape {(B, self.hidden_size)}"
                                 f"{' (unbatched: (H,))' if unbatched else ''}, got "
                                 f"{tuple(hx.shape)}")
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return _f.squeeze(out, 0) if unbatched else out

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class GRU(Module):
    """A multi-layer, optionally bidirectional GRU over whole sequences.

    input (T, B, I), or (B, T, I) with batch_first=True, or unbatched (T, I);
    hx (num_layers * D, B, H) or None (zeros), D = 2 if bidirectional else 1.
    Returns output (T, B, D*H) (batch_first: (B, T, D*H)) -- the last layer's state at every step,
    both directions concatenated -- and h_n (num_layers * D, B, H), the final state of every layer
    and direction (for the reverse direction: the state after reading x_0).

    Parameters, per layer k (and `_reverse` for the backward direction): weight_ih_l{k}
    (3H, I or D*H), weight_hh_l{k} (3H, H), bias_ih_l{k}, bias_hh_l{k} (3H).

    `dropout` is applied to the outputs of every layer but the last, in training mode.

    Extension (keyword-only): lengths=(B,) ints or int64 tensor, the true length of each padded
    sequence (0 <= length <= T): see the module docstring. Replaces PyTorch's packed sequences."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=None):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"GRU: num_layers must be at least 1, got {num_layers}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"GRU: dropout must be in [0, 1], got {dropout}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        D = 2 if bidirectional else 1
        H = hidden_size
        for k in range(num_layers):
            layer_in = input_size if k == 0 else D * H
            for suffix in ("", "_reverse")[:D]:
                setattr(self, f"weight_ih_l{k}{suffix}",
                        Parameter(empty(3 * H, layer_in, dtype=dtype)))
                setattr(self, f"weight_hh_l{k}{suffix}", Parameter(empty(3 * H, H, dtype=dtype)))
                if bias:
                    setattr(self, f"bias_ih_l{k}{suffix}", Parameter(empty(3 * H, dtype=dtype)))
                    setattr(self, f"bias_hh_l{k}{suffix}", Parameter(empty(3 * H, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self):
        _gru_init(self, self.hidden_size)

    def _weights(self, k, suffix):
        get = self._parameters.get
        return (get(f"weight_ih_l{k}{suffix}"), get(f"weight_hh_l{k}{suffix}"),
                get(f"bias_ih_l{k}{suffix}"), get(f"bias_hh_l{k}{suffix}"))

    def forward(self, input, hx=None, *, lengths=None):  # noqa: A002
        D = 2 if self.bidirectional else 1
        H = self.hidden_size
        if not isinstance(input, Tensor) or input.ndim not in (2, 3):
            raise ValueError(f"GRU: expected a 3-D (batched) or 2-D (unbatched) input, got "
                             f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"GRU: input has {input.shape[-1]} features (shape "
                             f"{tuple(input.shape)}), expected input_size={self.input_size}")
        unbatched = input.ndim == 2
        if unbatched:
            x = _f.unsqueeze(input, 1)
        else:
            x = _f.transpose(input, 0, 1) if self.batch_first else input
        x = _f.contiguous(x)  # (T, B, I): the recurrence walks time-major rows
        T, B = x.shape[0], x.shape[1]
        if T == 0 or B == 0:
            raise ValueError(f"GRU: empty input of shape {tuple(input.shape)}")
        h0 = self._initial_state(hx, unbatched, B, x.dtype)
        lens = self._lengths(lengths, T, B)

        layer_input = x
        finals = []
        for k in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:D]):
                w_ih, w_hh, b_ih, b_hh = self._weights(k, suffix)
                # All T input projections in one matmul: (T*B, I) @ (I, 3H).
                flat = _f.reshape(layer_input, (T * B, layer_input.shape[2]))
                gi = _f.reshape(_f.matmul(flat, _f.transpose(w_ih, 0, 1)), (T, B, 3 * H))
                h_start = zeros(B, H, dtype=x.dtype) if h0 is None else h0[k * D + d]
                hs = _GRUSequence.apply(gi, h_start, w_hh, b_ih, b_hh, lens, d == 1)  # (T, B, H)
                finals.append(hs[T - 1] if d == 0 else hs[0])
                outs.append(hs)
            out = outs[0] if D == 1 else _f.cat(outs, 2)  # (T, B, D*H)
            if self.dropout > 0 and self.training and k < self.num_layers - 1:
                out = F.dropout(out, self.dropout, True)
            layer_input = out
        if lens is not None:  # outputs past each sequence's length are zero
            out = _f.mul(out, self._length_mask(lens, T, B, x.dtype))
        h_n = _f.stack(finals, 0)  # (num_layers * D, B, H)
        if unbatched:
            return _f.squeeze(out, 1), _f.squeeze(h_n, 1)
        if self.batch_first:
            out = _f.contiguous(_f.transpose(out, 0, 1))
        return out, h_n

    def _initial_state(self, hx, unbatched, B, dtype):
        if hx is None:
            return None
        D = 2 if self.bidirectional else 1
        expected = (self.num_layers * D, self.hidden_size) if unbatched else (
            self.num_layers * D, B, self.hidden_size)
        if not isinstance(hx, Tensor) or tuple(hx.shape) != expected:
            raise ValueError(f"GRU: hx must have shape {expected} (num_layers * num_directions, "
                             f"{'' if unbatched else 'batch, '}hidden_size), got "
                             f"{tuple(hx.shape) if isinstance(hx, Tensor) else hx!r}")
        return _f.unsqueeze(hx, 1) if unbatched else hx

    @staticmethod
    def _lengths(lengths, T, B):
        if lengths is None:
            return None
        values = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
        if len(values) != B:
            raise ValueError(f"GRU: lengths must give one length per sequence ({B}), got "
                             f"{len(values)}")
        for v in values:
            if not isinstance(v, int) or not 0 <= v <= T:
                raise ValueError(f"GRU: every length must be an int in [0, {T}] (the padded "
                                 f"sequence length), got {v!r}")
        return array("q", values)

    @staticmethod
    def _length_mask(lens, T, B, dtype):
        """(T, B, 1): 1 where t < lengths[b], else 0."""
        mask = _make(_dt.zeros_buffer(dtype, T * B), (T, B, 1), dtype)
        for b, n in enumerate(lens):
            for t in range(n):
                mask._data[t * B + b] = 1.0
        return mask

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s
