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
    `GRUSequence` (ops/rnn.py), whose backward is backpropagation through time written out as a
    loop: per step one fused kernel and one matmul, then dW_hh as *one* matmul over all steps.
`GRUCell` (one step, used by decoders that need something between steps, like attention) is one
node too, ops/rnn.py's `GRUCell`: its two matmuls and the fused kernel, and their gradients.

Packed sequences (nn.utils.rnn.PackedSequence), as PyTorch: `GRU` takes one and returns one.
They are unpacked into a padded batch in sorted order, run with lengths= (below) and packed again;
h_0 and h_n are in the caller's batch order. Beyond PyTorch, `GRU.forward(..., lengths=)` takes
a padded batch and the true length of each sequence directly. A sequence's state stops
changing after its last token, outputs past it are zero, and the reverse direction starts at each
sequence's own last token; so `h_n` is the state at the true end, in both directions, exactly as
running every sequence alone would give.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math

from .. import _devices as _dev
from ..creation import empty, tensor, zeros
from ..ops.rnn import bi_gru_sequence, gru_cell, gru_sequence
from ..tensor import Tensor
from ..ops.arithmetic import mul
from ..ops.layout import contiguous, reshape, squeeze, stack, transpose, unsqueeze
from ..ops.indexing import index_select
from ..ops.matmul import matmul
from . import functional as F
from . import init
from .module import Module, Parameter
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence



def check_rnn_args(name, input_size, hidden_size, num_layers, bias, batch_first, dropout):
    """PyTorch's checks of a recurrent layer's constructor arguments, with its exceptions."""
    for arg, value, kind in (("input_size", input_size, int), ("hidden_size", hidden_size, int),
                             ("num_layers", num_layers, int), ("bias", bias, bool),
                             ("batch_first", batch_first, bool)):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"{name}: {arg} should be of type {kind.__name__}, got: "
                            f"{type(value).__name__}")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
            or not 0 <= dropout <= 1:
        raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing the "
                         f"probability of an element being zeroed, got {dropout!r}")
    if hidden_size <= 0:
        raise ValueError(f"{name}: hidden_size must be greater than zero, got {hidden_size}")
    if num_layers <= 0:
        raise ValueError(f"{name}: num_layers must be greater than zero, got {num_layers}")


