"""LSTM, LSTMCell, RNN and RNNCell, with PyTorch's parameter names, shapes, initialisation and
equations, written with ops (their gradients are autograd's, step by step).

    LSTM   i, f, g, o = split(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)       (gate order i f g o)
           c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
           h_t = sigmoid(o) * tanh(c_t)
    RNN    h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)     (nonlinearity='relu': relu)

weight_ih (G*H, I), weight_hh (G*H, H), biases (G*H) with G = 4 (LSTM) or 1 (RNN), every one
U(-1/sqrt(H), 1/sqrt(H)). As in GRU (rnn.py), the input projections of all steps are one
matmul before the loop; unlike GRU, the step is not one fused node: these layers are here so
that PyTorch programs that use them run, while GRU is the one tinyattn's demos train fast.

LSTM(proj_size=P), as PyTorch: h_t = W_hr (sigmoid(o) * tanh(c_t)), weight_hr_l{k} (P, H), so
h is P wide (weight_hh (4H, P), outputs D*P, h_0 (L*D, B, P)) while c stays H wide.

Packed sequences (nn.utils.rnn.PackedSequence) run as PyTorch runs them: the sequences are
sorted longest first, so at step t the first batch_sizes[t] rows of the state are the live ones;
each step updates those rows and leaves the others as they are (finished sequences keep their
last state; in the reverse direction, sequences not yet started keep h_0). A padded batch is
the packed case with batch_sizes = [B] * T, so one loop serves both.
"""
import math

from ..creation import empty, zeros
from ..ops.arithmetic import add, mul
from ..ops.unary import relu, sigmoid, tanh
from ..ops.layout import (cat, chunk, contiguous, narrow, reshape, squeeze, stack, transpose,
                          unsqueeze)
from ..ops.matmul import matmul
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, Parameter
from .rnn import RNNBase, _permute_batch, check_rnn_args
from .utils.rnn import PackedSequence


def _uniform_all(module, hidden_size):
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


def _lstm_step(gates, c):
    i, f, g, o = chunk(gates, 4, -1)
    c = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)))
    return mul(sigmoid(o), tanh(c)), c


def _rnn_step(gates, nonlinearity):
    return tanh(gates) if nonlinearity == "tanh" else relu(gates)


def _linear(x, w, b):
    y = matmul(x, transpose(w, 0, 1))
    return y if b is None else add(y, b)


