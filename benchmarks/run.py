"""Every benchmark of the performance issue in one run: tinyattn beside PyTorch (and micrograd).

    python benchmarks/run.py [--quick] [--only SECTION,...] [--json PATH] [--no-torch] [--isa avx2]
    python benchmarks/run.py --contended [--quick] [--json PATH]
    python benchmarks/run.py --cold-start      # only the first-run rows (bench_cold_start)

`--isa avx2` judges an AVX2-only CPU (a typical laptop) on any x86 machine: the script runs itself
again with numba compiling for Haswell (AVX-512 off) and PyTorch limited to AVX2, and prints the
widest vector register numba's code uses, so the limit is checked, not assumed.

Sections (all by default): matmul, softmax, sdpa, conv, overhead, steps, startup, memory.

`--contended` runs only the training steps (transformer, GRU seq2seq, a small GPT), each beside one
busy process per CPU (`while True: pass`, pinned nowhere): what a student's shared or busy
machine does to them. It times tinyattn with its default threads, tinyattn with one thread, and
PyTorch with its own default threads, side by side in many short alternating rounds, as the
mean time per step (what a training run of many steps takes); the goals are the
default at least 0.9x the speed of one thread and at least PyTorch's speed. The pool's counters
(blocks offered, taken back, late, back-offs: tinyattn/fast/threads.py) say what the threads did.

Each row times tinyattn and PyTorch (CPU, ``torch.set_num_threads(2)``) in this process, in
alternating rounds (tinyattn, PyTorch, tinyattn, ...) so that both meet the same background load,
after warm-up; the figure is the median over all timed calls. A short pause after every round
lets the library's idle workers stop spinning (PyTorch's OpenMP ~9 ms, tinyattn's 5 ms) before
the other library's threads run. Start-up and memory
are measured in fresh child processes. PyTorch and micrograd are optional: without them their
columns stay empty.

The ratio column follows each target's wording:
  throughput rows (GFLOP/s, GB/s): tinyattn / PyTorch, higher is better;
  time rows (us, ms, s, MB):       tinyattn / PyTorch, lower is better;
  'vs micrograd':                  micrograd time / tinyattn time (how many times faster).

The table is printed and the results are written as JSON (default benchmarks/results-latest.json;
the committed runs, benchmarks/results_<cpu>.json and results_<cpu>_isa_avx2.json, are listed in
benchmarks/RESULTS.md).
"""
import argparse
import array
import datetime
import gc
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

# An AVX2 laptop, judged on any x86 machine: Haswell's instruction set for numba (its name alone
# keeps the host's AVX-512 features, so they are listed and the AVX-512 ones switched off) and
# PyTorch's own limits (ATen's kernels, MKL, oneDNN).
_HASWELL = ("64bit adx aes avx avx2 bmi bmi2 cmov cx16 cx8 f16c fma fsgsbase fxsr lzcnt mmx movbe "
            "pclmul popcnt rdrnd sahf sse sse2 sse3 sse4.1 sse4.2 ssse3 xsave xsaveopt").split()


