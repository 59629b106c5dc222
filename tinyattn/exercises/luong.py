"""Exercise `luong` (chapter 4): Luong's general score s^T W_a h.

Plugged in as the score of nn.LuongAttention(score="general") (nn/rnn_attention.py): the layer's
forward is replaced by one that scores with the student's function and then masks, softmaxes and
sums as the library does.
"""
import random

from .. import backend
from .. import dtypes as _dt
from ..nn import rnn_attention as _rnn_attention
from ..ops.matmul import matmul
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "luong"
CHAPTER = 4
TITLE = "Luong's general score s^T W_a h_j for every source position"
FUNCTIONS = ("general_score",)

SKELETON = '''"""Exercise luong (tour chapter 4, docs/04-seq2seq.md section 4.4): Luong's general score.

The decoder's current state s (B, H_dec) scores every encoder output h_j (keys (B, S, H_enc))
through a matrix W_a (H_dec, H_enc):

    e_j = s^T W_a h_j                      scores (B, S)

(then a = softmax(e) and c = sum_j a_j h_j, as in every attention; the layer does that). Do it
for all j at once: W_a h_j for every j is one matmul, and so is the dot with s.
Tensor operations you may use: @, .transpose(...), .unsqueeze(dim), .squeeze(dim), .sum(dim).
Grade it:  python -m tinyattn.exercises check luong
"""


def general_score(query, keys, W_a):
    """query (B, H_dec), keys (B, S, H_enc), W_a (H_dec, H_enc) -> scores (B, S)."""
    # TODO: project the keys (or the query) through W_a, then one dot product per position
    raise NotImplementedError("general_score")
'''

HINTS = [
    "keys @ W_a.transpose(0, 1) is (B, S, H_dec): W_a h_j for every j at once.",
    "Then the dot with s for every j: (B, S, H_dec) @ query.unsqueeze(2) (B, H_dec, 1) is "
    "(B, S, 1); squeeze(2).",
    "Or the other way round: (query @ W_a) is (B, H_enc), and dot it with every key.",
]


def _score(query, keys, W_a):
    """What LuongAttention computes for score='general': (W_a h_j) . s."""
    pk = matmul(keys, W_a.transpose(0, 1))                              # (B, S, H_dec)
    return matmul(pk, query.unsqueeze(2)).squeeze(2)                     # (B, S)


def reference():
    """The layer's own computation: nn.LuongAttention(score='general') with W_a as its weight."""
    def general_score(query, keys, W_a):
        layer = _rnn_attention.LuongAttention(query.shape[1], keys.shape[2], "general",
                                              dtype=query.dtype)
        return _score(query, keys, W_a) if layer.score == "general" else None
    return {"general_score": general_score}


def plug(ns, compiled=False):
    """nn.LuongAttention(score='general') scores with ns.general_score."""
    library = _rnn_attention.LuongAttention.forward

    def forward(self, query, keys, key_padding_mask=None, projected_keys=None):
        if self.score != "general":
            return library(self, query, keys, key_padding_mask, projected_keys)
        _rnn_attention._check("LuongAttention", query, keys, key_padding_mask, self.query_size,
                              self.key_size)
        scores = ns.general_score(query, keys, self.W_a.weight)
        return _rnn_attention._weigh_keys(scores, keys, key_padding_mask)
    return backend.override(_rnn_attention.LuongAttention, "forward", forward)


HINT = "e_j = s . (W_a h_j) with W_a (H_dec, H_enc): check which side of W_a each vector goes"


def _compare(ns, q, keys, W):
    what = {"query": q, "keys": keys, "W_a": W}
    got = call(ns.general_score, q, keys, W, what=what, hint=HINT)
    close(got, on_reference(_score, q, keys, W), "general_score", input=what, hint=HINT)


def _inputs(rng, dtype=_dt.float64, square=False):
    B, S, Hd = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 4)
    He = Hd if square else rng.randint(1, 4)
    lay = lambda: rng.choice(("contiguous", "transposed"))  # noqa: E731
    return (randn(rng, (B, Hd), dtype), randn(rng, (B, S, He), dtype, layout=lay()),
            randn(rng, (Hd, He), dtype, layout=lay()))


def check_random(ns):
    forall(lambda rng: _compare(ns, *_inputs(rng, rng.choice((_dt.float32, _dt.float64)))))


def check_asymmetric(ns):
    rng = random.Random(13)
    _compare(ns, *_inputs(rng, square=True))    # W_a square: a transposed W_a gives other scores
    q, keys, W = randn(rng, (2, 3)), randn(rng, (2, 4, 5)), randn(rng, (3, 5))
    _compare(ns, q, keys, W)
    _compare(ns, randn(rng, (1, 1)), randn(rng, (1, 1, 1)), randn(rng, (1, 1)))


def check_gradients(ns):
    rng = random.Random(14)
    grads(ns.general_score, tuple(t.requires_grad_() for t in _inputs(rng)), "general_score",
          hint="use differentiable tensor ops only", second=True)


def check_plugged(ns):
    rng = random.Random(15)
    layer = _rnn_attention.LuongAttention(3, 4, "general", dtype=_dt.float64)
    query, keys = randn(rng, (2, 3)), randn(rng, (2, 5, 4))
    want_c, want_w = layer(query, keys)
    with plug(ns):
        got = call(layer, query, keys, hint="your score inside nn.LuongAttention")
    close(got[1], want_w, "nn.LuongAttention's weights with your score plugged in", hint=HINT)
    if not got[0].requires_grad:
        raise Failed("the context has no gradient inside the layer", hint="use tensor ops")


CHECKS = [
    ("equals the layer's score on random shapes, float32/float64, transposed views",
     check_random),
    ("a square W_a (no transposing it by accident); one position", check_asymmetric),
    ("gradcheck and gradgradcheck", check_gradients),
    ("nn.LuongAttention(score='general') with your score plugged in", check_plugged),
]

DEMO = None
