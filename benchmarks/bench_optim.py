"""Time one optimizer step (Adam, AdamW, SGD with momentum) over a ~100k-parameter model:
tinyattn's fused numba loop per parameter vs torch.optim in the same process, 2 threads.

    PYTHONPATH=. python benchmarks/bench_optim.py

Two parameter layouts: an MLP (6 tensors, mostly two big matrices) and a small transformer-like
stack (many small tensors), where per-parameter overhead matters more. Gradients are fixed; only
`step()` is timed. The ratio (x) is torch's best time over tinyattn's: > 1 means tinyattn
is faster.
"""
import statistics
import time

import tinyattn
from tinyattn import nn


def mlp_shapes():
    return [(256, 256), (256,), (256, 128), (128,), (10, 128), (10,)]  # 99,978 values


def transformer_shapes(layers=4, d=64, ff=128):
    shapes = [(500, d)]  # embedding
    for _ in range(layers):
        shapes += [(3 * d, d), (3 * d,), (d, d), (d,), (ff, d), (ff,), (d, ff), (d,),
                   (d,), (d,), (d,), (d,)]
    return shapes


def count(shapes):
    total = 0
    for s in shapes:
        n = 1
        for k in s:
            n *= k
        total += n
    return total


def interleaved_times(fns, repeats, inner=10):
    """Best and median time per call of each fn, measured in turns (the machine is shared and
    noisy: taking turns exposes every contender to the same background load)."""
    for fn in fns:
        fn()  # warm-up (compiles numba kernels on the first call)
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            ts.append((time.perf_counter() - t0) / inner)
    return [(min(ts), statistics.median(ts)) for ts in times]


TORCH_MODES = [("foreach=False", {"foreach": False}), ("foreach=True", {"foreach": True}),
               ("fused=True", {"fused": True})]


def bench(shapes, label, repeats):
    import torch
    torch.set_num_threads(2)
    tinyattn.manual_seed(0)
    ours = [nn.Parameter(tinyattn.randn(*s) * 0.1) for s in shapes]
    for p in ours:
        p.grad = tinyattn.randn(*p.shape) * 0.01
    theirs = [torch.nn.Parameter(torch.tensor(p.tolist())) for p in ours]
    for p, tp in zip(ours, theirs):
        tp.grad = torch.tensor(p.grad.tolist())
    print(f"\n{label}: {count(shapes):,} float32 parameters in {len(shapes)} tensors "
          f"(best / median of {repeats} x 10 steps)")
    configs = [("Adam", {"lr": 1e-3}), ("Adam", {"lr": 1e-3, "amsgrad": True}),
               ("AdamW", {"lr": 1e-3}), ("SGD", {"lr": 1e-3, "momentum": 0.9})]
    for name, kwargs in configs:
        steps = [getattr(tinyattn.optim, name)(ours, **kwargs).step]
        for _, extra in TORCH_MODES:
            steps.append(getattr(torch.optim, name)(theirs, **kwargs, **extra).step)
        results = interleaved_times(steps, repeats)
        best_ours = results[0][0]
        title = name + (" amsgrad" if kwargs.get("amsgrad") else "")
        row = [f"{title:13s} tinyattn {best_ours * 1e6:7.0f} / {results[0][1] * 1e6:5.0f} us"]
        for (mode, _), (best, med) in zip(TORCH_MODES, results[1:]):
            row.append(f"torch {mode} {best * 1e6:7.0f} / {med * 1e6:5.0f} us "
                       f"({best / best_ours:4.2f}x)")
        print("  " + " | ".join(row))


if __name__ == "__main__":
    bench(mlp_shapes(), "MLP 256-256-128-10", repeats=30)
    bench(transformer_shapes(), "transformer-like stack (4 layers, d=64)", repeats=30)
