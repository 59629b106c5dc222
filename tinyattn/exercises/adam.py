"""Exercise `adam` (chapter 5): one Adam step over flat buffers, bias correction included.

Plugged in as backend.optim's adam_step kernel (for Adam without amsgrad, maximize or decoupled
weight decay: those keep the library's); the demo is dates, trained with optim.Adam.
"""
import math
import random
from array import array

from .. import backend

from ..kernels import optim as ref
from ..optim.adam import Adam
from ._grader import Failed, call, close_lists, compiled as jit, forall, randn

NAME = "adam"
CHAPTER = 5
TITLE = "one Adam step over flat buffers: moments, bias correction, update"
FUNCTIONS = ("adam_step",)

SKELETON = '''"""Exercise adam (tour chapter 5, docs/05-transformer.md section 5.5): one step of Adam.

Over n parameters p with gradients g, the moment buffers m and v (flat buffers, updated in
place), at step t (1 for the first step):

    g <- g + weight_decay * p                       (Adam's L2 penalty; 0 turns it off)
    m <- beta1 * m + (1 - beta1) * g                the mean of the gradients
    v <- beta2 * v + (1 - beta2) * g^2              the mean of their squares
    m_hat = m / (1 - beta1^t)                       bias correction: m and v start at 0,
    v_hat = v / (1 - beta2^t)                       so early averages are too small
    p <- p - lr * m_hat / (sqrt(v_hat) + eps)

Plain loops and the math module over p, g, m, v (array.array buffers): write p, m and v in
place, return nothing; do not change g.
Grade it:  python -m tinyattn.exercises check adam
"""
import math


def adam_step(p, g, m, v, n, t, lr, beta1, beta2, eps, weight_decay):
    """One Adam step on the n elements of p, m, v, in place."""
    # TODO: for each i: the decayed gradient, then m[i], v[i], then p[i]
    raise NotImplementedError("adam_step")
'''

HINTS = [
    "One loop over i in range(n): gi = g[i] + weight_decay * p[i]; m[i] = beta1 * m[i] + "
    "(1 - beta1) * gi; v[i] likewise with gi * gi.",
    "The bias corrections are numbers: 1 - beta1 ** t and 1 - beta2 ** t, computed once.",
    "At t = 1 with m = v = 0, m_hat = g and v_hat = g^2: the first step moves every parameter "
    "by about lr, whatever the gradient's size.",
]


def _library_step(p, g, m, v, n, t, lr, beta1, beta2, eps, weight_decay):
    """The library's kernel with the arguments optim.Adam gives it."""
    step_size = lr / (1 - beta1 ** t)
    ref.adam_step(p, g, m, v, array(p.typecode), n, lr, beta1, beta2, eps, weight_decay, False,
                  False, False, step_size, math.sqrt(1 - beta2 ** t))


def reference():
    return {"adam_step": _library_step}


def plug(ns, compiled=False):
    """optim.Adam's step kernel calls ns.adam_step (Adam with L2 weight decay only)."""
    step = jit(ns.adam_step) if compiled else ns.adam_step
    library = backend.optim.adam_step

    def kernel(p, g, m, v, v_max, n, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
               maximize, step_size, bias_correction2_sqrt):
        t = _step_number(lr, beta1, beta2, step_size, bias_correction2_sqrt)
        if decoupled or amsgrad or maximize or t is None:
            return library(p, g, m, v, v_max, n, lr, beta1, beta2, eps, weight_decay, decoupled,
                           amsgrad, maximize, step_size, bias_correction2_sqrt)
        step(p, g, m, v, n, t, lr, beta1, beta2, eps, weight_decay)
    return backend.override("optim", "adam_step", kernel)


def _step_number(lr, beta1, beta2, step_size, bc2_sqrt):
    """t from what optim.Adam passes the kernel: step_size = lr / (1 - beta1^t)."""
    if 0.0 < beta1 < 1.0 and step_size > 0.0 and lr > 0.0 and lr / step_size < 1.0:
        return max(1, round(math.log(1.0 - lr / step_size) / math.log(beta1)))
    if 0.0 < beta2 < 1.0 and 0.0 < bc2_sqrt < 1.0:
        return max(1, round(math.log(1.0 - bc2_sqrt ** 2) / math.log(beta2)))
    return None


NO_CORRECTION = ("bias correction missing: m and v start at 0, divide them by 1 - beta1^t and "
                 "1 - beta2^t")