class _Cell(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        G = self.gates
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(G * hidden_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(G * hidden_size, hidden_size, dtype=dtype,
                                         device=device))
        if bias:
            self.bias_ih = Parameter(empty(G * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(G * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_all(self, self.hidden_size)

    def _check(self, input, name):  # noqa: A002
        if not isinstance(input, Tensor) or input.ndim not in (1, 2) \
                or input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input (B, {self.input_size}) or "
                             f"({self.input_size},), got "
                             f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
        return input.ndim == 1

    def _hidden(self, h, unbatched, B, name, label):
        """A given state, checked as PyTorch does, batched as the input: (B, H)."""
        if not isinstance(h, Tensor) or h.ndim not in (1, 2):
            got = f"{h.ndim}D" if isinstance(h, Tensor) else type(h).__name__
            raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {got} instead")
        if h.ndim != (1 if unbatched else 2) or h.shape[-1] != self.hidden_size \
                or (not unbatched and h.shape[0] != B):
            want = (self.hidden_size,) if unbatched else (B, self.hidden_size)
            raise RuntimeError(f"{name}: {label} must have shape {want} to match the input, "
                               f"got {tuple(h.shape)}")
        return unsqueeze(h, 0) if unbatched else h

    def _gates(self, x, h):
        return add(_linear(x, self.weight_ih, self.bias_ih),
                   _linear(h, self.weight_hh, self.bias_hh))

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class LSTMCell(_Cell):
    """One LSTM step: (h', c') = cell(x, (h, c)); input (B, I) or (I,), state zeros if None."""

    gates = 4

    def forward(self, input, hx=None):  # noqa: A002
        unbatched = self._check(input, "LSTMCell")
        x = unsqueeze(input, 0) if unbatched else input
        if hx is None:
            h = c = zeros(x.shape[0], self.hidden_size, dtype=x.dtype)
        else:
            h = self._hidden(hx[0], unbatched, x.shape[0], "LSTMCell", "hx[0]")
            c = self._hidden(hx[1], unbatched, x.shape[0], "LSTMCell", "hx[1]")
        h, c = _lstm_step(self._gates(x, h), c)
        return (squeeze(h, 0), squeeze(c, 0)) if unbatched else (h, c)


class RNNCell(_Cell):
    """One Elman RNN step: h' = tanh (or relu) of W_ih x + b_ih + W_hh h + b_hh."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r} (tanh or relu)")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity}"

    def forward(self, input, hx=None):  # noqa: A002
        unbatched = self._check(input, "RNNCell")
        x = unsqueeze(input, 0) if unbatched else input
        h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype) if hx is None else \
            self._hidden(hx, unbatched, x.shape[0], "RNNCell", "hidden")
        h = _rnn_step(self._gates(x, h), self.nonlinearity)
        return squeeze(h, 0) if unbatched else h


class _Recurrent(RNNBase):
    """The multi-layer, optionally bidirectional loop shared by LSTM and RNN."""

    gates = 1

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, proj_size=0):
        super().__init__()
        name = type(self).__name__
        check_rnn_args(name, input_size, hidden_size, num_layers, bias, batch_first, dropout)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        D, H, G = (2 if bidirectional else 1), hidden_size, self.gates
        R = proj_size or hidden_size   # the width of h
        for k in range(num_layers):
            layer_in = input_size if k == 0 else D * R
            for suffix in ("", "_reverse")[:D]:
                setattr(self, f"weight_ih_l{k}{suffix}",
                        Parameter(empty(G * H, layer_in, dtype=dtype, device=device)))
                setattr(self, f"weight_hh_l{k}{suffix}",
                        Parameter(empty(G * H, R, dtype=dtype, device=device)))
                if bias:
                    setattr(self, f"bias_ih_l{k}{suffix}",
                            Parameter(empty(G * H, dtype=dtype, device=device)))
                    setattr(self, f"bias_hh_l{k}{suffix}",
                            Parameter(empty(G * H, dtype=dtype, device=device)))
                if proj_size:
                    setattr(self, f"weight_hr_l{k}{suffix}",
                            Parameter(empty(R, H, dtype=dtype, device=device)))
        self._set_weight_names(proj=bool(proj_size))
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_all(self, self.hidden_size)

    def _run(self, input, states):  # noqa: A002
        """states(unbatched, B, dtype): the initial state tensors, each (L*D, B, width) ->
        (output, final state tensors), output a PackedSequence when input is one."""
        name = type(self).__name__
        D = 2 if self.bidirectional else 1
        packed = input if isinstance(input, PackedSequence) else None
        unbatched = False
        if packed is not None:
            data, batch_sizes = self._packed_data(packed)
            B = batch_sizes[0]
        else:
            if not isinstance(input, Tensor) or input.ndim not in (2, 3) \
                    or input.shape[-1] != self.input_size:
                raise ValueError(
                    f"{name}: expected input (T, B, {self.input_size}) (batch_first: "
                    f"(B, T, {self.input_size})) or unbatched (T, {self.input_size}), got "
                    f"{tuple(input.shape) if isinstance(input, Tensor) else input!r}")
            unbatched = input.ndim == 2
            x = unsqueeze(input, 1) if unbatched else (
                transpose(input, 0, 1) if self.batch_first else input)
            x = contiguous(x)
            T, B = x.shape[0], x.shape[1]
            data, batch_sizes = reshape(x, (T * B, x.shape[2])), [B] * T
        full = [_permute_batch(s, packed.sorted_indices) if packed else s
                for s in states(unbatched, B, data.dtype)]
        starts = [0]
        for n in batch_sizes:
            starts.append(starts[-1] + n)
        finals = []
        layer_input = data   # (N, features): each step's live rows, step after step
        for k in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:D]):
                get = self._parameters.get
                w_ih, w_hh = get(f"weight_ih_l{k}{suffix}"), get(f"weight_hh_l{k}{suffix}")
                b_ih, b_hh = get(f"bias_ih_l{k}{suffix}"), get(f"bias_hh_l{k}{suffix}")
                w_hr = get(f"weight_hr_l{k}{suffix}")
                gi = _linear(layer_input, w_ih, b_ih)   # all steps' input projections at once
                state = tuple(s[k * D + d] for s in full)
                hs = [None] * len(batch_sizes)
                steps = range(len(batch_sizes))
                for t in (reversed(steps) if d == 1 else steps):
                    n = batch_sizes[t]
                    live = state if n == B else tuple(narrow(s, 0, 0, n) for s in state)
                    gates = add(narrow(gi, 0, starts[t], n), _linear(live[0], w_hh, b_hh))
                    new = self._step(gates, live, w_hr)
                    state = new if n == B else tuple(
                        cat([a, narrow(s, 0, n, B - n)], 0) for a, s in zip(new, state))
                    hs[t] = new[0]
                finals.append(state)
                outs.append(cat(hs, 0))
            out = outs[0] if D == 1 else cat(outs, 1)
            if self.dropout > 0 and self.training and k < self.num_layers - 1:
                out = F.dropout(out, self.dropout, True)
            layer_input = out
        finals = [stack([s[j] for s in finals], 0) for j in range(len(finals[0]))]
        if packed is not None:
            return (PackedSequence(out, packed.batch_sizes, packed.sorted_indices,
                                   packed.unsorted_indices),
                    [_permute_batch(f, packed.unsorted_indices) for f in finals])
        out = reshape(out, (T, B, out.shape[1]))
        if unbatched:
            return squeeze(out, 1), [squeeze(f, 1) for f in finals]
        if self.batch_first:
            out = contiguous(transpose(out, 0, 1))
        return out, finals

    def _state(self, hx, unbatched, B, dtype, what, width=None):
        D = 2 if self.bidirectional else 1
        width = width or self.hidden_size
        shape = (self.num_layers * D, width) if unbatched else (self.num_layers * D, B, width)
        if hx is None:
            return zeros(*shape, dtype=dtype)
        if not isinstance(hx, Tensor) or tuple(hx.shape) != shape:
            raise ValueError(f"{type(self).__name__}: {what} must have shape {shape}, got "
                             f"{tuple(hx.shape) if isinstance(hx, Tensor) else hx!r}")
        return hx

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
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


class LSTM(_Recurrent):
    """output, (h_n, c_n) = lstm(input, (h_0, c_0)): input (T, B, I) (batch_first: (B, T, I)),
    (T, I), or a PackedSequence (then output is one too); h (num_layers * D, B, R) and c
    (num_layers * D, B, H), zeros when hx is None, R = proj_size or H. output (T, B, D*R),
    h_0 / h_n in the caller's batch order for packed input too.

    proj_size=P (0 < P < H): every layer's h is projected, h_t = W_hr (o * tanh(c_t)), with
    weight_hr_l{k} (P, H); see the module docstring."""

    gates = 4

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        check_rnn_args("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout)
        if not isinstance(proj_size, int) or isinstance(proj_size, bool):
            raise TypeError(f"LSTM: proj_size must be an int, got {proj_size!r}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype, proj_size)

    def _step(self, gates, state, w_hr):
        h, c = _lstm_step(gates, state[1])
        return (h if w_hr is None else matmul(h, transpose(w_hr, 0, 1))), c

    def forward(self, input, hx=None):  # noqa: A002
        def states(unbatched, B, dtype):
            h0, c0 = (None, None) if hx is None else hx
            h0 = self._state(h0, unbatched, B, dtype, "h_0", self.proj_size)
            c0 = self._state(c0, unbatched, B, dtype, "c_0")
            return (unsqueeze(h0, 1), unsqueeze(c0, 1)) if unbatched else (h0, c0)
        out, (h_n, c_n) = self._run(input, states)
        return out, (h_n, c_n)


class RNN(_Recurrent):
    """output, h_n = rnn(input, h_0): the Elman RNN with tanh (or relu) over whole sequences;
    input may be a PackedSequence, as for LSTM."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r} (tanh or relu)")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, gates, state, w_hr):
        return (_rnn_step(gates, self.nonlinearity),)

    def forward(self, input, hx=None):  # noqa: A002
        def states(unbatched, B, dtype):
            h0 = self._state(hx, unbatched, B, dtype, "h_0")
            return (unsqueeze(h0, 1) if unbatched else h0,)
        out, (h_n,) = self._run(input, states)
        return out, h_n
