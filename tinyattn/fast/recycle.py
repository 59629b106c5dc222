"""Reuse the buffers of dead op outputs, so that a big output costs no zero-fill.

Python can only make an ``array.array`` filled: ``zero * n`` writes all n elements, and then the
kernel writes them again. For a big output that fill is a sizeable part of the op (measured:
benchmarks/RESULTS.md, fast/recycle.py: the zero-fill); PyTorch's ``empty`` writes nothing. So the fast backend
hands new tensors (``storage._empty``, whose kernel writes every element) buffers from here:

    take(zero, n)    n elements of zero's typecode, with ANY contents: a buffer that an earlier
                     call handed out and that nothing references any more (its reference count
                     says so: the pool's own reference is the only one left), else a fresh one.

Only buffers of >= MIN_BYTES are pooled (a small fill costs less than the lookup). The pool holds
at most MAX_PER_SIZE buffers of one size and MAX_BYTES in all; when it is full, the dead ones are
let go. Memory a dead output used stays in the process for the next op of its size, as it does in
PyTorch's caching allocators (and in glibc's heap, see malloc.py). ``clear()`` lets all of it go.

``install()`` makes the pool the source of new buffers (storage.set_allocator); tinyattn/backend.py
calls it when it binds the fast backend (importing this module also tunes glibc's malloc:
malloc.py), and binding the reference backend goes back to fresh buffers. Set TINYATTN_RECYCLE=0
to keep fresh buffers on the fast backend too. In poison mode (TINYATTN_POISON=1, storage.py)
every buffer the pool hands out, of any size, is first filled with NaN or a large number.
"""
import os
import sys
import threading

from .. import storage
from . import malloc  # noqa: F401  (importing it keeps freed memory in the process: malloc.py)

MIN_BYTES = 64 * 1024
MAX_PER_SIZE = 16
MAX_BYTES = 256 * 1024 * 1024
ENABLED = os.environ.get("TINYATTN_RECYCLE", "1") != "0"
POISON = storage.POISON
if POISON:
    MIN_BYTES = 0

_pool = {}      # (typecode, n) -> the buffers of that size handed out, alive or dead
_held = 0       # bytes of all the buffers in _pool
_lock = threading.Lock()
_refs = sys.getrefcount


def install():
    """New tensors' buffers come from this pool from now on."""
    if ENABLED:
        # Fewer elements than this never reach MIN_BYTES (8-byte dtypes are the largest): no
        # call to take, which would cost more than the fill.
        storage.set_allocator(take, MIN_BYTES // 8)
    else:
        storage.set_allocator(None)


def _dead_count():
    """The reference count that `take`'s loop sees for a buffer only the pool refers to (the
    list, the loop variable, getrefcount's argument): measured, not assumed, since interpreters
    count borrowed references differently."""
    for buf in [bytearray()]:
        return _refs(buf)


_DEAD = _dead_count()


def take(zero, n):
    """A buffer of n elements of ``zero``'s typecode (``zero`` is a 1-element array of it) whose
    contents are arbitrary: the caller must overwrite every element."""
    global _held
    nbytes = n * zero.itemsize
    if nbytes < MIN_BYTES or not ENABLED:
        return zero * n
    key = (zero.typecode, n)
    with _lock:
        bufs = _pool.setdefault(key, [])
        for buf in bufs:
            if _refs(buf) == _DEAD:
                # the autograd engine forgets the in-place writes of the buffer's dead owner
                storage.on_reuse(buf)
                if POISON:
                    buf[:] = storage.poisoned(zero, n)
                return buf
        buf = storage.poisoned(zero, n) if POISON else zero * n
        if len(bufs) < MAX_PER_SIZE:
            if _held + nbytes > MAX_BYTES:
                _let_go_of_dead()
                bufs = _pool.setdefault(key, [])    # the list may have been replaced or dropped
            if _held + nbytes <= MAX_BYTES:
                bufs.append(buf)
                _held += nbytes
        return buf


def _let_go_of_dead():
    """Drop the pool's reference to every dead buffer (Python frees them). Called with _lock held."""
    global _held
    held = 0
    for key in list(_pool):
        alive = []
        for buf in _pool[key]:          # the same loop as take's, so the same count means dead
            if _refs(buf) != _DEAD:
                alive.append(buf)
        if alive:
            _pool[key] = alive
            held += len(alive) * alive[0].itemsize * key[1]
        else:
            del _pool[key]
    _held = held


def clear():
    """Let go of every pooled buffer that is dead (a live one stays with its tensor)."""
    with _lock:
        _let_go_of_dead()


def _new_lock_after_fork():
    # A forked child has only the thread that forked: a lock another thread held stays locked.
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def held_bytes():
    """Bytes of the buffers the pool refers to (alive or dead)."""
    return _held
