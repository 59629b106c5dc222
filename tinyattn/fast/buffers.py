"""Helpers that let numba kernels treat flat ``array.array`` buffers like 1-d arrays.

Kernels receive ``array.array`` buffers. Inside numba those can be indexed but not sliced, and every
index goes through numba's negative-index wrap-around (``i < 0 -> i + len``), which stops LLVM from
vectorising loops over them. Two tools, each with a plain-Python twin that is what runs under
``NUMBA_DISABLE_JIT=1`` (the tests check the two agree):

``as_array(buf)``
    A writable 1-d view of the whole buffer, no copy. Compiled: the buffer re-typed as a numba
    array, so it can be sliced (``row = c[pos:pos + n]``), and a slice indexed from 0 by a ``range``
    variable needs no wrap-around. Interpreted: a ``memoryview`` (its slices are views too).
``load(arr, i)``
    ``arr[i]`` for an index the caller guarantees is in bounds (and so not negative): compiled, a
    plain load with no wrap-around and no bounds check. Used in the matmul micro-kernel, where even
    a slice per step costs more than the arithmetic.
``store(arr, i, value)``
    ``arr[i] = value`` likewise, for the micro-kernel's writes of its tile.
``address(buf, i)``, ``buffer_at(addr, n, dtype)``
    Compiled only: a buffer written down as numbers and rebuilt from them, for the blocks that a
    worker thread runs without the GIL (jobs.py).

And, in Python, ``scratch(name, typecode, n)``: a thread's working buffer, kept between calls.

numba's ``cache=True`` does not notice when a function defined here changes: after editing this
file, delete the ``__pycache__`` folders (or touch the kernels' files) so cached kernels recompile.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import array
import threading

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["as_array", "load", "store", "scratch"]

_local = threading.local()


def scratch(name, typecode, n):
    """This thread's working buffer `name` of `typecode`, at least `n` elements long: kept between
    calls (and grown when a call needs more), so that a training step allocates none. It holds
    whatever its last user left there. Each thread has its own, so that kernels running at once
    on different threads never share one."""
    buffers = _local.__dict__
    buf = buffers.get((name, typecode))
    if buf is None or len(buf) < n:
        size = n * array.array(typecode).itemsize
        buf = buffers[name, typecode] = array.array(typecode, bytes(size))
    return buf


def as_array(buf):
    """A sliceable, writable 1-d view of the flat buffer ``buf`` (a ``memoryview`` when interpreted)."""
    return memoryview(buf)


def load(arr, i):
    """``arr[i]``; compiled, without negative-index wrap-around (``i`` must be in bounds)."""
    return arr[i]


def store(arr, i, value):
    """``arr[i] = value``; compiled, without negative-index wrap-around (``i`` must be in bounds)."""
    arr[i] = value


@intrinsic
def _buffer_as_array(typingctx, buf):
    # numba stores array.array, memoryview and numpy arrays in the same struct (ArrayModel), so
    # re-typing costs nothing: the same struct, now typed as a C-contiguous 1-d array.
    # The struct's meminfo (numba's reference count on the buffer) is set to NULL: the caller's
    # Python object keeps the buffer alive for the whole kernel call, and without a meminfo slices
    # of the view do not pay for atomic reference counting each time they are made.
    if not isinstance(buf, types.Buffer) or buf.ndim != 1:
        return None
    array_type = types.Array(buf.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        view = context.make_array(signature.args[0])(context, builder, args[0])
        out = context.make_array(array_type)(context, builder)
        out.meminfo = out.meminfo.type(None)
        out.parent = view.parent
        out.nitems = view.nitems
        out.itemsize = view.itemsize
        out.data = view.data
        out.shape = view.shape
        out.strides = view.strides
        return out._getvalue()

    return array_type(buf), codegen


@overload(as_array)
def _as_array_jit(buf):
    if isinstance(buf, types.Buffer):
        return lambda buf: _buffer_as_array(buf)


@intrinsic
def _unchecked_load(typingctx, arr, i):
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        return builder.load(builder.gep(ary.data, [index], inbounds=True))

    return arr.dtype(arr, i), codegen


@overload(load)
def _load_jit(arr, i):
    if isinstance(arr, types.Array) and isinstance(i, types.Integer):
        return lambda arr, i: _unchecked_load(arr, i)


@intrinsic
def _unchecked_store(typingctx, arr, i, value):
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None
    if not isinstance(value, (types.Float, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        val = context.cast(builder, args[2], signature.args[2], signature.args[0].dtype)
        builder.store(val, builder.gep(ary.data, [index], inbounds=True))
        return context.get_dummy_value()

    return types.none(arr, i, value), codegen


@overload(store)
def _store_jit(arr, i, value):
    if isinstance(arr, types.Array) and isinstance(i, types.Integer):
        return lambda arr, i, value: _unchecked_store(arr, i, value)


# --------------------------------------------------------------------------- a buffer as a number
# A block of a kernel handed to a worker thread that runs it without the GIL (jobs.py) is
# written down as int64 words: each buffer as its address and length. Compiled only: interpreted,
# workers run their blocks as Python calls and never see these words.

@intrinsic
def address(typingctx, buf, i):
    """The address of ``buf[i]`` as an int64 (``i`` in bounds: nothing is checked)."""
    if not isinstance(buf, types.Buffer) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        item = builder.gep(ary.data, [index], inbounds=True)
        return builder.ptrtoint(item, context.get_value_type(types.int64))

    return types.int64(buf, i), codegen


@intrinsic
def buffer_at(typingctx, addr, n, dtype):
    """The ``n`` elements of type ``dtype`` (numba's ``float32`` / ``float64``) from address
    ``addr``, typed as the ``array.array`` a kernel takes: a kernel compiled for array.array
    arguments runs on it as it is, without a second compile. The memory belongs to a Python
    object that the thread which wrote the address keeps alive until the kernel has finished."""
    if not isinstance(dtype, types.NumberClass):
        return None
    item = dtype.instance_type
    buf_type = types.PyArray(item, 1, "C")

    def codegen(context, builder, signature, args):
        ary = context.make_array(buf_type)(context, builder)
        ll_item = context.get_data_type(item)
        size = context.get_constant(types.intp, context.get_abi_sizeof(ll_item))
        count = context.cast(builder, args[1], signature.args[1], types.intp)
        ary.meminfo = ary.meminfo.type(None)
        ary.parent = ary.parent.type(None)
        ary.nitems = count
        ary.itemsize = size
        ary.data = builder.inttoptr(args[0], ll_item.as_pointer())
        ary.shape = cgutils.pack_array(builder, [count])
        ary.strides = cgutils.pack_array(builder, [size])
        return ary._getvalue()

    return buf_type(types.int64, types.int64, dtype), codegen
