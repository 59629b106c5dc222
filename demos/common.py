"""What every demo shares: command-line flags, a progress bar, metrics.json, checkpoints.

Each demo script is `python demos/NAME.py [--quick] [--seed N] [--out DIR]`:
- `--quick`  a small version (under a minute) that the test suite runs as a smoke test;
- `--seed`   the same seed gives the same numbers;
- `--out`    where pictures (*.svg), metrics.json and a checkpoint go (default runs/NAME/).

The progress bar redraws one line per epoch on a terminal (loss, accuracy, examples/s, ETA) and
prints one plain line per epoch when the output is a file or a pipe, so logs stay readable. If
training falls far below its own best speed of this run (a busy machine), it says so once and
what to try (`Slowdown`).
"""
import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python demos/x.py` from a checkout, without installing
    sys.path.insert(0, str(ROOT))


def parser(name, description):
    """An ArgumentParser with the flags every demo has; add demo-specific ones to it."""
    p = argparse.ArgumentParser(prog=f"demos/{name}.py", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a small version that finishes in under a minute (the smoke test)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"output directory for pictures, metrics.json and the checkpoint "
                        f"(default runs/{name}/)")
    return p


def output_dir(args, name):
    out = args.out if args.out is not None else Path("runs") / name
    out.mkdir(parents=True, exist_ok=True)
    return out


def _clock(seconds):
    if not math.isfinite(seconds):
        return "--:--"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Slowdown:
    """Notices when training runs far slower than it already did in this run: examples per second
    over windows of at least WINDOW_S seconds, against the best window so far of the same kind of
    progress line (the first word of its description: "epoch", "steps", ...). Below a FACTOR-th of
    it, prints once (per run) what is going on and what to try."""

    WINDOW_S = 3.0
    FACTOR = 4.0
    best = {}           # kind -> the best examples/s of a window
    warned = False

    def __init__(self, kind, stream, clock=None):
        self.kind, self.stream, self.clock = kind, stream, clock or time.perf_counter
        self.t0, self.n0 = self.clock(), 0

    def update(self, done):
        now = self.clock()
        if now - self.t0 < self.WINDOW_S:
            return False
        rate = (done - self.n0) / (now - self.t0)
        self.t0, self.n0 = now, done
        best = Slowdown.best.get(self.kind, 0.0)
        Slowdown.best[self.kind] = max(best, rate)
        if Slowdown.warned or rate * self.FACTOR >= best:
            return False
        Slowdown.warned = True
        import tinyattn as ta
        advice = ("close other programs, or run on one thread: TINYATTN_NUM_THREADS=1 python "
                  f"{' '.join(sys.argv)}" if ta.get_num_threads() > 1 else "close other programs")
        self.stream.write(f"\nnote: training slowed to {rate:,.0f} ex/s from {best:,.0f} ex/s "
                          f"earlier in this run; the machine is probably busy with other work. "
                          f"To speed it up: {advice} (README: Quick start).\n")
        self.stream.flush()
        return True


class Progress:
    """One epoch's progress: `bar.update(n_examples, loss=..., acc=...)` after each batch.

    Shows running means of the given metrics, examples per second and the time left; `close()`
    (or leaving a `with` block) prints the epoch's final line and returns the metric means."""

    def __init__(self, total, desc="", stream=None, width=24):
        self.total, self.desc, self.width = total, desc, width
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self.done = 0
        self.sums = {}
        self.weights = 0
        self.start = time.perf_counter()
        self.last_draw = 0.0
        self.slowdown = Slowdown((desc.split() or ["-"])[0], self.stream)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, n, **metrics):
        self.done += n
        for k, v in metrics.items():
            self.sums[k] = self.sums.get(k, 0.0) + float(v) * n
        self.weights += n
        self.slowdown.update(self.done)
        now = time.perf_counter()
        if self.live and (now - self.last_draw > 0.1 or self.done >= self.total):
            self.last_draw = now
            self.stream.write("\r" + self._line(now) + "\033[K")
            self.stream.flush()

    def means(self):
        return {k: v / max(self.weights, 1) for k, v in self.sums.items()}

    def _line(self, now):
        elapsed = max(now - self.start, 1e-9)
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        parts = [f"{self.desc} [{bar}] {frac:4.0%}"]
        for k, v in self.means().items():
            parts.append(f"{k} {v:.2%}" if "acc" in k or "exact" in k else f"{k} {v:.4f}")
        parts.append(f"{rate:,.0f} ex/s")
        parts.append(f"ETA {_clock(eta)}" if self.done < self.total else f"{_clock(elapsed)}")
        return "  ".join(parts)

    def close(self):
        line = self._line(time.perf_counter())
        if self.live:
            self.stream.write("\r" + line + "\033[K\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        return self.means()


def write_metrics(out, **metrics):
    """Write OUT/metrics.json: a flat object of numbers; names containing 'acc' or 'exact' are
    fractions in [0, 1]; 'seconds' is the wall time of the run."""
    for k, v in metrics.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f"metrics.json: {k} must be a finite number, got {v!r}")
        if ("acc" in k or "exact" in k) and not 0.0 <= v <= 1.0:
            raise ValueError(f"metrics.json: {k} = {v} is an accuracy and must be in [0, 1]")
    if "seconds" not in metrics:
        raise ValueError("metrics.json: 'seconds' (the run's wall time) is required")
    path = Path(out) / "metrics.json"
    path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return path


def save_checkpoint(out, model, **extra):
    """Save the model's weights (and any extra tensors/values) to OUT/checkpoint.safetensors."""
    import tinyattn as ta
    path = Path(out) / "checkpoint.safetensors"
    ta.save({"model": model.state_dict(), **extra}, path)
    return path


def snapshot_steps(total, n=12):
    """The training steps (0 = before the first) at which a demo saves its attention for the
    explorer's scrubber: n + 1 of them, evenly spread over `total` steps."""
    return sorted({round(total * k / n) for k in range(n + 1)})


def alignment(model, src, tgt_in, lengths=None):
    """A Seq2Seq model's attention (T, S) on one teacher-forced example (batch of 1): the same
    shape at every point of training, as the explorer's scrubber needs."""
    import tinyattn as ta
    was_training = model.training
    model.eval()
    with ta.no_grad():
        _, weights = model(src, tgt_in, lengths, return_attention=True)
    model.train(was_training)
    return weights[0]


def write_explorer(out, source, tokens=None, *, title, snapshots=None, **kw):
    """OUT/explorer.html (open it in a browser; no network needed) and OUT/explorer.json (the
    data, for tinyattn.viz.explorer.from_run)."""
    from tinyattn import viz
    path = Path(out) / "explorer.html"
    ex = viz.explorer(source, tokens, path, title=title, snapshots=snapshots, **kw)
    ex.save(Path(out) / "explorer.json")
    print(f"attention explorer: {path} ({path.stat().st_size / 1e6:.2f} MB; "
          f"{len(ex.doc['snapshots'])} training snapshots)", flush=True)
    return ex


def summary(text):
    """The final line the README quotes, set apart from the progress output."""
    print("\n" + "=" * len(text) + "\n" + text + "\n" + "=" * len(text), flush=True)
