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
"""
import math

from ..creation import empty, zeros
from ..ops.arithmetic import add, mul
from ..ops.unary import relu, sigmoid, tanh
from ..ops.layout import cat, chunk, contiguous, reshape, squeeze, stack, transpose, unsqueeze
from ..ops.matmul import matmul
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, Parameter


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
            h, c = (unsqueeze(t, 0) for t in hx) if unbatched else hx
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
        h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype) if hx is None else (
            unsqueeze(hx, 0) if unbatched else hx)
        h = _rnn_step(self._gates(x, h), self.nonlinearity)
        return squeeze(h, 0) if unbatched else h


class _Recurrent(Module):
    """The multi-layer, optionally bidirectional loop shared by LSTM and RNN."""

    gates = 1

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if num_layers < 1:
            raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be in [0, 1], got {dropout}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        D, H, G = (2 if bidirectional else 1), hidden_size, self.gates
        for k in range(num_layers):
            layer_in = input_size if k == 0 else D * H
            for suffix in ("", "_reverse")[:D]:
                setattr(self, f"weight_ih_l{k}{suffix}",
                        Parameter(empty(G * H, layer_in, dtype=dtype, device=device)))
                setattr(self, f"weight_hh_l{k}{suffix}",
                        Parameter(empty(G * H, H, dtype=dtype, device=device)))
                if bias:
                    setattr(self, f"bias_ih_l{k}{suffix}",
                            Parameter(empty(G * H, dtype=dtype, device=device)))
                    setattr(self, f"bias_hh_l{k}{suffix}",
                            Parameter(empty(G * H, dtype=dtype, device=device)))
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_all(self, self.hidden_size)

    def flatten_parameters(self):
        """PyTorch's cuDNN layout call: nothing to do on the CPU."""

    def _run(self, input, states):  # noqa: A002
        """states: per (layer, direction) the initial state tuple -> (output, final states)."""
        name = type(self).__name__
        if not isinstance(input, Tensor) or input.ndim not in (2, 3) \
                or input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input (T, B, {self.input_size}) (batch_first: "
                             f"(B, T, {self.input_size})) or unbatched (T, {self.input_size}), "
                             f"got {tuple(input.shape) if isinstance(input, Tensor) else input!r}")
        D, H, G = (2 if self.bidirectional else 1), self.hidden_size, self.gates
        unbatched = input.ndim == 2
        x = unsqueeze(input, 1) if unbatched else (
            transpose(input, 0, 1) if self.batch_first else input)
        x = contiguous(x)
        T, B = x.shape[0], x.shape[1]
        states = states(unbatched, B, x.dtype)
        finals = []
        layer_input = x
        for k in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:D]):
                get = self._parameters.get
                w_ih, w_hh = get(f"weight_ih_l{k}{suffix}"), get(f"weight_hh_l{k}{suffix}")
                b_ih, b_hh = get(f"bias_ih_l{k}{suffix}"), get(f"bias_hh_l{k}{suffix}")
                flat = reshape(layer_input, (T * B, layer_input.shape[2]))
                gi = reshape(_linear(flat, w_ih, b_ih), (T, B, G * H))
                state = states[k * D + d]
                hs = [None] * T
                for t in (range(T - 1, -1, -1) if d == 1 else range(T)):
                    state = self._step(add(gi[t], _linear(state[0], w_hh, b_hh)), state)
                    hs[t] = state[0]
                finals.append(state)
                outs.append(stack(hs, 0))
            out = outs[0] if D == 1 else cat(outs, 2)
            if self.dropout > 0 and self.training and k < self.num_layers - 1:
                out = F.dropout(out, self.dropout, True)
            layer_input = out
        finals = [stack([s[j] for s in finals], 0) for j in range(len(finals[0]))]
        if unbatched:
            return squeeze(out, 1), [squeeze(f, 1) for f in finals]
        if self.batch_first:
            out = contiguous(transpose(out, 0, 1))
        return out, finals

    def _state(self, hx, unbatched, B, dtype, what):
        D = 2 if self.bidirectional else 1
        shape = (self.num_layers * D, self.hidden_size) if unbatched else (
            self.num_layers * D, B, self.hidden_size)
        if hx is None:
            return zeros(*shape, dtype=dtype)
        if not isinstance(hx, Tensor) or tuple(hx.shape) != shape:
            raise ValueError(f"{type(self).__name__}: {what} must have shape {shape}, got "
                             f"{tuple(hx.shape) if isinstance(hx, Tensor) else hx!r}")
        return hx

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


class LSTM(_Recurrent):
    """output, (h_n, c_n) = lstm(input, (h_0, c_0)): input (T, B, I) (batch_first: (B, T, I)) or
    (T, I); states (num_layers * D, B, H), zeros when hx is None. output (T, B, D*H)."""

    gates = 4

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        if proj_size:
            raise NotImplementedError("LSTM: proj_size is not implemented in tinyattn")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)

    def _step(self, gates, state):
        return _lstm_step(gates, state[1])

    def forward(self, input, hx=None):  # noqa: A002
        def states(unbatched, B, dtype):
            h0, c0 = (None, None) if hx is None else hx
            h0 = self._state(h0, unbatched, B, dtype, "h_0")
            c0 = self._state(c0, unbatched, B, dtype, "c_0")
            if unbatched:
                h0, c0 = unsqueeze(h0, 1), unsqueeze(c0, 1)
            return [(h0[i], c0[i]) for i in range(h0.shape[0])]
        out, (h_n, c_n) = self._run(input, states)
        return out, (h_n, c_n)


class RNN(_Recurrent):
    """output, h_n = rnn(input, h_0): the Elman RNN with tanh (or relu) over whole sequences."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r} (tanh or relu)")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, gates, state):
        return (_rnn_step(gates, self.nonlinearity),)

    def forward(self, input, hx=None):  # noqa: A002
        def states(unbatched, B, dtype):
            h0 = self._state(hx, unbatched, B, dtype, "h_0")
            if unbatched:
                h0 = unsqueeze(h0, 1)
            return [(h0[i],) for i in range(h0.shape[0])]
        out, (h_n,) = self._run(input, states)
        return out, h_n
