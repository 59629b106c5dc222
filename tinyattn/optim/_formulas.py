"""What the optimizers written with tensor ops share: PyTorch's step counter, its option checks,
and its fused elementwise formulas written op for op, so that the rounding matches.

    lerp_(t, end, w)        t + w (end - t)     when |w| < 0.5, else  end - (end - t)(1 - w)
    addcmul_(t, a, b, v)    t + (v a) b
    addcdiv_(t, a, b, v)    t + (v a) / b

(the order of the products is PyTorch's CPU kernels'; ops/blend.py's out-of-place versions,
made for autograd, round differently). Every helper writes into its first argument and returns it.
"""
from array import array

from .. import dtypes as _dt
from ..storage import _make
from .optimizer import _check_number


def new_step():
    """A step counter as PyTorch keeps it: a float32 scalar tensor holding 0."""
    return _make(array("f", [0.0]), (), _dt.float32)


def advance(step):
    """Add 1 to a step counter in place; return the new count as a float."""
    step._data[step._offset] += 1.0
    return float(step._data[step._offset])


def scalar_value(t):
    return float(t._data[t._offset])


def lerp_(t, end, weight):
    if abs(weight) < 0.5:
        return t.add_(end.sub(t).mul_(weight))
    return t.copy_(end.sub(end.sub(t).mul_(1.0 - weight)))


def addcmul_(t, a, b, value=1.0):
    return t.add_(a.mul(value).mul_(b) if value != 1 else a.mul(b))


def addcdiv_(t, a, b, value=1.0):
    return t.add_(a.mul(value).div_(b) if value != 1 else a.div(b))


def check_betas(name, betas):
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
    _check_number(name, "beta parameter at index 0", betas[0], high=1.0, high_open=True)
    _check_number(name, "beta parameter at index 1", betas[1], high=1.0, high_open=True)


def direction(p, grad, group):
    """The gradient the update follows: negated with maximize, plus weight_decay * p (the L2
    penalty's gradient) unless the decay is decoupled. A new tensor when it differs from grad."""
    g = grad.neg() if group.get("maximize") else grad
    wd = float(group.get("weight_decay", 0))
    if wd != 0 and not group.get("decoupled_weight_decay"):
        g = g.add(p, alpha=wd)
    return g
