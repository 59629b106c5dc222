"""The kernel decorators work on functions that have no source file (REPL, exec, the docs' snippets).

numba's disk cache needs a file to store the compiled code next to; without one, numba's own
`cache=True` raises "cannot cache function ...: no locator available" at decoration time. And
`out_of_line()` keeps LLVM from inlining the function it is called in; `aligned_loop()` starts a
loop at a 64-byte boundary."""
from array import array

import numba
import pytest

from tinyattn.fast.jit import aligned_loop, out_of_line

SOURCE = '''
from tinyattn.fast.jit import inline, kernel

@inline
def _twice(v):
    return 2.0 * v

@kernel
def double_plus_one(x, out, n):
    for i in range(n):
        out[i] = _twice(x[i]) + 1.0
'''


def _run_source(source, filename):
    """The namespace of ``source`` run as a file-less module (like code typed at a prompt)."""
    namespace = {"__name__": "__not_a_module__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_kernel_defined_without_a_file_compiles_and_runs():
    namespace = _run_source(SOURCE, "<typed at a prompt>")
    x = array("d", [0.0, 1.5, -2.0])
    out = array("d", [0.0] * 3)
    namespace["double_plus_one"](x, out, 3)
    assert list(out) == [1.0, 4.0, -3.0]


OUT_OF_LINE = '''
from numba import njit
from tinyattn.fast.jit import out_of_line

@njit
def kept(x):
    out_of_line()
    return x * 3.0 + 1.0

@njit
def plain(x):
    return x * 3.0 + 1.0

@njit
def calls_kept(x):
    return kept(x) - 2.0

@njit
def calls_plain(x):
    return plain(x) - 2.0
'''


def _calls(caller, callee, arg):
    """The calls of `callee` left in `caller`'s optimised LLVM IR (none if LLVM inlined it)."""
    caller(arg)
    name = callee.overloads[callee.signatures[0]].fndesc.mangled_name
    return [line for line in caller.inspect_llvm(caller.signatures[0]).splitlines()
            if "call " in line and f"@{name}(" in line]


def test_out_of_line_keeps_llvm_from_inlining_the_function():
    if numba.config.DISABLE_JIT:
        assert out_of_line() is None          # interpreted: a no-op
        pytest.skip("no LLVM IR when numba's JIT is disabled")
    ns = _run_source(OUT_OF_LINE, "<out_of_line>")
    assert ns["calls_kept"](2.0) == 5.0 and ns["calls_plain"](2.0) == 5.0
    assert _calls(ns["calls_kept"], ns["kept"], 2.0), "out_of_line() did not keep the call"
    # the control: without out_of_line() LLVM inlines the same function (else this test could
    # not tell the difference)
    assert not _calls(ns["calls_plain"], ns["plain"], 2.0)


ALIGNED = '''
from numba import njit
from tinyattn.fast.jit import aligned_loop

@njit
def aligned(x, n, m):
    s = 0.0
    for j in range(m):              # an outer loop: only the inner one is marked
        for i in range(n):
            aligned_loop()
            s += x[i] * 1.5
    return s

@njit
def plain(x, n, m):
    s = 0.0
    for j in range(m):
        for i in range(n):
            s += x[i] * 1.5
    return s
'''


def _loop_alignments(fn):
    """The alignment of every aligned block in fn's machine code, in bytes (from `.p2align k`)."""
    asm = fn.inspect_asm(fn.signatures[0])
    return {2 ** int(line.split()[1].rstrip(",")) for line in asm.splitlines()
            if line.strip().startswith(".p2align")}


def test_aligned_loop_puts_the_loop_at_a_64_byte_boundary():
    if numba.config.DISABLE_JIT:
        assert aligned_loop() is None          # interpreted: a no-op
        pytest.skip("no machine code when numba's JIT is disabled")
    ns = _run_source(ALIGNED, "<aligned_loop>")
    x = array("d", [1.0, 2.0, 3.0])
    assert ns["aligned"](x, 3, 2) == ns["plain"](x, 3, 2) == 18.0
    assert 64 in _loop_alignments(ns["aligned"]), "aligned_loop() did not align the loop"
    # the control: LLVM's own choice is less (else this test could not tell the difference)
    assert max(_loop_alignments(ns["plain"])) < 64
    # and it is the loop metadata that did it
    ir = ns["aligned"].inspect_llvm(ns["aligned"].signatures[0])
    assert '!"llvm.loop.align", i32 64' in ir
