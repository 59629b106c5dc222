"""The reference kernel backend: plain loops over flat `array.array` buffers.

Each file is one kernel family (`softmax.py`, `matmul.py`, ...). Its functions take buffers and
integers, write into an output buffer and return nothing; they know nothing of Tensors or
autograd. Each docstring gives the equation and the layout, and the loop under it is that
equation, written the plainest way. The ops call these functions through tinyattn/backend.py;
tinyattn/fast/ holds the same functions again, with the same names and arguments, written for
speed. The test suite holds the two equal.

`kernel` compiles a function with numba. With ``NUMBA_DISABLE_JIT=1`` it returns the function
unchanged: the same loops then run as Python, and a breakpoint stops in the loop that ran.

A kernel file calls only functions of its own file: numba's disk cache notices when a kernel's
own file changes, not when a helper in another file does.

Chapter 2 of the tour (docs/02-kernels.md) walks through this package.
"""
from numba import njit


def kernel(fn):
    """`fn` compiled by numba, its machine code cached on disk (``cache=True``). A division by
    zero gives inf or NaN, as in PyTorch, instead of raising (``error_model="numpy"``).
    A function with no file to cache beside (typed at a prompt, or exec'd) is compiled anew in
    each process."""
    try:
        return njit(cache=True, error_model="numpy")(fn)
    except RuntimeError as e:       # numba: "cannot cache function ...: no locator available"
        if "cannot cache" not in str(e):
            raise
        return njit(error_model="numpy")(fn)
