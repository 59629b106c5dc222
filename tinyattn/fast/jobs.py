"""The worker's side of the thread pool, compiled: its spin loop, and jobs run without the GIL.

threads.py hands a worker a block as a Python call, ``fn(start, stop)``. To make that call the
worker must take the GIL, and the thread that holds it is the caller, busy starting its own
block: the worker waits (and, if the wait is long, sleeps and is woken the slow way). It gives
the GIL back when its kernel starts, takes it again when the kernel returns, and only then can
it tell the caller that it is done. A split meant to halve a kernel's time can then take longer
than the whole kernel on one core (measured: benchmarks/RESULTS.md, fast/jobs.py: serve).

A kernel can be handed over as numbers instead. Its file registers a *runner* (`register`): a
compiled function of one int64, the address of a job's words, which reads the block's arguments
from those words and calls the kernel. The caller writes the words into the worker's part of a
shared int64 buffer (each buffer as its address and length, buffers.address). The worker's spin
loop, `serve`, compiled and without the GIL, sees the job and calls the runner through the
address of its machine code (the runner rebuilds the buffers from the numbers, buffers.buffer_at,
and calls the kernel), then publishes that it is done, all without leaving machine code. The
pool knows its clients only through the runners they registered.

    jobs[at]            0: a Python call (threads.py); else the address of a runner's machine code
    jobs[at + 1 ...]    the block's arguments, written by the client's `post` function

Also here, because both sides of the pool need them: the atomic load and store through which
the caller and a worker see each other's counters, the CPU's spin-wait hint, and where a thread
runs (`getcpu`, `move_off`).

Compiled only: interpreted (``NUMBA_DISABLE_JIT=1``) nothing spins, and a worker runs every
block as a Python call. Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import ctypes
import os
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .buffers import address
from .jit import kernel

__all__ = ["register", "entry", "serve", "load_acquire", "store_release", "compare_and_swap",
           "cpu_relax", "getcpu", "move_off"]


# --------------------------------------------------------------------------- atomics and the hint

def _item_pointer(context, builder, sig, args):
    ary = context.make_array(sig.args[0])(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, sig.args[0], ary, [args[1]])


@intrinsic
def load_acquire(typingctx, buf, i):
    """buf[i], read as an atomic load: a loop re-reads memory every turn (a plain load could be
    hoisted out of it) and sees what the other core wrote before its release store."""
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_item_pointer(context, builder, sig, args), "acquire", 8)
    return types.int64(buf, i), codegen


@intrinsic
def store_release(typingctx, buf, i, value):
    """buf[i] = value, as an atomic store that follows every write before it."""
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[2], _item_pointer(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()
    return types.void(buf, i, value), codegen


@intrinsic
def compare_and_swap(typingctx, buf, i, expected, new):
    """If buf[i] == expected, buf[i] = new, as one atomic step; True if it did. Two threads that
    both try to take the same block this way cannot both succeed (threads.py: the claim)."""
    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig, args)
        pair = builder.cmpxchg(ptr, args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(buf, i, expected, new), codegen


_PAUSE = platform.machine().lower() in ("x86_64", "amd64")


@intrinsic
def cpu_relax(typingctx):
    """The CPU's spin-wait hint (x86 `pause`): saves power and frees the core's shared resources
    while spinning. Other CPUs spin without it."""
    def codegen(context, builder, sig, args):
        if _PAUSE:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def _call_runner(typingctx, entry_address, words):
    """runner(words) for the runner whose machine code starts at `entry_address` (see `entry`)."""
    def codegen(context, builder, sig, args):
        # the C entry point of a compiled function that returns nothing: (int64) -> none's type
        fnty = ir.FunctionType(context.get_value_type(types.none), [ir.IntType(64)])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1]])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


# --------------------------------------------------------------------------- where a worker runs

def _cpu_getter():
    try:
        getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
        getcpu.restype = ctypes.c_int
        return getcpu if getcpu() >= 0 and hasattr(os, "sched_setaffinity") else None
    except (OSError, AttributeError):
        return None


getcpu = _cpu_getter()      # the CPU the calling thread is on (glibc's sched_getcpu), or None


def move_off(cpu):
    """Move the calling thread to a CPU other than `cpu` it may use, then let it run anywhere
    again. A worker started or woken by the caller tends to land on the caller's CPU, where the
    two spinning threads take turns instead of running together, and the scheduler may leave
    them so for a long while; a busy machine's scheduler still moves it where it likes."""
    try:
        allowed = os.sched_getaffinity(0)
        if cpu in allowed and len(allowed) > 1:
            os.sched_setaffinity(0, allowed - {cpu})
            os.sched_setaffinity(0, allowed)
    except OSError:
        pass