def _isa_environment(isa):
    if isa != "avx2":
        raise SystemExit(f"run.py: --isa must be avx2, got {isa!r}")
    import llvmlite.binding as llvm
    host = llvm.get_host_cpu_features()
    features = [("+" if f in _HASWELL else "-") + f for f in sorted(host)
                if host[f] or f in _HASWELL]
    return dict(NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES=",".join(features),
                ATEN_CPU_CAPABILITY="avx2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                ONEDNN_MAX_CPU_ISA="AVX2", TINYATTN_BENCH_ISA=isa)


def _rerun_with_isa():
    """`--isa avx2`: run this script again in a child whose environment limits both libraries
    (numba reads its CPU settings when it starts, so they cannot be changed in this process)."""
    argv = sys.argv[1:]
    isa = None
    for i, a in enumerate(argv):
        if a == "--isa" and i + 1 < len(argv):
            isa = argv[i + 1]
        elif a.startswith("--isa="):
            isa = a.split("=", 1)[1]
    if isa is None or os.environ.get("TINYATTN_BENCH_ISA") == isa:
        return
    env = dict(os.environ, **_isa_environment(isa))
    raise SystemExit(subprocess.call([sys.executable, os.path.abspath(__file__)] + argv, env=env))


if __name__ == "__main__":
    _rerun_with_isa()

import tinyattn as ta  # noqa: E402
from tinyattn import nn  # noqa: E402
from tinyattn.fast import threads  # noqa: E402

SECTIONS = ("matmul", "softmax", "sdpa", "conv", "overhead", "steps", "startup", "memory")


# ============================================================================ timing


class Timer:
    """Median seconds per call of several contenders, timed in alternating rounds."""

    def __init__(self, rounds, budget, pause=0.02):
        self.rounds = rounds
        self.budget = budget    # seconds of timed calls per contender
        self.pause = pause

    def calibrate(self, fn, inner):
        """Warm fn up; return how many samples of `inner` calls fill one round."""
        for _ in range(3):
            fn()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        once = max(time.perf_counter() - t0, 1e-7)
        return max(2, min(500, int(self.budget / self.rounds / once)))

    def run(self, fns, inner=1):
        """fns: the contenders (None entries are skipped); inner: calls per sample (for calls of
        a few microseconds, where the clock's own cost would show). Returns medians (s/call).
        Every contender's round ends with a pause, longer than either library's workers spin
        after their last job (PyTorch's OpenMP ~9 ms, tinyattn's 5 ms), so that they do not take
        a core from the next contender's round."""
        live = [i for i, fn in enumerate(fns) if fn is not None]
        samples = {i: self.calibrate(fns[i], inner) for i in live}
        times = {i: [] for i in live}
        for _ in range(self.rounds):
            for i in live:
                fn, ts = fns[i], times[i]
                for _ in range(samples[i]):
                    t0 = time.perf_counter()
                    for _ in range(inner):
                        fn()
                    ts.append((time.perf_counter() - t0) / inner)
                if len(live) > 1:
                    time.sleep(self.pause)
        return [statistics.median(times[i]) if i in times else None for i in range(len(fns))]


# ============================================================================ results


class Results:
    def __init__(self):
        self.rows = []

    def add(self, section, case, unit, ours, theirs, better, target=None, note=""):
        """ours / theirs in `unit`; better: 'higher' (throughput) or 'lower' (time, memory);
        target: (comparison, value) on the ratio, e.g. ('>=', 0.9)."""
        ratio = ours / theirs if ours is not None and theirs else None
        met = None
        if target is not None and ratio is not None:
            op, value = target
            met = ratio >= value if op == ">=" else ratio <= value if op == "<=" else ratio < value
        row = dict(section=section, case=case, unit=unit, tinyattn=ours, torch=theirs,
                   better=better, ratio=ratio,
                   target=None if target is None else f"{target[0]} {target[1]}", met=met,
                   note=note)
        self.rows.append(row)
        print(_format_row(row), flush=True)
        return row


def _fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("us", "ms", "MB", "s"):
        return f"{v:.2f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{v:.1f}"


def _format_row(r):
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
    target = r["target"] or ""
    met = {True: "met", False: "NOT met", None: ""}[r["met"]]
    return (f"{r['section']:9s} {r['case']:40s} {r['unit']:7s} {_fmt(r['tinyattn'], r['unit']):>11s} "
            f"{_fmt(r['torch'], r['unit']):>11s} {ratio:>6s} {target:>7s} {met:7s} {r['note']}")


HEADER = (f"{'section':9s} {'case':40s} {'unit':7s} {'tinyattn':>11s} {'PyTorch':>11s} "
          f"{'ratio':>6s} {'target':>7s} {'':7s} note")


# ============================================================================ matmul

from matmul import CASES as MATMUL_CASES  # noqa: E402  (one table for both matmul benchmarks)


def matmul_target(dtype, name):
    if dtype != "fp32":
        return None
    if name in ("square 256", "square 512", "square 1024"):   # issue 11: >= 0.9x PyTorch
        return (">=", 0.9)
    if name.startswith(("attn", "Q@K")):
        return (">=", 1.0)
    return None


def bench_matmul(res, timer, torch, quick):
    """GFLOP/s of a @ b through the public API of both libraries (Python overhead included)."""
    rng = random.Random(0)
    for dtype_name in ("fp32", "fp64"):
        dt = ta.float32 if dtype_name == "fp32" else ta.float64
        for name, nb, M, N, K, b_t in MATMUL_CASES:
            if quick and M * N * K * nb > 512 ** 3 and dtype_name == "fp64":
                continue
            shape_a = (nb, M, K) if nb > 1 else (M, K)
            shape_b = (nb, N, K) if b_t else (nb, K, N)
            if nb == 1:
                shape_b = shape_b[1:]
            a = ta.tensor(_rand_list(rng, shape_a), dtype=dt)
            b = ta.tensor(_rand_list(rng, shape_b), dtype=dt)
            if b_t:
                b = b.transpose(-2, -1)
            ours = lambda a=a, b=b: a @ b  # noqa: E731
            theirs = None
            if torch is not None:
                tdt = torch.float32 if dtype_name == "fp32" else torch.float64
                ta_, tb = torch.tensor(a.tolist(), dtype=tdt), torch.tensor(
                    b.contiguous().tolist() if not b_t else b.transpose(-2, -1).tolist(), dtype=tdt)
                if b_t:
                    tb = tb.transpose(-2, -1)
                theirs = lambda a=ta_, b=tb: torch.matmul(a, b)  # noqa: E731
            t_ours, t_theirs = timer.run([ours, theirs])
            flop = 2.0 * nb * M * N * K
            res.add("matmul", f"{dtype_name} {name}", "GFLOP/s", flop / t_ours / 1e9,
                    flop / t_theirs / 1e9 if t_theirs else None, "higher",
                    matmul_target(dtype_name, name))


def fma_peak_kernel():
    """(call, flop per call): one core doing nothing but independent vector FMAs on registers,
    the ceiling of a matmul kernel. Of two versions, 6 and 12 accumulators of 16 lanes (enough to
    cover the FMA latency on AVX2 / AVX-512; the 6 fit AVX2's 16 registers), the faster."""
    from numba import njit
    from tinyattn.fast.buffers import as_array
    from tinyattn.fast.simd import vfma, vload, vstore

    @njit(nogil=True)
    def six(buf, n):
        a = as_array(buf)
        x, y = vload(a, 0), vload(a, 16)
        c0 = c1 = c2 = c3 = c4 = c5 = vload(a, 32)
        for _ in range(n):
            c0, c1, c2 = vfma(x, y, c0), vfma(x, y, c1), vfma(x, y, c2)
            c3, c4, c5 = vfma(x, y, c3), vfma(x, y, c4), vfma(x, y, c5)
        for i, c in enumerate((c0, c1, c2, c3, c4, c5)):
            vstore(a, 48 + 16 * i, c)

    @njit(nogil=True)
    def twelve(buf, n):
        a = as_array(buf)
        x, y = vload(a, 0), vload(a, 16)
        c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = c10 = c11 = vload(a, 32)
        for _ in range(n):
            c0, c1, c2 = vfma(x, y, c0), vfma(x, y, c1), vfma(x, y, c2)
            c3, c4, c5 = vfma(x, y, c3), vfma(x, y, c4), vfma(x, y, c5)
            c6, c7, c8 = vfma(x, y, c6), vfma(x, y, c7), vfma(x, y, c8)
            c9, c10, c11 = vfma(x, y, c9), vfma(x, y, c10), vfma(x, y, c11)
        for i, c in enumerate((c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11)):
            vstore(a, 48 + 16 * i, c)

    buf = array.array("f", [0.5] * 256)
    n = 100_000
    candidates = []
    for fn, accumulators in ((six, 6), (twelve, 12)):
        fn(buf, 10)
        best = float("inf")
        for _ in range(20):
            t0 = time.perf_counter()
            fn(buf, n)
            best = min(best, time.perf_counter() - t0)
        flop = accumulators * 16 * 2 * n
        candidates.append((flop / best, (lambda fn=fn: fn(buf, n)), flop))
    _, call, flop = max(candidates, key=lambda c: c[0])
    return call, flop


def bench_matmul_one_thread(res, timer):
    """Issue 11's second matmul target: on one thread, >= 70% of one core's FMA peak. The peak
    is timed in the same alternating rounds as the matmul, so that both meet the same load."""
    peak_call, peak_flop = fma_peak_kernel()
    old = threads.num_threads()
    threads.set_num_threads(1)
    try:
        ta.manual_seed(0)
        for n in (256, 512, 1024):
            a, b = ta.rand(n, n), ta.rand(n, n)
            t, t_peak = timer.run([lambda a=a, b=b: a @ b, peak_call])
            gflops, peak = 2.0 * n ** 3 / t / 1e9, peak_flop / t_peak / 1e9
            res.add("matmul", f"fp32 square {n}, one thread (GFLOP/s)", "GFLOP/s", gflops, None,
                    "higher", note=f"{100 * gflops / peak:.0f}% of one core's FMA peak, "
                                   f"{peak:.0f} GFLOP/s in the same rounds; target >= 70%")
            res.rows[-1]["absolute_target"] = ">= 70% of FMA peak"
            res.rows[-1]["absolute_met"] = gflops >= 0.7 * peak
    finally:
        threads.set_num_threads(old)


def _rand_list(rng, shape):
    if len(shape) == 1:
        return [rng.random() for _ in range(shape[0])]
    return [_rand_list(rng, shape[1:]) for _ in range(shape[0])]


# ============================================================================ softmax


def bench_softmax(res, timer, torch):
    """Forward + backward of softmax / log_softmax along the rows, as GB/s: the minimum traffic
    is 5 float32 passes over the tensor (read x, write y; read g and y, write dx)."""
    rng = random.Random(1)
    for rows, cols in ((4096, 64), (256, 1024)):
        data = _rand_list(rng, (rows, cols))
        g_data = _rand_list(rng, (rows, cols))
        for fn in ("softmax", "log_softmax"):
            x = ta.tensor(data, requires_grad=True)
            g = ta.tensor(g_data)

            def ours(x=x, g=g, fn=fn):
                getattr(x, fn)(-1).backward(g)
                x.grad = None

            theirs = None
            if torch is not None:
                tx = torch.tensor(data, requires_grad=True)
                tg = torch.tensor(g_data)

                def theirs(x=tx, g=tg, fn=fn):
                    getattr(x, fn)(-1).backward(g)
                    x.grad = None

            t_ours, t_theirs = timer.run([ours, theirs])
            nbytes = 5 * rows * cols * 4
            res.add("softmax", f"{fn} fwd+bwd {rows}x{cols}", "GB/s", nbytes / t_ours / 1e9,
                    nbytes / t_theirs / 1e9 if t_theirs else None, "higher", (">=", 1.0))


# ============================================================================ fused attention

# The resident and peak memory of the calling process (MB), for the child processes below.
STATUS_MB = '''
def status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
'''

SDPA_CASES = ((1024, False), (1024, True), (4096, False), (4096, True))   # (T, is_causal)

SDPA_MEMORY_CHILD = r"""
import json, sys
LIB, T, causal, B, H, D = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", 1, 8, 64
""" + STATUS_MB + r"""
if LIB == "tinyattn":
    import tinyattn as lib
    F = lib.nn.functional
else:
    import torch as lib
    lib.set_num_threads(2)
    F = lib.nn.functional
q, k, v = (lib.randn(B, H, T, D, requires_grad=True) for _ in range(3))
g = lib.randn(B, H, T, D)

def step():
    F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

step()                       # warm-up: kernels loaded, gradients allocated once
before = status_mb("VmRSS")  # inputs, gradients and the warm-up's leftovers are resident
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")             # restart the peak (VmHWM) here
q.grad = k.grad = v.grad = None
step()
print(json.dumps({"extra_mb": status_mb("VmHWM") - before}))
"""


def bench_sdpa(res, timer, torch):
    """scaled_dot_product_attention forward + backward, batch 1, 8 heads, head dim 64, fp32: the
    fused kernel (kernels/flash.py) against PyTorch's (its CPU flash kernel). Time (ms), the peak
    memory the call adds (MB, in child processes), and the largest difference from the reference
    backend on one head (float32 results compared as float64)."""
    from tinyattn import backend
    B, H, D = 1, 8, 64
    for T, causal in SDPA_CASES:
        ta.manual_seed(0)
        q, k, v = (ta.randn(B, H, T, D, requires_grad=True) for _ in range(3))
        g = ta.randn(B, H, T, D)
        F = ta.nn.functional

        def ours(q=q, k=k, v=v, g=g, causal=causal):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)
            q.grad = k.grad = v.grad = None

        theirs = None
        if torch is not None:
            tq, tk, tv = (torch.tensor(x.tolist(), requires_grad=True) for x in (q, k, v))
            tg = torch.tensor(g.tolist())

            def theirs(q=tq, k=tk, v=tv, g=tg, causal=causal):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal) \
                    .backward(g)
                q.grad = k.grad = v.grad = None

        t_ours, t_theirs = timer.run([ours, theirs])
        # exactness: head 0 on both backends
        outs = {}
        for which in ("fast", "reference"):
            with backend.use(which):
                xs = [x[:, :1].detach().requires_grad_() for x in (q, k, v)]
                o = F.scaled_dot_product_attention(*xs, is_causal=causal)
                o.backward(g[:, :1])
                outs[which] = [o.detach()] + [x.grad for x in xs]
        err = max((a - b).abs().max().item() for a, b in zip(outs["fast"], outs["reference"]))
        name = f"T={T}{' causal' if causal else ''}"
        res.add("sdpa", f"fused SDPA fwd+bwd B1 H8 D64 {name}", "ms", t_ours * 1e3,
                t_theirs * 1e3 if t_theirs else None, "lower", ("<=", 1.0),
                note=f"max |fast - reference| on one head {err:.1e} (target 1e-5: "
                     f"{'met' if err <= 1e-5 else 'NOT met'})")
        res.rows[-1]["reference_error"] = err
        mem_ours, _ = _child(SDPA_MEMORY_CHILD, ["tinyattn", str(T), str(int(causal))], _env())
        mem_theirs = None
        if torch is not None:
            mem_theirs = _child(SDPA_MEMORY_CHILD, ["torch", str(T), str(int(causal))],
                                _env())[0]
        res.add("sdpa", f"peak extra memory of that call, {name}", "MB", mem_ours["extra_mb"],
                mem_theirs["extra_mb"] if mem_theirs else None, "lower", ("<=", 1.2))
    bench_sdpa_dropout(res, timer, torch)


