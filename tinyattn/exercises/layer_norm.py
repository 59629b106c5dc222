"""Exercise `layer_norm` (chapter 5): the backward of layer normalisation, mean's terms included.

Plugged in as backend.norm's layer_norm_backward kernel: the flat buffers the LayerNorm op hands
the kernel are wrapped as tensors for the student's function and its results written back; the
demo is order_matters, whose attention blocks normalise with nn.LayerNorm.
"""
import random
from array import array

from .. import backend
from .. import dtypes as _dt
from ..creation import zeros
from ..kernels import norm as ref
from ..nn import functional as F
from ..ops.norm import layer_norm
from ..storage import _make
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "layer_norm"
CHAPTER = 5
TITLE = "layer norm backward: dx with the terms through the mean and the variance"
FUNCTIONS = ("layer_norm_backward",)

SKELETON = '''"""Exercise layer_norm (tour chapter 5, docs/05-transformer.md section 5.3): layer norm backward.

Forward, per row x of D numbers (what nn.LayerNorm computes; the forward is given):

    mean = sum(x) / D      var = sum((x - mean)^2) / D      rstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * rstd                                y = xhat * w + b

Backward, given g = dL/dy: every x_d moves the mean and the variance too, so dx is NOT just
rstd * g * w. With gy = g * w (w = 1 when there is no weight), per row:

    dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
    dw = sum over the rows of g * xhat          db = sum over the rows of g

Shapes: g, x (N, D); weight (D,) or None; mean, rstd (N, 1) (saved by the forward, float64).
Return (dx (N, D), dw (D,), db (D,)). Tensor ops: +, -, *, .mean(dim, keepdim=True),
.sum(dim). Derive it once on paper: it is the exercise.
Grade it:  python -m tinyattn.exercises check layer_norm
"""


def layer_norm_backward(g, x, weight, mean, rstd):
    """g, x (N, D), weight (D,) or None, mean and rstd (N, 1) -> (dx (N, D), dw (D,), db (D,))."""
    # TODO: xhat from x, mean and rstd; gy = g * weight (or g)
    # TODO: dx with the two mean terms; dw and db summed over the rows
    raise NotImplementedError("layer_norm_backward")
'''

HINTS = [
    "Start from y = xhat * w + b: dL/dxhat = g * w = gy. The rest is the backward of xhat = "
    "(x - mean) * rstd, where mean and rstd are functions of the whole row.",
    "d mean / d x_d = 1/D, which brings the term -mean(gy); d rstd / d x_d = -rstd^3 (x_d - "
    "mean) / D, which brings -xhat * mean(gy * xhat).",
    "Check with D = 1: xhat is 0 whatever x is, so dx must be 0. Without the mean's terms it "
    "is rstd * gy.",
]

MEAN_TERMS = ("layer norm backward forgets the mean's terms: x also moves the row's mean and "
              "variance, so dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))")


def _stats(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True).to(_dt.float64)
    var = ((x.to(_dt.float64) - mean) ** 2).mean(-1, keepdim=True)
    return mean, (var + eps).rsqrt()


def _kernel_backward(g, x, weight, mean, rstd):
    """The reference backend's kernel (kernels/norm.py) on the tensors' buffers."""
    N, D = x.shape
    g, x = g.detach().clone(), x.detach().clone()
    w = weight.detach().clone() if weight is not None else x
    dx = zeros(N, D, dtype=x.dtype)
    dw, db = array("d", bytes(8 * D)), array("d", bytes(8 * D))
    m = array("d", mean.reshape(-1).tolist())
    r = array("d", rstd.reshape(-1).tolist())
    ref.layer_norm_backward(g._data, x._data, w._data, weight is not None, m, r,
                            dx._data, dw, db, N, D)
    return dx, _make(dw, (D,), _dt.float64).to(x.dtype), _make(db, (D,), _dt.float64).to(x.dtype)


def reference():
    return {"layer_norm_backward": _kernel_backward}


