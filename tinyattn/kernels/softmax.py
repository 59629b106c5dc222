"""Softmax and log-softmax along the middle axis of a contiguous (O, R, I) buffer, forward and backward.

    softmax(x)_r     = exp(x_r - m) / sum_j exp(x_j - m),            m = max_j x_j
    log_softmax(x)_r = x_r - m - log(sum_j exp(x_j - m))

Subtracting the row maximum changes nothing mathematically (it cancels) but keeps every exp()
argument <= 0, so logits of 1e4 give no overflow, inf or NaN. Backward, with upstream gradient g:

    softmax:     dx = y * (g - sum_j g_j y_j)
    log_softmax: dx = g - exp(y) * sum_j g_j

A row whose entries are all -inf (every key masked out) gets softmax weights 0 and log-softmax
-inf, and a zero / finite gradient. PyTorch gives NaN there; attention layers rely on the zeros.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import math

from .jit import kernel


@kernel
def softmax_forward(x, out, O, R, I, log):
    """out = softmax(x) (or log_softmax when `log`) over axis R of contiguous (O, R, I) x."""
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            m = -math.inf
            for r in range(R):
                v = x[base + r * I]
                if v > m or v != v:
                    m = v
            if m == -math.inf:  # every entry masked: zero weights (PyTorch: NaN)
                for r in range(R):
                    out[base + r * I] = -math.inf if log else 0.0
                continue
            s = 0.0
            for r in range(R):
                e = math.exp(x[base + r * I] - m)
                s += e
                if not log:
                    out[base + r * I] = e
            if log:
                shift = m + math.log(s)
                for r in range(R):
                    out[base + r * I] = x[base + r * I] - shift
            else:
                inv = 1.0 / s
                for r in range(R):
                    out[base + r * I] *= inv


@kernel
def softmax_backward(g, y, out, O, R, I, log):
    """out = d(loss)/dx given g = d(loss)/dy and the forward output y, same layout as the forward."""
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            s = 0.0
            if log:
                for r in range(R):
                    s += g[base + r * I]
                for r in range(R):
                    yr = y[base + r * I]
                    p = 0.0 if yr == -math.inf else math.exp(yr)
                    out[base + r * I] = g[base + r * I] - p * s
            else:
                for r in range(R):
                    s += g[base + r * I] * y[base + r * I]
                for r in range(R):
                    out[base + r * I] = y[base + r * I] * (g[base + r * I] - s)
