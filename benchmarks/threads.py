"""The cost of handing work to the second core: kernels/threads.py's parallel_for.

    python benchmarks/threads.py

A nogil kernel of a given length (a dependent chain of multiply-adds, so its time is known) runs
on one thread, then split in two halves by parallel_for, with the workers spinning between jobs
(the default) and with spinning off (TINYATTN_SPIN_US=0: every hand-off wakes a sleeping thread,
as the library did before). Each setting runs in a child process; the figure is the median time
per call over a few thousand calls. Splitting pays when the parallel time is below the 1-thread
time.
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
from tinyattn.kernels import threads
from tinyattn.kernels.jit import kernel


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


def run(spin_us):
    env = dict(os.environ, TINYATTN_NUM_THREADS="2")
    if spin_us is not None:
        env["TINYATTN_SPIN_US"] = str(spin_us)
    code = CHILD.replace("ROOT", repr(ROOT)).replace("REPS", repr(REPS))
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


if __name__ == "__main__":
    main()
