"""What every demo shares: command-line flags, a progress bar, metrics.json, checkpoints.

Each demo script is `python demos/NAME.py [--quick] [--seed N] [--out DIR] [--resume [PATH]]`:
- `--quick`  a small version (under a minute) that the test suite runs as a smoke test;
- `--seed`   the same seed gives the same numbers;
- `--out`    where pictures (*.svg), metrics.json and a checkpoint go (default runs/NAME/);
- `--resume` continue the training that Ctrl-C stopped (the demos that train through `Training`,
  below; in the others Ctrl-C stops with one line and saves nothing).

The progress bar redraws one line per epoch on a terminal (loss, accuracy, examples/s, ETA) and
prints one plain line per epoch when the output is a file or a pipe, so logs stay readable. If
training falls far below its own best speed of this run (a busy machine), it says so once and
what to try (`Slowdown`).
"""
import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python demos/x.py` from a checkout, without installing
    sys.path.insert(0, str(ROOT))


def parser(name, description, resumable=False):
    """An ArgumentParser with the flags every demo has; add demo-specific ones to it.
    `resumable`: the demo trains through `Training`, and takes `--resume`."""
    p = argparse.ArgumentParser(prog=f"demos/{name}.py", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a small version that finishes in under a minute (the smoke test)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"output directory for pictures, metrics.json and the checkpoint "
                        f"(default runs/{name}/)")
    if not resumable:
        return p
    p.add_argument("--resume", type=Path, nargs="?", const=True, default=None,
                   metavar="PATH",
                   help=f"continue the training that Ctrl-C stopped, from the checkpoint it "
                        f"saved (default OUT/{RESUME_FILE}); the other flags must be the same")
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


RESUME_FILE = "resume.safetensors"
# A test hook (tests/demos/test_resume.py): TINYATTN_DEMO_INTERRUPT_AT=N (STAGE:N in a run of
# stages) sends this process the SIGINT of a Ctrl-C at the end of training step N, the same path
# a key press takes.
INTERRUPT_AT = "TINYATTN_DEMO_INTERRUPT_AT"


class Stopped(KeyboardInterrupt):
    """Ctrl-C stopped a demo's training between two steps, after saving where it was."""


class Training:
    """Where a demo's training is, saved when Ctrl-C stops it and continued by `--resume`.

        with common.Training(args, out, model=m, optimizer=opt, scheduler=sched, generator=gen,
                             state={"losses": losses}) as run:
            for epoch in run.epochs(n_epochs):                    # from the saved epoch on
                order = run.order(lambda: ta.randperm(n, generator=gen).tolist())
                with run.progress(n, f"epoch {epoch}") as bar:
                    for i in run.batches(n, batch_size):          # from the saved position on
                        ...one training step, bar.update(...)...
                        run.step_done()

    Inside the `with`, the first Ctrl-C only asks to stop: the step under way finishes, then
    `step_done` (or the next epoch) saves the checkpoint OUT/resume.safetensors and raises
    `Stopped`, which `run` prints as one line. A second Ctrl-C stops at once, saving nothing.
    The checkpoint holds the model's, optimizer's and scheduler's state_dicts, the epoch, the
    position in the epoch's data order and that order, the step count, the state of tinyattn's
    global generator, of `generator` (a `ta.Generator`) and of `py_random` (a `random.Random`,
    the `random` module, or a tuple of them), the progress bar's running sums, and `state`:
    lists (refilled in place), dicts (likewise) and objects with `state_dict` /
    `load_state_dict`. It is written atomically (ta.save), so a second Ctrl-C while it is
    written leaves the previous one whole. A run resumed with the same flags takes the same
    steps with the same numbers as one never stopped (tests/demos/test_resume.py). The file is
    removed when the training ends.

    A demo that trains several models one after another (order_matters: three) makes each a
    stage of one run, so that one `--resume` continues the whole run:

        with common.Training(args, out, state={"weights": done}) as run:
            for name in run.stages(names):      # from the stage the checkpoint stopped in on
                run.begin(model=m, optimizer=opt, ...)   # restored if it stopped in this stage
                for epoch in run.epochs(n_epochs): ...
                done[name] = m.state_dict()

    Each stage counts its epochs and steps from 1 and 0, and may keep state of its own
    (`begin(..., state=...)`, saved apart from the run's); the stages before the saved one are
    not run again: what they left is in `state`."""

    def __init__(self, args, out, *, model=None, optimizer=None, scheduler=None,
                 generator=None, py_random=None, state=None):
        self.state = state or {}
        self.config = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                       if k not in ("out", "resume")} if args is not None else {}
        # (args None: a demo's training function called on its own, as tests do: a plain loop)
        self.path = Path(out) / RESUME_FILE if args is not None else None
        self.stage, self.parts, self._stage_state = None, {}, {}
        self.generator = self.py_random = None
        self._restart()
        self._old_handler = None
        self._stop = False
        self._saved = None          # the checkpoint to continue, until its stage begins
        if getattr(args, "resume", None) is not None:
            self._saved = self._read(self.path if args.resume is True else Path(args.resume))
        if model is not None:
            self.begin(model=model, optimizer=optimizer, scheduler=scheduler,
                       generator=generator, py_random=py_random)

    def _restart(self):
        self.epoch, self.position, self.step = 1, 0, 0
        self._order = self._bar = self._bar_saved = None
        self._next = 0

    # ------------------------------------------------------------------ stages
    def stages(self, names):
        """Each stage's name, from the one the checkpoint stopped in on (see the docstring)."""
        names = list(names)
        first = 0
        if self._saved is not None:
            if self._saved["stage"] not in names:
                raise SystemExit(f"--resume: the checkpoint stopped in {self._saved['stage']!r}, "
                                 f"which this run does not train ({', '.join(names)})")
            first = names.index(self._saved["stage"])
        for name in names[first:]:
            self.stage = name
            self._restart()
            yield name

    def begin(self, *, model, optimizer, scheduler=None, generator=None, py_random=None,
              state=None):
        """The stage's model, optimizer, ... (given to the constructor when there are no
        stages), and `state` to save for this stage only; all restored from the checkpoint
        when it stopped in this stage."""
        self.parts = {"model": model, "optimizer": optimizer}
        if scheduler is not None:
            self.parts["scheduler"] = scheduler
        self.generator, self.py_random, self._stage_state = generator, py_random, state or {}
        if self._saved is not None and self._saved["stage"] == self.stage:
            saved, self._saved = self._saved, None
            self._restore(saved)

    # ------------------------------------------------------------------ the loop
    def epochs(self, last):
        """Epochs self.epoch..last (1-based): from 1, or from the one a checkpoint stopped in."""
        while self.epoch <= last:
            self._check()
            yield self.epoch
            self.epoch, self.position, self._order, self._bar = self.epoch + 1, 0, None, None

    def order(self, draw):
        """The epoch's data order: `draw()` once per epoch, or the order of the checkpoint."""
        if self._order is None:
            self._order = list(draw())
        return self._order

    def batches(self, n, size):
        """The start of each batch of `size` in range(n), from the saved position on."""
        for i in range(self.position, n, size):
            self._next = min(i + size, n)
            yield i

    def progress(self, total, desc=""):
        """A `Progress` for this epoch, with the running sums saved mid-epoch when resuming."""
        self._bar = bar = Progress(total, desc)
        if self._bar_saved is not None:
            saved, self._bar_saved = self._bar_saved, None
            bar.done, bar.weights, bar.sums = saved["done"], saved["weights"], saved["sums"]
            bar.start -= saved["elapsed"]
        return bar

    def step_done(self):
        """Call at the end of each training step: counts it, and stops here after a Ctrl-C."""
        self.step += 1
        self.position = self._next
        if self.path is not None and os.environ.get(INTERRUPT_AT) in (
                str(self.step), f"{self.stage}:{self.step}"):
            if self._old_handler is not None:
                signal.raise_signal(signal.SIGINT)   # runs _on_sigint before it returns
            else:
                self._stop = True
        self._check()

    # ------------------------------------------------------------------ Ctrl-C
    def __enter__(self):
        if self.path is not None and threading.current_thread() is threading.main_thread():
            self._old_handler = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, kind, value, tb):
        if self._old_handler is not None:
            signal.signal(signal.SIGINT, self._old_handler)
            self._old_handler = None
        if kind is None and self.path is not None:
            self.path.unlink(missing_ok=True)   # finished: nothing left to resume
        return False

    def _on_sigint(self, signum, frame):
        if self._stop:               # the second Ctrl-C: now, without waiting for the step
            raise KeyboardInterrupt
        self._stop = True

    def _check(self):
        if self._stop:
            self._stop = False
            self.save()
            if self._bar is not None and self._bar.live:
                self._bar.stream.write("\n")
            where = _where(self.stage, self.epoch, self.step)
            raise Stopped(f"interrupted: {where} saved to {self.path}; continue with --resume")

    # ------------------------------------------------------------------ the checkpoint
    def save(self):
        import tinyattn as ta
        ck = {name: part.state_dict() for name, part in self.parts.items()}
        ck["stage"] = self.stage
        ck["counters"] = {"epoch": self.epoch, "position": self.position, "step": self.step}
        ck["order"] = self._order
        ck["config"] = self.config
        ck["rng"] = ta.get_rng_state()
        ck["generator"] = list(self.generator.get_state()) if self.generator else None
        ck["random"] = None if self.py_random is None else [
            _plain(r.getstate()) for r in _several(self.py_random)]
        bar = self._bar
        ck["progress"] = None if bar is None else {
            "done": bar.done, "weights": bar.weights, "sums": dict(bar.sums),
            "elapsed": time.perf_counter() - bar.start}
        for key, state in (("state", self.state), ("stage_state", self._stage_state)):
            ck[key] = {k: v.state_dict() if hasattr(v, "state_dict") else v
                       for k, v in state.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ta.save(ck, self.path)      # atomic: a temporary file, then renamed over the old one
        return self.path

    def _read(self, path):
        """The checkpoint at `path`, if a run with these settings saved it."""
        import tinyattn as ta
        if not path.exists():
            raise SystemExit(f"--resume: no checkpoint at {path} (Ctrl-C during training "
                             f"saves one there)")
        ck = ta.load(path)
        if ck["config"] != self.config:
            differ = sorted(k for k in set(ck["config"]) | set(self.config)
                            if ck["config"].get(k) != self.config.get(k))
            raise SystemExit(f"--resume: {path} was saved by a run with other settings "
                             f"({', '.join(differ)}); give the same flags")
        c = ck["counters"]
        print(f"resuming from {path}: {_where(ck['stage'], c['epoch'], c['step'])}", flush=True)
        return ck

    def _restore(self, ck):
        import tinyattn as ta
        for name, part in self.parts.items():
            part.load_state_dict(ck[name])
        c = ck["counters"]
        self.epoch, self.position, self.step = c["epoch"], c["position"], c["step"]
        self._order = ck["order"]
        ta.set_rng_state(ck["rng"])
        if self.generator is not None:
            self.generator.set_state(ck["generator"])
        if self.py_random is not None:
            for r, saved in zip(_several(self.py_random), ck["random"]):
                r.setstate(_tuples(saved))
        self._bar_saved = ck["progress"]
        for key, state in (("state", self.state), ("stage_state", self._stage_state)):
            for k, v in state.items():
                saved = ck[key][k]
                if hasattr(v, "load_state_dict"):
                    v.load_state_dict(saved)
                elif isinstance(v, dict):
                    v.clear()
                    v.update(saved)
                else:
                    v[:] = saved


def _where(stage, epoch, step):
    return f"{'' if stage is None else f'{stage}, '}epoch {epoch}, step {step}"


def _several(py_random):
    return py_random if isinstance(py_random, (tuple, list)) else (py_random,)


def _plain(value):
    """random.Random's state (nested tuples) as lists, which a checkpoint's JSON keeps."""
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def run(main):
    """`common.run(main)` at the end of a demo: Ctrl-C ends it with one line, not a traceback."""
    try:
        main()
    except Stopped as e:
        print(e, file=sys.stderr, flush=True)
        sys.exit(130)
    except KeyboardInterrupt:
        print("\ninterrupted (outside a training loop: nothing to resume)", file=sys.stderr,
              flush=True)
        sys.exit(130)


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
