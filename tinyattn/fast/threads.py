"""A tiny shared thread pool for numba kernels, with a hand-off of a few microseconds.

Why threads at all: numba's ``parallel=True``/``prange`` refuses ``array.array`` arguments, but a kernel
compiled with ``nogil=True`` releases the GIL while it runs, so two Python threads can each run a
kernel on their own part of the output at the same time. This module owns a few worker threads
for the whole fast backend and a helper, :func:`parallel_for`, that splits ``range(n)`` into
contiguous blocks and runs ``fn(start, stop)`` on them (and :func:`run_two`, two different
kernels at once). It knows nothing of the kernels it runs.

The hand-off. Waking a *sleeping* thread (a lock, an event) costs tens of microseconds: the futex
wake-up, and on a virtual machine the idle vCPU's own wake-up. That is more than most kernels of a
training step take, so splitting them would not pay. PyTorch's OpenMP workers *spin* for a while
after each job instead, and take the next one at once. So do ours, without holding the GIL and
without burning a core while idle:

- Each worker has two counters in a shared int64 buffer (`_flags`, one cache line each): `go`
  (the caller's job number) and `done` (the last job it finished).
- A worker that finished a job publishes `done` and then spins on `go` inside a ``nogil`` numba
  loop (`jobs.serve`: an atomic load and the CPU's `pause` hint per turn) for at most
  ``SPIN_US`` microseconds (``TINYATTN_SPIN_US``); after that it sleeps on an Event, and the
  caller wakes it the slow way. An idle library therefore stops spinning ``SPIN_US`` after its
  last kernel. Why that long: the small ops between two *parallel* kernels of a training step
  run on one thread, and the gap they leave must not put the worker to sleep
  (benchmarks/RESULTS.md, fast/threads.py: SPIN_US).
- The caller waits for `done` the same way (`_spin_above`), then sleeps if the block is long.
- The GIL: a thread that asks for the GIL while the other holds it goes to sleep (the costly
  wake-up again). A worker that sees `go` therefore spins ``HANDOFF_US`` more, time for the
  caller to reach its own kernel and release the GIL; and it publishes `done` from inside the
  nogil loop, so the caller that sees it finds the GIL free.
- Better still, no GIL at all: a kernel whose file registered a runner with jobs.py (the
  matmul's blocks) is handed over as numbers in the worker's words of `_jobs`, and the spin loop
  runs it itself (``parallel_for(..., job=...)``; jobs.py explains how). A worker that was
  asleep, or a job without a runner, takes the Python call.

The round trip then costs a few microseconds instead of tens (benchmarks/threads.py; the
numbers: benchmarks/RESULTS.md, fast/threads.py: the hand-off), so a kernel of a few tens of
microseconds already runs faster on two cores.

Interpreted (``NUMBA_DISABLE_JIT=1``) nothing spins: the workers sleep between jobs.

One caller at a time: when the workers are busy (another thread's parallel_for, or a
parallel_for inside a block), the caller runs all its blocks itself, so nothing waits on itself.

Number of threads: what :func:`set_num_threads` was last given (tinyattn/backend.py gives it the
count of ``tinyattn.set_num_threads``, or its default, when the fast backend is bound); one, the
calling thread alone, until then. At most ``MAX_THREADS`` run (the workers are rebuilt lazily).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import os
import threading
import time
from array import array

import numba
from numba import types

from . import jobs
from .jit import cached, kernel
from .jobs import cpu_relax, load_acquire, store_release

__all__ = ["num_threads", "set_num_threads", "parallel_for", "run_two", "busy", "split"]

# More threads than cores only adds switching; more than 8 would need a smarter split than
# "one contiguous block per thread" to stay balanced, and this library targets small machines.
MAX_THREADS = 8


def _env_us(name, default):
    env = os.environ.get(name, "").strip()
    if not env:
        return default
    try:
        value = float(env)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{name} must be a number of microseconds >= 0, got {env!r}")
    return value


SPIN_US = _env_us("TINYATTN_SPIN_US", 5000.0)  # how long an idle worker spins before it sleeps
HANDOFF_US = 2.0                               # see the module docstring: the GIL hand-off
_SPINNING = not numba.config.DISABLE_JIT and SPIN_US > 0
# Hand a job with a runner (parallel_for's `job`) over as numbers: only to spinning workers (a
# sleeping one takes the Python call). benchmarks/threads.py turns it off to time the difference.
_jobs_as_numbers = _SPINNING

_lock = threading.Lock()    # guards creating / replacing the workers
_busy = threading.Lock()    # held by the parallel_for that is using the workers
_workers = None             # created on first use, see _get_workers
_num_threads = 1            # set_num_threads' count (the calling thread included)
_LINE = 8                   # int64s per 64-byte cache line: each counter on a line of its own
_flags = array("q", bytes(8 * _LINE * 2 * MAX_THREADS))   # worker i: go at 2i lines, done at 2i+1
# (and beside done: 1 while the caller sleeps waiting for it)
JOB_WORDS = 32              # int64s per worker in _jobs: a compiled job's words (jobs.py)
_jobs = array("q", bytes(8 * JOB_WORDS * MAX_THREADS))
_spins = 0                  # spin turns in SPIN_US and HANDOFF_US, measured on first use
_handoff = 0


# --------------------------------------------------------------------------- spinning, compiled

if _SPINNING:
    @kernel
    def _spin_above(flags, i, seen, turns):
        """Wait (without the GIL) until flags[i] > seen, for at most `turns` turns: True if it did."""
        for _ in range(turns):
            if load_acquire(flags, i) > seen:
                return True
            cpu_relax()
        return False

    @cached()
    def _publish(flags, i, value):
        """flags[i] = value as a release store: a worker that sees it sees the job's words written
        before it. (Holding the GIL: releasing it for this would cost more than the store.)"""
        store_release(flags, i, value)
else:
    def _spin_above(flags, i, seen, turns):
        return flags[i] > seen

    def _publish(flags, i, value):
        flags[i] = value


def _serve_python(flags, done_i, done, go_i, turns, handoff, jobs, at):
    """jobs.serve where nothing spins: publish `done`, return the next job's number or -1."""
    flags[done_i] = done
    go = flags[go_i]
    return go if go > done else -1


