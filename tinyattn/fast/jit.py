"""The decorators every kernel uses, so that all kernels are compiled the same way, and `by_typecode`,
the cheap way to call a kernel from the hot paths of the op library.

- `kernel`: a compiled loop over flat buffers. ``cache=True`` keeps the machine code on disk between
  runs; ``nogil=True`` lets two kernels run at once on a thread pool; ``error_model="numpy"`` makes
  ``1/0`` give ``inf`` instead of a Python exception (and lets LLVM vectorise divisions).
- `vector_kernel`: a kernel whose sums LLVM may reorder into vector registers (softmax, norms).
- `inline`: a small scalar helper that numba pastes into the kernel calling it (no call overhead).
- `out_of_line()`: the opposite, called inside a kernel: LLVM may not paste it into its callers.
- `aligned_loop()`: called first in a loop's body: LLVM starts that loop at a 64-byte boundary.

With ``NUMBA_DISABLE_JIT=1`` both decorators return the plain Python function: the same loops run
interpreted, slowly, which is how the test-suite checks the compiled code against its own source.

A kernel defined where numba has no file to cache it next to (the interactive interpreter,
``exec()`` of a string, as the tour's snippets are run) is compiled without the disk cache.

While kernels compile (the first run on a machine, a program using a kernel no earlier one
needed, or after a kernel changed), a line on stderr says so and, at exit, another how many
compiled in how long: compiling what a demo needs takes many seconds, and a silent pause looks
like a hang. Compiled code is cached on disk (``__pycache__``, or ``NUMBA_CACHE_DIR``), so later
runs load it. The first compile also calls `on_first_compile`, which tinyattn/fast/__init__.py
sets to ahead.py's `start` (a second process compiles what a training step will need meanwhile);
saves to the cache hold a file lock, so that two processes can share it (`reuse` extends the
lock to the reference kernels that the fast backend calls as they are).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import array
import atexit
import contextlib
import os
import sys
import time

import numba
from llvmlite import ir
from numba import njit
from numba.core import event as _event
from numba.core import types
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys
from numba.extending import intrinsic, overload

try:
    import fcntl
except ImportError:  # Windows: no flock (and no compile-ahead process, see ahead.py)
    fcntl = None


def _njit(fn, **options):
    try:
        dispatcher = njit(cache=True, **options)(fn)
    except RuntimeError as e:  # "cannot cache function ...: no locator available for file ..."
        if "cannot cache" not in str(e):
            raise
        return njit(**options)(fn)
    _lock(dispatcher)
    return dispatcher


def _lock(dispatcher):
    """Serialise `dispatcher`'s saves to the disk cache across processes (`_LockedCache`)."""
    if type(getattr(dispatcher, "_cache", None)) is FunctionCache:  # (None: NUMBA_DISABLE_JIT)
        dispatcher._cache = _LockedCache(dispatcher.py_func)


def reuse(module):
    """Take the cache lock for every compiled function of `module`, a reference kernel file whose
    kernels and formulas the fast backend calls as they are: the compile-ahead process (ahead.py)
    may compile them beside this one, as it does the fast kernels."""
    for value in vars(module).values():
        if isinstance(value, numba.core.dispatcher.Dispatcher):
            _lock(value)


def cached(**options):
    """``@cached(nogil=True, ...)``: numba's ``njit`` with these options, cached on disk like every
    kernel here; for the few kernels whose options are none of the decorators below."""
    return lambda fn: _njit(fn, **options)


class _LockedCache(FunctionCache):
    """numba's disk cache of one function, with its writes serialised across processes.

    numba saves a compiled signature in two files: it reads the function's index, picks the first
    free data-file name, rewrites the index, then writes the data. Two processes saving two
    signatures of one kernel at the same moment can pick the same name, and the index can then
    point one signature at the other's machine code (numba issues #4807 and #10128: its developers
    suggest a file lock). With ahead.py's second process compiling beside this one that is not a
    remote case, so each save holds an exclusive lock on a file in the cache folder."""

    def save_overload(self, sig, data):
        with _cache_lock(self._impl.locator):
            super().save_overload(sig, data)

    def load_overload(self, sig, target_context):
        """numba's own load first refreshes the whole target context: the first time in a process
        that imports its NumPy, typed-container and jitclass implementations and re-reads every
        typing registry, a good part of a warm start (measured: benchmarks/RESULTS.md,
        _LockedCache.load_overload), for code that is only loaded. Loading machine code needs
        numba's runtime (NRT) symbols and nothing from those registries (its C helpers and math
        functions are bound when the context is made). A compile still refreshes everything:
        numba's compiler does it before it starts."""
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)


