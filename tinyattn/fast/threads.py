"""A tiny shared thread pool for numba kernels: a hand-off of a few microseconds, and never a wait
for a thread that is not running.

Why threads at all: numba's ``parallel=True``/``prange`` refuses ``array.array`` arguments, but a kernel
compiled with ``nogil=True`` releases the GIL while it runs, so two Python threads can each run a
kernel on their own part of the output at the same time. This module owns a few worker threads
for the whole fast backend and a helper, :func:`parallel_for`, that splits ``range(n)`` into
contiguous blocks and runs ``fn(start, stop)`` on them (and :func:`run_two`, two different
kernels at once). It knows nothing of the kernels it runs.

Blocks that either side may take. The caller *offers* block i + 1 to worker i and runs block 0
itself. An offered block has a number, and whoever first moves the worker's CLAIM word from
number - 1 to number (one atomic compare-and-swap, `jobs.compare_and_swap`) runs it. When the
caller has finished its own block it tries to take back each block it offered: a worker that
has not started (asleep, still waking, or waiting for a core on a busy machine) loses its
block and the caller runs it at once. The caller waits only for blocks a worker took, which
are running. So a worker the scheduler does not run costs one failed offer, not a time slice.

The hand-off. Waking a *sleeping* thread (a lock, an event) costs tens of microseconds: the futex
wake-up, and on a virtual machine the idle vCPU's own wake-up. That is more than most kernels of a
training step take. PyTorch's OpenMP workers *spin* for a while after each job instead, and take
the next one at once. So do ours, without holding the GIL and without burning a core while idle:

- Each worker has a few words in a shared int64 buffer (`_flags`; their names and places:
  jobs.py, GO to RAN): the caller's last job number (GO), the last one taken (CLAIM), the last
  one the worker finished (DONE).
- A worker between jobs spins on GO inside a ``nogil`` numba loop (`jobs.serve`: an atomic load
  and the CPU's `pause` hint per turn) for at most ``SPIN_US`` microseconds
  (``TINYATTN_SPIN_US``); then it sleeps on an Event, and the caller wakes it the slow way. An
  idle library stops spinning ``SPIN_US`` after its last kernel: the small ops between two
  *parallel* kernels of a training step run on one thread, and that gap must not put the worker
  to sleep (benchmarks/RESULTS.md, fast/threads.py: SPIN_US).
- The caller waits for DONE the same way (`_spin_above`), then sleeps if the block is long.
- The GIL: a worker that claimed a Python job spins ``HANDOFF_US`` more, time for the caller to
  reach its own kernel and release the GIL. Better, no GIL at all: a kernel whose file
  registered a runner with jobs.py (the matmul's blocks) is handed over as numbers in the
  worker's words of `_jobs`, and the spin loop runs it itself (``parallel_for(..., job=...)``).

Busy machines. The caller keeps an account of the time the workers saved and lost lately: a
block that ends much later than the caller's own (the scheduler took its worker's core away in
the middle) loses more than many blocks save, and spinning workers that keep losing their
blocks to the caller (they have no core) save nothing. When the account runs dry, a second
thread is making things worse: the caller stops offering for a while (``BACKOFF_S``,
doubled each time it happens again, at most ``BACKOFF_MAX_S``) and runs the same blocks itself,
in order (so the results are the same), then offers again (`_judge`).

Ctrl-C. A KeyboardInterrupt reaches the calling thread at a function's start, after a call or at
a backward jump. Wherever it lands, parallel_for takes back every block no worker took, waits
for those running (they write into the op's buffers, which the next op may be handed), frees the
pool (`_in_use`, not a lock) and re-raises; a block left pending is settled before its worker
gets the next. tests/fast/test_interrupts.py interrupts every such point in turn.

Interpreted (``NUMBA_DISABLE_JIT=1``) nothing spins: the workers sleep between jobs.

One caller at a time: when the workers are taken (another thread's parallel_for, or a
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
from .jobs import (CLAIM, DONE, GO, RAN, SEEN, SLEEPING, SPINNING, compare_and_swap, load_acquire,
                   store_release)

__all__ = ["num_threads", "set_num_threads", "parallel_for", "run_two", "busy", "split", "stats"]

# More threads than cores only adds switching; more than 8 would need a smarter split than
# "one contiguous block per thread" to stay balanced, and this library targets small machines.
MAX_THREADS = 8


def _env_us(name, default):
    env = os.environ.get(name, "").strip()
    try:
        value = float(env) if env else default
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{name} must be a number of microseconds >= 0, got {env!r}")
    return value


SPIN_US = _env_us("TINYATTN_SPIN_US", 5000.0)  # how long an idle worker spins before it sleeps
HANDOFF_US = 2.0                               # see the module docstring: the GIL hand-off
_SPINNING = not numba.config.DISABLE_JIT and SPIN_US > 0
_jobs_as_numbers = _SPINNING   # parallel_for's `job` as numbers (off: benchmarks/threads.py)

# Busy machines (module docstring, _judge): how long the caller stops offering blocks, at first
# and at most; the slack a worker's block may end after the caller's own before it counts as
# late (a hand-off and a wake-up: only for threads.stats).
BACKOFF_S = 0.05
BACKOFF_MAX_S = 2.0
LATE_S = 50e-6
# The most saved time _judge remembers: more than a quiet machine's rare hiccup (a worker stalled
# for a few ms, a few missed claims), little beside the seconds a busy machine's back-off lasts.
ACCOUNT_S = 0.01
MISS_S = 300e-6            # the least a block taken back from a spinning worker costs it
# Offering this long without a back-off resets it to BACKOFF_S: a busy machine loses again within
# milliseconds of offering again, a quiet one only by chance, seconds later.
TRUSTED_S = 1.0
# Off, the caller never takes a block back or backs off: it waits for the workers (for tests).
_adaptive = True

_lock = threading.Lock()    # guards creating / replacing the workers
# A parallel_for (or set_num_threads) is using the workers. Tested and set with no call or backward
# jump between, cleared in a `finally`: CPython looks for signals and switches threads only at a
# function's start, after a call and at a backward jump, so neither can come between the test and
# the set (a lock's acquire() is a call: an interrupt right after it leaves the lock taken).
_in_use = False
_workers = None             # created on first use, see _get_workers
_num_threads = 1            # set_num_threads' count (the calling thread included)
_flags = array("q", bytes(8 * jobs.WORDS * MAX_THREADS))   # worker i's words from i * WORDS
JOB_WORDS = 32              # int64s per worker in _jobs: a compiled job's words (jobs.py)
_jobs = array("q", bytes(8 * JOB_WORDS * MAX_THREADS))
_spins = 0                  # spin turns in SPIN_US and HANDOFF_US, measured on first use
_handoff = 0
_account = ACCOUNT_S        # seconds the workers saved lately, less what they lost (_judge)
_backoff = BACKOFF_S        # the next pause in offering
_solo_until = 0.0           # time.perf_counter() until which the caller offers nothing
_solo_ended = 0.0           # ... and when the caller offered again after the last one
_stats = {"offered": 0, "taken_back": 0, "late": 0, "backoffs": 0}


# --------------------------------------------------------------------------- spinning, compiled

_cas_lock = threading.Lock()    # the claim where nothing is compiled: a lock makes it one step

if _SPINNING:
    @kernel
    def _spin_above(flags, i, seen, turns):
        """Wait (without the GIL) until flags[i] > seen, for at most `turns` turns: True if it did."""
        for _ in range(turns):
            if load_acquire(flags, i) > seen:
                return True
            jobs.cpu_relax()
        return False

    @cached()
    def _publish(flags, i, value):
        """flags[i] = value as a release store: a worker that sees it sees the job's words written
        before it. (Holding the GIL: releasing it for this would cost more than the store.)"""
        store_release(flags, i, value)

    @cached()
    def _take(flags, w, seq):
        """The caller takes job `seq` back from the worker whose words start at `w`: True if no
        worker had claimed it (then it is marked done: nobody waits for it)."""
        if compare_and_swap(flags, w + CLAIM, seq - 1, seq):
            store_release(flags, w + DONE, seq)
            return True
        return False
else:
    def _spin_above(flags, i, seen, turns):
        return flags[i] > seen

    def _publish(flags, i, value):
        flags[i] = value

    def _take(flags, w, seq):
        with _cas_lock:
            if flags[w + CLAIM] != seq - 1:
                return False
            flags[w + CLAIM] = flags[w + DONE] = seq
            return True


def _serve_python(flags, w, done, turns, handoff, jobs_, at):
    """jobs.serve where nothing spins: publish `done`; claim a new job (a Python call) and return
    its number, or return -1 (nothing new, or the caller took it back)."""
    if done > 0:
        flags[w + DONE] = done
        if flags[w + SLEEPING]:
            return -2
    go = flags[w + GO]
    if go > flags[w + SEEN]:
        flags[w + SEEN] = go
        with _cas_lock:
            if flags[w + CLAIM] == go - 1:
                flags[w + CLAIM] = go
                flags[w + RAN] += 1
                return go
    return -1


# The loops' machine code, called without numba's dispatch (jit.by_typecode explains why: it is
# paid on every hand-off). Set by _calibrate.
_spin_entry = _spin_above
_serve_entry = _serve_python
_publish_entry = _publish
_take_entry = _take


def _calibrate():
    """Spin turns per SPIN_US and per HANDOFF_US on this CPU (a `pause` takes ~10-150 cycles)."""
    global _spins, _handoff, _spin_entry, _serve_entry, _publish_entry, _take_entry
    if not _SPINNING:
        return
    flags, i64 = numba.typeof(_flags), types.int64
    _spin_entry = _spin_above.compile((flags, i64, i64, i64))   # compiles, or loads the cache
    _serve_entry = jobs.serve.compile((flags,) + (i64,) * 4 + (flags, i64))
    _publish_entry = _publish.compile((flags, i64, i64))
    _take_entry = _take.compile((flags, i64, i64))
    probe = len(_flags) - 1             # a word nobody writes: the loop runs all its turns
    turns = 20000
    per_us = 0.0
    for _ in range(3):                  # the fastest of three: a busy machine only slows one
        t0 = time.perf_counter()
        _spin_entry(_flags, probe, 0, turns)
        per_us = max(per_us, turns / max((time.perf_counter() - t0) * 1e6, 1e-3))
    _spins = max(1, int(per_us * SPIN_US))
    _handoff = int(per_us * HANDOFF_US)


def num_threads():
    """How many threads (the caller included) :func:`parallel_for` uses."""
    return _num_threads


class _Worker:
    """One thread that runs the blocks offered to it, one at a time, unless the caller took them
    back: offer() hands it a block, take_back() or wait() settles it."""

    def __init__(self, index):
        self._index = index
        self._w = index * jobs.WORDS       # this worker's words in _flags
        self._at = index * JOB_WORDS       # and in _jobs
        for k in range(jobs.WORDS):
            _flags[self._w + k] = 0
        self._seq = 0                       # the number of the last job offered
        self._job = None
        self._error = None
        self._sleeping = False              # the worker sleeps on _wake
        self._caller_cpu = jobs.getcpu() if jobs.getcpu else -1   # where the caller was
        self._wake = threading.Event()
        self._finished = threading.Event()  # the caller sleeps on it (flag SLEEPING)
        self._thread = threading.Thread(target=self._loop, name=f"tinyattn-{index}", daemon=True)
        self._thread.start()

    def _loop(self):
        w = self._w
        if self._caller_cpu >= 0:
            jobs.move_off(self._caller_cpu)
        finished = 0            # the Python job just run, which serve publishes without the GIL
        while True:
            # Spins; claims jobs and runs the compiled ones itself (jobs.py); returns for a
            # claimed Python job.
            got = _serve_entry(_flags, w, finished, _spins, _handoff, _jobs, self._at)
            finished = 0
            if got == -2:               # the caller sleeps through a job: wake it
                self._finished.set()
                continue
            if got < 0:
                # Spun long enough: sleep. Flags and events are read and written holding the GIL,
                # so "sleeping = True, then check GO" here and "GO = n, then check sleeping" in
                # _signal cannot both miss each other.
                self._wake.clear()
                self._sleeping = True
                if _flags[w + GO] <= _flags[w + SEEN]:
                    self._wake.wait()
                    if self._caller_cpu >= 0:
                        jobs.move_off(self._caller_cpu)
                self._sleeping = False
                continue
            job = self._job
            if job is None:     # stop()
                _flags[w + DONE] = got
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
            finished = got

    def _signal(self, job, runner=0):
        self._job = job
        self._error = None
        _jobs[self._at] = runner
        self._seq += 1
        if runner:  # the words must reach the worker before the number does
            _publish_entry(_flags, self._w + GO, self._seq)
        else:       # (a Python job is read holding the GIL, which orders it)
            _flags[self._w + GO] = self._seq
        if self._sleeping:
            if jobs.getcpu:
                self._caller_cpu = jobs.getcpu()
            self._wake.set()

    def offer(self, fn, start, stop, job=None):
        """Offer fn(start, stop); with ``job = (kind, post, args)``, `kind` a runner's
        (jobs.register), as numbers: post(_jobs, at, worker, start, stop, *args) writes the
        block's words and the worker's spin loop runs the runner on them without the GIL."""
        if _flags[self._w + DONE] < self._seq:  # an interrupt left the last block pending
            self.settle()
        runner = 0
        if job is not None and _jobs_as_numbers:
            runner = jobs.entry(job[0])
            job[1](_jobs, self._at, self._index, start, stop, *job[2])
        self._signal((fn, start, stop), runner)

    def take_back(self):
        """True if the worker had not claimed the block offered last: it is the caller's now."""
        if _take_entry(_flags, self._w, self._seq):
            self._job = None
            return True
        return False

    def wait(self):
        """Block until the worker has finished the block it claimed; returns its exception."""
        seq = self._seq
        done_i = self._w + DONE
        while _flags[done_i] < seq:
            if _spin_entry(_flags, done_i, seq - 1, _spins):
                break
            self._finished.clear()
            _flags[self._w + SLEEPING] = 1
            try:
                if _flags[done_i] < seq:
                    # The timeout covers the one race left: the worker checked SLEEPING just
                    # before it was set, and publishes DONE without setting the event.
                    self._finished.wait(0.001)
            finally:
                _flags[self._w + SLEEPING] = 0
        self._job = None
        error, self._error = self._error, None
        return error

    def settle(self):
        """Leave nothing of the last block pending: take it back if no worker claimed it (it is
        not run), else wait for it. Any number of calls do what one does."""
        if not self.take_back():
            self.wait()

    def stop(self):
        self._signal(None)
        self._thread.join()