# The spin loops' machine code, called without numba's dispatch (jit.by_typecode explains why: it
# is paid twice per hand-off). Set by _calibrate.
_spin_entry = _spin_above
_serve_entry = _serve_python
_publish_entry = _publish


def _calibrate():
    """Spin turns per SPIN_US and per HANDOFF_US on this CPU (a `pause` takes ~10-150 cycles)."""
    global _spins, _handoff, _spin_entry, _serve_entry, _publish_entry
    if not _SPINNING:
        return
    flags, i64 = numba.typeof(_flags), types.int64
    _spin_entry = _spin_above.compile((flags, i64, i64, i64))   # compiles, or loads the cache
    _serve_entry = jobs.serve.compile((flags,) + (i64,) * 5 + (flags, i64))
    _publish_entry = _publish.compile((flags, i64, i64))
    probe = len(_flags) - 1             # a counter nobody writes: the loop runs all its turns
    turns = 20000
    t0 = time.perf_counter()
    _spin_entry(_flags, probe, 0, turns)
    per_us = turns / max((time.perf_counter() - t0) * 1e6, 1e-3)
    _spins = max(1, int(per_us * SPIN_US))
    _handoff = int(per_us * HANDOFF_US)


def num_threads():
    """How many threads (the caller included) :func:`parallel_for` uses."""
    return _num_threads


