"""The worker's spin loop, which runs compiled blocks itself: a hand-off without the GIL.

threads.py hands a worker a block as a Python call, ``fn(start, stop)``. To make that call the
worker must take the GIL, and the thread that holds it is the caller, busy starting its own
block: the worker waits (and, if the wait is long, sleeps and is woken the slow way). It gives
the GIL back when its kernel starts, takes it again when the kernel returns, and only then can
it tell the caller that it is done. Measured on the Zen 5 (AMD EPYC), a (192x64)^T @ (64x160)
product split in two, medians of 500 calls: the worker's half started 2.2 us after the caller's,
and in some runs, for seconds at a time, the whole split took 33-44 us instead of 12.

A kernel listed in `KINDS` can be handed over as numbers instead: its caller writes the block's
arguments into the worker's words of a shared int64 buffer (each buffer as its address and
length, buffers.address), and the worker's spin loop, `serve`, compiled and without the GIL,
sees the job, rebuilds the buffers from the numbers (buffers.buffer_at) and calls the kernel,
then publishes that it is done, all without ever leaving machine code. The kernel is called
through its own compiled code, so it is the same machine code that the Python path runs.

    jobs[at]            the kind: 0 a Python call (threads.py), else a key of KINDS
    jobs[at + 1 ...]    the block's arguments, written by the kernel's `post` function

Compiled only: interpreted (``NUMBA_DISABLE_JIT=1``) nothing spins, and a worker runs every
block as a Python call. Chapter 2 of the tour (docs/02-kernels.md) walks through it.
"""
from . import matmul
from .jit import kernel
from .threads import _cpu_relax, _load_acquire, _store_release

# runner -> kind: the kernels a worker runs from its words (runner(jobs, at) reads them)
KINDS = {matmul._run_blocks_f: 1, matmul._run_blocks_d: 2}


@kernel
def serve(flags, done_i, done, go_i, turns, handoff, jobs, at):
    """A worker between jobs, without the GIL: publish flags[done_i] = done, then spin (at most
    `turns` turns each time) for job numbers above it in flags[go_i]. A compiled job (jobs[at] !=
    0) runs here, and its number is published in flags[done_i]; the first Python job ends the loop.

    Returns the number of a Python job (after `handoff` more turns: time for the caller to drop
    the GIL), -1 if no job came in `turns` turns (the worker goes to sleep), or -2 after a
    compiled job if the caller sleeps (flags[done_i + 1] != 0: the worker wakes it)."""
    _store_release(flags, done_i, done)
    seen = done
    while True:
        go = seen
        for _ in range(turns):
            go = _load_acquire(flags, go_i)
            if go > seen:
                break
            _cpu_relax()
        if go <= seen:
            return -1
        kind = jobs[at]
        if kind == 1:
            matmul._run_blocks_f(jobs, at)
        elif kind == 2:
            matmul._run_blocks_d(jobs, at)
        else:
            for _ in range(handoff):
                _cpu_relax()
            return go
        seen = go
        _store_release(flags, done_i, seen)
        if _load_acquire(flags, done_i + 1) != 0:
            return -2