# --------------------------------------------------------------------------- the registry

_runners = [None]       # kind -> the runner registered under it (kind 0: none, a Python call)
_entries = [0]          # kind -> the address of its runner's machine code, 0 until first used
_RUNNER_SIGNATURE = (types.int64,)


def register(runner):
    """Make `runner` a kind of job that a spinning worker runs itself, and return its kind (an
    int > 0, what its clients pass to threads.parallel_for as ``job[0]``).

    `runner` is a `jit.kernel` of one int64, the address of a job's words: ``jobs[at]`` there
    is this kind's entry, ``jobs[at + 1 ...]`` what the client's `post` wrote. Nothing is
    compiled here: `entry` compiles the runner when a job of its kind is first handed over."""
    _runners.append(runner)
    _entries.append(0)
    return len(_runners) - 1


def entry(kind):
    """The address of the machine code of `kind`'s runner, compiled (or loaded from the disk
    cache) on first use. numba gives every compiled function a C entry point beside its own (the
    one ``numba.cfunc`` exposes), which a compiled caller can call through its address."""
    address_ = _entries[kind]
    if address_ == 0:
        runner = _runners[kind]
        runner.compile(_RUNNER_SIGNATURE)
        compiled = runner.overloads[_RUNNER_SIGNATURE]
        address_ = compiled.library.get_pointer_to_function(
            compiled.fndesc.llvm_cfunc_wrapper_name)
        _entries[kind] = address_
    return address_


# --------------------------------------------------------------------------- the spin loop

# A worker's words in threads.py's `_flags`, from its first one: GO and CLAIM on one cache line
# (the caller writes GO, both sides CLAIM), the rest on the next (the worker writes them).
GO, CLAIM, DONE, SLEEPING, SEEN, RAN, SPINNING = 0, 1, 8, 9, 10, 11, 12
WORDS = 16

@kernel
def serve(flags, w, done, turns, handoff, jobs, at):
    """A worker between jobs, without the GIL. Its words in `flags` start at `w` (threads.py):
    w + GO the caller's last job number, w + CLAIM the last one taken (by either side), w + DONE
    the last one this worker finished, w + SLEEPING whether the caller sleeps waiting for it,
    w + SEEN the last job number this loop saw, w + RAN how many jobs it ran, w + SPINNING 1
    while this loop runs (a job it did not claim then went to a worker without a core).

    First publishes `done` in DONE, the Python job this worker has just run (0: none): here,
    after the worker let go of the GIL, so the caller that sees it can take the GIL at once.
    Spins (at most `turns` turns each time) for a job number above SEEN in GO and claims it with
    compare_and_swap(CLAIM: go - 1 -> go): if the caller took that job back first, the claim
    fails and the loop spins on. A claimed compiled job (jobs[at] != 0) runs here and its number
    is published in DONE; a claimed Python job ends the loop.

    Returns the number of a claimed Python job (after `handoff` more turns: time for the caller
    to drop the GIL), -1 if no job came in `turns` turns (the worker goes to sleep), or -2 after
    a job if the caller sleeps (the worker wakes it)."""
    if done > 0:
        store_release(flags, w + DONE, done)
        if load_acquire(flags, w + SLEEPING) != 0:
            return -2
    seen = flags[w + SEEN]
    flags[w + SPINNING] = 1
    while True:
        go = seen
        for _ in range(turns):
            go = load_acquire(flags, w + GO)
            if go > seen:
                break
            cpu_relax()
        if go <= seen:
            flags[w + SEEN] = seen
            flags[w + SPINNING] = 0
            return -1
        seen = go
        if not compare_and_swap(flags, w + CLAIM, go - 1, go):
            continue                    # the caller took this job back: wait for the next
        flags[w + RAN] += 1
        runner = jobs[at]
        if runner == 0:
            flags[w + SEEN] = seen
            for _ in range(handoff):
                cpu_relax()
            flags[w + SPINNING] = 0
            return go
        _call_runner(runner, address(jobs, at))
        store_release(flags, w + DONE, go)
        if load_acquire(flags, w + SLEEPING) != 0:
            flags[w + SEEN] = seen
            flags[w + SPINNING] = 0
            return -2
