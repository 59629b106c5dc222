"""Fused classification losses over a contiguous (M, C) matrix of logits, one row per example.

Cross-entropy with class-index targets t, optional class weights w (all 1 when absent) and label
smoothing eps, for one row x with log-sum-exp lse = m + log(sum_c exp(x_c - m)), m = max_c x_c:

    loss = (1 - eps) * w_t * (lse - x_t)  +  eps / C * sum_c w_c * (lse - x_c)

Its gradient, with p_c = exp(x_c - lse) the softmax and W = sum_c w_c:

    dloss/dx_c = p_c * ((1 - eps) * w_t + eps / C * W)  -  (1 - eps) * w_t * [c == t]  -  eps / C * w_c

which for eps = 0 and no weights is the familiar "softmax minus one-hot". A row whose target equals
`ignore_index` has loss 0 and gradient 0. Computing all of it in one pass per row (instead of
log_softmax, gather, mul, ...) saves memory traffic and keeps exp() arguments <= 0 (stable).

x is (M, C) contiguous: the logit of class c for example i is x[i*C + c]. numba does not
bounds-check, so the op calls `check_targets` first: no target outside [0, C) reaches a kernel.

Chapter 5 of the tour (docs/05-transformer.md) walks through this file.
"""
import math

from . import kernel

__all__ = ["check_targets", "cross_entropy_forward", "cross_entropy_backward", "nll_forward",
           "nll_backward", "bce_with_logits_forward", "bce_with_logits_backward"]


@kernel
def check_targets(targets, M, C, ignore_index):
    """The first row whose target is neither in [0, C) nor ignore_index, or -1."""
    for i in range(M):
        t = targets[i]
        if t != ignore_index and (t < 0 or t >= C):
            return i
    return -1


@kernel
def cross_entropy_forward(x, targets, weight, has_weight, ignore_index, eps, M, C,
                          losses, lse, total_weight):
    """losses[i] = the loss of row i (0 when ignored); lse[i] its log-sum-exp (kept for backward);
    total_weight[0] = sum of w_t over the rows that are not ignored (the 'mean' denominator)."""
    tw = 0.0
    for i in range(M):
        t = targets[i]
        if t == ignore_index:
            losses[i] = 0.0
            lse[i] = 0.0
            continue
        base = i * C
        m = -math.inf
        for c in range(C):
            v = x[base + c]
            if v > m or v != v:
                m = v
        s = 0.0
        for c in range(C):
            s += math.exp(x[base + c] - m)
        row_lse = m + math.log(s)
        w_t = weight[t] if has_weight else 1.0
        loss = (1.0 - eps) * w_t * (row_lse - x[base + t])
        if eps > 0.0:
            smooth = 0.0
            for c in range(C):
                w_c = weight[c] if has_weight else 1.0
                smooth += w_c * (row_lse - x[base + c])
            loss += eps / C * smooth
        losses[i] = loss
        lse[i] = row_lse
        tw += w_t
    total_weight[0] = tw


@kernel
def cross_entropy_backward(g, x, targets, weight, has_weight, ignore_index, eps, M, C, lse, dx):
    """dx[i, c] = g[i] * dloss_i/dx_c (the formula in the module docstring)."""
    w_sum = 0.0
    for c in range(C):
        w_sum += weight[c] if has_weight else 1.0
    for i in range(M):
        t = targets[i]
        base = i * C
        if t == ignore_index:
            for c in range(C):
                dx[base + c] = 0.0
            continue
        gi = g[i]
        w_t = weight[t] if has_weight else 1.0
        p_scale = (1.0 - eps) * w_t + eps / C * w_sum
        for c in range(C):
            w_c = weight[c] if has_weight else 1.0
            p = math.exp(x[base + c] - lse[i])
            dx[base + c] = gi * (p * p_scale - eps / C * w_c)
        dx[base + t] -= gi * (1.0 - eps) * w_t


@kernel
def nll_forward(x, targets, weight, has_weight, ignore_index, M, C, losses, total_weight):
    """losses[i] = -w_t * x[i, t] for log-probabilities x (0 when ignored); total_weight[0] = sum w_t."""
    tw = 0.0
    for i in range(M):
        t = targets[i]
        if t == ignore_index:
            losses[i] = 0.0
            continue
        w_t = weight[t] if has_weight else 1.0
        losses[i] = -w_t * x[i * C + t]
        tw += w_t
    total_weight[0] = tw


@kernel
def nll_backward(g, targets, weight, has_weight, ignore_index, M, C, dx):
    """dx[i, t] = -w_t * g[i]; every other entry of dx stays 0 (dx arrives zero-filled)."""
    for i in range(M):
        t = targets[i]
        if t != ignore_index:
            w_t = weight[t] if has_weight else 1.0
            dx[i * C + t] = -w_t * g[i]


@kernel
def bce_with_logits_forward(x, t, pw, n, out):
    """out = (1 - t) x + (1 + (pw - 1) t) softplus(-x), softplus(-x) = max(-x, 0) + log(1 + e^-|x|).

    Written this way no exp() sees a positive argument, so huge logits give no overflow."""
    for i in range(n):
        xi = x[i]
        sp = max(-xi, 0.0) + math.log(1.0 + math.exp(-abs(xi)))
        out[i] = (1.0 - t[i]) * xi + (1.0 + (pw[i] - 1.0) * t[i]) * sp


@kernel
def bce_with_logits_backward(g, x, t, pw, n, dx, dt, dpw):
    """dx = g ((1 - t) - (1 + (pw - 1) t) sigmoid(-x));  dt = g (-x + (pw - 1) softplus(-x));
    dpw = g t softplus(-x)."""
    for i in range(n):
        xi = x[i]
        e = math.exp(-abs(xi))
        sp = max(-xi, 0.0) + math.log(1.0 + e)
        sig_neg = 1.0 / (1.0 + e) if xi <= 0.0 else e / (1.0 + e)  # sigmoid(-x), stable
        lw = 1.0 + (pw[i] - 1.0) * t[i]
        dx[i] = g[i] * ((1.0 - t[i]) - lw * sig_neg)
        dt[i] = g[i] * (-xi + (pw[i] - 1.0) * sp)
        dpw[i] = g[i] * t[i] * sp
