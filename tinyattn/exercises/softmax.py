"""Exercise `softmax` (chapter 2): the stable softmax kernel over flat buffers, forward and backward.

Plugged in as backend.softmax's softmax_forward / softmax_backward (the log-softmax calls still go
to the library's kernel); the demo is order_matters, whose attention layers and explorer then use
the student's weights.
"""
import contextlib
import math
from array import array

from .. import backend
from ..creation import tensor
from ..kernels import softmax as ref
from ..ops.softmax import softmax as ta_softmax
from .. import dtypes as _dt
from ._grader import call, close_lists, compiled as jit, forall, grads

NAME = "softmax"
CHAPTER = 2
TITLE = "the stable softmax kernel, forward and backward, over flat buffers"
FUNCTIONS = ("softmax_forward", "softmax_backward")

SKELETON = '''"""Exercise softmax (tour chapter 2, docs/02-kernels.md): the softmax kernel, forward and backward.

The kernels work on flat buffers (array.array or lists). x holds a contiguous (O, R, I) block:
O outer blocks of R rows of I numbers, element (o, r, i) at x[o*R*I + r*I + i]. The softmax runs
over r, for every (o, i) (over the last dim when I = 1):

    forward    y_r  = exp(x_r - m) / sum_j exp(x_j - m)        m = max_j x_j
    backward   dx_r = y_r * (g_r - sum_j g_j y_j)              g = dL/dy

Subtracting the maximum m cancels mathematically; it keeps exp() from overflowing on large
inputs. A row whose entries are all -inf (a query whose every key is masked) gets weights 0
(PyTorch gives NaN; the attention layers rely on the zeros), and a zero gradient.

Plain loops and the math module: no tinyattn, no NumPy. Write into `out`, return nothing.
Grade it:  python -m tinyattn.exercises check softmax
"""
import math


def softmax_forward(x, out, O, R, I):
    """out = softmax(x) over r, for every (o, i); x and out have O*R*I numbers."""
    # TODO: for each (o, i): the start of its row is o*R*I + i, its elements are I apart.
    # TODO: the row's maximum m; the sum of exp(x - m); then out = exp(x - m) / sum.
    # TODO: a row that is all -inf: zeros.
    raise NotImplementedError("softmax_forward")


def softmax_backward(g, y, out, O, R, I):
    """out = dL/dx given g = dL/dy and the forward's output y, each O*R*I numbers."""
    # TODO: for each (o, i): s = sum_r g_r * y_r, then out_r = y_r * (g_r - s).
    raise NotImplementedError("softmax_backward")
'''

HINTS = [
    "Walk one row at a time: for o in range(O), for i in range(I), the row's elements are at "
    "o*R*I + i + r*I for r in range(R).",
    "exp(1000.0) overflows (float64 stops near exp(709)). softmax(x) = softmax(x - c) for any "
    "c: take c = the row's maximum, so every exp() argument is <= 0.",
    "If the row's maximum is -inf every entry is -inf, and x - m is -inf - (-inf) = NaN: test "
    "for it first and write zeros.",
    "Backward: y depends on every x of its row, so dx_r = sum_j g_j dy_j/dx_r = y_r (g_r - "
    "sum_j g_j y_j). Compute the sum once per row, then a second loop writes out.",
]


def reference():
    """The library's reference kernels (kernels/softmax.py) with log=False."""
    return {"softmax_forward": lambda x, out, O, R, I: ref.softmax_forward(x, out, O, R, I, False),
            "softmax_backward": lambda g, y, out, O, R, I:
            ref.softmax_backward(g, y, out, O, R, I, False)}


def plug(ns, compiled=False):
    """Every softmax the library computes goes through ns (log_softmax stays the library's);
    `compiled`: numba compiles ns's functions first (for the demo's speed)."""
    fwd = jit(ns.softmax_forward) if compiled else ns.softmax_forward
    bwd = jit(ns.softmax_backward) if compiled else ns.softmax_backward
    lib_fwd, lib_bwd = backend.softmax.softmax_forward, backend.softmax.softmax_backward

    def forward(x, out, O, R, I, log):
        (lib_fwd if log else fwd)(x, out, O, R, I, *((log,) if log else ()))

    def backward(g, y, out, O, R, I, log):
        (lib_bwd if log else bwd)(g, y, out, O, R, I, *((log,) if log else ()))

    stack = contextlib.ExitStack()
    stack.enter_context(backend.override("softmax", "softmax_forward", forward))
    stack.enter_context(backend.override("softmax", "softmax_backward", backward))
    return stack


