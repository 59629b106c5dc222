"""Exercise `sum_to_size` (chapter 1): the gradient of broadcasting, summed back to the input's shape.

Plugged in as the `sum_to` that ops/arithmetic.py's backward formulas call (add, sub, mul, div).
"""
import random

from .. import backend
from .. import dtypes as _dt
from ..ops import arithmetic
from ..ops.reduce import sum_to
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "sum_to_size"
CHAPTER = 1
TITLE = "the gradient of broadcasting: sum g back to the input's shape"
FUNCTIONS = ("sum_to",)

SKELETON = '''"""Exercise sum_to_size (tour chapter 1, docs/01-autograd.md section 1.4): the gradient of broadcasting.

When x of shape `shape` is broadcast to a bigger shape (x + y, x * y), each element of x is used
once for every position it was copied to, so its gradient is the SUM of g over those positions:

    g (the gradient of the broadcast result)  ->  sum over the dims x was broadcast along
      - the leading dims x does not have (x (3,) against (2, 3): dim 0 of g): summed away
      - the dims where x has size 1 and g does not ((2, 1) against (2, 3)): summed, size 1 kept

    g (2, 3) -> shape (3,):    g.sum(0)
    g (2, 3) -> shape (2, 1):  g.sum(1, keepdim=True)
    g (4, 2, 3) -> shape ():   the sum of everything

Tensor methods you may use: g.shape, g.ndim, g.sum(dim, keepdim=...), g.reshape(...).
(Not g.sum_to_size: that is the answer.) Return a Tensor of exactly `shape`.
Grade it:  python -m tinyattn.exercises check sum_to_size
"""


def sum_to(g, shape):
    """g (any shape that `shape` broadcasts to) -> a Tensor of shape `shape` (a tuple)."""
    # TODO: sum over the leading dims that `shape` does not have
    # TODO: sum, keeping the dim, where shape has 1 and g does not
    raise NotImplementedError("sum_to")
'''

HINTS = [
    "Count the leading dims first: lead = g.ndim - len(shape); all of them are summed away.",
    "After that, g and shape have the same number of dims; wherever shape[i] == 1 and g's size "
    "there is not, sum with keepdim=True so the dims stay aligned.",
    "shape () means: sum everything. A dim of size 0 sums to 0, not to nothing: g.sum keeps "
    "that right.",
]


def reference():
    return {"sum_to": lambda g, shape: sum_to(g, tuple(shape))}


def plug(ns, compiled=False):
    """The broadcasting gradients of add, sub, mul, div (ops/arithmetic.py) go through ns.sum_to."""
    return backend.override(arithmetic, "sum_to", ns.sum_to)


NOT_SUMMED = ("a broadcast gradient must be summed back to the input's shape: sum over the "
              "leading dims the input lacks, and (keepdim) over the dims where it has size 1")


def _compare(ns, g, shape):
    what = {"g": g, "shape": shape}
    got = call(ns.sum_to, g, shape, what=what, hint=NOT_SUMMED)
    want = on_reference(sum_to, g, shape)
    if hasattr(got, "shape") and tuple(got.shape) != tuple(shape):
        raise Failed(f"sum_to: the gradient has shape {tuple(got.shape)} but the input has shape "
                     f"{tuple(shape)}: not summed back", input=what, expected=want, got=got,
                     hint=NOT_SUMMED)
    close(got, want, "sum_to", input=what, hint=NOT_SUMMED)


def check_random(ns):
    def body(rng):
        gshape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 4)))
        kept = gshape[rng.randint(0, len(gshape)):]
        shape = tuple(1 if rng.random() < 0.5 else n for n in kept)
        dtype = rng.choice((_dt.float32, _dt.float64))
        _compare(ns, randn(rng, gshape, dtype, layout=rng.choice(("contiguous", "transposed"))),
                 shape)
    forall(body)


def check_edges(ns):
    rng = random.Random(1)
    for gshape, shape in (((2, 3), (2, 3)), ((2, 3), ()), ((4, 1, 3), (1, 1)), ((3,), (1,)),
                          ((1,), (1,)), ((0, 3), (1, 3)), ((2, 0), (0,))):
        _compare(ns, randn(rng, gshape), shape)


def check_plugged(ns):
    rng = random.Random(2)
    x, b, c = randn(rng, (2, 3)), randn(rng, (3,)), randn(rng, (2, 1))
    with plug(ns):
        grads(lambda x, b, c: x * b + c - b / (c * c + 1.0),
              (x.requires_grad_(), b.requires_grad_(), c.requires_grad_()),
              "x * b + c - b / (c*c + 1) with x (2, 3), b (3,), c (2, 1), your sum_to in the "
              "library", hint=NOT_SUMMED)


CHECKS = [
    ("equals the library's sum_to on random broadcasts, float32/float64, transposed views",
     check_random),
    ("edges: the same shape, shape (), size-1 dims, empty dims", check_edges),
    ("gradcheck of broadcasting add/mul/div with your sum_to plugged into the library",
     check_plugged),
]

DEMO = None