# The peak memory of one call with dropout, in a fresh process whose only earlier call was at
# T = 64 (kernels loaded, nothing large freed into a pool that the measured call would reuse):
# the composed path's (L, S) weights and mask show up here, where after a warm-up call at the
# same size the memory kept from that call hides them.
SDPA_DROPOUT_CHILD = r"""
import contextlib, json, sys
LIB, T, p, path_name, B, H, D = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], 1, 8, 64
""" + STATUS_MB + r"""
if LIB == "tinyattn":
    import tinyattn as lib
    from tinyattn.nn.attention import SDPBackend, sdpa_kernel
    path = (lambda: sdpa_kernel(SDPBackend.MATH)) if path_name == "math" else contextlib.nullcontext
else:
    import torch as lib
    lib.set_num_threads(2)
    path = contextlib.nullcontext
F = lib.nn.functional

def call(n):
    q, k, v = (lib.randn(B, H, n, D, requires_grad=True) for _ in range(3))
    g = lib.randn(B, H, n, D)
    before = status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")         # restart the peak (VmHWM) here
    with path():
        F.scaled_dot_product_attention(q, k, v, dropout_p=p).backward(g)
    return status_mb("VmHWM") - before

call(64)
print(json.dumps({"extra_mb": call(T)}))
"""
SDPA_DROPOUT_P = 0.1
SDPA_DROPOUT_MEMORY_T = 8192


