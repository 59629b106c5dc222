"""Exercise `flash` (chapter 10): the online-softmax forward of FlashAttention, over key tiles.

Checked against scaled_dot_product_attention (whose fused path is kernels/flash.py) and against
the log-sum-exp of the scores, for every tile size.
"""
import math
import random

from .. import dtypes as _dt
from ..ops.attention import scaled_dot_product_attention
from ..ops.reduce import logsumexp
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "flash"
CHAPTER = 10
TITLE = "FlashAttention's forward: online softmax over tiles of keys, no L x S matrix"
FUNCTIONS = ("flash_forward",)

SKELETON = '''"""Exercise flash (tour chapter 10, docs/10-flash-attention.md sections 10.3-10.4): online softmax.

Attention out = softmax(q k^T * scale) v, computed one TILE of keys at a time, never holding
the (L, S) matrix. For each query row keep a running maximum m, a running sum l and an
unnormalised output acc; for each tile of keys K_t, V_t (rows j0 .. j0 + tile - 1):

    s     = q @ K_t^T * scale                      (L, tile)     scale = 1 / sqrt(E)
    m_new = max(m, max_j s)                        (L, 1)
    c     = exp(m - m_new)                         rescales what was summed with the old max
    p     = exp(s - m_new)                         (L, tile)
    l     = c * l + sum_j p                        (L, 1)
    acc   = c * acc + p @ V_t                      (L, Ev)
    m     = m_new

At the end out = acc / l and lse = m + log(l) (the log-sum-exp of each row's scores, what the
backward needs). Start with m = -inf, l = 0, acc = 0 (exp(-inf - m_new) = 0).
q (L, E), k (S, E), v (S, Ev); S >= 1; the last tile may be shorter.
Tensor ops you may use: @, .narrow(0, j0, n), .max(dim, keepdim=True).values,
tinyattn.maximum, .exp(), .log(), .sum(dim, keepdim=True), tinyattn.full, tinyattn.zeros.
Grade it:  python -m tinyattn.exercises check flash
"""
import math

import tinyattn as ta


def flash_forward(q, k, v, tile):
    """q (L, E), k (S, E), v (S, Ev), tile >= 1 -> (out (L, Ev), lse (L,))."""
    # TODO: m = -inf, l = 0, acc = 0 for every query row
    # TODO: for each tile of keys: the update above
    # TODO: out = acc / l, lse = m + log(l)
    raise NotImplementedError("flash_forward")
'''

HINTS = [
    "Loop j0 over range(0, S, tile); n = min(tile, S - j0); K_t = k.narrow(0, j0, n).",
    "m_new = ta.maximum(m, s.max(-1, keepdim=True).values); the first tile has m = -inf, and "
    "exp(-inf - m_new) = 0 wipes the empty l and acc, as it should.",
    "Forgetting to rescale l and acc by c = exp(m - m_new) when a later tile has a larger "
    "score is the classic bug: the result is then right only when the maximum is in tile 0.",
]


def _flash_forward(q, k, v, tile):
    """The library's attention (its fused flash path where it applies) and logsumexp."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = scaled_dot_product_attention(q, k, v)
    return out, logsumexp(q @ k.transpose(0, 1) * scale, -1)


def reference():
    return {"flash_forward": _flash_forward}


# Nothing in the library calls this computation through a name a `with` block can replace:
# the checks compare it with the library directly, and there is no demo to plug it into.
plug = None


RESCALE = ("when a tile raises the running maximum, the running sum l and the output acc "
           "summed so far must be rescaled by exp(m_old - m_new)")


def _compare(ns, q, k, v, tile, hint=RESCALE):
    what = {"q": q, "k": k, "v": v, "tile": tile}
    got = call(ns.flash_forward, q, k, v, tile, what=what, hint=hint)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Failed("return a pair (out, lse)", input=what, got=got, hint="return out, lse")
    want = on_reference(_flash_forward, q, k, v, tile)
    close(got[0], want[0], "out", input=what, hint=hint)
    close(got[1], want[1], "lse", input=what, hint="lse = m + log(l) per query row, an (L,) "
                                                   "tensor")


def _inputs(rng, dtype=_dt.float64, scale=1.0):
    L, S, E, Ev = rng.randint(1, 4), rng.randint(1, 9), rng.randint(1, 4), rng.randint(1, 3)
    return (randn(rng, (L, E), dtype, scale), randn(rng, (S, E), dtype, scale),
            randn(rng, (S, Ev), dtype))


def check_random(ns):
    def body(rng):
        q, k, v = _inputs(rng, rng.choice((_dt.float32, _dt.float64)))
        _compare(ns, q, k, v, rng.randint(1, 4))
    forall(body)


def check_tiles(ns):
    rng = random.Random(27)
    q, k, v = _inputs(rng)
    S = k.shape[0]
    for tile in (1, 2, 3, S, S + 5):
        _compare(ns, q, k, v, tile)
    # the largest score in the LAST tile: rescaling is what makes this right
    q = randn(rng, (2, 2))
    k = randn(rng, (6, 2), scale=0.1)
    k2 = k.clone()
    k2[5] = q[0] * 3.0
    _compare(ns, q, k2, randn(rng, (6, 2)), 2)


def check_large(ns):
    rng = random.Random(28)
    q, k, v = _inputs(rng, scale=30.0)
    _compare(ns, q, k, v, 2, hint="scores of several hundred overflow exp() unless every exp "
                                  "argument is a score minus the running maximum")
    _compare(ns, randn(rng, (1, 3)), randn(rng, (1, 3)), randn(rng, (1, 2)), 4,
             hint="one key: its weight is 1, out = v, lse = its score")


def check_gradients(ns):
    rng = random.Random(29)
    q, k, v = (t.requires_grad_() for t in _inputs(rng))
    grads(lambda q, k, v: ns.flash_forward(q, k, v, 2), (q, k, v), "out and lse",
          hint="keep everything in tensor ops: the same code then gives the gradients")


CHECKS = [
    ("equals attention and its log-sum-exp on random shapes and tile sizes, float32/float64",
     check_random),
    ("every tile size, and the maximum arriving in the last tile", check_tiles),
    ("large scores (no overflow); a single key", check_large),
    ("gradcheck", check_gradients),
]

DEMO = None
