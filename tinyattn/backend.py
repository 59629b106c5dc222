"""Which kernels the ops call: the reference backend or the fast one.

tinyattn has two kernel backends with one interface:

- **reference** (`tinyattn/kernels/`): plain loops over flat buffers, the equation in each
  docstring; what a student reads, and what runs under a debugger with ``NUMBA_DISABLE_JIT=1``;
- **fast** (`tinyattn/fast/`): the same functions, with the same names and arguments, tiled,
  vectorised and threaded.

Each kernel *family* is one file in each folder (`kernels/softmax.py` and `fast/softmax.py`). The
ops reach a family through this module, at call time::

    from .. import backend
    backend.softmax.softmax_forward(x._data, out._data, O, R, I, log)

so switching backends re-binds what every op calls::

    TINYATTN_KERNELS=reference python demo.py      # the whole library on the reference backend
    tinyattn.backend.use("reference")               # the same from Python
    with tinyattn.backend.use("reference"): ...     # inside the block only

One function can be replaced for a `with` block, the hook the exercises plug a student's code
into (`python -m tinyattn.exercises`)::

    with tinyattn.backend.override("softmax", "softmax_forward", my_softmax_forward): ...

Under the reference backend the fast package is never imported. Families that the fast backend
does not write again (`FAST` does not name them) run the reference loops on both backends.

The number of threads (``tinyattn.set_num_threads``, PyTorch's name) is kept here too: the
reference kernels run on the calling thread, the fast ones split their work over a pool of
threads (fast/threads.py), which is given the count when the fast backend is bound and whenever
it changes.

The fast backend brings its memory machinery too: binding it gives new tensors buffers from a
pool of dead outputs' buffers instead of fresh zero-filled ones, and keeps freed memory in the
process (fast/recycle.py, fast/malloc.py); binding the reference backend goes back to fresh
buffers (storage.set_allocator).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import importlib
import os
import sys

from . import storage

BACKENDS = ("reference", "fast")

# Every kernel family: a file of tinyattn/kernels/ whose functions the ops call.
FAMILIES = ("attention", "compare", "conv", "copy", "elementwise", "flash", "index", "loss",
            "matmul", "norm", "optim", "random", "reduce", "rnn", "scatter", "softmax", "sort")

# The families tinyattn/fast/ writes again; the others are the reference loops on both backends.
FAST = ("attention", "compare", "conv", "copy", "elementwise", "flash", "matmul", "norm", "rnn",
        "softmax")

_active = None


def _checked(name, where):
    if name not in BACKENDS:
        raise ValueError(f"{where}: the kernel backend must be one of {BACKENDS}, got {name!r}")
    return name


def _bind(name):
    global _active
    _active = name
    for family in FAMILIES:
        package = "fast" if name == "fast" and family in FAST else "kernels"
        module = importlib.import_module(f"tinyattn.{package}.{family}")
        if name == "fast" and package == "kernels":   # the fast backend's disk-cache handling
            importlib.import_module("tinyattn.fast.jit").adopt(module)
        globals()[family] = module
    if name == "fast":
        importlib.import_module("tinyattn.fast.recycle").install()
        _give_the_pool(num_threads())
    else:
        storage.set_allocator(None)


# ---------------------------------------------------------------------------- threads

_POOL = "tinyattn.fast.threads"
# By default every CPU this process may use, but at most the 8 the fast backend's pool holds;
# more than that would need a finer split than its one block per thread to stay balanced.
_DEFAULT_MAX_THREADS = 8
_num_threads = None     # set_num_threads' count; None: the default
_usable = None          # usable_cpus(), read once
# The cgroup CPU quota (a container's `--cpus`): version 2's file, version 1's two files.
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def _read(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def cgroup_cpu_quota():
    """The CPUs' worth of time per period the cgroup allows this process (quota / period), or
    None without a limit: cgroup v2's cpu.max ("max 100000" or "150000 100000"), else v1's
    cfs_quota_us / cfs_period_us (-1: no limit)."""
    try:
        words = _read(CGROUP_CPU_MAX)
        if len(words) == 2:
            return None if words[0] == "max" else int(words[0]) / int(words[1])
        quota, period = (_read(path) for path in CGROUP_V1_QUOTA)
        if quota and period and int(quota[0]) > 0 and int(period[0]) > 0:
            return int(quota[0]) / int(period[0])
    except ValueError:
        pass
    return None


def usable_cpus():
    """How many CPUs this process may use: those its affinity allows (`taskset`, a container's
    cpuset; ``os.cpu_count()`` counts the machine's), and no more than whole CPUs of its cgroup
    quota (a quota of 1.5 CPUs gives 1: a second thread would be throttled part of each period,
    and the thread waiting for it with it)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # (not every system has it)
        n = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        n = min(n, int(quota))
    return max(1, n)


def _default_num_threads():
    global _usable
    env = os.environ.get("TINYATTN_NUM_THREADS", "").strip()
    if env:
        if not env.lstrip("+-").isdigit():
            raise ValueError(f"TINYATTN_NUM_THREADS must be a positive integer, got {env!r}")
        return max(1, int(env))
    if _usable is None:
        _usable = usable_cpus()
    return min(_usable, _DEFAULT_MAX_THREADS)


def num_threads():
    """How many threads the fast kernels use, the calling thread included: what
    `set_num_threads` was given, else ``TINYATTN_NUM_THREADS`` or the CPUs this process may use
    (`usable_cpus`, at most 8).
    (The reference kernels run on the calling thread alone.)"""
    return _num_threads if _num_threads is not None else _default_num_threads()


def set_num_threads(n):
    """Use `n` threads (an int >= 1) from now on; None goes back to the default.
    tinyattn.set_num_threads checks the argument as PyTorch does and calls this."""
    global _num_threads
    _num_threads = n
    _give_the_pool(num_threads())


def _give_the_pool(n):
    # Looked up, not imported: on the reference backend the fast package is never loaded, and
    # then there is no pool to tell (it is told when the fast backend is bound).
    pool = sys.modules.get(_POOL)
    if pool is not None and pool.num_threads() != min(n, pool.MAX_THREADS):
        pool.set_num_threads(n)


def active():
    """The backend the ops call now: 'reference' or 'fast'."""
    return _active


class use:
    """Run the library on backend `name` ('reference' or 'fast'): from now on, or, used as a
    context manager, inside the `with` block only."""

    def __init__(self, name):
        self.previous = _active
        _bind(_checked(name, "backend.use"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _bind(self.previous)
        return False


class override:
    """Replace ONE function for a `with` block: the teaching hook the exercises plug into.

        with backend.override("softmax", "softmax_forward", my_forward):    # a kernel
            ...     # every op that calls backend.softmax.softmax_forward calls my_forward
        with backend.override(tinyattn.nn.positional, "sinusoidal_table", my_table):  # an op
            ...

    `where` is either a kernel family's name (FAMILIES): the family this module hands the ops
    is swapped for a view of it in which `name` is `fn`, on whichever backend is active; the
    kernel file itself is untouched, so nothing else sees the change. Or `where` is a module
    or class whose attribute `name` the library looks up at call time (for exercises that
    replace an op or a layer's method rather than a kernel). Leaving the block, by an exception
    too, puts the previous function back; overrides nest and unwind in order. Switch backends
    outside the block: `use` inside it rebinds the families and leaving restores the view.
    Not thread-safe: it changes what every thread calls."""

    def __init__(self, where, name, fn):
        if isinstance(where, str):
            if where not in FAMILIES:
                raise ValueError(f"backend.override: {where!r} is not a kernel family; the "
                                 f"families are {FAMILIES}")
            where = _Family(globals()[where], where)
        elif not hasattr(where, name):
            raise AttributeError(f"backend.override: {where!r} has no attribute {name!r}")
        if not hasattr(where, name):
            raise AttributeError(f"backend.override: kernel family {where._family!r} has no "
                                 f"function {name!r}")
        if not callable(fn):
            raise TypeError(f"backend.override: the replacement for {name!r} must be callable, "
                            f"got {type(fn).__name__}")
        self.where, self.name, self.fn = where, name, fn
        self._undo = None

    def __enter__(self):
        where, name = self.where, self.name
        if isinstance(where, _Family):
            previous = globals()[where._family]
            view = _Family(previous, where._family)
            setattr(view, name, self.fn)
            globals()[where._family] = view
            self._undo = lambda: globals().__setitem__(where._family, previous)
        else:
            own = vars(where).get(name, _MISSING) if hasattr(where, "__dict__") else _MISSING
            setattr(where, name, self.fn)
            if own is _MISSING:     # inherited (a class's method from its base): drop ours
                self._undo = lambda: delattr(where, name)
            else:
                self._undo = lambda: setattr(where, name, own)
        return self

    def __exit__(self, *exc):
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()
        return False


_MISSING = object()


class _Family:
    """A kernel family with some functions replaced: attributes set on it win, every other name
    is read from the family's module."""

    def __init__(self, module, family):
        self._module, self._family = module, family

    def __getattr__(self, name):            # called only for names not set on the view
        return getattr(self._module, name)

    def __repr__(self):
        replaced = sorted(set(vars(self)) - {"_module", "_family"})
        return f"<kernel family {self._family!r}, {', '.join(replaced)} replaced>"


_bind(_checked(os.environ.get("TINYATTN_KERNELS", "fast") or "fast", "TINYATTN_KERNELS"))