def set_num_threads(n):
    """Use ``n`` threads from now on (``n >= 1``; at most MAX_THREADS run)."""
    global _num_threads, _workers, _in_use
    n = max(1, min(int(n), MAX_THREADS))
    with _lock:
        while True:             # wait for a parallel_for of another thread to end (_in_use)
            if not _in_use:
                _in_use = True
                break
            time.sleep(1e-4)
        try:
            old = _workers
            _workers = None
            _num_threads = n
            # stopped before new workers can take over their words in _flags
            _quietly(w.stop for w in old or ())
        finally:
            _in_use = False


def _quietly(calls):
    """Make every call even if Ctrl-C comes meanwhile (each is retried; the interrupt is raised
    after the last): what the pool must finish before it lets go of its workers."""
    interrupted = None
    for call in calls:
        while True:
            try:
                call()
                break
            except KeyboardInterrupt as exc:
                interrupted = exc
    if interrupted is not None:
        raise interrupted


def _get_workers():
    global _workers
    if _workers is None:
        with _lock:
            if _workers is None:
                if _spins == 0:
                    _calibrate()
                # The calling thread always runs one block itself: one worker fewer than threads.
                made = []
                try:
                    for i in range(max(1, num_threads() - 1)):
                        made.append(_Worker(i))
                except BaseException:
                    _quietly(w.stop for w in made)
                    raise
                _workers = made
    return _workers