def _compare(ns, typecode, p, g, m, v, t, lr, beta1, beta2, eps, wd, hint=None):
    n = len(p)
    bufs = [array(typecode, b) for b in (p, g, m, v)]
    want = [array(typecode, b) for b in (p, g, m, v)]
    what = {"p": bufs[0], "g": bufs[1], "m": bufs[2], "v": bufs[3], "t": t, "lr": lr,
            "betas": (beta1, beta2), "eps": eps, "weight_decay": wd}
    what = {k: (array(typecode, x) if isinstance(x, array) else x) for k, x in what.items()}
    call(ns.adam_step, *bufs, n, t, lr, beta1, beta2, eps, wd, what=what, hint=hint)
    _library_step(*want, n, t, lr, beta1, beta2, eps, wd)
    tol = {"atol": 1e-6, "rtol": 1e-5} if typecode == "f" else {"atol": 1e-12, "rtol": 1e-9}
    for name, k, h in (("m", 2, "m = beta1 m + (1 - beta1) g, with g including weight_decay * p"),
                       ("v", 3, "v = beta2 v + (1 - beta2) g^2"),
                       ("p", 0, hint or "p -= lr * m_hat / (sqrt(v_hat) + eps)"),
                       ("g", 1, "leave g as it is")):
        try:
            close_lists(bufs[k], want[k], f"adam_step: {name} after the step", input=what,
                        hint=h, **tol)
        except Failed as f:
            if name == "p" and _uncorrected(typecode, p, g, m, v, t, lr, beta1, beta2, eps, wd,
                                            bufs[0], tol):
                f.what, f.hint = f"adam_step: p after the step: {NO_CORRECTION}", NO_CORRECTION
            raise


def _uncorrected(typecode, p, g, m, v, t, lr, beta1, beta2, eps, wd, got, tol):
    p2 = array(typecode, p)
    for i in range(len(p)):
        gi = g[i] + wd * p[i]
        mi, vi = beta1 * m[i] + (1 - beta1) * gi, beta2 * v[i] + (1 - beta2) * gi * gi
        p2[i] = p[i] - lr * mi / (math.sqrt(vi) + eps)
    try:
        close_lists(got, p2, "", **tol)
    except Failed:
        return False
    return True


def _draw(rng, n):
    return ([rng.gauss(0, 1) for _ in range(n)], [rng.gauss(0, 1) for _ in range(n)],
            [rng.gauss(0, 0.1) for _ in range(n)], [abs(rng.gauss(0, 0.1)) for _ in range(n)])


def check_random(ns):
    def body(rng):
        n = rng.randint(1, 6)
        _compare(ns, rng.choice("fd"), *_draw(rng, n), rng.randint(1, 20),
                 rng.choice((1e-3, 0.01, 0.1)), rng.choice((0.9, 0.8)), rng.choice((0.999, 0.98)),
                 rng.choice((1e-8, 1e-6)), rng.choice((0.0, 0.0, 0.01)))
    forall(body)


def check_first_step(ns):
    rng = random.Random(18)
    p, g, _, _ = _draw(rng, 4)
    _compare(ns, "d", p, g, [0.0] * 4, [0.0] * 4, 1, 0.01, 0.9, 0.999, 1e-8, 0.0, NO_CORRECTION)
    _compare(ns, "d", p, [0.0] * 4, [0.0] * 4, [0.0] * 4, 1, 0.01, 0.9, 0.999, 1e-8, 0.0,
             "a zero gradient at the first step: m = v = 0, p stays (0 / (0 + eps))")
    _compare(ns, "d", p, [1e30, -1e30, 3.0, 0.0], [0.0] * 4, [0.0] * 4, 2, 0.01, 0.9, 0.999,
             1e-8, 0.0, "huge gradients: the step is still about lr")
    _compare(ns, "d", [], [], [], [], 1, 0.01, 0.9, 0.999, 1e-8, 0.0, "n = 0: nothing to do")


def check_plugged(ns):
    rng = random.Random(19)
    start = randn(rng, (3, 2))
    finals = []
    for plugged in (False, True):
        w = start.clone().requires_grad_()
        opt = Adam([w], lr=0.1, weight_decay=0.01)
        with (plug(ns) if plugged else backend.override("optim", "adam_step",
                                                        backend.optim.adam_step)):
            for _ in range(5):
                opt.zero_grad()
                ((w - 1.0) ** 2).sum().backward()
                call(opt.step, hint="optim.Adam calls your adam_step on its flat buffers")
        finals.append(w.detach().reshape(-1).tolist())
    close_lists(finals[1], finals[0], "optim.Adam's parameters after 5 steps with your kernel",
                hint="t counts from 1; each step uses that step's bias corrections",
                atol=1e-9, rtol=1e-9)


CHECKS = [
    ("equals the library's kernel on random steps, float32/float64, with and without weight "
     "decay", check_random),
    ("the first step (bias correction), zero and huge gradients, n = 0", check_first_step),
    ("five steps of optim.Adam with your kernel plugged into the library", check_plugged),
]

DEMO = {"script": "dates", "metric": "exact", "target": 0.85,
        "what": "exact match on held-out dates"}

