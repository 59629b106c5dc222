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

Under the reference backend the fast package is never imported. Families that the fast backend
does not write again (`FAST` does not name them) run the reference loops on both backends.

The fast backend brings its memory machinery too: binding it gives new tensors buffers from a
pool of dead outputs' buffers instead of fresh zero-filled ones, and keeps freed memory in the
process (fast/recycle.py, fast/malloc.py); binding the reference backend goes back to fresh
buffers (storage.set_allocator).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import importlib
import os

from . import storage

BACKENDS = ("reference", "fast")

# Every kernel family: a file of tinyattn/kernels/ whose functions the ops call.
FAMILIES = ("attention", "conv", "elementwise", "flash", "index", "loss", "matmul", "norm",
            "optim", "random", "reduce", "rnn", "scatter", "softmax", "sort")

# The families tinyattn/fast/ writes again; the others are the reference loops on both backends.
FAST = ("attention", "conv", "elementwise", "flash", "matmul", "norm", "rnn", "softmax")

# Families still in the combined layout (one file in fast/ holding both tiers, switched by
# fast/tiers.py). Emptied family by family as each moves to kernels/ + fast/.
_COMBINED = ("attention", "conv", "elementwise", "flash", "index", "loss", "matmul", "norm",
             "optim", "random", "reduce", "rnn", "scatter", "sort")

_active = None


def _checked(name, where):
    if name not in BACKENDS:
        raise ValueError(f"{where}: the kernel backend must be one of {BACKENDS}, got {name!r}")
    return name


def _bind(name):
    global _active
    _active = name
    for family in FAMILIES:
        if family in _COMBINED:
            module = importlib.import_module(f"tinyattn.fast.{family}")
        else:
            package = "fast" if name == "fast" and family in FAST else "kernels"
            module = importlib.import_module(f"tinyattn.{package}.{family}")
        globals()[family] = module
    if _COMBINED:
        importlib.import_module("tinyattn.fast.tiers")._use(name)
    if name == "fast":
        importlib.import_module("tinyattn.fast.recycle").install()
    else:
        storage.set_allocator(None)


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


_bind(_checked(os.environ.get("TINYATTN_KERNELS", "fast") or "fast", "TINYATTN_KERNELS"))
