"""Softmax and log-softmax, fast: kernels/softmax.py's two functions, vectorised and threaded.

The equations, the layout ((O, R, I), softmax over r) and the rules for masked and NaN rows are
those of kernels/softmax.py. What is different here:

- The common case, softmax over the last dim (I = 1), runs on rows: `_rows_forward` and
  `_rows_backward` do the rows n0 <= n < n1 of a contiguous (N, R) buffer, so that half of the
  rows can go to each core (`threads.parallel_for`) once there are enough of them.
- Inside a row every loop is written so that LLVM turns it into vector code: the exp is
  `exp.exp` (arithmetic, not a call into the C library; float32 rows are computed in float32 with
  `exp_float32_nonpositive`, twice the lanes and no overflow test, since x - max <= 0), rows are
  sliced out of the buffer and indexed from 0 (no negative-index check per element), sums may be
  reordered (`vector_kernel`), the row maximum is an integer maximum over keys that order like the
  floats (`_row_max`, int32 keys for float32 rows), and the helpers are inlined into the row loop
  (`vector_inline`: with 64-key rows a call costs as much as the loop).
- Each row kernel is compiled per (typecode, log) with `log` and `single` (float32 buffers) as
  constants (`jit.by_typecode`), so each machine-code version holds the loops of its case only.

The general (O, R, I) kernels (softmax over an inner dim) keep plain loops, with the vectorisable
exp. Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import math

from .buffers import as_array
from .exp import (exp, exp_float32_nonpositive, f32, from_order_key, from_order_key32, order_key,
                  order_key32)
from . import threads
from .jit import by_typecode, vector_inline, vector_kernel

__all__ = ["softmax_forward", "softmax_backward"]




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
def _rows_forward(x, out, R, n0, n1, log, single):
    """out = softmax (or log_softmax when `log`) of rows n0 <= n < n1 of a contiguous (N, R) x;
    `single`: the buffers are float32.

    A short row is a chain of steps that each wait for the one before (maximum, its horizontal
    reduction, the exps and their sum, the log), and on its own it leaves the core idle in
    between: 64 elements take ~100 cycles. Four short rows at a time, each step written for all
    four, let the core run their chains side by side (benchmarks/RESULTS.md, SHORT_ROW)."""
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
def _rows_backward(g, y, out, R, n0, n1, log, single):
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
def _forward(x, out, O, R, I, log):
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
def _backward(g, y, out, O, R, I, log):
    """out = d(loss)/dx given g = d(loss)/dy and the forward output y, same layout as the forward."""
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
# Machine code per typecode (and per log for the row kernels, jit.by_typecode): the op layer's
# calls skip numba's type dispatch.
_FORWARD = by_typecode(_forward, "T T i i i b")
_BACKWARD = by_typecode(_backward, "T T T i i i b")
_ROWS_FORWARD = by_typecode(_rows_forward, "T T i i i K F")
_ROWS_BACKWARD = by_typecode(_rows_backward, "T T T i i i K F")

# Softmax over the last dim of at least this many elements is split between the cores by rows:
# handing half of the rows to the other core costs more than a smaller softmax takes.
PARALLEL_MIN = 1 << 15


def softmax_forward(x, out, O, R, I, log):
    """out = softmax(x) over r of a contiguous (O, R, I) x, or log_softmax(x) when `log`."""
    if I != 1:
        _FORWARD[x.typecode](x, out, O, R, I, log)
    else:
        _on_rows(_ROWS_FORWARD[x.typecode, log], (x, out), O, R, log, x.typecode == "f")


def softmax_backward(g, y, out, O, R, I, log):
    """out = dL/dx given g = dL/dy and the forward's output y, all (O, R, I) like the forward."""
    if I != 1:
        _BACKWARD[y.typecode](g, y, out, O, R, I, log)
    else:
        _on_rows(_ROWS_BACKWARD[y.typecode, log], (g, y, out), O, R, log, y.typecode == "f")


def _on_rows(kern, buffers, N, R, log, single):
    """A row kernel over the N rows of R, on one core, or split by rows between the cores."""
    if N * R < PARALLEL_MIN or threads.num_threads() == 1:
        kern(*buffers, R, 0, N, log, single)
    else:
        threads.parallel_for(lambda n0, n1: kern(*buffers, R, n0, n1, log, single), N,
                             min_chunk=-(-PARALLEL_MIN // (2 * R)))
