"""The kernel decorators work on functions that have no source file (REPL, exec, the docs' snippets).

numba's disk cache needs a file to store the compiled code next to; without one, `cache=True`
raised "cannot cache function ...: no locator available" at decoration time."""
from array import array

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
