"""What the fast kernel backend buys: each op timed on the reference backend and on the fast one.

    python benchmarks/backends.py [--rounds N]

The reference backend is the plain loops a student reads (tinyattn/kernels/); the fast backend
(tinyattn/fast/) is what the library runs by default. Both are compiled; the two contenders
alternate round by round in this process (benchmarks/run.py's Timer), so they meet the same
background load. The figure is the median time per call; the last column is how many times
faster the fast backend is.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import tinyattn as ta  # noqa: E402
import tinyattn.nn.functional as F  # noqa: E402
from run import Timer, machine_info  # noqa: E402
from tinyattn import backend  # noqa: E402


def _fwd_bwd(fn, *shapes):
    gen = ta.Generator(0)
    xs = [ta.randn(*s, generator=gen).requires_grad_() for s in shapes]

    def step():
        y = fn(*xs)
        y.backward(ta.ones_like(y))
        for x in xs:
            x.grad = None
    return step


CASES = [
    ("softmax fwd+bwd 4096x64", lambda: _fwd_bwd(lambda x: F.softmax(x, -1), (4096, 64))),
    ("log_softmax fwd+bwd 256x1024", lambda: _fwd_bwd(lambda x: F.log_softmax(x, -1), (256, 1024))),
    ("layer_norm fwd+bwd 4096x64", lambda: _fwd_bwd(
        lambda x, w, b: F.layer_norm(x, (64,), w, b), (4096, 64), (64,), (64,))),
    ("gelu fwd+bwd 262144", lambda: _fwd_bwd(F.gelu, (262144,))),
    ("a * b + c fwd+bwd 262144", lambda: _fwd_bwd(lambda a, b, c: a * b + c,
                                                  (262144,), (262144,), (262144,))),
    ("matmul fwd 256x256x256", lambda: (lambda a, b: lambda: a @ b)(
        ta.randn(256, 256), ta.randn(256, 256))),
    ("attention Q@K^T 32x(128x32)@(32x128)", lambda: (lambda q, k: lambda: q @ k.mT)(
        ta.randn(32, 128, 32), ta.randn(32, 128, 32))),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per contender per row")
    args = ap.parse_args(argv)
    info = machine_info()
    print(f"# {info.get('cpu', '?')}; {info.get('cpu_count', '?')} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':40} {'reference':>12} {'fast':>12} {'fast is':>10}")
    timer = Timer(args.rounds, args.budget)
    for name, make in CASES:
        fns = []
        for which in backend.BACKENDS:
            step = make()

            def run(step=step, which=which):
                with backend.use(which):
                    step()
            fns.append(run)
        ref, fast = timer.run(fns)
        print(f"{name:40} {ref * 1e3:9.3f} ms {fast * 1e3:9.3f} ms {ref / fast:9.1f}x")


if __name__ == "__main__":
    main()