@contextlib.contextmanager
def _cache_lock(locator):
    fd = None
    if fcntl is not None:
        try:
            locator.ensure_cache_path()
            fd = os.open(os.path.join(locator.get_cache_path(), "tinyattn-cache.lock"),
                         os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a read-only cache: numba's save fails too, and says so itself
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


def adopt(module):
    """Give the compiled functions of `module`, a reference file (tinyattn/kernels/) whose loops
    the fast backend runs as they are, this file's disk cache: saves under the lock, since the
    compile-ahead process compiles some of them too, and loads without numba's refresh."""
    for fn in vars(module).values():
        if type(getattr(fn, "_cache", None)) is FunctionCache:
            fn._cache = _LockedCache(fn.py_func)


def kernel(fn):
    return _njit(fn, nogil=True, error_model="numpy")


def vector_kernel(fn):
    """A `kernel` whose float sums may be added in any order (fastmath 'reassoc'), and whose
    a * b + c may become one fused multiply-add ('contract').

    A loop `s += x[i]` adds one element at a time, each addition waiting for the previous one; with
    'reassoc' LLVM keeps several partial sums in a vector register and adds them up at the end --
    8-16x faster, and rounded differently (the float sum of many numbers depends on the order;
    either order is as accurate). NaN and inf keep their meaning (no 'nnan' / 'ninf' flags)."""
    return _njit(fn, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})


def inline(fn):
    return _njit(fn, inline="always", error_model="numpy")


def pasted(formula):
    """A scalar formula of the reference backend (kernels/), inlined into the fast kernels that
    call it, as `inline` helpers are. Called as it is, it stays a call that LLVM does not always
    inline, and a loop around a call does not vectorise (measured: benchmarks/RESULTS.md,
    pasted). Not cached on disk itself (its kernels are): the reference's own dispatcher caches
    the same function under the same name."""
    return njit(inline="always", error_model="numpy")(getattr(formula, "py_func", formula))


def vector_inline(fn):
    """A `vector_kernel` helper inlined into its caller: for loops over short rows (softmax's 64
    keys), where the call itself (passing each row's view) costs as much as the loop."""
    return _njit(fn, inline="always", error_model="numpy", fastmath={"reassoc", "contract"})


def out_of_line():
    """Called first in a compiled function: LLVM will not inline that function into its callers.

    Whether LLVM inlines a callee depends on its cost model for the target CPU, so the same source
    can become differently shaped machine code on two CPUs: flash.py's `_tile_mm` stayed a
    function of its own for one CPU and was inlined into the fused attention's loops for another,
    where they then ran slower (measured: benchmarks/RESULTS.md, out_of_line). A no-op when run
    interpreted."""


@overload(out_of_line, inline="always")   # the intrinsic must land in the caller itself
def _out_of_line_jit():
    return lambda: _noinline()


@intrinsic
def _noinline(typingctx):
    def codegen(context, builder, sig, args):
        builder.function.attributes.add("noinline")   # the function being compiled
        return context.get_dummy_value()

    return types.none(), codegen


LOOP_ALIGN = 64


def aligned_loop():
    """Called first in the body of a compiled loop: LLVM places the loop's first instruction at a
    64-byte boundary (``llvm.loop.align`` on the loop's back-edge).

    Why: a CPU fetches and decodes code in aligned windows (32 or 64 bytes), so how many windows
    a short hot loop spans depends on where it starts, and that moves with every change elsewhere
    in the kernel. The matmul micro-kernel's loop on AVX2 is 19 instructions (~90 bytes): two
    builds whose loops were the same instructions, moved only by a constant's encoding outside
    the loop, ran at different speeds (measured: benchmarks/RESULTS.md, LOOP_ALIGN). LLVM's
    default is 16 bytes. A no-op when run interpreted."""


@overload(aligned_loop, inline="always")
def _aligned_loop_jit():
    return lambda: _mark_loop()


@intrinsic
def _mark_loop(typingctx):
    # The loop's back-edge does not exist yet while its body is being lowered; remember the block
    # this call is in, and add the metadata once the function is complete, just before numba hands
    # the module to LLVM (CodeLibrary.add_ir_module).
    def codegen(context, builder, sig, args):
        library = context.active_code_library
        marks = library.__dict__.get("_tinyattn_loop_marks")
        if marks is None:
            marks = library._tinyattn_loop_marks = []
            add_ir_module = library.add_ir_module

            def add_ir_module_aligned(module):
                for function, body in marks:
                    _align_loop(module, function, body)
                marks.clear()
                add_ir_module(module)

            library.add_ir_module = add_ir_module_aligned
        marks.append((builder.function, builder.block))
        return context.get_dummy_value()

    return types.none(), codegen