# ---------------------------------------------------------------------------- checks

def _rows(rng, typecode, scale=3.0):
    O, R, I = rng.randint(1, 3), rng.randint(1, 6), rng.choice((1, 1, 2, 3))
    x = array(typecode, [rng.gauss(0.0, scale) for _ in range(O * R * I)])
    return x, O, R, I


def _tol(typecode):
    return {"atol": 1e-6, "rtol": 1e-5} if typecode == "f" else {"atol": 1e-12, "rtol": 1e-9}


def _forward(ns, x, O, R, I, hint):
    got, want = array(x.typecode, [0.0]) * len(x), array(x.typecode, [0.0]) * len(x)
    what = {"x": x, "O": O, "R": R, "I": I}
    call(ns.softmax_forward, x, got, O, R, I, what=what, hint=hint)
    ref.softmax_forward(x, want, O, R, I, False)
    close_lists(got, want, "softmax_forward", input=what, hint=hint, **_tol(x.typecode))


def check_forward(ns):
    def body(rng):
        _forward(ns, *_rows(rng, rng.choice("fd")),
                 hint="each row (o, :, i) must sum to 1; check which elements belong to a row "
                      "when I > 1 (they are I apart)")
    forall(body)


OVERFLOW = ("large inputs overflow exp(): softmax(x) = softmax(x - c) for any c; subtract the "
            "row's maximum before exp()")


def check_large(ns):
    for x in ([1000.0, 1001.0, 999.0], [1e4, -1e4, 1e4 - 1.0], [-1000.0, -1001.0, -1002.0]):
        _forward(ns, array("d", x), 1, 3, 1, hint=OVERFLOW)


def check_masked_row(ns):
    inf = math.inf
    _forward(ns, array("d", [-inf, -inf, -inf, 0.5, -inf, 2.0]), 2, 3, 1,
             hint="a row of all -inf (every key masked): its maximum is -inf and x - m is NaN; "
                  "give that row zeros")


def check_tiny(ns):
    _forward(ns, array("d", [3.0, -2.0]), 2, 1, 1, hint="a row of one element has weight 1")
    _forward(ns, array("d", []), 0, 4, 1, hint="no rows (O = 0): nothing to do")
    _forward(ns, array("d", [0.1, 0.2, 0.3, 0.4]), 1, 2, 2,
             hint="with I = 2 the row of (o, i) holds x[o*R*I + r*I + i]: two rows interleaved")


def check_backward(ns):
    def body(rng):
        x, O, R, I = _rows(rng, rng.choice("fd"))
        y = array(x.typecode, [0.0]) * len(x)
        ref.softmax_forward(x, y, O, R, I, False)
        g = array(x.typecode, [rng.gauss(0.0, 1.0) for _ in x])
        got, want = array(x.typecode, [0.0]) * len(x), array(x.typecode, [0.0]) * len(x)
        what = {"g": g, "y": y, "O": O, "R": R, "I": I}
        hint = "dx_r = y_r (g_r - s) with ONE s per row: s = sum over the row of g_j y_j"
        call(ns.softmax_backward, g, y, got, O, R, I, what=what, hint=hint)
        ref.softmax_backward(g, y, want, O, R, I, False)
        close_lists(got, want, "softmax_backward", input=what, hint=hint, **_tol(x.typecode))
    forall(body)


def check_plugged(ns):
    x = tensor([[0.3, -1.2, 2.0, 0.1], [1.5, 0.0, -0.7, 0.9], [0.2, 0.4, -0.1, -2.2]],
               dtype=_dt.float64)
    with plug(ns):
        for dim in (-1, 0):
            grads(lambda t: ta_softmax(t, dim), (x.requires_grad_(),),
                  f"ta.softmax(x, dim={dim}) with your kernels in the library",
                  hint="forward and backward must agree: gradcheck compares your backward with "
                       "finite differences of your forward")


CHECKS = [
    ("forward equals the reference kernel on random (O, R, I) and float32/float64", check_forward),
    ("forward on large inputs (1e3, 1e4): no overflow", check_large),
    ("forward on a fully masked row (all -inf): zeros", check_masked_row),
    ("forward on one-element rows, no rows, interleaved rows (I = 2)", check_tiny),
    ("backward equals the reference kernel on random inputs", check_backward),
    ("gradcheck of ta.softmax with your kernels plugged into the library", check_plugged),
]

DEMO = {"script": "order_matters", "metric": "positions_test_acc", "target": 0.95,
        "what": "held-out accuracy of self-attention with positions", "explorer": True}
