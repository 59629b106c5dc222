"""Exercise `bahdanau` (chapter 4): Bahdanau's additive score and the context vector.

Plugged in as the additive_score and attention_context that nn.AdditiveAttention calls
(nn/rnn_attention.py); the demo is dates, a GRU encoder-decoder with Bahdanau attention.
"""
import contextlib
import random

from .. import backend
from .. import dtypes as _dt
from ..nn import rnn_attention as _rnn_attention
from ..ops.attention import additive_score, attention_context
from ..ops.softmax import softmax
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "bahdanau"
CHAPTER = 4
TITLE = "Bahdanau's additive score v^T tanh(W s + U h) and the context sum_j a_j h_j"
FUNCTIONS = ("additive_score", "context")

SKELETON = '''"""Exercise bahdanau (tour chapter 4, docs/04-seq2seq.md section 4.3): additive attention.

A decoder state s looks at the encoder outputs h_1 .. h_S. nn.AdditiveAttention projects both
first (W s: the projected query, U h_j + b: the projected keys), then

    e_j = v . tanh(U h_j + b + W s)        scores (B, S)       additive_score
    a   = softmax(e)                       weights (B, S)      (the layer does this)
    c   = sum_j a_j h_j                    context (B, H)      context

Shapes: projected_keys (B, S, A), projected_query (B, A), v (1, A) (the weight of a Linear(A,
1)), weights (B, S), keys (B, S, H). Tensor operations you may use: +, *, @, .tanh(),
.unsqueeze(dim), .squeeze(dim), .sum(dim), .transpose(...). Not the library's additive_score
or attention_context.
Grade it:  python -m tinyattn.exercises check bahdanau
"""


def additive_score(projected_keys, projected_query, v):
    """(B, S, A), (B, A), (1, A) -> scores (B, S): v . tanh(projected_keys[b, j] + projected_query[b])."""
    # TODO: add the query to every key position (broadcast over S), tanh, dot with v
    raise NotImplementedError("additive_score")


def context(weights, keys):
    """(B, S), (B, S, H) -> (B, H): sum_j weights[b, j] * keys[b, j]."""
    # TODO: the weighted sum of the keys over j
    raise NotImplementedError("context")
'''

HINTS = [
    "projected_query.unsqueeze(1) is (B, 1, A): added to (B, S, A) it broadcasts over the S "
    "source positions.",
    "The dot with v over A: (B, S, A) @ v.transpose(0, 1) is (B, S, 1); squeeze the last dim.",
    "context: (B, 1, S) @ (B, S, H) is (B, 1, H), or (weights.unsqueeze(2) * keys).sum(1).",
]


def reference():
    return {"additive_score": _additive_score,
            "context": attention_context}


def _additive_score(pk, q, v):
    """The fused op with v (1, A), as nn.AdditiveAttention passes it."""
    return additive_score(pk, q, v, check=False)


def plug(ns, compiled=False):
    """nn.AdditiveAttention scores and sums through ns."""
    stack = contextlib.ExitStack()
    stack.enter_context(backend.override(_rnn_attention, "additive_score",
                                         lambda pk, q, v, check=True: ns.additive_score(pk, q, v)))
    stack.enter_context(backend.override(_rnn_attention, "attention_context", ns.context))
    return stack


def _inputs(rng, dtype=_dt.float64):
    B, S, A, H = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 4), rng.randint(1, 4)
    return (randn(rng, (B, S, A), dtype), randn(rng, (B, A), dtype), randn(rng, (1, A), dtype),
            randn(rng, (B, S, H), dtype, layout=rng.choice(("contiguous", "transposed"))))


def _compare(ns, pk, q, v, keys):
    what = {"projected_keys": pk, "projected_query": q, "v": v}
    hint = "e_j = sum_a v[0, a] * tanh(pk[b, j, a] + q[b, a]): add first, tanh, then the dot"
    got = call(ns.additive_score, pk, q, v, what=what, hint=hint)
    close(got, on_reference(_additive_score, pk, q, v), "additive_score", input=what, hint=hint)
    w = on_reference(softmax, got.detach(), -1)
    what = {"weights": w, "keys": keys}
    hint = "context[b] = sum_j weights[b, j] * keys[b, j], an (B, H) tensor"
    got = call(ns.context, w, keys, what=what, hint=hint)
    close(got, on_reference(attention_context, w, keys), "context", input=what, hint=hint)


def check_random(ns):
    forall(lambda rng: _compare(ns, *_inputs(rng, rng.choice((_dt.float32, _dt.float64)))))


def check_edges(ns):
    rng = random.Random(10)
    for B, S, A, H in ((1, 1, 1, 1), (2, 6, 1, 3)):
        _compare(ns, randn(rng, (B, S, A)), randn(rng, (B, A)), randn(rng, (1, A)),
                 randn(rng, (B, S, H)))
    pk, q, v = randn(rng, (1, 3, 2), scale=50.0), randn(rng, (1, 2), scale=50.0), randn(rng, (1, 2))
    what = {"projected_keys": pk, "projected_query": q, "v": v}
    got = call(ns.additive_score, pk, q, v, what=what)
    close(got, on_reference(_additive_score, pk, q, v), "additive_score at large inputs (tanh "
          "saturates)", input=what, hint="tanh of large values is +-1, never inf or NaN")


def check_gradients(ns):
    rng = random.Random(11)
    pk, q, v, keys = (t.requires_grad_() for t in _inputs(rng))
    hint = "use differentiable tensor ops only (no .tolist(), no Python floats)"
    grads(ns.additive_score, (pk, q, v), "additive_score", hint=hint)
    w = softmax(randn(rng, tuple(keys.shape[:2])), -1).requires_grad_()
    grads(ns.context, (w, keys), "context", hint=hint)


def check_plugged(ns):
    rng = random.Random(12)
    layer = _rnn_attention.AdditiveAttention(3, 4, 5, dtype=_dt.float64)
    query, keys = randn(rng, (2, 3)), randn(rng, (2, 6, 4))
    want_c, want_w = layer(query, keys)
    with plug(ns):
        got_c, got_w = call(layer, query, keys, hint="your functions inside nn.AdditiveAttention")
    for name, got, want in (("weights", got_w, want_w), ("context", got_c, want_c)):
        close(got, want, f"nn.AdditiveAttention's {name} with your functions plugged in",
              hint="the layer passes v.weight of shape (1, A)")
    if not got_c.requires_grad:
        raise Failed("the context has no gradient inside the layer", hint="use tensor ops")


CHECKS = [
    ("equal the library's on random shapes, float32/float64", check_random),
    ("edges: one source position, A = 1, large inputs", check_edges),
    ("gradcheck (the library's fused score is differentiable once)", check_gradients),
    ("nn.AdditiveAttention with your functions plugged in", check_plugged),
]

DEMO = {"script": "dates", "metric": "exact", "target": 0.85,
        "what": "exact match on held-out dates", "explorer": True}
