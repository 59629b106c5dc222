"""Exercise `kv_cache` (chapter 7): one decoding step of causal self-attention with a KV cache.

Checked against causal attention over the whole sequence: decoding token by token with the
cache must give the same outputs, and the cache must grow by exactly one position per step.
"""
import random

from .. import dtypes as _dt
from ..ops.attention import scaled_dot_product_attention
from ..ops.layout import cat
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "kv_cache"
CHAPTER = 7
TITLE = "one decoding step with a KV cache: project, append once, attend to the past"
FUNCTIONS = ("decode_step",)

SKELETON = '''"""Exercise kv_cache (tour chapter 7, docs/07-gpt.md section 7.4): a decoding step with a KV cache.

Generating token t, causal self-attention needs the keys and values of tokens 0..t; those of
0..t-1 were computed at earlier steps. The cache keeps them, so each step projects only the new
token:

    q = x @ W_q,  k = x @ W_k,  v = x @ W_v           x (B, 1, E): the new token, (B, 1, d) each
    cache["k"] = k if empty, else cat([cache["k"], k], dim=1)        (B, t+1, d); the same for v
    out = softmax(q @ cache["k"]^T / sqrt(d)) @ cache["v"]           (B, 1, d)

The new query may attend to every cached position (they are all in the past or itself: no mask
needed). Append the new key and value ONCE per step: the cache must hold exactly t+1 positions
after step t. An empty cache is {} or {"k": None, "v": None}.
Tensor ops you may use: @, tinyattn.cat, tinyattn.softmax, .transpose(-2, -1), math.sqrt.
Grade it:  python -m tinyattn.exercises check kv_cache
"""
import math

import tinyattn as ta


def decode_step(x, W_q, W_k, W_v, cache):
    """x (B, 1, E), W_* (E, d), cache a dict (updated in place) -> out (B, 1, d)."""
    # TODO: project the new token
    # TODO: append its key and value to the cache (once)
    # TODO: attend from the new query to every cached position
    raise NotImplementedError("decode_step")
'''

HINTS = [
    "k = x @ W_k is (B, 1, d): the new token's key only. The cache grows along dim 1.",
    "cache['k'] = k if cache.get('k') is None else ta.cat([cache['k'], k], 1); the same for v.",
    "Do not append cache['k'] to itself, and do not append the new key before AND after "
    "attending: after step t the cache holds t + 1 positions.",
]


def _decode_step(x, W_q, W_k, W_v, cache):
    q, k, v = x @ W_q, x @ W_k, x @ W_v                              # (B, 1, d) each
    for name, new in (("k", k), ("v", v)):
        cache[name] = new if cache.get(name) is None else cat([cache[name], new], 1)
    return scaled_dot_product_attention(q, cache["k"], cache["v"])    # (B, 1, d)


def reference():
    """The library's cat and scaled_dot_product_attention, one step (as demos/gpt.py decodes)."""
    return {"decode_step": _decode_step}


# Nothing in the library calls this computation through a name a `with` block can replace:
# the checks compare it with the library directly, and there is no demo to plug it into.
plug = None


REAPPENDS = ("the KV cache re-appends: after step t it must hold t + 1 positions; append only "
             "the new token's key and value, once per step")


def _full(x, W_q, W_k, W_v):
    """What decoding must reproduce: causal attention over the whole sequence at once."""
    return scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v, is_causal=True)


def _decode(ns, x, Ws, hint=None):
    """Run the student's step over x (B, T, E) token by token; the outputs (B, T, d)."""
    cache, outs = {}, []
    T = x.shape[1]
    for t in range(T):
        xt = x.narrow(1, t, 1)
        what = {"step t": t, "x_t": xt}
        out = call(ns.decode_step, xt, *Ws, cache, what=what, hint=hint)
        for name in ("k", "v"):
            held = cache.get(name)
            n = held.shape[1] if held is not None and hasattr(held, "shape") else 0
            if n != t + 1:
                raise Failed(f"cache['{name}'] holds {n} positions after step {t}, expected "
                             f"{t + 1}: {REAPPENDS if n > t + 1 else 'append the new one'}",
                             input=what, hint=REAPPENDS)
        outs.append(out)
    return cat(outs, 1)


def _compare(ns, x, Ws):
    got = _decode(ns, x, Ws)
    want = on_reference(_full, x, *Ws)
    close(got, want, "the outputs of decoding token by token", input={"x": x},
          hint="each step's query attends to the keys of every token so far (scaled by "
               "1/sqrt(d)), in order")


def _inputs(rng, dtype=_dt.float64, B=None, T=None, E=None, d=None):
    B = B or rng.randint(1, 2)
    T, E, d = T or rng.randint(1, 5), E or rng.randint(1, 4), d or rng.randint(1, 4)
    return randn(rng, (B, T, E), dtype), tuple(randn(rng, (E, d), dtype) for _ in range(3))


def check_random(ns):
    forall(lambda rng: _compare(ns, *_inputs(rng, rng.choice((_dt.float32, _dt.float64)))))


def check_edges(ns):
    rng = random.Random(23)
    _compare(ns, *_inputs(rng, B=1, T=1, E=1, d=1))
    _compare(ns, *_inputs(rng, B=2, T=7, E=3, d=2))
    x, Ws = _inputs(rng, T=3)
    cache = {"k": None, "v": None}
    call(ns.decode_step, x.narrow(1, 0, 1), *Ws, cache, hint="an empty cache may also be "
         "{'k': None, 'v': None}")
    if cache.get("k") is None or cache["k"].shape[1] != 1:
        raise Failed("a cache given as {'k': None, 'v': None} must hold 1 position after the "
                     "first step", hint=REAPPENDS)


def check_gradients(ns):
    rng = random.Random(24)
    x, Ws = _inputs(rng, B=1, T=3, E=2, d=2)
    grads(lambda Wq, Wk, Wv: _decode(ns, x, (Wq, Wk, Wv)), tuple(w.requires_grad_() for w in Ws),
          "three decoding steps with respect to W_q, W_k, W_v",
          hint="keep everything in tensor ops: cat, @, softmax")


CHECKS = [
    ("decoding token by token equals causal attention over the whole sequence", check_random),
    ("edges: one token; seven; a cache of Nones", check_edges),
    ("gradcheck through three decoding steps", check_gradients),
]

DEMO = None
