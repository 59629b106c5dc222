"""A tiny shared thread pool for numba kernels.

Why threads at all: numba's ``parallel=True``/``prange`` refuses ``array.array`` arguments, but a kernel
compiled with ``nogil=True`` releases the GIL while it runs, so two Python threads can each run a
kernel on their own part of the output at the same time. This module owns one small
``ThreadPoolExecutor`` for the whole library and a helper, :func:`parallel_for`, that splits
``range(n)`` into contiguous blocks and runs ``fn(start, stop)`` on them.

What it costs: handing a block to a pool thread and waiting for it takes about 20 us on the
2-core machine we measured on, so only work that takes well over that (roughly >= 100 us on
one core) should be split. Callers decide by passing ``min_chunk`` (the smallest block worth
sending to another thread) and by not calling :func:`parallel_for` for small work at all.

Number of threads: ``os.cpu_count()`` capped at ``MAX_THREADS``; the environment variable
``TINYATTN_NUM_THREADS`` overrides it (``1`` turns threading off). :func:`set_num_threads` changes
it at run time (the pool is rebuilt lazily).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["num_threads", "set_num_threads", "parallel_for"]

# More threads than cores only adds switching; more than 8 would need a smarter split than
# "one contiguous block per thread" to stay balanced, and this library targets small machines.
MAX_THREADS = 8

_lock = threading.Lock()
_pool = None            # created on first use, see _get_pool
_num_threads = None     # resolved on first use, see num_threads


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


def set_num_threads(n):
    """Use ``n`` threads from now on (``n >= 1``); ``None`` goes back to the default."""
    global _num_threads, _pool
    with _lock:
        old_pool = _pool
        _pool = None
        _num_threads = None if n is None else max(1, int(n))
    if old_pool is not None:
        old_pool.shutdown(wait=True)


def _get_pool():
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                # The calling thread always runs one block itself, so the pool needs one thread
                # fewer than we use in total.
                _pool = ThreadPoolExecutor(max_workers=max(1, num_threads() - 1),
                                           thread_name_prefix="tinyattn")
    return _pool


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
    without touching the pool. The calling thread runs the first block itself while the pool
    runs the others: one hand-off fewer, and the caller's core is not left idle.
    """
    if n <= 0:
        return
    parts = min(num_threads(), n // max(1, min_chunk))
    if parts <= 1:
        fn(0, n)
        return
    blocks = split(n, parts)
    pool = _get_pool()
    futures = [pool.submit(fn, start, stop) for start, stop in blocks[1:]]
    try:
        fn(*blocks[0])
    finally:
        # Wait for every block even if ours failed: the others are still writing the output.
        errors = []
        for f in futures:
            exc = f.exception()
            if exc is not None:
                errors.append(exc)
    if errors:
        raise errors[0]