def _forget_workers_after_fork():
    # A forked child has only the thread that forked: the workers' threads are gone.
    global _workers, _lock, _in_use
    _workers = None
    _lock = threading.Lock()
    _in_use = False


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
    """Whether a parallel_for started now would run all its blocks on the calling thread: the
    workers are taken (a parallel_for or run_two is running), or the caller is not offering
    (a busy machine, see _judge)."""
    return _in_use or _solo()


def _solo():
    # Whether the caller has stopped offering (a busy machine, _judge); 0.0 once that is over.
    global _solo_until, _solo_ended
    if _solo_until:
        if _adaptive and time.perf_counter() < _solo_until:
            return True
        _solo_ended, _solo_until = time.perf_counter(), 0.0
    return False


def stats():
    """Counters of the hand-offs: blocks offered to workers, run by workers (since they were
    started), taken back by the caller, ended late; times the caller stopped offering."""
    ran = sum(_flags[w._w + RAN] for w in _workers or ())
    return dict(_stats, ran_by_workers=ran)


def _judge(missed, own, wait, waited):
    """After a hand-off: `missed` blocks taken back from workers that were spinning, the
    caller's block took `own` seconds, then it waited `wait` for the workers (if `waited`).

    The second thread is kept while it has lately saved more time than it lost, in seconds
    (`_account`, at most ACCOUNT_S). A block a worker ran saves what the caller would have spent
    on it, about `own`, less the wait: a worker that lost its core in the middle of its block
    (a busy machine) loses milliseconds. A block taken back from a spinning worker (one with a
    core claims it within a microsecond: this one was waiting for a core) saved nothing and
    costs the time it went unclaimed, `own`, at least MISS_S: more threads want to run than
    there are cores, and a spinning worker is one more, which takes its share of the cores from
    the caller too (a quiet machine's worker stalled a moment costs that moment). Below zero,
    the caller runs everything itself for _backoff seconds, doubled each time it happens again
    (up to BACKOFF_MAX_S), and BACKOFF_S again after offering for TRUSTED_S seconds without
    one; meanwhile the workers stop spinning and sleep. A block taken back from a worker that was
    not spinning (asleep, or on its way back to its spin loop, which needs the GIL) counts for
    nothing: that follows a pause, not a busy machine."""
    global _account, _backoff, _solo_until
    if waited and wait > 1.5 * own + LATE_S:
        _stats["late"] += 1
    _account = min(_account + (own - wait if waited else 0) - max(own, MISS_S) * missed, ACCOUNT_S)
    if _account < 0:
        now = time.perf_counter()
        if now - _solo_ended > TRUSTED_S:
            _backoff = BACKOFF_S
        _stats["backoffs"] += 1
        _solo_until = now + _backoff
        _backoff = min(2 * _backoff, BACKOFF_MAX_S)
        _account = 0.0


