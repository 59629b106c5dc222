"""Exercise `log_softmax` (chapter 2): log-softmax and the cross-entropy loss, without overflow.

Plugged in as nn.functional.cross_entropy (for 2-d logits and the default arguments); the demo
is order_matters, whose three models then train on the student's loss.
"""
import random

from .. import backend
from .. import dtypes as _dt
from ..creation import tensor
from ..nn import functional as F
from ..ops.reduce import logsumexp
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "log_softmax"
CHAPTER = 2
TITLE = "log-softmax and cross-entropy, stable for any logits, twice differentiable"
FUNCTIONS = ("log_softmax", "cross_entropy")

SKELETON = '''"""Exercise log_softmax (tour chapter 2, docs/02-kernels.md section 2.7): log-softmax and cross-entropy.

Over the last dim of x (..., C):

    log_softmax(x)_c = x_c - m - log(sum_j exp(x_j - m))        m = max_j x_j

and for logits (N, C) and integer targets t (N,) (int64, each in 0..C-1), the mean loss

    cross_entropy(logits, t) = -(1/N) sum_n log_softmax(logits)[n, t_n]

log(sum exp(x)) computed as written overflows for logits of ~1000 (exp(1000) = inf): the
subtracted maximum keeps every exp() argument <= 0 and cancels. Build both from tensor ops
(x.max(dim, keepdim=True), .exp(), .sum(dim, keepdim=True), .log(), .mean(), .detach(),
tinyattn.nn.functional.one_hot(target, C)), so autograd differentiates them, twice (gather and
indexing are differentiable once only: pick the targets with a one-hot product). Not the
library's log_softmax, logsumexp or cross_entropy: those are the answer.
Grade it:  python -m tinyattn.exercises check log_softmax
"""


def log_softmax(x):
    """x (..., C) -> log_softmax over the last dim, (..., C)."""
    # TODO: m = the maximum over the last dim (keepdim); does m need a gradient?
    # TODO: x - m - log(sum exp(x - m))
    raise NotImplementedError("log_softmax")


def cross_entropy(logits, target):
    """logits (N, C), target (N,) int64 -> the mean negative log-likelihood, a 0-d tensor."""
    # TODO: pick log_softmax(logits)[n, target[n]] for every n, average, negate
    raise NotImplementedError("cross_entropy")
'''

HINTS = [
    "log(sum_j exp(x_j)) = m + log(sum_j exp(x_j - m)) for any m; with m the row's maximum "
    "every exp() argument is <= 0, so nothing overflows.",
    "The result does not depend on m, so m can be detached: x.max(-1, keepdim=True).values"
    ".detach() (the gradient through m would cancel anyway).",
    "cross_entropy: (logp * one_hot(target, C)).sum(1) is logp[n, target[n]] for every n, and "
    "stays twice differentiable; then -mean.",
]


def reference():
    """The library's logsumexp and one_hot (its fused log_softmax and cross_entropy nodes are
    differentiable once; these compositions twice)."""
    def log_softmax(x):
        return x - logsumexp(x, -1, keepdim=True)

    def cross_entropy(logits, target):
        picked = log_softmax(logits) * F.one_hot(target, logits.shape[1]).to(logits.dtype)
        return -picked.sum(1).mean()
    return {"log_softmax": log_softmax, "cross_entropy": cross_entropy}


def plug(ns, compiled=False):
    """nn.functional.cross_entropy is ns.cross_entropy for 2-d logits and default arguments."""
    library = F.cross_entropy

    def cross_entropy(input, target, *args, **kwargs):  # noqa: A002 - PyTorch's name
        if args or kwargs or input.ndim != 2 or target.dtype is not _dt.int64:
            return library(input, target, *args, **kwargs)
        return ns.cross_entropy(input, target)
    return backend.override(F, "cross_entropy", cross_entropy)


OVERFLOW = ("large logits overflow exp(): log(sum exp(x)) = m + log(sum exp(x - m)) with m the "
            "row's maximum")


def _log_softmax(ns, x, hint=None):
    what = {"x": x}
    got = call(ns.log_softmax, x, what=what, hint=hint or OVERFLOW)
    close(got, on_reference(F.log_softmax, x, -1), "log_softmax", input=what,
          hint=hint or "each row of exp(log_softmax(x)) must sum to 1")


def _cross_entropy(ns, logits, target, hint=None):
    what = {"logits": logits, "target": target}
    got = call(ns.cross_entropy, logits, target, what=what, hint=hint)
    close(got, on_reference(F.cross_entropy, logits, target), "cross_entropy", input=what,
          hint=hint or "the MEAN over the batch of -log_softmax(logits)[n, target[n]]")


def check_random(ns):
    def body(rng):
        N, C = rng.randint(1, 4), rng.randint(1, 5)
        dtype = rng.choice((_dt.float32, _dt.float64))
        lay = rng.choice(("contiguous", "transposed"))
        x = randn(rng, (N, C), dtype, 3.0, lay)
        _log_softmax(ns, x)
        _log_softmax(ns, randn(rng, (2, N, C), dtype, 3.0))
        _cross_entropy(ns, x, tensor([rng.randrange(C) for _ in range(N)], dtype=_dt.int64))
    forall(body)


def check_large(ns):
    x = tensor([[1000.0, 1001.0, 999.0], [1e4, -1e4, 1e4 - 2.0], [-1000.0, -1001.0, -1003.0]],
               dtype=_dt.float64)
    _log_softmax(ns, x, OVERFLOW)
    _cross_entropy(ns, x, tensor([1, 0, 2], dtype=_dt.int64), OVERFLOW)


def check_edges(ns):
    rng = random.Random(5)
    _log_softmax(ns, randn(rng, (3, 1)), "one class: log_softmax is 0")
    _cross_entropy(ns, randn(rng, (3, 1)), tensor([0, 0, 0], dtype=_dt.int64),
                   "one class: the loss is 0")
    _log_softmax(ns, randn(rng, (0, 4)), "no rows: an empty (0, 4) result")


def check_gradients(ns):
    rng = random.Random(6)
    x = randn(rng, (3, 4), scale=2.0).requires_grad_()
    t = tensor([3, 0, 1], dtype=_dt.int64)
    hint = "build it from differentiable tensor ops only (no .tolist(), no Python floats)"
    grads(lambda x: ns.log_softmax(x), (x,), "log_softmax", hint=hint, second=True)
    grads(lambda x: ns.cross_entropy(x, t), (x,), "cross_entropy", hint=hint, second=True)
    big = tensor([[800.0, 799.0, 801.0]], dtype=_dt.float64).requires_grad_()
    loss = call(ns.cross_entropy, big, tensor([0], dtype=_dt.int64), hint=OVERFLOW)
    loss.backward()
    close(big.grad, on_reference(lambda: F.softmax(big.detach(), -1) -
                                  tensor([[1.0, 0.0, 0.0]], dtype=_dt.float64)),
          "the gradient of cross_entropy at logits near 800 (softmax - one_hot)", hint=OVERFLOW)
    if big.grad is None:
        raise Failed("no gradient reached the logits", hint=hint)


CHECKS = [
    ("equal the library's on random shapes, float32/float64, transposed views", check_random),
    ("large logits (1e3, 1e4): no overflow", check_large),
    ("edges: one class, no rows", check_edges),
    ("gradcheck and gradgradcheck; the gradient at large logits", check_gradients),
]

DEMO = {"script": "order_matters", "metric": "positions_test_acc", "target": 0.95,
        "what": "held-out accuracy of self-attention with positions"}
