"""Softmax and log-softmax along the middle axis of a contiguous (O, R, I) buffer, forward and backward.

x is seen as O blocks of R rows of I numbers; the softmax runs over r for each (o, i): over the
last dim when I = 1, over an inner dim otherwise. The element (o, r, i) is x[o*R*I + r*I + i].

    softmax(x)_r     = exp(x_r - m) / sum_j exp(x_j - m),            m = max_j x_j
    log_softmax(x)_r = x_r - m - log(sum_j exp(x_j - m))

Subtracting the row maximum changes nothing mathematically (it cancels) but keeps every exp()
argument <= 0, so logits of 1e4 give no overflow, inf or NaN. Backward, with upstream gradient g:

    softmax:     dx = y * (g - sum_j g_j y_j)
    log_softmax: dx = g - exp(y) * sum_j g_j

A row whose entries are all -inf (every key masked out) gets softmax weights 0 and log-softmax
-inf, and a zero gradient. PyTorch gives NaN there; attention layers rely on the zeros. A NaN
anywhere in a row makes the whole row NaN, as in PyTorch.
"""
import math

from . import kernel

__all__ = ["softmax_forward", "softmax_backward"]


@kernel
def softmax_forward(x, out, O, R, I, log):
    """out = softmax(x) over r of a contiguous (O, R, I) x, or log_softmax(x) when `log`."""
    for o in range(O):
        for i in range(I):
            base = o * R * I + i          # x[base + r * I] is element r of this row
            m = -math.inf
            for r in range(R):
                v = x[base + r * I]
                if v > m or v != v:       # the maximum; NaN wins, so its row becomes NaN
                    m = v
            if m == -math.inf:            # every entry -inf: weights 0, log-weights -inf
                for r in range(R):
                    out[base + r * I] = -math.inf if log else 0.0
                continue
            s = 0.0
            for r in range(R):
                s += math.exp(x[base + r * I] - m)
            for r in range(R):
                z = x[base + r * I] - m
                out[base + r * I] = z - math.log(s) if log else math.exp(z) / s


@kernel
def softmax_backward(g, y, out, O, R, I, log):
    """out = dL/dx given g = dL/dy and the forward's output y, all (O, R, I) like the forward."""
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            s = 0.0
            for r in range(R):
                p = base + r * I
                s += g[p] if log else g[p] * y[p]
            for r in range(R):
                p = base + r * I
                out[p] = g[p] - math.exp(y[p]) * s if log else y[p] * (g[p] - s)
