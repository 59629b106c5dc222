"""A tiny shared thread pool for numba kernels.

Why threads at all: numba's ``parallel=True``/``prange`` refuses ``array.array`` arguments, but a kernel
compiled with ``nogil=True`` releases the GIL while it runs, so two Python threads can each run a
kernel on their own part of the output at the same time. This module owns a few worker threads
for the whole library and a helper, :func:`parallel_for`, that splits ``range(n)`` into contiguous
blocks and runs ``fn(start, stop)`` on them.

What it costs: handing a block to a worker and waiting for it. Each worker waits on a lock of its
own ("go") and answers on another ("done"): one wake-up each way, ~15 us for the round trip on the
2-core VM we measured on (a ``ThreadPoolExecutor``, with its queue and futures, took ~26 us). So
only work that takes well over that (roughly >= 50-100 us on one core) should be split. Callers
decide by passing ``min_chunk`` (the smallest block worth sending to another thread) and by not
calling :func:`parallel_for` for small work at all.

One caller at a time: when the workers are busy (another thread's parallel_for, or a
parallel_for inside a block), the caller runs all its blocks itself, so nothing waits on itself.

Number of threads: ``os.cpu_count()`` capped at ``MAX_THREADS``; the environment variable
``TINYATTN_NUM_THREADS`` overrides it (``1`` turns threading off). :func:`set_num_threads` changes
it at run time (the workers are rebuilt lazily).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import os
import threading

__all__ = ["num_threads", "set_num_threads", "parallel_for"]

# More threads than cores only adds switching; more than 8 would need a smarter split than
# "one contiguous block per thread" to stay balanced, and this library targets small machines.
MAX_THREADS = 8

_lock = threading.Lock()    # guards creating / replacing the workers
_busy = threading.Lock()    # held by the parallel_for that is using the workers
_workers = None             # created on first use, see _get_workers
_num_threads = None         # resolved on first use, see num_threads


def _default_num_threads():
    env = os.environ.get("TINYATTN_NUM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"TINYATTN_NUM_THREADS must be a positive integer, got {env!r}") from None
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def num_threads():
    """How many threads (the caller included) :func:`parallel_for` uses."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_num_threads()
    return _num_threads


class _Worker:
    """One thread that runs one block at a time: start() hands it a block, wait() collects it."""

    def __init__(self, index):
        self._go = threading.Lock()
        self._done = threading.Lock()
        self._go.acquire()      # locked = nothing to do yet
        self._done.acquire()    # locked = the block is not finished yet
        self._job = None
        self._error = None
        self._thread = threading.Thread(target=self._loop, name=f"tinyattn-{index}", daemon=True)
        self._thread.start()

    def _loop(self):
        while True:
            self._go.acquire()
            job = self._job
            if job is None:     # stop()
                return
            fn, start, stop = job
            try:
                fn(start, stop)
            except BaseException as exc:  # re-raised in the caller by parallel_for
                self._error = exc
            self._done.release()

    def start(self, fn, start, stop):
        self._job = (fn, start, stop)
        self._error = None
        self._go.release()

    def wait(self):
        """Block until the block handed over by start() is finished; returns its exception."""
        self._done.acquire()
        self._job = None
        return self._error

    def stop(self):
        self._job = None
        self._go.release()
        self._thread.join()


def set_num_threads(n):
    """Use ``n`` threads from now on (``n >= 1``); ``None`` goes back to the default."""
    global _num_threads, _workers
    with _lock, _busy:
        old = _workers
        _workers = None
        _num_threads = None if n is None else max(1, int(n))
    for w in old or ():
        w.stop()


def _get_workers():
    global _workers
    if _workers is None:
        with _lock:
            if _workers is None:
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


def parallel_for(fn, n, min_chunk=1):
    """Run ``fn(start, stop)`` over contiguous blocks that together cover ``range(n)``.

    ``fn`` must be safe to run on different blocks at the same time (typically a ``nogil`` numba
    kernel writing disjoint parts of an output) and should return nothing; an exception in any
    block is re-raised here after all blocks finished. Blocks are at least ``min_chunk`` long, so
    with ``n < 2 * min_chunk`` (or a single thread) everything runs inline in the calling thread,
    without touching the workers. The calling thread runs the first block itself while the
    workers run the others: one hand-off fewer, and the caller's core is not left idle.
    """
    if n <= 0:
        return
    parts = min(num_threads(), n // max(1, min_chunk))
    if parts <= 1 or not _busy.acquire(blocking=False):  # one block, or the workers are busy
        fn(0, n)
        return
    try:
        blocks = split(n, parts)
        workers = _get_workers()[:len(blocks) - 1]
        for w, (start, stop) in zip(workers, blocks[1:]):
            w.start(fn, start, stop)
        try:
            fn(*blocks[0])
        finally:
            # Wait for every block even if ours failed: the others are still writing the output.
            errors = [e for e in (w.wait() for w in workers) if e is not None]
    finally:
        _busy.release()
    if errors:
        raise errors[0]
