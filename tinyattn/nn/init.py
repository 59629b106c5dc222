"""Weight initialisation, as torch.nn.init: each function fills a tensor in place and returns it.

Fan-in / fan-out of a weight of shape (out, in, *k): fan_in = in * prod(k), fan_out = out * prod(k).
"""
import math

from ..autograd import no_grad


def calculate_gain(nonlinearity, param=None):
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(t):
    if t.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dims, got shape "
                         f"{tuple(t.shape)}")
    receptive = 1
    for n in t.shape[2:]:
        receptive *= n
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t, mode):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def uniform_(t, a=0.0, b=1.0, generator=None):
    with no_grad():
        return t.uniform_(a, b, generator=generator)


def normal_(t, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return t.normal_(mean, std, generator=generator)


def constant_(t, val):
    with no_grad():
        return t.fill_(val)


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


def xavier_uniform_(t, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -a, a, generator)


def xavier_normal_(t, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015)."""
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(t, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode))
    return normal_(t, 0.0, std, generator)
