"""Exercise `positional` (chapter 3): the sinusoidal positional encoding table.

Plugged in as the sinusoidal_table that nn.PositionalEncoding builds its buffer from
(nn/positional.py); the demo is order_matters, whose model (c) needs the positions to pass.
"""
import math

from .. import backend
from .. import dtypes as _dt
from ..creation import tensor
from ..nn import positional as _positional
from ..storage import TensorBase
from ._grader import Failed, call, close, forall, on_reference

NAME = "positional"
CHAPTER = 3
TITLE = "the sinusoidal positional encoding table PE(pos, i)"
FUNCTIONS = ("sinusoidal_table",)

SKELETON = '''"""Exercise positional (tour chapter 3, docs/03-attention.md section 3.8): sinusoidal positions.

The table PE (max_len, d_model), one row per position, added to the token embeddings:

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Columns 2i and 2i+1 share one frequency. An odd d_model works: its last column is a sine (column
2i with i = (d_model - 1) / 2) with no cosine partner. max_len may be 0 (an empty table).
Compute in float64 (positions reach the thousands; float32 loses the small angles' digits).
Return a tinyattn float64 Tensor: build a list of rows with the math module and call
tinyattn.tensor(rows, dtype=tinyattn.float64), or use tensor ops (ta.arange, .sin(), ...).
Grade it:  python -m tinyattn.exercises check positional
"""
import math

import tinyattn as ta


def sinusoidal_table(max_len, d_model):
    """-> PE, a (max_len, d_model) float64 Tensor."""
    # TODO: for each position and each column j: the frequency of i = j // 2
    # TODO: sine in the even columns, cosine in the odd ones
    raise NotImplementedError("sinusoidal_table")
'''

HINTS = [
    "Column j uses i = j // 2: the angle is pos / 10000 ** (2 * (j // 2) / d_model).",
    "Even j (0, 2, 4, ...) take the sine of the angle, odd j the cosine. Row 0 is therefore "
    "[0, 1, 0, 1, ...].",
    "Shape (0, d_model) for max_len 0: ta.zeros(0, d_model, dtype=ta.float64) if your rows "
    "list is empty (a list with no rows has no width).",
]


# The library's table, kept here: while plugged in, nn.positional's attribute is the student's.
_TABLE = _positional.sinusoidal_table


def reference():
    return {"sinusoidal_table": lambda max_len, d_model: _TABLE(max_len, d_model, _dt.float64)}


def plug(ns, compiled=False):
    """nn.PositionalEncoding builds its table with ns.sinusoidal_table."""
    def table(max_len, d_model, dtype=None):
        return _as_tensor(ns.sinusoidal_table(max_len, d_model)).to(dtype or _dt.float32)
    return backend.override(_positional, "sinusoidal_table", table)


def _as_tensor(x):
    return x if isinstance(x, TensorBase) else tensor(x, dtype=_dt.float64)


def _compare(ns, max_len, d_model, hint):
    what = {"max_len": max_len, "d_model": d_model}
    got = call(ns.sinusoidal_table, max_len, d_model, what=what, hint=hint)
    want = on_reference(reference()["sinusoidal_table"], max_len, d_model)
    if isinstance(got, TensorBase) and tuple(got.shape) == tuple(want.shape) and max_len > 1:
        swapped = on_reference(lambda: want.roll(1, 1)) if d_model % 2 == 0 else None
        try:
            close(got.to(_dt.float64), want, "sinusoidal_table", input=what, hint=hint,
                  atol=1e-9, rtol=1e-9)
        except Failed as f:
            if swapped is not None and got.detach().to(_dt.float64)[0, 0].item() == 1.0:
                f.hint = "sine and cosine are swapped: even columns are sines (PE(0, 0) = 0)"
            raise
        return
    close(got if isinstance(got, TensorBase) else _as_tensor(got), want, "sinusoidal_table",
          input=what, hint=hint, atol=1e-9, rtol=1e-9)


def check_random(ns):
    def body(rng):
        _compare(ns, rng.randint(1, 24), rng.randint(1, 12),
                 hint="PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same)")
    forall(body)


def check_frequencies(ns):
    _compare(ns, 6, 8, hint="columns 2i and 2i+1 share the frequency 1 / 10000^(2i/d): the "
                            "exponent uses 2i = j - j % 2, not j")
    _compare(ns, 4, 7, hint="an odd d_model: the last column is a sine with no cosine partner")


def check_edges(ns):
    _compare(ns, 0, 4, hint="max_len 0: an empty (0, d_model) table")
    _compare(ns, 1, 1, hint="position 0: sin(0) = 0")
    _compare(ns, 3, 2, hint="d_model 2: one sine and one cosine of pos itself")


def check_far(ns):
    what = {"max_len": 5000, "d_model": 16}
    got = _as_tensor(call(ns.sinusoidal_table, 5000, 16, what=what))
    want = on_reference(reference()["sinusoidal_table"], 5000, 16)
    hint = "compute the angles in float64: at pos 4999 float32 keeps only ~3 decimals"
    close(got.to(_dt.float64).narrow(0, 4990, 10), want.narrow(0, 4990, 10),
          "rows 4990..4999 of a (5000, 16) table", input=what, hint=hint, atol=1e-7, rtol=1e-7)
    # the property the demo relies on: PE(p) . PE(p + k) depends on k only
    row = lambda p: got[p].to(_dt.float64)  # noqa: E731
    for p in (0, 7, 4000):
        d = (row(p) * row(p + 3)).sum().item() - (row(0) * row(3)).sum().item()
        if not math.isfinite(d) or abs(d) > 1e-6:
            raise Failed(f"PE({p}) . PE({p + 3}) differs from PE(0) . PE(3) by {d:.3g}", input=what,
                         hint="sin/cos pairs of one frequency make the dot product a function of "
                              "the distance only")


CHECKS = [
    ("equals the library's table on random (max_len, d_model)", check_random),
    ("one frequency per sine/cosine pair; odd d_model", check_frequencies),
    ("edges: max_len 0, d_model 1 and 2", check_edges),
    ("far positions in float64; PE(p) . PE(p + k) depends on k only", check_far),
]

DEMO = {"script": "order_matters", "metric": "positions_test_acc", "target": 0.95,
        "what": "held-out accuracy of self-attention with positions", "explorer": True}