def _share(here, h0, h1, offers, job):
    """here(h0, h1) on this thread while each worker w of `offers` (w, fn, start, stop) may run
    fn(start, stop); the caller takes back and runs those no worker claimed. Called with
    _in_use set. Raises the first exception of a block after all blocks ended; an interrupt (any
    exception from the pool itself) settles every offer first."""
    error = None
    try:
        _stats["offered"] += len(offers)
        t0 = time.perf_counter()
        # Nothing between the last offer and here(): a worker given a Python block takes the GIL
        # once it has spun HANDOFF_US, and finds it free only if here() has dropped it by then.
        for w, fn, start, stop in offers:
            w.offer(fn, start, stop, job)
        try:
            here(h0, h1)
        except Exception as exc:
            error = exc
        t1 = time.perf_counter()
        taken, missed, waited = 0, 0, []
        for w, fn, start, stop in offers:
            # (a worker that already finished its block needs no compare-and-swap to say so)
            spinning = _flags[w._w + SPINNING]
            if _adaptive and _flags[w._w + DONE] < w._seq and w.take_back():
                taken += 1
                missed += spinning
                try:
                    fn(start, stop)
                except Exception as exc:
                    error = error or exc
            else:
                waited.append(w)
        for w in waited:
            failed = w.wait()
            error = error or failed
        if _adaptive:
            _stats["taken_back"] += taken
            if missed or waited:            # (see _judge)
                _judge(missed, t1 - t0, time.perf_counter() - t1, waited)
    except BaseException:
        _quietly(w.settle for w, *_ in offers)
        raise
    if error is not None:
        raise error