def bench_sdpa_dropout(res, timer, torch):
    """Attention dropout inside the fused kernel (kernels/flash.py, `_dropout_factor`): forward +
    backward time at T = 4096 (the note: the same call without dropout), and the peak memory one
    call adds at T = 8192 (gradients included), fused against the composed path
    (`sdpa_kernel(MATH)`, which stores the (L, S) weights and mask: the path dropout took before
    the kernel had it) and PyTorch."""
    B, H, D, T, p = 1, 8, 64, 4096, SDPA_DROPOUT_P
    F = ta.nn.functional
    ta.manual_seed(0)
    q, k, v = (ta.randn(B, H, T, D, requires_grad=True) for _ in range(3))
    g = ta.randn(B, H, T, D)

    def ours(p=p):
        F.scaled_dot_product_attention(q, k, v, dropout_p=p).backward(g)
        q.grad = k.grad = v.grad = None

    theirs = None
    if torch is not None:
        tq, tk, tv = (torch.tensor(x.tolist(), requires_grad=True) for x in (q, k, v))
        tg = torch.tensor(g.tolist())

        def theirs():
            torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, dropout_p=p).backward(tg)
            tq.grad = tk.grad = tv.grad = None

    t_ours, t_theirs, t_plain = timer.run([ours, theirs, lambda: ours(0.0)])
    res.add("sdpa", f"fused SDPA fwd+bwd B1 H8 D64 T={T} dropout_p={p}", "ms", t_ours * 1e3,
            t_theirs * 1e3 if t_theirs else None, "lower", ("<=", 1.0),
            note=f"the same call without dropout: {t_plain * 1e3:.0f} ms")
    T = SDPA_DROPOUT_MEMORY_T
    mem = {name: _child(SDPA_DROPOUT_CHILD, ["tinyattn", str(T), str(drop), path], _env())[0]
           for name, drop, path in (("fused", p, "fused"), ("math", p, "math"),
                                    ("plain", 0.0, "fused"))}
    mem_theirs = None
    if torch is not None:
        mem_theirs = _child(SDPA_DROPOUT_CHILD, ["torch", str(T), str(p), "-"], _env())[0]
    res.add("sdpa", f"peak memory of one call, dropout_p={p}, T={T}, fused", "MB",
            mem["fused"]["extra_mb"], mem_theirs["extra_mb"] if mem_theirs else None, "lower",
            ("<=", 1.2), note=f"composed path (sdpa_kernel(MATH)) {mem['math']['extra_mb']:.0f} "
                              f"MB; fused without dropout {mem['plain']['extra_mb']:.0f} MB")


# ============================================================================ convolution


def bench_conv(res, timer, torch):
    """conv2d 3x3 (padding 1, bias) forward + backward at the sizes of the Show, Attend and Tell
    demo's encoder (batch 32), as GFLOP/s: 3 products of 2*N*O*C*9*H*W each (forward, dx, dW)."""
    rng = random.Random(2)
    for N, C, O, H in ((32, 3, 16, 32), (32, 16, 32, 16), (32, 32, 64, 8)):
        x = ta.tensor(_rand_list(rng, (N, C, H, H)), requires_grad=True)
        w = ta.tensor(_rand_list(rng, (O, C, 3, 3)), requires_grad=True)
        b = ta.tensor(_rand_list(rng, (O,)), requires_grad=True)
        g = ta.tensor(_rand_list(rng, (N, O, H, H)))

        def ours(x=x, w=w, b=b, g=g):
            ta.nn.functional.conv2d(x, w, b, padding=1).backward(g)
            x.grad = w.grad = b.grad = None

        theirs = None
        if torch is not None:
            tx, tw, tb = (torch.tensor(t.tolist(), requires_grad=True) for t in (x, w, b))
            tg = torch.tensor(g.tolist())

            def theirs(x=tx, w=tw, b=tb, g=tg):
                torch.nn.functional.conv2d(x, w, b, padding=1).backward(g)
                x.grad = w.grad = b.grad = None

        t_ours, t_theirs = timer.run([ours, theirs])
        flops = 3 * 2 * N * O * C * 9 * H * H
        res.add("conv", f"conv2d 3x3 fwd+bwd {N}x{C}x{H}x{H}->{O}", "GFLOP/s", flops / t_ours / 1e9,
                flops / t_theirs / 1e9 if t_theirs else None, "higher", (">=", 0.7))


# ============================================================================ per-op overhead


def bench_overhead(res, timer, torch):
    """Time of one op on 4x4 float32 tensors: almost all of it is the library's own overhead."""
    rng = random.Random(2)
    a_data, b_data = _rand_list(rng, (4, 4)), _rand_list(rng, (4, 4))
    ops = [("add", lambda a, b: a + b), ("matmul", lambda a, b: a @ b),
           ("softmax", lambda a, b: a.softmax(-1))]
    for grad in (False, True):
        a = ta.tensor(a_data, requires_grad=grad)
        b = ta.tensor(b_data, requires_grad=grad)
        if torch is not None:
            ta_ = torch.tensor(a_data, requires_grad=grad)
            tb = torch.tensor(b_data, requires_grad=grad)
        for name, op in ops:
            ours = lambda op=op: op(a, b)  # noqa: E731
            theirs = (lambda op=op: op(ta_, tb)) if torch is not None else None  # noqa: E731
            t_ours, t_theirs = timer.run([ours, theirs], inner=200)
            res.add("overhead", f"4x4 {name}" + (" (inputs require grad)" if grad else ""), "us",
                    t_ours * 1e6, t_theirs * 1e6 if t_theirs else None, "lower", ("<=", 1.2))


# ============================================================================ training steps


