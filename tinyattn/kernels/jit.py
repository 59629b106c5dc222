"""The two decorators every kernel uses, so that all kernels are compiled the same way.

- `kernel`: a compiled loop over flat buffers. ``cache=True`` keeps the machine code on disk between
  runs; ``nogil=True`` lets two kernels run at once on a thread pool; ``error_model="numpy"`` makes
  ``1/0`` give ``inf`` instead of a Python exception (and lets LLVM vectorise divisions).
- `inline`: a small scalar helper that numba pastes into the kernel calling it (no call overhead).

With ``NUMBA_DISABLE_JIT=1`` both decorators return the plain Python function: the same loops run
interpreted, slowly, which is how the test-suite checks the compiled code against its own source.
"""
from numba import njit


def kernel(fn):
    return njit(cache=True, nogil=True, error_model="numpy")(fn)


def inline(fn):
    return njit(cache=True, inline="always", error_model="numpy")(fn)
