"""Compiling ahead: on a first run, a second process compiles the kernels a training step needs,
from the end of the step backwards, while this process compiles from its start.

numba compiles one function at a time in a process (it holds a lock while it compiles), and what
the first training step of a small transformer needs takes many seconds of one core: most of a
first run's wait. A second core can do half of that (measured: benchmarks/RESULTS.md, STEP). The
disk cache is where the two processes meet: the helper saves what it compiles there, and when this
process comes to that kernel numba loads it (`Dispatcher.compile` looks in the cache before it
compiles). PyTorch's compiler (inductor) compiles in worker processes for the same reason.

- It starts with the first compile of a tinyattn kernel in a process (`jit.on_first_compile`,
  which tinyattn/fast/__init__.py sets to `start`): a warm run, which only loads machine code
  from the cache, starts nothing.
- `STEP` lists what a step of a transformer (embedding, attention, layer norm, dropout, cross-
  entropy, Adam) compiles, float32, in the order the step first needs it. The helper works through
  it from the end; a kernel already in the cache (this process got there first) is loaded in a few
  ms and passed over. Other models gain for the kernels they share with it.
  tests/fast/test_ahead.py holds the list to what such a step compiles.
- It runs at a lower priority (nice 10), only where this process may use two CPUs or more, and it
  exits when this process exits: it watches a pipe from this process, which closes then.
- It inherits the environment: the same backend (TINYATTN_KERNELS), the same CPU (NUMBA_CPU_NAME)
  and the same cache (NUMBA_CACHE_DIR). Should it compile for anything else, this process would
  not find that code and would compile its own: slower, never wrong.
- Writes to the cache are serialised across processes (jit._LockedCache).
- ``TINYATTN_COMPILE_AHEAD=0`` turns it off.
"""
import atexit
import importlib
import os
import subprocess
import sys
import threading

from ..kernels.elementwise import ADD, MUL, RELU   # op codes: plain ints, no kernel compiled
from .jit import by_typecode

# (file of fast/, name of a `jit.by_typecode` table there, key); with a fourth element,
# (file of fast/, kernel, typecode, argument spec) for a kernel called directly, the spec in
# by_typecode's letters (T a buffer of that typecode, i int, f float, b bool, @q / @d / @B an
# int64 / float64 / bool buffer). A file is one of this folder, or "kernels.<family>" for a
# family whose reference loops the fast backend runs too.
STEP = (
    # building the model: initial weights, the causal mask
    ("kernels.random", "normal", "f", "T i i i f f"),
    ("copy", "_COPY_SAME", "f"),
    ("kernels.random", "uniform", "f", "T i i i f f b"),
    ("copy", "fill", "f", "T i i i i i f i i i i"),
    ("elementwise", "_BINARY_SCALAR_PACKED", ("f", MUL)),
    ("kernels.random", "randint", "q", "T i i i i i"),
    ("compare", "_COMPARE", "q"),
    ("compare", "_WHERE", "f"),
    # forward: embedding, linear layers, attention, dropout, layer norm, the loss
    ("kernels.index", "wrap_indices", "q", "T i i i i T b"),
    ("kernels.index", "gather_rows", "f", "T @q T i i"),
    ("elementwise", "_BINARY", ("f", ADD)),
    ("matmul", "_blocked", "f"),
    ("matmul", "_post_blocks", "f", "@q i i i i T i i i i i T i i i i i T i i i i i i T"),
    ("threads", "_spin_above", "q", "T i i i"),
    ("jobs", "serve", "q", "T i i i i T i"),
    ("threads", "_publish", "q", "T i i"),
    ("threads", "_take", "q", "T i i"),
    ("matmul", "_run_blocks_f", "q", "i"),
    ("elementwise", "_ADD_ROW_VECTOR", "f"),
    ("flash", "_forward_units", "f", "T T T T i i i i i b b f f i i T T i i i i i i i i i T"),
    ("kernels.random", "dropout_apply", "f", "T T i i i f f"),
    ("elementwise", "_BINARY_PACKED", ("f", ADD)),
    ("norm", "_LAYER_NORM_FORWARD", "f"),
    ("elementwise", "_UNARY_PACKED", ("f", RELU)),
    ("kernels.loss", "check_targets", "q", "T i i i"),
    ("kernels.loss", "cross_entropy_forward", "f", "T @q T b i f i i T @d @d"),
    ("kernels.reduce", "sum_dim", "f", "T T i i i"),
    # backward
    ("kernels.loss", "cross_entropy_backward", "f", "T T @q T b i f i i @d T"),
    ("norm", "_LAYER_NORM_BACKWARD", "f"),
    ("elementwise", "_UNARY_BACKWARD", ("f", RELU)),
    ("flash", "_backward_heads", "f",
     "T T T T T T T i i i i i b b f f i i T T T i i i i i i i i i T"),
    ("elementwise", "_AXPY", "f"),
    ("kernels.index", "scatter_add_rows", "f", "T @q T i i"),
    # the optimizer's step, then the argmax of evaluation
    ("kernels.optim", "adam_step", "f", "T T T T T i f f f f f b b b f f"),
    ("kernels.reduce", "max_dim_forward", "f", "T T @q i i i b"),
)

_helper = None      # the helper process (subprocess.Popen), once started
_started = False


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def start():
    """Start the helper process, once per process, where it can help. Returns it or None."""
    global _helper, _started
    if _started:
        return _helper
    _started = True
    if (os.environ.get("TINYATTN_COMPILE_AHEAD", "1") == "0" or os.name != "posix"
            or not sys.executable or _cpus() < 2):
        return None
    # The folder holding this tinyattn, first on the helper's path: it must compile this copy.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TINYATTN_COMPILE_AHEAD="0",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    try:
        _helper = subprocess.Popen(
            [sys.executable, "-c", "from tinyattn.fast.ahead import main; main()"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, cwd=root)
    except OSError:
        return None
    atexit.register(_stop)
    # Reap it as soon as it is done with the list, so that no <defunct> entry stays behind it.
    threading.Thread(target=_helper.wait, daemon=True, name="tinyattn-ahead-reaper").start()
    return _helper


def _stop():
    # Closing the pipe tells the helper to exit (if it is still running); waiting reaps it.
    _helper.stdin.close()
    try:
        _helper.wait(timeout=2)
    except subprocess.TimeoutExpired:
        _helper.kill()
        _helper.wait()


def _exit_when_parent_exits():
    # os.read, not sys.stdin: a daemon thread blocked in a buffered read aborts the interpreter's
    # exit when the list is done ("could not acquire lock for <stdin> at interpreter shutdown").
    while os.read(0, 4096):     # b"" at end of file: the process that started us has exited
        pass
    os._exit(0)                 # at once, even mid-compile: an entry whose data file was not
                                # written yet is compiled again by whoever needs it, not loaded


def tables():
    """`STEP` as (`jit.by_typecode` table, key) pairs: ``table[key]`` compiles (or loads) one kernel."""
    for module, name, key, *spec in STEP:
        package = "tinyattn" if module.startswith("kernels.") else __package__
        kernel = getattr(importlib.import_module(f"{package}.{module}"), name)
        yield (by_typecode(kernel, spec[0]) if spec else kernel), key


def main():
    """The helper process: compile `STEP` from its end."""
    threading.Thread(target=_exit_when_parent_exits, daemon=True).start()
    try:
        os.nice(10)
    except OSError:
        pass
    for table, key in reversed(list(tables())):
        table[key]    # compiles it and saves it in the cache, or loads it from there
