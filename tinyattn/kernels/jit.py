"""The two decorators every kernel uses, so that all kernels are compiled the same way.

- `kernel`: a compiled loop over flat buffers. ``cache=True`` keeps the machine code on disk between
  runs; ``nogil=True`` lets two kernels run at once on a thread pool; ``error_model="numpy"`` makes
  ``1/0`` give ``inf`` instead of a Python exception (and lets LLVM vectorise divisions).
- `inline`: a small scalar helper that numba pastes into the kernel calling it (no call overhead).

With ``NUMBA_DISABLE_JIT=1`` both decorators return the plain Python function: the same loops run
interpreted, slowly, which is how the test-suite checks the compiled code against its own source.

A kernel defined where numba has no file to cache it next to (the interactive interpreter,
``exec()`` of a string, as the tour's snippets are run) is compiled without the disk cache.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
from numba import njit


def _njit(fn, **options):
    try:
        return njit(cache=True, **options)(fn)
    except RuntimeError as e:  # "cannot cache function ...: no locator available for file ..."
        if "cannot cache" not in str(e):
            raise
        return njit(**options)(fn)


def kernel(fn):
    return _njit(fn, nogil=True, error_model="numpy")


def inline(fn):
    return _njit(fn, inline="always", error_model="numpy")