def transformer_step_pair(torch):
    """(tinyattn step, PyTorch step): the encoder classifier, forward + cross-entropy + backward
    + Adam."""
    import transformer_step as TS
    ta.manual_seed(0)
    model = TS.Classifier(dropout=0.1)
    opt = ta.optim.Adam(model.parameters(), lr=1e-3)
    gen = ta.Generator(0)
    tokens = ta.randint(0, TS.VOCAB, (TS.B, TS.T), generator=gen)
    labels = ta.randint(0, TS.CLASSES, (TS.B,), generator=gen)

    def ours():
        loss = nn.functional.cross_entropy(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()

    theirs = None
    if torch is not None:
        torch.manual_seed(0)
        tmodel = TS.torch_classifier(torch, 0.1)
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
        ttokens, tlabels = torch.tensor(tokens.tolist()), torch.tensor(labels.tolist())

        def theirs():
            loss = torch.nn.functional.cross_entropy(tmodel(ttokens), tlabels)
            topt.zero_grad()
            loss.backward()
            topt.step()
    return ours, theirs


def seq2seq_step_pair(torch):
    """GRU seq2seq with Bahdanau attention (teacher forcing) + cross-entropy + backward + Adam."""
    import seq2seq_step as SS
    ta.manual_seed(0)
    model = nn.Seq2Seq(SS.V, SS.V, embed_size=SS.E, hidden_size=SS.H, attention="bahdanau")
    opt = ta.optim.Adam(model.parameters(), lr=1e-3)
    src, tgt = SS.make_batch(ta.Generator(0))

    def ours():
        loss = model.loss(src, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()

    theirs = None
    if torch is not None:
        tmodel = SS.torch_model(torch)
        tmodel.load_state_dict({k: torch.tensor(v.tolist()) for k, v in model.state_dict().items()})
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
        tsrc, ttgt = torch.tensor(src.tolist()), torch.tensor(tgt.tolist())

        def theirs():
            loss = tmodel.loss(tsrc, ttgt)
            topt.zero_grad()
            loss.backward()
            topt.step()
    return ours, theirs


def two_moons(n, seed=0):
    """n points of the two-moons set (x: n lists of 2 floats, y: n labels in {-1, 1})."""
    rng = random.Random(seed)
    xs, ys = [], []
    for i in range(n):
        t = rng.random() * math.pi
        if i % 2 == 0:
            p = [math.cos(t), math.sin(t)]
        else:
            p = [1.0 - math.cos(t), 0.5 - math.sin(t)]
        xs.append([p[0] + rng.gauss(0, 0.1), p[1] + rng.gauss(0, 0.1)])
        ys.append(1.0 if i % 2 == 0 else -1.0)
    return xs, ys


def mlp_step_fns(torch):
    """MLP 2-16-16-1 (ReLU) on 100 points, hinge loss mean(relu(1 - y * score)), Adam; returns
    (tinyattn, PyTorch, micrograd) steps (None where the library is missing)."""
    xs, ys = two_moons(100)
    ta.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 1))
    opt = ta.optim.Adam(model.parameters(), lr=1e-2)
    X, Y = ta.tensor(xs), ta.tensor(ys).view(-1, 1)

    def ours():
        loss = (1.0 - Y * model(X)).relu().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    theirs = None
    if torch is not None:
        tmodel = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(),
                                     torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                     torch.nn.Linear(16, 1))
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-2)
        TX, TY = torch.tensor(xs), torch.tensor(ys).view(-1, 1)

        def theirs():
            loss = (1.0 - TY * tmodel(TX)).relu().mean()
            topt.zero_grad()
            loss.backward()
            topt.step()

    micro = None
    try:
        from micrograd.engine import Value
        from micrograd.nn import MLP
    except ImportError:
        Value = None
    if Value is not None:
        random.seed(0)
        mmodel = MLP(2, [16, 16, 1])
        mparams = mmodel.parameters()
        state = {"t": 0, "m": [0.0] * len(mparams), "v": [0.0] * len(mparams)}
        mx = [[Value(a), Value(b)] for a, b in xs]

        def micro():
            scores = [mmodel(x) for x in mx]
            loss = sum((1 + -y * s).relu() for y, s in zip(ys, scores)) * (1.0 / len(ys))
            mmodel.zero_grad()
            loss.backward()
            _adam_by_hand(mparams, state, 1e-2)
    return ours, theirs, micro


