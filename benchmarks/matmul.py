"""GFLOP/s of tinyattn's bmm beside PyTorch's matmul, measured in the same process.

    python benchmarks/matmul.py [--dtypes f,d] [--rounds 5] [--budget 1.0] [--json results.json]

Each case is timed as the median of many runs after warm-up, taken in a few alternating rounds
(tinyattn, PyTorch, tinyattn, ...) so that both see the same background load; a short pause
after each round lets that library's idle workers stop spinning before the other's threads run
(they would otherwise steal a core). PyTorch uses 2 threads (``torch.set_num_threads(2)``); tinyattn uses its default (``TINYATTN_NUM_THREADS``).
No NumPy: tinyattn's inputs are ``array.array``, PyTorch's come from ``torch.rand``.
"""

import argparse
import array
import json
import os
import platform
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tinyattn.fast import matmul, threads  # noqa: E402

# name, batch, M, N, K, B transposed (a (K, N) view of an (N, K) buffer, like K^T in Q @ K^T)
CASES = [
    ("square 128", 1, 128, 128, 128, False),
    ("square 256", 1, 256, 256, 256, False),
    ("square 512", 1, 512, 512, 512, False),
    ("square 1024", 1, 1024, 1024, 1024, False),
    ("attn 128x(32x16)@(16x32)", 128, 32, 32, 16, False),
    ("attn 128x(32x32)@(32x16)", 128, 32, 16, 32, False),
    ("Q@K^T 128x(32x16)@(32x16)^T", 128, 32, 32, 16, True),
    ("Q@K^T 32x(128x32)@(128x32)^T", 32, 128, 128, 32, True),
]


def calibrate(fn, budget):
    """Warm up fn and return how many calls take about ``budget`` seconds."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    for _ in range(3):
        fn()
    return max(3, min(2000, int(budget / once)))


def time_round(fn, n, times):
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def random_buffer(typecode, n, rng):
    return array.array(typecode, [rng.random() for _ in range(n)])


def tinyattn_call(typecode, nb, M, N, K, b_t, rng):
    a = random_buffer(typecode, nb * M * K, rng)
    b = random_buffer(typecode, nb * K * N, rng)
    out = array.array(typecode, bytes(nb * M * N * a.itemsize))
    b_sk, b_sn = (1, K) if b_t else (N, 1)

    def call():
        matmul.bmm(a, 0, M * K, 0, K, 1, b, 0, K * N, 0, b_sk, b_sn, out, nb, 1, M, N, K)
    return call


def torch_call(torch, typecode, nb, M, N, K, b_t):
    dtype = torch.float32 if typecode == "f" else torch.float64
    a = torch.rand(nb, M, K, dtype=dtype)
    b = torch.rand(nb, N, K, dtype=dtype).transpose(1, 2) if b_t else torch.rand(nb, K, N, dtype=dtype)
    if nb == 1:
        a, b = a[0], b[0]
    return lambda: torch.matmul(a, b)


def measure(mine, theirs, rounds, budget):
    """Median seconds per call of mine() and theirs() (None if theirs is None), alternating."""
    n_mine = calibrate(mine, budget / rounds)
    n_theirs = calibrate(theirs, budget / rounds) if theirs else 0
    t_mine, t_theirs = [], []
    for _ in range(rounds):
        time_round(mine, n_mine, t_mine)
        if theirs:
            time.sleep(0.02)    # let tinyattn's spinning worker (5 ms) go to sleep ...
            time_round(theirs, n_theirs, t_theirs)
            time.sleep(0.02)    # ... and PyTorch's OpenMP threads (~9 ms)
    return median(t_mine), median(t_theirs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="f,d", help="comma-separated typecodes: f (fp32), d (fp64)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds per case")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed calls per case and library")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    args = parser.parse_args(argv)
    typecodes = [t.strip() for t in args.dtypes.split(",") if t.strip()]
    rng = random.Random(0)

    start = time.perf_counter()
    for tc in typecodes:
        matmul.ensure_compiled(tc)
    compile_s = time.perf_counter() - start

    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None

    rows = []
    for tc in typecodes:
        for name, nb, M, N, K, b_t in CASES:
            mine = tinyattn_call(tc, nb, M, N, K, b_t, rng)
            theirs = torch_call(torch, tc, nb, M, N, K, b_t) if torch else None
            t_mine, t_theirs = measure(mine, theirs, args.rounds, args.budget)
            rows.append(dict(case=name, dtype="fp32" if tc == "f" else "fp64", typecode=tc, batch=nb,
                             M=M, N=N, K=K, b_transposed=b_t, flop=2 * nb * M * N * K,
                             tinyattn_s=t_mine, torch_s=t_theirs))

    print(f"tinyattn bmm vs PyTorch {torch.__version__ if torch else '(not installed)'}; "
          f"tinyattn threads={threads.num_threads()}, torch threads=2; "
          f"compile/cache load {compile_s:.2f} s")
    header = f"{'case':32s} {'dtype':5s} {'tinyattn':>16s} {'torch':>16s} {'ratio':>6s}"
    print(header)
    print("-" * len(header))
    for row in rows:
        row["tinyattn_gflops"] = row["flop"] / row["tinyattn_s"] / 1e9
        mine = f"{row['tinyattn_gflops']:7.1f} ({row['tinyattn_s'] * 1e6:7.1f}us)"
        if row["torch_s"]:
            row["torch_gflops"] = row["flop"] / row["torch_s"] / 1e9
            row["ratio"] = row["torch_s"] / row["tinyattn_s"]
            theirs = f"{row['torch_gflops']:7.1f} ({row['torch_s'] * 1e6:7.1f}us)"
            ratio = f"{row['ratio']:6.2f}"
        else:
            theirs, ratio = "-", "-"
        print(f"{row['case']:32s} {row['dtype']:5s} {mine:>16s} {theirs:>16s} {ratio:>6s}")
    print("GFLOP/s (median time per call); ratio = tinyattn GFLOP/s / PyTorch GFLOP/s")

    if args.json:
        meta = dict(python=platform.python_version(), machine=platform.machine(),
                    cpu_count=os.cpu_count(), tinyattn_threads=threads.num_threads(),
                    torch=torch.__version__ if torch else None, compile_or_cache_load_s=compile_s)
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, results=rows), f, indent=2)
        print("wrote", args.json)


if __name__ == "__main__":
    main()
