"""Softmax and log-softmax along the middle axis of a contiguous (O, R, I) buffer, forward and backward.

    softmax(x)_r     = exp(x_r - m) / sum_j exp(x_j - m),            m = max_j x_j
    log_softmax(x)_r = x_r - m - log(sum_j exp(x_j - m))

Subtracting the row maximum changes nothing mathematically (it cancels) but keeps every exp()
argument <= 0, so logits of 1e4 give no overflow, inf or NaN. Backward, with upstream gradient g:

    softmax:     dx = y * (g - sum_j g_j y_j)
    log_softmax: dx = g - exp(y) * sum_j g_j

A row whose entries are all -inf (every key masked out) gets softmax weights 0 and log-softmax
-inf, and a zero / finite gradient. PyTorch gives NaN there; attention layers rely on the zeros.
A NaN anywhere in a row makes the whole row NaN, as in PyTorch.

Speed. The common case is softmax over the last dim (I = 1): each row is R contiguous numbers, and
`softmax_rows_forward` / `_backward` work on a block of rows, so that the op layer can give half
of the rows to each core. Inside a row every loop is written so that LLVM turns it into vector
code: the exp is `exp.exp` (arithmetic, not a call into the C library; float32 rows are computed
in float32 with `exp_float32_nonpositive`, twice the lanes and no overflow test, since
x - max <= 0), rows are sliced out of the buffer and indexed from 0 (no negative-index check per
element), the sums may be reordered (`vector_kernel`), the row maximum is an integer maximum
over keys that order like the floats (`_row_max`, int32 keys for float32 rows), and the helpers
are inlined into the row loop (`vector_inline`: with 64-key rows a call costs as much as the
loop). Measured on one core (fp32 forward, 4096 x 64 / 256 x 1024): 231 / 142 us before the
last three changes, 188 / 120 us after. The
general (O, R, I) kernels (softmax over an inner dim) keep the plain loops.

Tiers: the reference kernels come first -- one line of R numbers at a stride, three loops
(maximum, sum of exps, normalise) with math.exp, exactly the equations above. The fast tier is
everything after them.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import math

from .buffers import as_array
from .exp import (exp, exp_float32_nonpositive, f32, from_order_key, from_order_key32, order_key,
                  order_key32)
from .jit import by_typecode, inline, kernel, vector_inline, vector_kernel
from .tiers import register


# ============================================================================ reference tier


@inline
def _softmax_line(x, out, base, stride, R, log):
    """out = softmax (or log_softmax) of x[base + r*stride], r < R."""
    m = -math.inf
    for r in range(R):
        v = x[base + r * stride]
        if v > m or v != v:  # the maximum; NaN wins, so a row holding NaN becomes NaN
            m = v
    if m == -math.inf:  # every entry -inf (all keys masked): weights 0, log-weights -inf
        for r in range(R):
            out[base + r * stride] = -math.inf if log else 0.0
        return
    s = 0.0
    for r in range(R):
        s += math.exp(x[base + r * stride] - m)
    for r in range(R):
        z = x[base + r * stride] - m
        out[base + r * stride] = z - math.log(s) if log else math.exp(z) / s


@inline
def _softmax_line_backward(g, y, out, base, stride, R, log):
    """dx = y * (g - sum g*y) for softmax; dx = g - exp(y) * sum g for log_softmax."""
    s = 0.0
    for r in range(R):
        p = base + r * stride
        s += g[p] if log else g[p] * y[p]
    for r in range(R):
        p = base + r * stride
        out[p] = g[p] - math.exp(y[p]) * s if log else y[p] * (g[p] - s)


@kernel
def softmax_forward_reference(x, out, O, R, I, log):
    """out = softmax(x) (or log_softmax when `log`) over axis R of contiguous (O, R, I) x."""
    for o in range(O):
        for i in range(I):
            _softmax_line(x, out, o * R * I + i, I, R, log)


@kernel
def softmax_backward_reference(g, y, out, O, R, I, log):
    """out = dL/dx given g = dL/dy and the forward output y, same layout as the forward."""
    for o in range(O):
        for i in range(I):
            _softmax_line_backward(g, y, out, o * R * I + i, I, R, log)


@kernel
def softmax_rows_forward_reference(x, out, R, n0, n1, log, single):
    """The rows n0 <= n < n1 of a contiguous (N, R) x (the last-dim case, split between cores)."""
    for n in range(n0, n1):
        _softmax_line(x, out, n * R, 1, R, log)


@kernel
def softmax_rows_backward_reference(g, y, out, R, n0, n1, log, single):
    for n in range(n0, n1):
        _softmax_line_backward(g, y, out, n * R, 1, R, log)


# ============================================================================ fast tier


@vector_kernel
def _masked_row(row, y, R, log):
    """A row whose maximum is -inf: all -inf (zero weights), unless it holds a NaN (NaN row)."""
    fill = -math.inf if log else 0.0
    for r in range(R):
        if row[r] != row[r]:
            fill = math.nan
    for r in range(R):
        y[r] = fill


@vector_inline
def _row_max(row, R, single):
    """max(row) through order_key: a running integer maximum, which LLVM vectorises (a float
    maximum, with NaN's rules to respect, it does not); float32 rows (`single`) through 32-bit
    keys, twice the lanes. A NaN may or may not win; either way the sum of exps that follows is
    NaN, and so is the row."""
    if single:
        k32 = order_key32(f32(-math.inf))
        for r in range(R):
            k32 = max(k32, order_key32(row[r]))
        return float(from_order_key32(k32))
    k = order_key(-math.inf)
    for r in range(R):
        k = max(k, order_key(row[r]))
    return from_order_key(k)


@vector_inline
def _exp_sum(row, y, m, R, single, store):
    """sum_r exp(row[r] - m), also writing each exp to y[r] when `store` (softmax needs them;
    log_softmax needs only the sum, and skipping the store saves a pass over memory). float32 rows
    (`single`) are done in float32 arithmetic (exp_float32: 16 lanes per vector instruction
    instead of 8), which is as precise as their storage anyway."""
    if single:
        m32 = f32(m)
        s32 = f32(0.0)
        if store:
            for r in range(R):
                e = exp_float32_nonpositive(row[r] - m32)
                y[r] = e
                s32 += e
        else:
            for r in range(R):
                s32 += exp_float32_nonpositive(row[r] - m32)
        return s32
    s = 0.0
    if store:
        for r in range(R):
            e = exp(row[r] - m)
            y[r] = e
            s += e
    else:
        for r in range(R):
            s += exp(row[r] - m)
    return s


@vector_inline
def _normalise(row, y, m, s, R, log, single):
    """The last pass of a row: y = (x - m) - log(s) when `log`, else y = exps / s (y holds the
    exps)."""
    if log and single:  # float32 arithmetic, as in _exp_sum: no conversion per element.
        # (x - m) - log(s), not x - (m + log(s)): x - m is exact, while m + log(s) would be
        # rounded at the size of m (logits of 1e4 would lose log(s)'s third digit).
        m32 = f32(m)
        log_s32 = f32(math.log(s))
        for r in range(R):
            y[r] = (row[r] - m32) - log_s32
    elif log:
        shift = m + math.log(s)
        for r in range(R):
            y[r] = row[r] - shift
    elif single:
        inv32 = f32(1.0 / s)
        for r in range(R):
            y[r] *= inv32
    else:
        inv = 1.0 / s
        for r in range(R):
            y[r] *= inv


# Rows of at most this many elements are done four at a time (below).
SHORT_ROW = 256


@vector_kernel
def softmax_rows_forward(x, out, R, n0, n1, log, single):
    """out = softmax (or log_softmax when `log`) of rows n0 <= n < n1 of a contiguous (N, R) x;
    `single`: the buffers are float32.

    A short row is a chain of steps that each wait for the one before (maximum, its horizontal
    reduction, the exps and their sum, the log), and on its own it leaves the core idle in
    between: 64 elements take ~100 cycles. Four short rows at a time, each step written for all
    four, let the core run their chains side by side: log_softmax of 4096 x 64 float32 on one
    core of the Zen 5, 100 -> 80 us."""
    X = as_array(x)
    Y = as_array(out)
    n = n0
    if R <= SHORT_ROW:
        while n + 4 <= n1:
            x0 = X[n * R:(n + 1) * R]
            x1 = X[(n + 1) * R:(n + 2) * R]
            x2 = X[(n + 2) * R:(n + 3) * R]
            x3 = X[(n + 3) * R:(n + 4) * R]
            m0 = _row_max(x0, R, single)
            m1 = _row_max(x1, R, single)
            m2 = _row_max(x2, R, single)
            m3 = _row_max(x3, R, single)
            if min(min(m0, m1), min(m2, m3)) == -math.inf:
                break                   # a fully masked row among them: one by one, below
            y0 = Y[n * R:(n + 1) * R]
            y1 = Y[(n + 1) * R:(n + 2) * R]
            y2 = Y[(n + 2) * R:(n + 3) * R]
            y3 = Y[(n + 3) * R:(n + 4) * R]
            s0 = _exp_sum(x0, y0, m0, R, single, not log)
            s1 = _exp_sum(x1, y1, m1, R, single, not log)
            s2 = _exp_sum(x2, y2, m2, R, single, not log)
            s3 = _exp_sum(x3, y3, m3, R, single, not log)
            _normalise(x0, y0, m0, s0, R, log, single)
            _normalise(x1, y1, m1, s1, R, log, single)
            _normalise(x2, y2, m2, s2, R, log, single)
            _normalise(x3, y3, m3, s3, R, log, single)
            n += 4
    for n in range(n, n1):
        row = X[n * R:(n + 1) * R]
        y = Y[n * R:(n + 1) * R]
        m = _row_max(row, R, single)
        if m == -math.inf:
            _masked_row(row, y, R, log)
            continue
        s = _exp_sum(row, y, m, R, single, not log)
        _normalise(row, y, m, s, R, log, single)


@vector_kernel
def softmax_rows_backward(g, y, out, R, n0, n1, log, single):
    """out = dL/dx for rows n0 <= n < n1, given g = dL/dy and the forward's output y, all (N, R)."""
    G = as_array(g)
    Y = as_array(y)
    D = as_array(out)
    for n in range(n0, n1):
        gr = G[n * R:(n + 1) * R]
        yr = Y[n * R:(n + 1) * R]
        d = D[n * R:(n + 1) * R]
        s = 0.0
        if log:
            if single:  # exp(y) = softmax; exp(-inf) = 0 on masked rows
                s32 = f32(0.0)
                for r in range(R):
                    s32 += gr[r]
                for r in range(R):
                    d[r] = gr[r] - exp_float32_nonpositive(yr[r]) * s32
                continue
            for r in range(R):
                s += gr[r]
            for r in range(R):
                d[r] = gr[r] - exp(yr[r]) * s
        elif single:  # float32 arithmetic for float32 rows, as in the forward
            s32 = f32(0.0)
            for r in range(R):
                s32 += gr[r] * yr[r]
            for r in range(R):
                d[r] = yr[r] * (gr[r] - s32)
        else:
            for r in range(R):
                s += gr[r] * yr[r]
            for r in range(R):
                d[r] = yr[r] * (gr[r] - s)


@vector_kernel
def softmax_forward(x, out, O, R, I, log):
    """out = softmax(x) (or log_softmax when `log`) over axis R of contiguous (O, R, I) x."""
    if I == 1:
        softmax_rows_forward(x, out, R, 0, O, log, False)
        return
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
                e = exp(x[base + r * I] - m)
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


@vector_kernel
def softmax_backward(g, y, out, O, R, I, log):
    """out = d(loss)/dx given g = d(loss)/dy and the forward output y, same layout as the forward."""
    if I == 1:
        softmax_rows_backward(g, y, out, R, 0, O, log, False)
        return
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            s = 0.0
            if log:
                for r in range(R):
                    s += g[base + r * I]
                for r in range(R):
                    out[base + r * I] = g[base + r * I] - exp(y[base + r * I]) * s
            else:
                for r in range(R):
                    s += g[base + r * I] * y[base + r * I]
                for r in range(R):
                    out[base + r * I] = y[base + r * I] * (g[base + r * I] - s)


# ============================================================================ the interface
# Entry points by typecode for the op layer (see jit.by_typecode).
# The row kernels are compiled per (typecode, log), with `log` and `single` constants (jit.py).
_F, _B, _RF, _RB = "T T i i i b", "T T T i i i b", "T T i i i K F", "T T T i i i K F"
register(globals(),
         reference=dict(FORWARD=by_typecode(softmax_forward_reference, _F),
                        BACKWARD=by_typecode(softmax_backward_reference, _B),
                        ROWS_FORWARD=by_typecode(softmax_rows_forward_reference, _RF),
                        ROWS_BACKWARD=by_typecode(softmax_rows_backward_reference, _RB)),
         fast=dict(FORWARD=by_typecode(softmax_forward, _F),
                   BACKWARD=by_typecode(softmax_backward, _B),
                   ROWS_FORWARD=by_typecode(softmax_rows_forward, _RF),
                   ROWS_BACKWARD=by_typecode(softmax_rows_backward, _RB)))
