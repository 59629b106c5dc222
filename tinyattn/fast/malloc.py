"""Keep freed tensor memory inside the process (glibc only), so each training step does not pay
for fresh pages.

Every op returns a fresh `array.array`; at demo sizes a step allocates a few hundred buffers of
0.1-1 MB and frees them all at its end. glibc's malloc then hands the freed top of the heap back to
the operating system (its trim threshold adapts to ~2x the largest buffer seen), and the next step
takes page faults to get it back, a large part of a training step outside matmul (measured:
benchmarks/RESULTS.md, fast/malloc.py: the page faults). Raising the trim threshold and fixing the
mmap threshold keeps that memory for reuse, as PyTorch's caching allocator does for its own
buffers. The cost: memory freed by a step stays reserved by the process (it is reused by the next
step, not leaked).

Importing this module applies the settings: the fast backend does when it is bound (recycle.py),
never the reference backend. Set TINYATTN_MALLOC_TUNING=0 to leave malloc alone. On other C
libraries this does nothing.
"""
import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's maximum: larger buffers still get their own mmap
_TRIM_THRESHOLD = 1024 * 1024 * 1024


def tune():
    """Apply the malloc settings; returns True when they were applied."""
    if os.environ.get("TINYATTN_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, ...)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


TUNED = tune()
