"""Exercise `sdpa` (chapter 3): scaled dot-product attention with both mask conventions.

Plugged in as the scaled_dot_product_attention that nn.SelfAttention calls (nn/attention.py);
the demo is order_matters, whose explorer.html then shows the student's weights.
"""
import math
import random

from .. import backend
from .. import dtypes as _dt
from ..creation import tensor
from ..nn import attention as _attention
from ..ops.attention import causal_mask, scaled_dot_product_attention
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "sdpa"
CHAPTER = 3
TITLE = "scaled dot-product attention, bool (True = attend) and additive float masks"
FUNCTIONS = ("scaled_dot_product_attention",)

SKELETON = '''"""Exercise sdpa (tour chapter 3, docs/03-attention.md): scaled dot-product attention.

query (..., L, E), key (..., S, E), value (..., S, Ev); the leading dims (batch, heads) match.

    scores  = query @ key^T * scale          (..., L, S)   scale = 1 / sqrt(E) unless given
    scores  = scores + mask                  a float mask is ADDED (0 keeps, -inf removes)
            or masked where mask is False    a bool mask: True = MAY attend (PyTorch's SDPA)
    weights = softmax(scores, dim=-1)        (..., L, S)   each row sums to 1
    out     = weights @ value                (..., L, Ev)

The mask broadcasts against (..., L, S) (often it is just (L, S)). Careful: in
scaled_dot_product_attention a bool True means "may attend"; nn.MultiheadAttention's attn_mask
uses the opposite. A query whose keys are ALL masked gets weights 0 and output 0 (tinyattn's
softmax of an all -inf row is 0). Why 1/sqrt(E): q.k is a sum of E products, its spread grows
like sqrt(E), and large scores saturate the softmax (tiny gradients).

Tensor operations you may use: @, .transpose(-2, -1), *, +, tinyattn.softmax(x, dim),
tinyattn.where(cond, a, b), math.sqrt, float("-inf"). Not scaled_dot_product_attention.
Grade it:  python -m tinyattn.exercises check sdpa
"""
import math

import tinyattn as ta


def scaled_dot_product_attention(query, key, value, attn_mask=None, scale=None):
    """-> (out (..., L, Ev), weights (..., L, S))."""
    # TODO: the scores, scaled
    # TODO: the mask: bool (True = may attend) or float (added)
    # TODO: softmax over the keys, then the weighted sum of the values
    raise NotImplementedError("scaled_dot_product_attention")
'''

HINTS = [
    "scores = query @ key.transpose(-2, -1) * scale, with scale = 1 / math.sqrt(E) when scale "
    "is None, E = query.shape[-1].",
    "A bool mask becomes an additive one: ta.where(mask, 0.0, float('-inf')) is 0 where True "
    "(may attend) and -inf where False; a float mask is added as it is.",
    "Return both: out = weights @ value, and the weights themselves (the explorer draws them).",
]


def reference():
    return {"scaled_dot_product_attention": lambda q, k, v, attn_mask=None, scale=None:
            scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale,
                                         return_weights=True)}


def plug(ns, compiled=False):
    """nn.SelfAttention (and nn.MultiheadAttention when it returns no weights) attend through ns
    (nn/attention.py); dropout and grouped-query attention stay the library's."""
    library = _attention.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
             enable_gqa=False, return_weights=False):
        if dropout_p > 0.0 or enable_gqa:
            return library(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                           enable_gqa=enable_gqa, return_weights=return_weights)
        if is_causal:
            attn_mask = causal_mask(query.shape[-2], key.shape[-2], convention="sdpa")
        out, weights = ns.scaled_dot_product_attention(query, key, value, attn_mask, scale)
        return (out, weights) if return_weights else out
    return backend.override(_attention, "scaled_dot_product_attention", sdpa)


SCALE = ("the scores must be divided by sqrt(E) (E = the query's last dim) unless `scale` is "
         "given: missing 1/sqrt(d)")
POLARITY = ("the bool mask's polarity is flipped: in scaled_dot_product_attention True means "
            "MAY attend (False positions are removed)")


def _diagnose(ns, got, q, k, v, mask, scale):
    """A pointed message for the usual mistakes, found by comparing with their results."""
    E = q.shape[-1]
    wrong = []
    if scale is None:
        wrong.append((1.0, mask, "missing 1/sqrt(d): " + SCALE))
        wrong.append((1.0 / E, mask, "divided by E instead of sqrt(E): " + SCALE))
    if mask is not None and mask.dtype is _dt.bool:
        wrong.append((scale, mask.logical_not(), POLARITY))
    for s, m, message in wrong:
        try:
            _, w = on_reference(reference()["scaled_dot_product_attention"], q, k, v, m, s)
            close(got[1], w, "")
        except Failed:
            continue
        return message
    return None


