"""Exercise `grid_attention` (chapter 8): soft attention over an image's feature grid.

Checked against the library's own pieces (additive_score, softmax, attention_context) on the
flattened grid, the computation of demos/show_attend_tell.py's soft-attention decoder step.
"""
import random

from .. import dtypes as _dt
from ..ops.attention import additive_score, attention_context
from ..ops.softmax import softmax
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "grid_attention"
CHAPTER = 8
TITLE = "soft attention over an image's H x W feature grid (Show, Attend and Tell)"
FUNCTIONS = ("grid_attention",)

SKELETON = '''"""Exercise grid_attention (tour chapter 8, docs/08-visual-attention.md section 8.3): soft attention.

A CNN turns an image into features (B, C, H, W): one C-vector a_i (an annotation vector) for
each of the H*W grid cells. A decoder state h (B, D) attends over the cells:

    e_i     = v . tanh(W_f a_i + W_h h)        (B, H*W)   one score per cell
    alpha   = softmax(e) over the cells        (B, H*W)   where the decoder looks
    context = sum_i alpha_i a_i                (B, C)

Shapes: W_f (A, C), W_h (A, D), v (1, A). Return (context (B, C), weights (B, H, W)) with
weights[b, y, x] the weight of cell (y, x), i.e. of features[b, :, y, x].
Tensor ops you may use: .flatten(2) / .reshape, .transpose, @, .tanh(), .unsqueeze, .squeeze,
tinyattn.softmax, .sum.
Grade it:  python -m tinyattn.exercises check grid_attention
"""
import tinyattn as ta


def grid_attention(features, hidden, W_f, W_h, v):
    """features (B, C, H, W), hidden (B, D) -> (context (B, C), weights (B, H, W))."""
    # TODO: the annotation vectors, (B, H*W, C), in row-major cell order
    # TODO: scores, softmax over the cells, the weighted sum
    raise NotImplementedError("grid_attention")
'''

HINTS = [
    "features.flatten(2) is (B, C, H*W) with cell (y, x) at index y*W + x; .transpose(1, 2) "
    "makes the annotation vectors (B, H*W, C).",
    "W_f a_i for every cell: annotations @ W_f.transpose(0, 1), (B, H*W, A); W_h h: "
    "hidden @ W_h.transpose(0, 1), (B, A), unsqueezed to (B, 1, A) to broadcast over the cells.",
    "weights.reshape(B, H, W) puts cell y*W + x back at [y, x]; context = (weights (B, 1, H*W) "
    "@ annotations (B, H*W, C)).squeeze(1).",
]


def _grid_attention(features, hidden, W_f, W_h, v):
    B, C, H, W = features.shape
    a = features.flatten(2).transpose(1, 2)                          # (B, H*W, C)
    scores = additive_score(a @ W_f.transpose(0, 1), hidden @ W_h.transpose(0, 1), v,
                            check=False)                              # (B, H*W)
    weights = softmax(scores, -1)                                    # (B, H*W)
    return attention_context(weights, a.contiguous()), weights.reshape(B, H, W)


def reference():
    return {"grid_attention": _grid_attention}


# Nothing in the library calls this computation through a name a `with` block can replace:
# the checks compare it with the library directly, and there is no demo to plug it into.
plug = None


CELL_ORDER = ("weights[b, y, x] must belong to the cell (y, x), i.e. features[b, :, y, x]: "
              "flatten the grid row by row (index y*W + x) and reshape back the same way")


def _compare(ns, args):
    what = dict(zip(("features", "hidden", "W_f", "W_h", "v"), args))
    got = call(ns.grid_attention, *args, what=what, hint=CELL_ORDER)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Failed("return a pair (context, weights)", input=what, got=got,
                     hint="return context, weights")
    want = on_reference(_grid_attention, *args)
    close(got[1], want[1], "weights", input=what, hint=CELL_ORDER)
    close(got[0], want[0], "context", input=what, hint="context = sum over the cells of "
                                                       "weight * annotation vector")


def _inputs(rng, dtype=_dt.float64, dims=None):
    B, C, H, W, D, A = dims or (rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 3),
                                rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3))
    feats = randn(rng, (B, C, H, W), dtype)
    if rng.random() < 0.5:                      # channels-last memory: a permuted view
        feats = randn(rng, (B, H, W, C), dtype).permute(0, 3, 1, 2)
    return (feats, randn(rng, (B, D), dtype), randn(rng, (A, C), dtype),
            randn(rng, (A, D), dtype), randn(rng, (1, A), dtype))


def check_random(ns):
    forall(lambda rng: _compare(ns, _inputs(rng, rng.choice((_dt.float32, _dt.float64)))))


def check_edges(ns):
    rng = random.Random(25)
    _compare(ns, _inputs(rng, dims=(1, 1, 1, 1, 1, 1)))     # one cell: weight 1
    _compare(ns, _inputs(rng, dims=(2, 3, 2, 5, 2, 4)))     # H != W: the cell order shows
    _compare(ns, _inputs(rng, dims=(1, 2, 4, 1, 1, 2)))


def check_gradients(ns):
    rng = random.Random(26)
    args = tuple(t.requires_grad_() for t in _inputs(rng, dims=(1, 2, 2, 3, 2, 2)))
    grads(lambda *a: ns.grid_attention(*a), args, "context and weights with respect to every "
          "input", hint="keep everything in tensor ops")


CHECKS = [
    ("equals the library's composition on random grids, float32/float64, channels-last views",
     check_random),
    ("edges: one cell; H != W (the cell order); a single column", check_edges),
    ("gradcheck", check_gradients),
]

DEMO = None
