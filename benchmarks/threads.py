"""The cost of handing work to the second core: tinyattn/fast/threads.py's parallel_for.

    python benchmarks/threads.py

A nogil kernel of a given length (a dependent chain of multiply-adds, so its time is known) runs
on one thread, then split in two halves by parallel_for, with the workers spinning between jobs
(the default) and with spinning off (TINYATTN_SPIN_US=0: every hand-off wakes a sleeping thread,
as the library did before). Each setting runs in a child process; the figure is the median time
per call over a few thousand calls. Splitting pays when the parallel time is below the 1-thread
time.

A second table times whole products `a @ b` of a training step's sizes the same way: on one
thread, split in two with the worker's half handed over as a Python call, and split with it
handed over as numbers that the worker's compiled spin loop runs without the GIL (the default,
tinyattn/fast/jobs.py). The three settings alternate in one child process.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, sys, time
sys.path.insert(0, ROOT)
from array import array
from tinyattn.fast import threads
from tinyattn.fast.jit import kernel


@kernel
def chain(a, start, stop, reps):
    acc = 0.0
    for _ in range(reps):
        for i in range(start, stop):
            acc = acc * 0.999 + a[i]
    a[start] += acc * 0.0


def median_us(fn, n=3000):
    for _ in range(100):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e6


a = array("d", [1.0] * 1024)
out = {}
for reps in REPS:
    one = median_us(lambda: chain(a, 0, 1024, reps))
    two = median_us(lambda: threads.parallel_for(lambda s, e: chain(a, s, e, reps), 1024))
    out[reps] = (one, two)
print(json.dumps(out))
"""

REPS = [0, 5, 10, 20, 50, 100]

MATMUL_CHILD = r"""
import json, sys, time
sys.path.insert(0, ROOT)
import tinyattn as ta
from tinyattn.fast import matmul, threads

matmul.PARALLEL_MIN_WORK = 0        # split every product: what a split costs and saves
out = {}
for name, (nb, M, N, K, a_t, b_t) in SHAPES:
    a = ta.randn(nb, K, M).transpose(1, 2) if a_t else ta.randn(nb, M, K)
    b = ta.randn(nb, N, K).transpose(1, 2) if b_t else ta.randn(nb, K, N)
    best = {}
    for _ in range(5):
        for setting in ("one thread", "Python call", "compiled"):
            threads.set_num_threads(1 if setting == "one thread" else 2)
            threads._get_workers()
            threads._jobs_as_numbers = setting == "compiled"
            for _ in range(50):
                a @ b
            ts = []
            for _ in range(400):
                t0 = time.perf_counter()
                a @ b
                ts.append(time.perf_counter() - t0)
            ts.sort()
            best[setting] = min(best.get(setting, 1e9), ts[len(ts) // 2] * 1e6)
    out[name] = best
print(json.dumps(out))
"""

# (name, (batch, M, N, K, A transposed, B transposed)): products of the GRU seq2seq step of
# benchmarks/run.py (x W^T, the gradients of W and of x) and a batched attention product
SHAPES = [("(64x160) @ (160x192), B^T", (1, 64, 192, 160, False, True)),
          ("(64x64) @ (64x192)", (1, 64, 192, 64, False, False)),
          ("(192x64) @ (64x160), A^T", (1, 192, 160, 64, True, False)),
          ("(768x32) @ (32x192), B^T", (1, 768, 192, 32, False, True)),
          ("(192x768) @ (768x64), A^T", (1, 192, 64, 768, True, False)),
          ("128 x (32x16) @ (16x32)", (128, 32, 32, 16, False, False))]


def run(spin_us):
    env = dict(os.environ, TINYATTN_NUM_THREADS="2")
    if spin_us is not None:
        env["TINYATTN_SPIN_US"] = str(spin_us)
    code = CHILD.replace("ROOT", repr(ROOT)).replace("REPS", repr(REPS))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_matmul():
    env = dict(os.environ, TINYATTN_NUM_THREADS="2")
    code = MATMUL_CHILD.replace("ROOT", repr(ROOT)).replace("SHAPES", repr(SHAPES))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    sys.path.insert(0, HERE)
    from run import machine_info
    print(f"# {machine_info()['cpu']}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")
    spinning, sleeping = run(None), run(0)
    print(f"{'1 thread (us)':>14} {'2, spinning':>12} {'2, sleeping':>12}")
    for reps in REPS:
        one, two = spinning[str(reps)]
        print(f"{one:14.1f} {two:12.1f} {sleeping[str(reps)][1]:12.1f}")
    print()
    print(f"{'a @ b, fp32 (us)':<28} {'1 thread':>9} {'2, Python':>10} {'2, compiled':>12}")
    for name, t in run_matmul().items():
        print(f"{name:<28} {t['one thread']:9.1f} {t['Python call']:10.1f} {t['compiled']:12.1f}")


if __name__ == "__main__":
    main()