class _Worker:
    """One thread that runs one block at a time: start() hands it a block, wait() collects it."""

    def __init__(self, index):
        self._index = index
        self._go_i = 2 * index * _LINE
        self._done_i = (2 * index + 1) * _LINE
        self._at = index * JOB_WORDS       # this worker's words in _jobs
        _flags[self._go_i] = _flags[self._done_i] = _flags[self._done_i + 1] = 0
        self._seq = 0                       # the number of the last job handed over
        self._job = None
        self._error = None
        self._sleeping = False              # the worker sleeps on _wake
        self._wake = threading.Event()
        self._caller_sleeping = False       # the caller sleeps on _finished
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"tinyattn-{index}", daemon=True)
        self._thread.start()

    def _loop(self):
        seen = 0
        while True:
            if self._caller_sleeping:
                self._finished.set()
            # Spins; runs compiled jobs itself (jobs.py); returns for a Python job.
            got = _serve_entry(_flags, self._done_i, seen, self._go_i, _spins, _handoff, _jobs,
                               self._at)
            if got < 0:
                seen = _flags[self._done_i]     # the last job done (compiled ones included)
                if got == -2:                   # the caller sleeps: wake it (loop's first line)
                    continue
                # Spun long enough: sleep. Flags and events are read and written holding the GIL,
                # so "sleeping = True, then check go" here and "go = n, then check sleeping" in
                # start() cannot both miss each other.
                self._wake.clear()
                self._sleeping = True
                if _flags[self._go_i] <= seen:
                    self._wake.wait()
                self._sleeping = False
                if _flags[self._go_i] <= seen:
                    continue
            # A Python job, or any job that found this worker asleep: the Python call.
            seen = _flags[self._go_i]
            job = self._job
            if job is None:     # stop()
                _flags[self._done_i] = seen
                return
            fn, start, stop = job
            job = None
            try:
                fn(start, stop)
            except BaseException as exc:  # re-raised in the caller by parallel_for
                self._error = exc
            # Hold nothing of the job while idle: its closure refers to the op's buffers, which
            # are handed to later ops once nothing refers to them (recycle.py).
            fn = None

    def _signal(self, job, runner=0):
        self._job = job
        self._error = None
        self._seq += 1
        _jobs[self._at] = runner
        if runner:  # the words must reach the worker before the number does
            _publish_entry(_flags, self._go_i, self._seq)
        else:       # (a Python job is read holding the GIL, which orders it)
            _flags[self._go_i] = self._seq
        if self._sleeping:
            self._wake.set()

    def start(self, fn, start, stop, job=None):
        """Hand over fn(start, stop); with ``job = (kind, post, args)``, `kind` a runner's
        (jobs.register), as numbers: post(_jobs, at, worker, start, stop, *args) writes the
        block's words and a spinning worker runs the runner on them without the GIL (a sleeping
        one calls fn)."""
        runner = 0
        if job is not None and _jobs_as_numbers:
            runner = jobs.entry(job[0])
            job[1](_jobs, self._at, self._index, start, stop, *job[2])
        self._signal((fn, start, stop), runner)

    def wait(self):
        """Block until the block handed over by start() is finished; returns its exception."""
        seq = self._seq
        while _flags[self._done_i] < seq:
            if _spin_entry(_flags, self._done_i, seq - 1, _spins):
                break
            self._finished.clear()
            self._caller_sleeping = True
            _flags[self._done_i + 1] = 1        # for a worker in a compiled job (jobs.serve)
            if _flags[self._done_i] < seq:
                # The timeout covers the one race left: the worker checked _caller_sleeping just
                # before it was set, and publishes `done` without setting the event.
                self._finished.wait(0.001)
            self._caller_sleeping = False
            _flags[self._done_i + 1] = 0
        self._job = None
        return self._error

    def stop(self):
        self._signal(None)
        self._thread.join()


def set_num_threads(n):
    """Use ``n`` threads from now on (``n >= 1``; at most MAX_THREADS run)."""
    global _num_threads, _workers
    n = max(1, min(int(n), MAX_THREADS))
    with _lock, _busy:
        old = _workers
        _workers = None
        _num_threads = n
        # stopped before new workers can take over their counters in _flags
        for w in old or ():
            w.stop()