def _in_order(fn, n, parts):
    # The blocks a threaded run would have made, one after the other: the same results.
    for start, stop in split(n, parts):
        fn(start, stop)


def run_two(first, second, job=None):
    """first(0, 1) on this thread while a worker runs second(0, 1), or the compiled job that
    ``job = (kind, post, args)`` describes (see _Worker.offer): two independent kernels with one
    hand-off (the gradients of a layer's input and of its weights, matmul.mm_pair). With
    one thread, the workers taken, or a busy machine, both run here, first then second. An
    exception in either is raised after both finished."""
    global _in_use
    if _num_threads < 2 or _solo() or _in_use:
        first(0, 1)
        second(0, 1)
        return
    _in_use = True              # (see _in_use: nothing may come between the test and here)
    try:
        _share(first, 0, 1, [(_get_workers()[0], second, 0, 1)], job)
    finally:
        _in_use = False


def parallel_for(fn, n, min_chunk=1, job=None):
    """Run ``fn(start, stop)`` over contiguous blocks that together cover ``range(n)``.

    ``fn`` must be safe to run on different blocks at the same time (typically a ``nogil`` numba
    kernel writing disjoint parts of an output) and should return nothing; an exception in any
    block is re-raised here after all blocks finished. Blocks are at least ``min_chunk`` long, so
    with ``n < 2 * min_chunk`` (or a single thread) everything runs inline in the calling thread,
    in one block. Else the blocks are ``split(n, threads)``: the calling thread runs the first
    itself and offers the others to the workers, taking back those no worker started (module
    docstring); with the workers taken or a busy machine it runs them all, in order.

    ``job = (kind, post, args)`` describes the same blocks to a spinning worker as numbers, for
    the runner registered as `kind` with jobs.py: see ``_Worker.offer``.
    """
    global _in_use
    if n <= 0:
        return
    parts = min(_num_threads, n // max(1, min_chunk))
    if parts <= 1:
        fn(0, n)
        return
    if _solo() or _in_use:      # a busy machine, or another parallel_for has the workers
        _in_order(fn, n, parts)
        return
    _in_use = True              # (see _in_use: nothing may come between the test and here)
    try:
        workers = _get_workers()
        if parts == 2:
            # Two cores, the common case, without the block list: split(n, 2) written out, a
            # tenth of what an empty split costs (benchmarks/RESULTS.md, fast/threads.py: the
            # hand-off).
            half = n - n // 2
            _share(fn, 0, half, [(workers[0], fn, half, n)], job)
        else:
            blocks = split(n, parts)
            _share(fn, blocks[0][0], blocks[0][1],
                   [(w, fn, start, stop) for w, (start, stop) in zip(workers, blocks[1:])], job)
    finally:
        _in_use = False