class RNNBase(Module):
    """What GRU, LSTM and RNN share beyond their equations: PyTorch's lists of weight names,
    `_flat_weights_names` (every weight, layer by layer, direction by direction: weight_ih,
    weight_hh, bias_ih, bias_hh, weight_hr) and `_all_weights` (the same, one list per layer and
    direction), `_flat_weights` and `all_weights` (the Parameters they name, read when asked, so
    a weight replaced by setattr is seen), and packed-sequence plumbing."""

    def _set_weight_names(self, proj=False):
        names = []
        for k in range(self.num_layers):
            for suffix in ("", "_reverse")[:2 if self.bidirectional else 1]:
                w = [f"weight_ih_l{k}{suffix}", f"weight_hh_l{k}{suffix}"]
                if self.bias:
                    w += [f"bias_ih_l{k}{suffix}", f"bias_hh_l{k}{suffix}"]
                if proj:
                    w += [f"weight_hr_l{k}{suffix}"]
                names.append(w)
        self._all_weights = names
        self._flat_weights_names = [n for w in names for n in w]

    @property
    def _flat_weights(self):
        return [getattr(self, n) if hasattr(self, n) else None for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in w] for w in self._all_weights]

    def flatten_parameters(self):
        """PyTorch's cuDNN layout call: nothing to do on the CPU."""

    def _packed_data(self, packed):
        """A PackedSequence's data (N, input_size) and batch sizes, checked."""
        data = packed.data
        if not isinstance(data, Tensor) or data.ndim != 2:
            raise RuntimeError(f"{type(self).__name__}: input must have 2 dimensions, got "
                               f"{data.ndim if isinstance(data, Tensor) else data!r} (a "
                               f"PackedSequence's data is (sum of lengths, input_size))")
        if data.shape[1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input has {data.shape[1]} features (shape "
                             f"{tuple(data.shape)}), expected input_size={self.input_size}")
        return data, [int(n) for n in packed.batch_sizes.tolist()]


def _permute_batch(state, indices):
    """state (L*D, B, H) with its batch reordered by indices (None: unchanged)."""
    return state if indices is None or state is None else index_select(state, 1, indices)


def _gru_init(module, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class GRUCell(Module):
    """One GRU step: h' = GRUCell(x, h).  input (B, I) or (I,), hx (B, H) or (H,) (zeros if None).

    Parameters: weight_ih (3H, I), weight_hh (3H, H), bias_ih (3H), bias_hh (3H), gates r | z | n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        _dev.check(device, "GRUCell")
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
        x = unsqueeze(input, 0) if unbatched else input
        B = x.shape[0]
        if hx is None:
            h = zeros(B, self.hidden_size, dtype=x.dtype)
        else:
            if not isinstance(hx, Tensor) or hx.ndim not in (1, 2):
                got = f"{hx.ndim}D" if isinstance(hx, Tensor) else type(hx).__name__
                raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {got} instead")
            h = unsqueeze(hx, 0) if unbatched else hx
            if tuple(h.shape) != (B, self.hidden_size):
                raise RuntimeError(f"GRUCell: hx must have shape {(B, self.hidden_size)}"
                                 f"{' (unbatched: (H,))' if unbatched else ''}, got "
                                 f"{tuple(hx.shape)}")
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return squeeze(out, 0) if unbatched else out

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class GRU(RNNBase):
    """A multi-layer, optionally bidirectional GRU over whole sequences.

    input (T, B, I), or (B, T, I) with batch_first=True, or unbatched (T, I);
    hx (num_layers * D, B, H) or None (zeros), D = 2 if bidirectional else 1.
    Returns output (T, B, D*H) (batch_first: (B, T, D*H)) -- the last layer's state at every step,
    both directions concatenated -- and h_n (num_layers * D, B, H), the final state of every layer
    and direction (for the reverse direction: the state after reading x_0).

    Parameters, per layer k (and `_reverse` for the backward direction): weight_ih_l{k}
    (3H, I or D*H), weight_hh_l{k} (3H, H), bias_ih_l{k}, bias_hh_l{k} (3H).

    `dropout` is applied to the outputs of every layer but the last, in training mode.

    input may be a PackedSequence (then output is one too, and hx / h_n are (num_layers * D, B, H)
    in the caller's batch order): see the module docstring.

    Extension (keyword-only): lengths=(B,) ints or int64 tensor, the true length of each padded
    sequence (0 <= length <= T): see the module docstring."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__()
        _dev.check(device, "GRU")
        check_rnn_args("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout)
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
        self._set_weight_names()
        self.reset_parameters()

    def reset_parameters(self):
        _gru_init(self, self.hidden_size)

    def _weights(self, k, suffix):
        get = self._parameters.get
        return (get(f"weight_ih_l{k}{suffix}"), get(f"weight_hh_l{k}{suffix}"),
                get(f"bias_ih_l{k}{suffix}"), get(f"bias_hh_l{k}{suffix}"))

    def forward(self, input, hx=None, *, lengths=None):  # noqa: A002
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx, lengths)
        if not isinstance(input, Tensor) or input.ndim not in (2, 3):
            raise ValueError(f"GRU: expected a 3-D (batched) or 2-D (unbatched) input, got "
                             f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"GRU: input has {input.shape[-1]} features (shape "
                             f"{tuple(input.shape)}), expected input_size={self.input_size}")
        unbatched = input.ndim == 2
        if unbatched:
            x = unsqueeze(input, 1)
        else:
            x = transpose(input, 0, 1) if self.batch_first else input
        x = contiguous(x)  # (T, B, I): the recurrence walks time-major rows
        T, B = x.shape[0], x.shape[1]
        if T == 0 or B == 0:
            raise ValueError(f"GRU: empty input of shape {tuple(input.shape)}")
        h0 = self._initial_state(hx, unbatched, B, x.dtype)
        out, h_n = self._layers(x, h0, self._lengths(lengths, T, B))
        if unbatched:
            return squeeze(out, 1), squeeze(h_n, 1)
        if self.batch_first:
            out = contiguous(transpose(out, 0, 1))
        return out, h_n

    def _forward_packed(self, packed, hx, lengths):
        """A PackedSequence: padded in sorted order (longest first), run with its lengths, packed
        again; h_0 is reordered into sorted order and h_n back into the caller's."""
        if lengths is not None:
            raise ValueError("GRU: lengths= is for a padded batch; a PackedSequence carries its "
                             "own lengths")
        data, batch_sizes = self._packed_data(packed)
        x, lens = pad_packed_sequence(PackedSequence(data, packed.batch_sizes))
        lens = lens.tolist()
        h0 = self._initial_state(hx, False, batch_sizes[0], x.dtype)
        out, h_n = self._layers(x, _permute_batch(h0, packed.sorted_indices), lens)
        out = pack_padded_sequence(out, lens).data
        return (PackedSequence(out, packed.batch_sizes, packed.sorted_indices,
                               packed.unsorted_indices),
                _permute_batch(h_n, packed.unsorted_indices))

    def _layers(self, x, h0, lens):
        """x (T, B, I) contiguous, h0 (L*D, B, H) or None, lens a list or None -> out
        (T, B, D*H), h_n (L*D, B, H)."""
        D = 2 if self.bidirectional else 1
        H = self.hidden_size
        T, B = x.shape[0], x.shape[1]
        layer_input = x
        finals = []
        for k in range(self.num_layers):
            flat = reshape(layer_input, (T * B, layer_input.shape[2]))
            args = []                   # per direction: gi, h_start, w_hh, b_ih, b_hh
            for d, suffix in enumerate(("", "_reverse")[:D]):
                w_ih, w_hh, b_ih, b_hh = self._weights(k, suffix)
                # All T input projections in one matmul: (T*B, I) @ (I, 3H).
                gi = reshape(matmul(flat, transpose(w_ih, 0, 1)), (T, B, 3 * H))
                h_start = zeros(B, H, dtype=x.dtype) if h0 is None else h0[k * D + d]
                args.append((gi, h_start, w_hh, b_ih, b_hh))
            if D == 1:
                out = gru_sequence(*args[0], lens)  # (T, B, H)
                finals.append(out[T - 1])
            else:   # both directions in one node, on two cores at once: (T, B, 2H)
                (gi_f, h_f, w_f, bi_f, bh_f), (gi_b, h_b, w_b, bi_b, bh_b) = args
                out = bi_gru_sequence(gi_f, gi_b, h_f, h_b, w_f, w_b, bi_f, bh_f, bi_b, bh_b,
                                      lens)
                finals.append(out[T - 1, :, :H])
                finals.append(out[0, :, H:])
            if self.dropout > 0 and self.training and k < self.num_layers - 1:
                out = F.dropout(out, self.dropout, True)
            layer_input = out
        if lens is not None:  # outputs past each sequence's length are zero
            out = mul(out, self._length_mask(lens, T, B, x.dtype))
        return out, stack(finals, 0)  # h_n (num_layers * D, B, H)

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
        return unsqueeze(hx, 1) if unbatched else hx

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
        return values

    @staticmethod
    def _length_mask(lens, T, B, dtype):
        """(T, B, 1): 1 where t < lengths[b], else 0."""
        return tensor([[[1.0 if t < n else 0.0] for n in lens] for t in range(T)], dtype=dtype)

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