def _get_workers():
    global _workers
    if _workers is None:
        with _lock:
            if _workers is None:
                if _spins == 0:
                    _calibrate()
                # The calling thread always runs one block itself: one worker fewer than threads.
                _workers = [_Worker(i) for i in range(max(1, num_threads() - 1))]
    return _workers


def _forget_workers_after_fork():
    # A forked child has only the thread that forked: the workers' threads are gone.
    global _workers, _lock, _busy
    _workers = None
    _lock = threading.Lock()
    _busy = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers_after_fork)


def split(n, parts):
    """Split ``range(n)`` into at most ``parts`` contiguous ``(start, stop)`` blocks whose sizes differ
    by at most one, larger blocks first. Empty blocks are left out."""
    if n <= 0:
        return []
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    blocks = []
    start = 0
    for i in range(parts):
        stop = start + size + (1 if i < extra else 0)
        blocks.append((start, stop))
        start = stop
    return blocks


def busy():
    """Whether the workers are taken (a parallel_for or run_two is running): a parallel_for
    started now would run all its blocks on the calling thread."""
    return _busy.locked()


def _beside(w, there, start, stop, job, here, here_start, here_stop):
    """there(start, stop) on worker w (as `job` if given, see _Worker.start) while this thread
    runs here(here_start, here_stop); returns the worker's exception or None."""
    w.start(there, start, stop, job)
    try:
        here(here_start, here_stop)
    finally:
        error = w.wait()                # (even if ours failed: the worker still writes)
    return error


def run_two(first, second, job=None):
    """first(0, 1) on this thread while a worker runs second(0, 1), or the compiled job that
    ``job = (kind, post, args)`` describes (see _Worker.start): two independent kernels with one
    hand-off (the gradients of a layer's input and of its weights, matmul.mm_pair). With
    one thread, or the workers busy, both run here, first then second. An exception in either
    is raised after both finished."""
    if num_threads() < 2 or not _busy.acquire(blocking=False):
        first(0, 1)
        second(0, 1)
        return
    try:
        error = _beside(_get_workers()[0], second, 0, 1, job, first, 0, 1)
    finally:
        _busy.release()
    if error is not None:
        raise error


def parallel_for(fn, n, min_chunk=1, job=None):
    """Run ``fn(start, stop)`` over contiguous blocks that together cover ``range(n)``.

    ``fn`` must be safe to run on different blocks at the same time (typically a ``nogil`` numba
    kernel writing disjoint parts of an output) and should return nothing; an exception in any
    block is re-raised here after all blocks finished. Blocks are at least ``min_chunk`` long, so
    with ``n < 2 * min_chunk`` (or a single thread) everything runs inline in the calling thread,
    without touching the workers. The calling thread runs the first block itself while the
    workers run the others: one hand-off fewer, and the caller's core is not left idle.

    ``job = (kind, post, args)`` describes the same blocks to a spinning worker as numbers, for
    the runner registered as `kind` with jobs.py: see ``_Worker.start``.
    """
    if n <= 0:
        return
    parts = min(num_threads(), n // max(1, min_chunk))
    if parts <= 1 or not _busy.acquire(blocking=False):  # one block, or the workers are busy
        fn(0, n)
        return
    try:
        if parts == 2:
            # Two cores, the common case, without the block list: split(n, 2) written out, a
            # tenth of what an empty split costs (benchmarks/RESULTS.md, fast/threads.py: the
            # hand-off).
            half = n - n // 2
            error = _beside(_get_workers()[0], fn, half, n, job, fn, 0, half)
            errors = () if error is None else (error,)
        else:
            blocks = split(n, parts)
            workers = _get_workers()[:len(blocks) - 1]
            for w, (start, stop) in zip(workers, blocks[1:]):
                w.start(fn, start, stop, job)
            try:
                fn(*blocks[0])
            finally:
                # Wait for every block even if ours failed: the others are still writing the output.
                errors = [e for e in (w.wait() for w in workers) if e is not None]
    finally:
        _busy.release()
    if errors:
        raise errors[0]
