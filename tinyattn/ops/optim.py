"""Optimizer updates as in-place ops on tensors: one fused pass over each parameter.

    sgd_step_    d = g + wd p;  buf = mu buf + (1 - dampening) d;  p -= lr (d + mu buf | buf)
    adam_step_   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
                 p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)   (+ weight decay)

The optimizers in optim/ keep the state and the hyper-parameters; the arithmetic is here and in
kernels/optim.py, where each formula is written out. The updates build no graph.

Chapter 5 of the tour (docs/05-transformer.md) uses them.
"""
from array import array

from ..autograd import bump_version
from .. import backend

_EMPTY = {"f": array("f"), "d": array("d")}  # the momentum / max-moment buffer when unused


def _buffers(p, *tensors):
    """The flat buffers of p and its gradient / state tensors. numba does not bounds-check: each
    must be packed and hold p.numel() values."""
    n = p.numel()
    out = []
    for t in (p,) + tensors:
        if t is None:
            out.append(_EMPTY[p.dtype.typecode])
            continue
        if not t._packed or t.dtype is not p.dtype or t.numel() != n:
            raise RuntimeError(f"optimizer: a state or gradient tensor of shape {tuple(t.shape)} "
                               f"({t.dtype}) does not match the parameter of shape "
                               f"{tuple(p.shape)} ({p.dtype}); was the state loaded for a "
                               f"different parameter?")
        out.append(t._data)
    return out


def sgd_step_(p, grad, momentum_buffer, *, lr, momentum, dampening, weight_decay, nesterov,
              maximize, first_step):
    """One SGD step on p in place (kernels/optim.py: sgd_step); momentum_buffer None if unused."""
    pb, gb, bb = _buffers(p, grad, momentum_buffer)
    backend.optim.sgd_step(pb, gb, bb, p.numel(), lr, momentum, dampening, weight_decay,
                           nesterov, maximize, first_step)
    bump_version(p)   # a graph that saved p's old values now refuses to backward (as in PyTorch)


def adam_step_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, lr, beta1, beta2, eps,
               weight_decay, decoupled_weight_decay, amsgrad, maximize, step_size,
               bias_correction2_sqrt):
    """One Adam / AdamW step on p in place (kernels/optim.py: adam_step); max_exp_avg_sq None
    unless amsgrad."""
    pb, gb, m, v, vmax = _buffers(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
    backend.optim.adam_step(pb, gb, m, v, vmax, p.numel(), lr, beta1, beta2, eps, weight_decay,
                            decoupled_weight_decay, amsgrad, maximize, step_size,
                            bias_correction2_sqrt)
    bump_version(p)
