"""Gradient clipping, as torch.nn.utils: rescale or clamp `.grad` in place after backward().

RNNs unrolled over many steps multiply the gradient by the recurrent Jacobian once per step, so
now and then it explodes; one huge step can wreck a model that was training well. Clipping the
*total* norm keeps the direction of the update and only bounds its length:

    total = || (g_1, ..., g_k) ||_p  over all parameters' gradients taken together
    g_i  <- g_i * min(1, max_norm / (total + 1e-6))
"""
import math

from ... import dtypes as _dt
from ...autograd import no_grad
from ...creation import tensor
from ...ops.reduce import sum_of_squares
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _norm_of(g, norm_type):
    """|| g ||_p of one gradient, as a Python float (computed in float64)."""
    if norm_type == 2.0:
        return math.sqrt(sum_of_squares(g))
    if norm_type == math.inf:
        return float(g.abs().amax().item()) if g.numel() else 0.0
    return float(g.double().abs().pow(norm_type).sum().item()) ** (1.0 / norm_type)


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of `parameters` (a tensor or an iterable of them) in place so that their
    total p-norm is at most max_norm. Returns the total norm before clipping, as a 0-d tensor.

    norm_type may be any positive number or inf (the largest |g| of all). error_if_nonfinite=True
    raises when the total norm is nan or inf (otherwise the gradients become nan, as in PyTorch).
    `foreach` is accepted for compatibility and ignored."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if norm_type <= 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be positive or inf, got {norm_type}")
    dtype = grads[0].dtype if grads else _dt.float32
    if not grads:
        return tensor(0.0, dtype=dtype)
    norms = [_norm_of(g, norm_type) for g in grads]
    if norm_type == math.inf:
        total = max(norms)
    else:
        total = sum(n ** norm_type for n in norms) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients "
                           f"is {total}, so they cannot be clipped; set error_if_nonfinite=False "
                           f"to scale them anyway")
    # The total is rounded to the gradients' dtype first, so that the coefficient is the one
    # PyTorch computes from its float32 norm.
    total_t = tensor(total, dtype=dtype)
    coef = min(max_norm / (total_t.item() + 1e-6), 1.0)
    for g in grads:
        g.mul_(coef)
    return total_t


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element of `parameters` into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
