"""The kernel decorators work on functions that have no source file (REPL, exec, the docs' snippets).

numba's disk cache needs a file to store the compiled code next to; without one, `cache=True`
raised "cannot cache function ...: no locator available" at decoration time. And `out_of_line()`
keeps LLVM from inlining the function it is called in."""
from array import array

import numba
import pytest

from tinyattn.kernels.jit import out_of_line

SOURCE = '''
from tinyattn.kernels.jit import inline, kernel

@inline
def _twice(v):
    return 2.0 * v

@kernel
def double_plus_one(x, out, n):
    for i in range(n):
        out[i] = _twice(x[i]) + 1.0
'''


def test_kernel_defined_without_a_file_compiles_and_runs():
    namespace = {"__name__": "__not_a_module__"}
    exec(compile(SOURCE, "<typed at a prompt>", "exec"), namespace)
    x = array("d", [0.0, 1.5, -2.0])
    out = array("d", [0.0] * 3)
    namespace["double_plus_one"](x, out, 3)
    assert list(out) == [1.0, 4.0, -3.0]


OUT_OF_LINE = '''
from numba import njit
from tinyattn.kernels.jit import out_of_line

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
    ns = {"__name__": "__not_a_module__"}
    exec(compile(OUT_OF_LINE, "<out_of_line>", "exec"), ns)
    assert ns["calls_kept"](2.0) == 5.0 and ns["calls_plain"](2.0) == 5.0
    assert _calls(ns["calls_kept"], ns["kept"], 2.0), "out_of_line() did not keep the call"
    # the control: without out_of_line() LLVM inlines the same function (else this test could
    # not tell the difference)
    assert not _calls(ns["calls_plain"], ns["plain"], 2.0)