def _label(block):
    """numba's label of the block an LLVM block was lowered from: B70, B70.if, B70.endif -> 70."""
    name = block.name.split(".")[0]
    return int(name[1:]) if name[:1] == "B" and name[1:].isdigit() else -1


def _align_loop(module, function, body):
    """Put ``llvm.loop.align`` on the back-edge of the loop whose body starts at block ``body``.
    numba names each LLVM block after the bytecode offset of its block (``B70``; blocks it adds
    while lowering one are ``B70.if`` and so on), and a loop's body and back-edge come after its
    header in the bytecode. So: the header is the block a branch into ``body`` comes from
    (``B68.endif`` -> header ``B68``); the back-edges are the branches to the header from blocks
    at ``body``'s offset or later. Nothing when there is no such loop: numba also compiles
    `aligned_loop`'s own body on its own, once, to type it, before pasting it into the loop."""
    start = _label(body)
    entries = {_label(b) for b in function.blocks
               if b.terminator is not None and body in b.terminator.operands}
    headers = [b for b in function.blocks if entries == {_label(b)} and b.name == f"B{_label(b)}"]
    latches = [b.terminator for b in function.blocks if len(headers) == 1
               and _label(b) >= start and b.terminator is not None
               and headers[0] in b.terminator.operands]
    if not latches:
        return
    # A loop ID is a metadata node whose first operand is itself.
    loop_id = module.add_metadata([
        ir.MetaDataString(module, f"tinyattn.loop.{len(module.metadata)}")])   # (a placeholder)
    loop_id.operands = (loop_id, module.add_metadata([
        ir.MetaDataString(module, "llvm.loop.align"), ir.Constant(ir.IntType(32), LOOP_ALIGN)]))
    for branch in latches:
        branch.set_metadata("llvm.loop", loop_id)


# --------------------------------------------------------------------------- calling kernels cheaply


class by_typecode(dict):
    """`table[typecode]` -> `kernel` compiled for buffers of that `array.array` typecode, as a
    callable that skips numba's per-call type dispatch.

    Why: calling a numba function first works out the numba type of every argument and looks up the
    machine code for that combination; for an `array.array` that means asking for its buffer twice.
    With three buffers and two ints that is most of the call, and a training step of a small model
    makes a few thousand such calls. The machine code for one signature (its "entry point") takes
    the same arguments without that search (measured: benchmarks/RESULTS.md, by_typecode). The
    price is that it trusts its caller: a buffer of another typecode would be read as this one
    (garbage, not an error), so the fast backend always picks the table entry from the very
    buffers it passes.

    `spec` gives the argument types, space-separated: ``i`` int64, ``f`` float64, ``b`` bool, ``S`` a
    number of the table's kind (float64 for float buffers, int64 otherwise), ``T`` a buffer of the
    table's typecode, and ``@B`` / ``@q`` / ``@d`` / ``@f`` a buffer of that fixed
    typecode (bool / int64 / float64 / float32 outputs, index buffers).

    ``L`` (first argument only) is an op code the kernel specialises on: the table is then keyed by
    ``(typecode, op)`` and each entry is compiled with that op as a compile-time constant
    (`numba.literally` in the kernel), so its loop body is the one formula of that op and LLVM
    vectorises it. ``K`` is a flag the same way (a bool, keyed after the op: ``table[typecode,
    flag]``), and ``F`` the flag "the buffers are float32", known from the typecode: both are
    compiled as constants, so each entry's loops are those of its case only (faster than testing
    the flags per row: benchmarks/RESULTS.md, by_typecode).
    Interpreted (``NUMBA_DISABLE_JIT=1``) every entry is the plain Python function: the fast
    path's twin.
    """

    def __init__(self, fn, spec):
        super().__init__()
        self.fn = fn
        self.spec = spec.split()
        _lock(fn)   # a reference kernel too may be compiled by the compile-ahead process

    def signature(self, key):
        """The numba argument types of entry `key`."""
        typecode, *constants = key if isinstance(key, tuple) else (key,)
        args = []
        for s in self.spec:
            if s == "T" or s.startswith("@"):
                args.append(numba.typeof(array.array(typecode if s == "T" else s[1:])))
            elif s == "S":
                args.append(numba.float64 if typecode in "fd" else numba.int64)
            elif s == "L":
                args.append(numba.types.IntegerLiteral(constants.pop(0)))
            elif s == "K":
                args.append(numba.types.BooleanLiteral(bool(constants.pop(0))))
            elif s == "F":
                args.append(numba.types.BooleanLiteral(typecode == "f"))
            else:
                args.append({"i": numba.int64, "f": numba.float64, "b": numba.boolean}[s])
        return tuple(args)

    def __missing__(self, key):
        fn = self.fn
        if isinstance(fn, numba.core.dispatcher.Dispatcher):
            # compile() loads the signature from the disk cache when it is there; it returns the
            # entry point, the same function numba's dispatcher calls once it has found it.
            fn = fn.compile(self.signature(key))
        self[key] = fn
        return fn

    def entries(self, *constants):
        """``{typecode: entry}`` for every `array.array` typecode: ``table[typecode, *constants]``
        reached by one lookup of the typecode alone, in a plain dict; each entry is compiled (or
        loaded from the disk cache) at its first call (`_FirstCall`). Why: building and hashing
        a key tuple on every call, and a lookup in a dict subclass (this table's `__missing__` is
        what compiles), each cost about as much as the Python call in front of it (measured:
        benchmarks/RESULTS.md, by_typecode.entries). The fast backend's functions for small
        elementwise ops reach their machine code this way."""
        view = {}
        for typecode in array.typecodes:
            view[typecode] = _FirstCall(self, view, typecode, constants)
        return view

    def by_op(self, ops):
        """``view[op][typecode]`` for the op codes `ops` of an ``L`` table: a list indexed by op
        code (quicker to index than a dict) of `entries` views."""
        view = [None] * (max(ops) + 1)
        for op in ops:
            view[op] = self.entries(op)
        return view