def _adam_by_hand(params, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam for micrograd's Values (micrograd has SGD only)."""
    state["t"] += 1
    t = state["t"]
    m, v = state["m"], state["v"]
    for i, p in enumerate(params):
        m[i] = b1 * m[i] + (1 - b1) * p.grad
        v[i] = b2 * v[i] + (1 - b2) * p.grad * p.grad
        p.data -= lr * (m[i] / (1 - b1 ** t)) / (math.sqrt(v[i] / (1 - b2 ** t)) + eps)


def bench_steps(res, timer, torch, quick):
    step_timer = Timer(timer.rounds, timer.budget * 4, pause=0.05)
    for name, make, target in (
            ("transformer encoder classifier", transformer_step_pair, ("<=", 0.8)),   # issue 11
            ("GRU seq2seq + Bahdanau", seq2seq_step_pair, ("<=", 0.8))):
        ours, theirs = make(torch)
        t_ours, t_theirs = step_timer.run([ours, theirs])
        res.add("step", name, "ms", t_ours * 1e3, t_theirs * 1e3 if t_theirs else None, "lower",
                target)
    ours, theirs, micro = mlp_step_fns(torch)
    t_ours, t_theirs = step_timer.run([ours, theirs], inner=5)
    res.add("step", "MLP 2-16-16-1, 100 points", "ms", t_ours * 1e3,
            t_theirs * 1e3 if t_theirs else None, "lower", ("<", 1.0))
    if micro is not None:
        micro_timer = Timer(rounds=1 if quick else 3, budget=0.0)  # 2 samples per round
        (t_micro,) = micro_timer.run([micro])
        row = res.add("step", "MLP vs micrograd (times faster)", "x", t_micro / t_ours, None,
                      "higher", None, note=f"micrograd {t_micro * 1e3:.0f} ms/step")
        row["ratio"] = row["tinyattn"]
        row["target"], row["met"] = ">= 100", row["ratio"] >= 100
        row["micrograd_ms"] = t_micro * 1e3
    else:
        res.add("step", "MLP vs micrograd (times faster)", "x", None, None, "higher", None,
                note="micrograd not installed")


def gpt_step_pair(torch):
    """demos/gpt.py's GPT, small (2 layers, d_model 64, 4 heads, T 64, batch 8) on random
    characters: forward + cross-entropy + backward + clipping + AdamW, and its PyTorch twin
    (benchmarks/gpt_twin.py) from the same weights and batch."""
    import gpt_twin     # (puts demos/ on the path)
    import gpt
    cfg = gpt.Config(n_layer=2, n_embd=64, n_head=4, block_size=64, batch_size=8)
    vocab = 64
    ta.manual_seed(0)
    model = gpt.GPT(cfg, vocab)
    opt, _ = gpt.make_optimizer(model, cfg)
    data = ta.randint(0, vocab, (4096,), generator=ta.Generator(0)).tolist()
    x, y = gpt.get_batch(data, cfg, ta.Generator(1))

    def ours():
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()

    theirs = None
    if torch is not None:
        tmodel = gpt_twin.torch_twin(torch, cfg, vocab)
        tmodel.load_state_dict({k: torch.tensor(v.tolist(), dtype=torch.float32)
                                for k, v in model.state_dict().items()})
        topt = torch.optim.AdamW(tmodel.parameters(), lr=cfg.lr, betas=(0.9, 0.99))
        tx, ty = (torch.tensor(t.tolist(), dtype=torch.int64) for t in (x, y))

        def theirs():
            loss = tmodel(tx, ty)
            topt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(tmodel.parameters(), cfg.grad_clip)
            topt.step()
    return ours, theirs


# ============================================================================ a busy machine

CONTENDED_STEPS = (("transformer encoder classifier", transformer_step_pair),
                   ("GRU seq2seq + Bahdanau", seq2seq_step_pair),
                   ("GPT 2 layers, d 64, T 64, B 8", gpt_step_pair))
BUSY_CODE = "while True: pass"


def start_busy(n):
    """n processes that each keep a core busy (`while True: pass`), pinned nowhere."""
    return [subprocess.Popen([sys.executable, "-c", BUSY_CODE]) for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def _mean_ms_alternating(contenders, rounds, budget):
    """contenders: (key, setup, fn); each round runs every contender's setup() then its fn()
    for `budget` seconds (at least 3 calls), then pauses (idle workers stop spinning). Each
    round starts with the next contender, so that none always follows the same one. Returns
    {key: mean ms per call}: the time a training run of many steps takes, per step. (Not the
    median: beside busy processes a step takes its quiet time, or that plus a time slice lost to
    another process, and the median jumps from one to the other as the mix shifts a little.)"""
    times = {key: [] for key, _, _ in contenders}
    for r in range(rounds):
        k = r % len(contenders)
        for key, setup, fn in contenders[k:] + contenders[:k]:
            setup()
            fn()                        # (the first call after a thread-count change)
            end = time.perf_counter() + budget
            n = 0
            while n < 3 or time.perf_counter() < end:
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
                n += 1
            time.sleep(0.05)
    return {key: statistics.fmean(ts) * 1e3 for key, ts in times.items()}


def bench_contended(res, torch, rounds, budget):
    """The training steps beside one busy process per CPU: tinyattn's default thread count,
    tinyattn on 1 thread, PyTorch's default, side by side (module docstring: --contended)."""
    from tinyattn import backend
    backend.set_num_threads(None)
    default = ta.get_num_threads()
    n_busy = backend.usable_cpus()
    torch_threads = torch.get_num_threads() if torch else None
    print(f"Busy machine: {n_busy} busy process(es) (python -c '{BUSY_CODE}', one per CPU this "
          f"process may use, pinned nowhere) run beside every step.\nEach step is timed in "
          f"alternating rounds ({rounds} rounds, {budget:.1f} s each): tinyattn with its default "
          f"{default} thread(s), tinyattn with 1 thread (TINYATTN_NUM_THREADS=1), and PyTorch "
          f"with its default {torch_threads} thread(s); mean ms per step.\nGoals: tinyattn's "
          f"default at least 0.9x the speed of its 1 thread, and at least PyTorch's speed.\n"
          f"Pool: blocks the caller offered its worker(s) in the default rounds, how many it took "
          f"back because no worker had started them, how many ended late, and how often it "
          f"stopped offering for a while (tinyattn/fast/threads.py).")
    head = (f"{'training step':32s} {'default':>9s} {'1 thread':>9s} {'PyTorch':>9s} "
            f"{'vs 1 thr':>8s} {'vs PyT':>7s}  pool: offered/taken back/late/back-offs")
    print(head)
    print("-" * len(head))
    steps = [(name,) + make(torch) for name, make in CONTENDED_STEPS]
    for _, ours, theirs in steps:          # compile and warm up before the busy processes start
        for n in (None, 1):
            backend.set_num_threads(n)
            ours()
            ours()
        if theirs is not None:
            theirs()
    procs = start_busy(n_busy)
    load_start = os.getloadavg()
    try:
        time.sleep(0.5)
        for name, ours, theirs in steps:
            before = threads.stats()
            means = _mean_ms_alternating(
                [("default", lambda: backend.set_num_threads(None), ours),
                 ("one", lambda: backend.set_num_threads(1), ours)]
                + ([("torch", lambda: None, theirs)] if theirs is not None else []),
                rounds, budget)
            pool = {k: v - before.get(k, 0) for k, v in threads.stats().items()
                    if k != "ran_by_workers"}
            t_def, t_one, t_torch = means["default"], means["one"], means.get("torch")
            vs_one = t_one / t_def
            vs_torch = t_torch / t_def if t_torch else None
            row = dict(section="contended", case=name, unit="ms", tinyattn=t_def,
                       tinyattn_1_thread=t_one, torch=t_torch, better="lower",
                       ratio=vs_one, target=">= 0.9", met=vs_one >= 0.9,
                       torch_speed_ratio=vs_torch,
                       torch_met=None if vs_torch is None else vs_torch >= 1.0,
                       tinyattn_threads=default, torch_threads=torch_threads, busy=n_busy,
                       pool=pool, note="ratio: speed of the default vs 1 thread")
            res.rows.append(row)
            ok = lambda met: "" if met is None else " met" if met else " NOT met"  # noqa: E731
            print(f"{name:32s} {t_def:9.2f} {t_one:9.2f} "
                  f"{'-' if t_torch is None else f'{t_torch:.2f}':>9s} {vs_one:8.2f} "
                  f"{'-' if vs_torch is None else f'{vs_torch:.2f}':>7s}  "
                  f"{pool['offered']}/{pool['taken_back']}/{pool['late']}/{pool['backoffs']}"
                  f"  (vs 1 thread >= 0.9{ok(row['met'])}; vs PyTorch >= 1.0"
                  f"{ok(row['torch_met'])})", flush=True)
    finally:
        stop_busy(procs)
        backend.set_num_threads(None)
    print(f"load average with the busy processes: {load_start[0]:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")


# ============================================================================ start-up and memory

STARTUP_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
LIB = sys.argv[1]
if LIB == "tinyattn":
    import tinyattn as ta
    from tinyattn import nn, optim
    F = nn.functional
else:
    import torch as ta
    from torch import nn, optim
    F = nn.functional
    ta.set_num_threads(2)
t_import = time.perf_counter() - t0
# The demo transformer (demos/transformer.py's model at its default size): token embeddings,
# sinusoidal positions, nn.Transformer 2+2 layers, d_model 64, 4 heads, ff 128, causal decoder
# mask, cross-entropy with label smoothing, Adam; one forward + backward + step.
V, E, T, B = 16, 64, 12, 32
ta.manual_seed(0)
emb = nn.Embedding(V, E)
model = nn.Transformer(E, 4, 2, 2, 128, dropout=0.1, batch_first=True)
head = nn.Linear(E, V)
params = list(emb.parameters()) + list(model.parameters()) + list(head.parameters())
opt = optim.Adam(params, lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
pe = ta.randn(T, E) * 0.1
src = ta.randint(3, V, (B, T))
tgt = ta.randint(3, V, (B, T))
mask = nn.Transformer.generate_square_subsequent_mask(T)
out = model(emb(src) + pe, emb(tgt) + pe, tgt_mask=mask)
loss = F.cross_entropy(head(out).reshape(-1, V), tgt.reshape(-1), label_smoothing=0.1)
opt.zero_grad()
loss.backward()
opt.step()
with ta.no_grad():
    head(model(emb(src) + pe, emb(tgt) + pe, tgt_mask=mask)).argmax(-1)
t_total = time.perf_counter() - t0
print(json.dumps({"import_s": t_import, "total_s": t_total}))
'''

MEMORY_CHILD = r'''
import json, math, resource, sys
LIB = sys.argv[1]
sys.path.insert(0, sys.argv[2])
''' + STATUS_MB + r'''
if LIB == "tinyattn":
    import run
    step, _ = run.transformer_step_pair(None)
else:  # PyTorch's twin of the classifier, written out so that tinyattn is not imported here
    import torch
    torch.set_num_threads(2)
    V, D, H, FF, T, B, C, L = 32, 64, 4, 128, 32, 32, 4, 2
    pos = torch.arange(T).unsqueeze(1) * torch.exp(torch.arange(0, D, 2) * (-math.log(1e4) / D))
    pe = torch.zeros(T, D)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos), torch.cos(pos)
    embed, drop = torch.nn.Embedding(V, D), torch.nn.Dropout(0.1)
    layer = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
    head = torch.nn.Linear(D, C)
    params = list(embed.parameters()) + list(enc.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    tokens, labels = torch.randint(0, V, (B, T)), torch.randint(0, C, (B,))

    def step():
        logits = head(enc(drop(embed(tokens) + pe)).mean(1))
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
before = status_mb("VmRSS")  # library imported, model built
for _ in range(3):  # warm-up: kernels loaded, optimizer state made, allocator settled
    step()
try:  # restart the peak (VmHWM) here, so that it covers the training steps only
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
for _ in range(10):
    step()
peak = status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"before_mb": before, "peak_mb": peak}))
'''


def _child(code, args, env=None):
    out = subprocess.run([sys.executable, "-c", code] + list(args), capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"child process failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _env(**extra):
    env = dict(os.environ)
    # Children read and write Python's bytecode cache (.pyc), as Python does by default and as a
    # pip install leaves it. Where PYTHONDONTWRITEBYTECODE is set (some sandboxes and CI images),
    # every start would compile tinyattn's ~80 modules from source again: 0.37 s of a 1.2 s warm
    # start on the Zen 3, a cost no installed library pays (PyTorch's .pyc came with its wheel).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def bench_startup(res, torch):
    """import + first forward/backward/step of the demo transformer in a fresh process: cold (an
    empty numba cache, so every kernel compiles) and warm (the cache the cold run filled)."""
    with tempfile.TemporaryDirectory(prefix="tinyattn-numba-cache-") as cache:
        env = _env(NUMBA_CACHE_DIR=cache)
        cold, stderr = _child(STARTUP_CHILD, ["tinyattn"], env)
        said = "compiling" in stderr
        warm = min((_child(STARTUP_CHILD, ["tinyattn"], env)[0] for _ in range(3)),
                   key=lambda r: r["total_s"])
    theirs = None
    if torch is not None:
        theirs = min((_child(STARTUP_CHILD, ["torch"], _env())[0] for _ in range(3)),
                     key=lambda r: r["total_s"])
    res.add("startup", "warm: import + first step of demo transformer", "s", warm["total_s"],
            theirs["total_s"] if theirs else None, "lower", None,
            note=f"import {warm['import_s']:.2f} s; target < 1 s: "
                 f"{'met' if warm['total_s'] < 1 else 'NOT met'}")
    res.rows[-1]["absolute_target"] = "< 1 s"
    res.rows[-1]["absolute_met"] = warm["total_s"] < 1
    res.add("startup", "cold: the same, empty numba cache", "s", cold["total_s"],
            theirs["total_s"] if theirs else None, "lower", None,
            note=f"target < 20 s: {'met' if cold['total_s'] < 20 else 'NOT met'}; "
                 f"compile message {'shown' if said else 'NOT shown'}")
    res.rows[-1]["absolute_target"] = "< 20 s"
    res.rows[-1]["absolute_met"] = cold["total_s"] < 20
    res.rows[-1]["compile_message"] = said


def bench_cold_start(res):
    """`--cold-start`: what a newcomer waits for, each in a fresh process with an empty kernel
    cache (every kernel compiles): import + build + the first training step of the demo
    transformer (STARTUP_CHILD); then the same again with the cache it filled, to check that the
    compile message appears only when something compiles; and the README's quick-start demo
    (`python demos/order_matters.py`) in a fresh `git clone` of this checkout, whose
    __pycache__ folders are empty (the interpreter running this script; no venv or pip step)."""
    with tempfile.TemporaryDirectory(prefix="tinyattn-numba-cache-") as cache:
        env = _env(NUMBA_CACHE_DIR=cache)
        cold, stderr = _child(STARTUP_CHILD, ["tinyattn"], env)
        said = "compiling" in stderr
        again, stderr = _child(STARTUP_CHILD, ["tinyattn"], env)
        said_again = "compiling" in stderr
    res.add("cold start", "first step of the demo transformer, empty cache", "s",
            cold["total_s"], None, "lower", None,
            note=f"target <= 20 s: {'met' if cold['total_s'] <= 20 else 'NOT met'}; compile "
                 f"message {'shown' if said else 'NOT shown'}; cached rerun "
                 f"{again['total_s']:.2f} s, message {'shown (wrong)' if said_again else 'absent'}")
    res.rows[-1].update(absolute_target="<= 20 s", absolute_met=cold["total_s"] <= 20,
                        compile_message=said, compile_message_when_cached=said_again)
    with tempfile.TemporaryDirectory(prefix="tinyattn-clone-") as tmp:
        clone = os.path.join(tmp, "tinyattn")
        subprocess.run(["git", "clone", "-q", ROOT, clone], check=True, timeout=300)
        env = dict(os.environ, PYTHONPATH=clone)
        env.pop("NUMBA_CACHE_DIR", None)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "demos/order_matters.py"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=3600)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"the quick start failed:\n{done.stderr[-2000:]}")
    res.add("cold start", "quick start (demos/order_matters.py) from a fresh clone", "s",
            seconds, None, "lower", None,
            note=f"target <= 40 s: {'met' if seconds <= 40 else 'NOT met'}; load average "
                 f"{os.getloadavg()[0]:.1f}")
    res.rows[-1].update(absolute_target="<= 40 s", absolute_met=seconds <= 40)


def bench_memory(res, torch):
    ours, _ = _child(MEMORY_CHILD, ["tinyattn", HERE], _env())
    theirs = _child(MEMORY_CHILD, ["torch", HERE], _env())[0] if torch is not None else None
    res.add("memory", "peak RSS, transformer classifier training", "MB", ours["peak_mb"],
            theirs["peak_mb"] if theirs else None, "lower", None,
            note=f"peak of 10 steps after 3 warm-up steps; the steps add "
                 f"{ours['peak_mb'] - ours['before_mb']:.0f} MB to the process with the model "
                 f"built" + (f" (PyTorch {theirs['peak_mb'] - theirs['before_mb']:.0f} MB)"
                             if theirs else ""))


# ============================================================================ main


def machine_info():
    """The CPU as /proc/cpuinfo names it, with its family and model numbers (a VM often says only
    "AMD EPYC": family 25 model 1 is a Zen 3, family 26 a Zen 5) and LLVM's name for the core
    numba compiles for, its L2 per core, and the vector ISA."""
    cpu, family, model = platform.processor(), None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name":
                    cpu = value
                elif key == "cpu family":
                    family = value
                elif key == "model":
                    model = value
                elif not key and cpu:       # the end of the first processor's block
                    break
    except OSError:
        pass
    import llvmlite.binding as llvm
    from tinyattn.fast.simd import l2_cache_bytes
    return dict(cpu=cpu, cpu_family=family, cpu_model=model, llvm_cpu=llvm.get_host_cpu_name(),
                l2_kib_per_core=l2_cache_bytes() // 1024, cpu_count=os.cpu_count(),
                python=platform.python_version(), platform=platform.platform(), isa=vector_isa())


def vector_isa():
    """The widest vector instruction set numba compiles for here (after --isa limits it)."""
    import numba
    import llvmlite.binding as llvm
    if numba.config.CPU_FEATURES:
        on = {f[1:] for f in numba.config.CPU_FEATURES.split(",") if f.startswith("+")}
    else:
        on = {f for f, v in llvm.get_host_cpu_features().items() if v}
    if "avx512f" in on:
        return "AVX-512"
    if "avx2" in on:
        return "AVX2" + (" + FMA" if "fma" in on else "")
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "NEON"
    return "SSE"


def _widest_register():
    """Compile a small fresh loop with this process's numba settings and report the widest vector
    register in its machine code: the check that --isa avx2 really leaves AVX-512 out."""
    from array import array

    from numba import njit

    @njit(fastmath=True)
    def dot(a, b, n):
        s = 0.0
        for i in range(n):
            s += a[i] * b[i]
        return s

    buf = array("d", [1.0] * 64)
    dot(buf, buf, 64)
    asm = next(iter(dot.inspect_asm().values()))
    return "zmm" if "zmm" in asm else "ymm" if "ymm" in asm else "xmm"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections to run, of {', '.join(SECTIONS)}")
    ap.add_argument("--quick", action="store_true", help="fewer rounds, shorter budgets")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds per row")
    ap.add_argument("--json", default=os.path.join(HERE, "results-latest.json"))
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out even if installed")
    ap.add_argument("--contended", action="store_true",
                    help="only the training steps, beside one busy process per CPU: tinyattn's "
                         "default threads, its 1 thread and PyTorch's default threads")
    ap.add_argument("--cold-start", action="store_true",
                    help="only the cold-start rows: the first step with an empty kernel cache, "
                         "and the quick start from a fresh clone (bench_cold_start)")
    ap.add_argument("--isa", choices=["avx2"], default=None,
                    help="judge an AVX2-only CPU on this one: compile tinyattn's kernels for "
                         "Haswell (no AVX-512) and limit PyTorch to AVX2 the same way")
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    if args.cold_start:
        sections = []
    for s in sections:
        if s not in SECTIONS:
            ap.error(f"unknown section {s!r}; choose from {', '.join(SECTIONS)}")

    torch = None
    if not args.no_torch:
        try:
            import torch
            if not args.contended:      # (contended: PyTorch's own default)
                torch.set_num_threads(2)
        except ImportError:
            print("PyTorch is not installed: tinyattn only")
    rounds = args.rounds or (3 if args.quick else 5)
    timer = Timer(rounds, budget=0.3 if args.quick else 1.0)

    meta = dict(machine_info(), command=" ".join([os.path.basename(sys.executable)] + sys.argv),
                date=datetime.datetime.now().isoformat(timespec="seconds"),
                tinyattn=ta.__version__, tinyattn_threads=threads.num_threads(),
                torch=torch.__version__ if torch else None,
                torch_threads=torch.get_num_threads() if torch else None,
                loadavg_start=os.getloadavg(), rounds=rounds)
    theirs = (f"PyTorch {meta['torch']} ({meta['torch_threads']} threads)" if torch
              else "PyTorch not installed")
    ident = ", ".join(x for x in (
        meta["cpu_family"] and f"family {meta['cpu_family']} model {meta['cpu_model']}",
        f"LLVM: {meta['llvm_cpu']}", f"L2 {meta['l2_kib_per_core']} KiB per core") if x)
    print(f"tinyattn {ta.__version__} ({threads.num_threads()} threads) vs {theirs} on "
          f"{meta['cpu']} ({ident}), {meta['cpu_count']} cores; load average "
          f"{meta['loadavg_start'][0]:.2f}")
    isa = os.environ.get("TINYATTN_BENCH_ISA")
    meta["numba_registers"] = _widest_register()
    meta["torch_capability"] = torch.backends.cpu.get_cpu_capability() if torch else None
    print(f"vector ISA: {meta['isa']}" + (f" (limited by --isa {isa})" if isa else "")
          + f"; numba's code uses {meta['numba_registers']} registers"
          + (f"; PyTorch's kernels: {meta['torch_capability']}" if torch else ""))
    res = Results()
    gc.collect()
    if args.contended:
        sections = []
        # Short rounds, many of them: beside busy processes a step's time swings with the
        # scheduler's time slices, and long rounds leave one contender a lucky second.
        bench_contended(res, torch, args.rounds or (12 if args.quick else 30), budget=0.2)
    else:
        print(HEADER)
        print("-" * len(HEADER))
    if "matmul" in sections:
        bench_matmul(res, timer, torch, args.quick)
        bench_matmul_one_thread(res, timer)
    if "softmax" in sections:
        bench_softmax(res, timer, torch)
    if "sdpa" in sections:
        bench_sdpa(res, timer, torch)
    if "conv" in sections:
        bench_conv(res, timer, torch)
    if "overhead" in sections:
        bench_overhead(res, timer, torch)
    if "steps" in sections:
        bench_steps(res, timer, torch, args.quick)
    if "startup" in sections:
        bench_startup(res, torch)
    if "memory" in sections:
        bench_memory(res, torch)
    if args.cold_start:
        bench_cold_start(res)
    meta["loadavg_end"] = os.getloadavg()
    print(f"load average at the end {meta['loadavg_end'][0]:.2f}")
    missed = [r for r in res.rows if r["met"] is False or r.get("absolute_met") is False
              or r.get("torch_met") is False]
    print(f"{len(missed)} target(s) not met" + (": " + "; ".join(
        r["case"] for r in missed) if missed else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=res.rows), f, indent=1)
        print("wrote", os.path.relpath(args.json))


if __name__ == "__main__":
    main()