def _compare(ns, q, k, v, mask=None, scale=None, hint=None):
    what = {"query": q, "key": k, "value": v, "attn_mask": mask, "scale": scale}
    got = call(ns.scaled_dot_product_attention, q, k, v, mask, scale, what=what, hint=hint)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Failed("return a pair (out, weights)", input=what, got=got,
                     hint="return weights @ value, weights")
    want = on_reference(reference()["scaled_dot_product_attention"], q, k, v, mask, scale)
    for i, name in ((1, "weights"), (0, "out")):
        try:
            close(got[i], want[i], name, input=what, hint=hint)
        except Failed as f:
            pointed = _diagnose(ns, got, q, k, v, mask, scale)
            if pointed:
                f.what, f.hint = f"{name}: {pointed.split(': ')[0]}", pointed
            raise


def _qkv(rng, dtype=_dt.float64, lead=None):
    lead = tuple(rng.randint(1, 2) for _ in range(rng.randint(0, 2))) if lead is None else lead
    L, S, E, Ev = rng.randint(1, 4), rng.randint(1, 4), rng.choice((2, 4, 9)), rng.randint(1, 3)
    lay = lambda: rng.choice(("contiguous", "transposed"))  # noqa: E731
    return (randn(rng, lead + (L, E), dtype, 1.5, lay()), randn(rng, lead + (S, E), dtype, 1.5,
            lay()), randn(rng, lead + (S, Ev), dtype, 1.0, lay()))


def check_random(ns):
    def body(rng):
        _compare(ns, *_qkv(rng, rng.choice((_dt.float32, _dt.float64))),
                 hint="weights = softmax(q k^T / sqrt(E)) over the keys; out = weights @ v")
    forall(body)


def check_scale(ns):
    rng = random.Random(7)
    q, k, v = (randn(rng, (3, 16), scale=2.0) for _ in range(3))
    _compare(ns, q, k, v, hint=SCALE)
    _compare(ns, q, k, v, scale=0.5, hint="an explicit scale replaces 1/sqrt(E)")


def check_bool_mask(ns):
    def body(rng):
        q, k, v = _qkv(rng, lead=())
        L, S = q.shape[0], k.shape[0]
        mask = tensor([[j == i % S or rng.random() < 0.6 for j in range(S)] for i in range(L)])
        _compare(ns, q, k, v, mask, hint=POLARITY)
    forall(body)


def check_float_mask(ns):
    def body(rng):
        q, k, v = _qkv(rng, lead=(2,))
        L, S = q.shape[-2], k.shape[-2]
        mask = tensor([[-math.inf if (j != 0 and rng.random() < 0.3) else rng.gauss(0.0, 1.0)
                        for j in range(S)] for i in range(L)], dtype=_dt.float64)
        _compare(ns, q, k, v, mask, hint="a float mask is added to the scores as it is (0 "
                                         "keeps, -inf removes, other values shift)")
    forall(body)


def check_fully_masked(ns):
    rng = random.Random(8)
    q, k, v = randn(rng, (3, 4)), randn(rng, (5, 4)), randn(rng, (5, 2))
    mask = tensor([[True, False, True, False, False], [False] * 5, [True] * 5])
    _compare(ns, q, k, v, mask, hint="a query whose every key is masked gets weights 0 and "
                                     "output 0 (ta.softmax of an all -inf row gives zeros)")
    _compare(ns, q, k, v, tensor([[0.0] * 5, [-math.inf] * 5, [0.0] * 5], dtype=_dt.float64),
             hint="a float mask of all -inf on a row: weights 0, output 0")
    _compare(ns, randn(rng, (1, 4)), randn(rng, (1, 4)), randn(rng, (1, 1)),
             hint="one query, one key: its weight is 1")


def check_gradients(ns):
    rng = random.Random(9)
    q, k, v = (randn(rng, s).requires_grad_() for s in ((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    mask = tensor([[True, True, False, True, False]] * 3)
    grads(lambda q, k, v: ns.scaled_dot_product_attention(q, k, v, mask, None)[0], (q, k, v),
          "out with respect to query, key, value",
          hint="use differentiable tensor ops only (no .tolist(), no Python floats)")


CHECKS = [
    ("equals the library's on random shapes, batch dims, float32/float64, transposed views",
     check_random),
    ("the 1/sqrt(E) scale, and an explicit scale", check_scale),
    ("bool masks: True = may attend", check_bool_mask),
    ("float masks: added to the scores", check_float_mask),
    ("fully masked rows give zeros; one query and one key", check_fully_masked),
    ("gradcheck with a mask (the library's softmax is differentiable once)", check_gradients),
]

DEMO = {"script": "order_matters", "metric": "positions_test_acc", "target": 0.95,
        "what": "held-out accuracy of self-attention with positions", "explorer": True}