class _FirstCall:
    """Stands in for a table's entry in an `entries` view until its first call, which fetches the
    entry from the table (compiling or loading it) and puts it in the view in its place."""

    __slots__ = ("table", "view", "typecode", "constants")

    def __init__(self, table, view, typecode, constants):
        self.table, self.view, self.typecode, self.constants = table, view, typecode, constants

    def __call__(self, *args):
        key = (self.typecode, *self.constants) if self.constants else self.typecode
        entry = self.view[self.typecode] = self.table[key]
        return entry(*args)


# --------------------------------------------------------------------------- the compile message

# Called (with no arguments) the first time numba compiles a kernel of tinyattn's in this process:
# tinyattn/fast/__init__.py sets it to ahead.start, which starts the compile-ahead process and
# returns it (None where it does not start).
on_first_compile = None


class _CompileMessage(_event.Listener):
    """Says on stderr what this process waits for while numba compiles tinyattn's kernels: one
    line at the first compile (which kernel; that the machine code is cached), and, at exit, how
    many it compiled and in how long. A process that only loads machine code from the disk cache
    says nothing: the message appears whenever something compiles, which is a first run, but
    also a later program using a kernel no earlier run needed, or a run after a kernel changed.
    The first compile also calls `on_first_compile`."""

    def __init__(self):
        self.count, self.seconds, self.start, self.said = 0, 0.0, 0.0, False
        self.open = []      # per compile under way: is it a kernel of ours, compiled at the top?

    def on_start(self, event):
        self.open.append(not self.open and self._begin(event))

    def _begin(self, event):
        disp = event.data.get("dispatcher") if isinstance(event.data, dict) else None
        fn = getattr(disp, "py_func", None)
        module = getattr(fn, "__module__", "") or ""
        if not module.startswith("tinyattn"):
            return False
        self.start = time.perf_counter()
        if not self.said:
            self.said = True
            helper = on_first_compile() if on_first_compile is not None else None
            if os.environ.get("TINYATTN_QUIET_COMPILE") != "1":
                name = f"{module.rsplit('.', 1)[-1]}.{fn.__name__}"
                helps = "; a second process helps" if helper is not None else ""
                print(f"tinyattn: compiling numba kernels for this CPU, first {name} (0.1-5 s "
                      f"each; a training step needs a few dozen{helps}). The machine code is "
                      f"cached on disk: later runs load it ...", file=sys.stderr, flush=True)
                atexit.register(self.summary)
        return True

    def on_end(self, event):
        if self.open.pop():
            self.count += 1
            self.seconds += time.perf_counter() - self.start

    def summary(self):
        print(f"tinyattn: compiled {self.count} kernel{'s' if self.count != 1 else ''} in "
              f"{self.seconds:.1f} s; later runs load them from the cache", file=sys.stderr,
              flush=True)


if not numba.config.DISABLE_JIT:
    _event.register("numba:compile", _CompileMessage())