def plug(ns, compiled=False):
    """The LayerNorm op's backward kernel calls ns.layer_norm_backward on its buffers."""
    def kernel(g, x, w, has_w, mean, rstd, dx, dw, db, N, D):
        dtype = _dt.float32 if x.typecode == "f" else _dt.float64
        G, X = _make(g, (N, D), dtype), _make(x, (N, D), dtype)
        W = _make(w, (D,), dtype) if has_w else None
        M, R = _make(mean, (N, 1), _dt.float64), _make(rstd, (N, 1), _dt.float64)
        rx, rw, rb = ns.layer_norm_backward(G, X, W, M, R)
        dx[0:N * D] = _flat(rx, x.typecode, N * D)
        dw[0:D] = _flat(rw, "d", D)
        db[0:D] = _flat(rb, "d", D)
    return backend.override("norm", "layer_norm_backward", kernel)


def _flat(t, typecode, n):
    t = t.detach().to(_dt.float32 if typecode == "f" else _dt.float64).contiguous()
    part = t._data[t._offset:t._offset + n]
    return part if isinstance(part, array) and part.typecode == typecode else array(typecode, part)


def _compare(ns, g, x, weight, hint="dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) "
                                    "per row, gy = g * w"):
    mean, rstd = _stats(x)
    what = {"g": g, "x": x, "weight": weight}
    got = call(ns.layer_norm_backward, g, x, weight, mean, rstd, what=what, hint=hint)
    if not isinstance(got, tuple) or len(got) != 3:
        raise Failed("return three tensors (dx, dw, db)", input=what, got=got,
                     hint="return dx, dw, db")
    want = on_reference(_kernel_backward, g, x, weight, mean, rstd)
    if _is(got[0], (g if weight is None else g * weight).to(_dt.float64) * rstd):
        raise Failed("layer_norm_backward: dx is rstd * g * w: " + MEAN_TERMS.split(": ")[0],
                     input=what, expected=want[0], got=got[0], hint=MEAN_TERMS)
    for name, a, b, h in (("dx", got[0], want[0], hint),
                          ("dw", got[1], want[1], "dw = sum over the rows of g * xhat"),
                          ("db", got[2], want[2], "db = sum over the rows of g")):
        close(a, b, f"layer_norm_backward: {name}", input=what, hint=h, dtype=x.dtype,
              atol=2e-4 if x.dtype is _dt.float32 else 1e-9)


def _is(got, candidate):
    try:
        close(got, candidate.to(got.dtype), "", atol=1e-6, rtol=1e-6)
    except Failed:
        return False
    return True


def check_random(ns):
    def body(rng):
        N, D = rng.randint(1, 4), rng.randint(2, 6)
        dtype = rng.choice((_dt.float32, _dt.float64))
        weight = randn(rng, (D,), dtype) if rng.random() < 0.7 else None
        _compare(ns, randn(rng, (N, D), dtype), randn(rng, (N, D), dtype, 2.0), weight)
    forall(body)


def check_edges(ns):
    rng = random.Random(16)
    _compare(ns, randn(rng, (3, 1)), randn(rng, (3, 1)), None,
             "D = 1: xhat is always 0, so dx must be 0 (" + MEAN_TERMS + ")")
    _compare(ns, randn(rng, (1, 5)), randn(rng, (1, 5), scale=1e3), randn(rng, (5,)),
             "large x: work with xhat, which is O(1), not with x")
    _compare(ns, randn(rng, (2, 4)), randn(rng, (2, 4)).transpose(0, 1).contiguous()
             .transpose(0, 1), None)


def check_plugged(ns):
    rng = random.Random(17)
    x, w, b = randn(rng, (3, 4)), randn(rng, (4,)), randn(rng, (4,))
    with plug(ns):
        grads(lambda x, w, b: layer_norm(x, (4,), w, b), (x.requires_grad_(),
              w.requires_grad_(), b.requires_grad_()),
              "F.layer_norm(x, (4,), weight, bias) with your backward in the library",
              hint=MEAN_TERMS)
        grads(lambda x: F.layer_norm(x, (4,)), (x,), "F.layer_norm(x, (4,)) without a weight",
              hint=MEAN_TERMS)


CHECKS = [
    ("equals the library's kernel on random (N, D), with and without a weight, float32/float64",
     check_random),
    ("edges: D = 1, large inputs, a strided x", check_edges),
    ("gradcheck of F.layer_norm with your backward plugged into the library", check_plugged),
]

DEMO = {"script": "order_matters", "metric": "positions_test_acc", "target": 0.95,
        "what": "held-out accuracy of self-attention with positions"}
