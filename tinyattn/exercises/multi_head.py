"""Exercise `multi_head` (chapter 3): splitting the features into heads, and merging them back.

Plugged in as nn.MultiheadAttention's _split_heads and _merge_heads (nn/attention.py); the demo
is transformer, whose every attention layer then splits and merges heads with the student's code.
"""
import contextlib
import random
import types

from .. import backend
from .. import dtypes as _dt
from ..nn import attention as _attention
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "multi_head"
CHAPTER = 3
TITLE = "multi-head split (B, L, E) -> (B, H, L, E/H) and merge back"
FUNCTIONS = ("split_heads", "merge_heads")

SKELETON = '''"""Exercise multi_head (tour chapter 3, docs/03-attention.md section 3.7): split and merge heads.

Multi-head attention runs H attentions side by side on slices of the features: head h gets
features h*hs .. (h+1)*hs - 1 of every position (hs = E / H, the head size).

    split_heads  x (B, L, E)      -> (B, H, L, hs)      out[b, h, l, j] = x[b, l, h*hs + j]
    merge_heads  x (B, H, L, hs)  -> (B, L, H * hs)     the inverse: heads side by side again

Both are reshapes and a permute: .view(...) / .reshape(...), .permute(...) or .transpose(a, b).
A view that reinterprets memory in the wrong order gives the right SHAPE and wrong contents:
check out[b, h, l, j] == x[b, l, h*hs + j] on a small example.
Grade it:  python -m tinyattn.exercises check multi_head
"""


def split_heads(x, num_heads):
    """x (B, L, E) -> (B, H, L, E // H)."""
    # TODO: split the last dim into (H, hs), then bring H before L
    raise NotImplementedError("split_heads")


def merge_heads(x):
    """x (B, H, L, hs) -> (B, L, H * hs)."""
    # TODO: bring L before H, then join (H, hs) into one dim
    raise NotImplementedError("merge_heads")
'''

HINTS = [
    "x.reshape(B, L, H, hs) splits the features without moving anything: element [b, l, h, j] "
    "is x[b, l, h*hs + j].",
    "Then .permute(0, 2, 1, 3) (or .transpose(1, 2)) makes it (B, H, L, hs). "
    "x.reshape(B, H, L, hs) directly is the usual mistake: it mixes positions and heads.",
    "merge_heads undoes it: .permute(0, 2, 1, 3), then .reshape(B, L, H * hs) (reshape copies "
    "when it must; view would refuse a permuted tensor).",
]


def _mha(H, hs):
    return types.SimpleNamespace(num_heads=H, head_dim=hs, batch_first=True)


# The layer's own methods, kept here: while plugged in, the class's attributes are the student's.
_SPLIT = _attention.MultiheadAttention._split_heads
_MERGE = _attention.MultiheadAttention._merge_heads


def reference():
    return {"split_heads": lambda x, H: _SPLIT(_mha(H, x.shape[-1] // H), x),
            "merge_heads": lambda x: _MERGE(_mha(x.shape[1], x.shape[3]), x)}


def plug(ns, compiled=False):
    """nn.MultiheadAttention splits and merges its heads with ns (both layouts)."""

    MHA = _attention.MultiheadAttention

    def split(self, x):
        return ns.split_heads(x if self.batch_first else x.transpose(0, 1), self.num_heads)

    def merge(self, x):
        out = ns.merge_heads(x)
        return out if self.batch_first else out.transpose(0, 1)
    stack = contextlib.ExitStack()
    stack.enter_context(backend.override(MHA, "_split_heads", split))
    stack.enter_context(backend.override(MHA, "_merge_heads", merge))
    return stack


WRONG_ORDER = ("head h must hold features h*hs .. (h+1)*hs - 1 of EVERY position: split the "
               "last dim into (H, hs) first, then move H before L (a plain reshape to "
               "(B, H, L, hs) mixes positions and heads)")


def _compare(ns, x, H):
    ref = reference()
    what = {"x": x, "num_heads": H}
    got = call(ns.split_heads, x, H, what=what, hint=WRONG_ORDER)
    want = on_reference(ref["split_heads"], x, H)
    close(got, want, "split_heads", input=what, hint=WRONG_ORDER)
    what = {"x": want}
    got = call(ns.merge_heads, want, what=what, hint=WRONG_ORDER)
    close(got, on_reference(ref["merge_heads"], want), "merge_heads", input=what,
          hint="merge_heads must undo split_heads: " + WRONG_ORDER)


def check_random(ns):
    def body(rng):
        B, L, H, hs = (rng.randint(1, 3) for _ in range(4))
        H += 1
        x = randn(rng, (B, L, H * hs), rng.choice((_dt.float32, _dt.float64)),
                  layout=rng.choice(("contiguous", "transposed")))
        _compare(ns, x, H)
    forall(body)


def check_edges(ns):
    rng = random.Random(20)
    _compare(ns, randn(rng, (2, 3, 4)), 1)      # one head: (B, 1, L, E)
    _compare(ns, randn(rng, (1, 2, 4)), 4)      # head size 1
    _compare(ns, randn(rng, (2, 0, 6)), 2)      # no positions


def check_round_trip(ns):
    rng = random.Random(21)
    x = randn(rng, (2, 5, 6))
    back = call(ns.merge_heads, call(ns.split_heads, x, 3), hint=WRONG_ORDER)
    close(back, x, "merge_heads(split_heads(x, 3))", input={"x": x}, hint=WRONG_ORDER)
    grads(lambda t: ns.merge_heads(ns.split_heads(t, 2).tanh() * 2.0), (x.requires_grad_(),),
          "merge(2 tanh(split(x)))", hint="views and reshapes keep the gradient", second=True)


def check_plugged(ns):
    rng = random.Random(22)
    mha = _attention.MultiheadAttention(6, 3, batch_first=True, dtype=_dt.float64)
    q, kv = randn(rng, (2, 4, 6)), randn(rng, (2, 5, 6))
    want_out, want_w = mha(q, kv, kv)
    with plug(ns):
        got_out, got_w = call(mha, q, kv, kv, hint="your functions inside nn.MultiheadAttention")
    close(got_out, want_out, "nn.MultiheadAttention's output with your split and merge",
          hint=WRONG_ORDER)
    close(got_w, want_w, "nn.MultiheadAttention's weights with your split and merge",
          hint=WRONG_ORDER)
    if not got_out.requires_grad:
        raise Failed("the output lost its gradient", hint="use tensor ops, not lists")


CHECKS = [
    ("equal the library's on random (B, L, H, hs), float32/float64, transposed views",
     check_random),
    ("edges: one head, head size 1, no positions", check_edges),
    ("merge(split(x)) == x; gradcheck and gradgradcheck", check_round_trip),
    ("nn.MultiheadAttention with your split and merge plugged in", check_plugged),
]

DEMO = {"script": "transformer", "metric": "exact_greedy", "target": 0.85,
        "what": "exact match (greedy) on held-out digit sequences", "explorer": True}
