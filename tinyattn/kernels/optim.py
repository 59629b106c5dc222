"""Fused optimizer updates: one loop over a parameter's flat buffer does the whole step, in place.

A step written with tensor ops (`m.mul_(b1).add_(g, alpha=1 - b1)`, `v.mul_(b2)...`, ...) makes about
ten passes over memory and several temporary tensors per parameter; here every element is read once,
updated, and written back. The tensor layer (tinyattn/optim/) validates the buffers, creates the
state, and computes the per-step scalars (bias corrections) before calling these loops.

Arithmetic follows PyTorch's default single-tensor implementation operation by operation (the same
formulas, the same order, eps added where PyTorch adds it), with two details:

- Every value read from a buffer goes through `_f64`, so the arithmetic is float64 also for
  float32 buffers, as in interpreted Python, whose floats are float64. Results are rounded to the
  buffer's dtype when stored.
- Where PyTorch stores an intermediate in a tensor and goes on with the stored value (the moments
  m and v, the momentum buffer, the decayed parameter of AdamW), the loop also stores it and reads
  it back, so it continues with the same rounded value. In float64 this changes nothing.

Compiled or interpreted (`NUMBA_DISABLE_JIT=1`), the two modes give bit-identical results.
"""
import math

from . import kernel

__all__ = ["sgd_step", "adam_step"]


@kernel
def _f64(x):
    """x as a float64. In numba, `float(x)` keeps a float32 a float32 (and the arithmetic that
    follows would be float32); multiplying by the float64 1.0 promotes it, exactly, keeping the
    sign of zero and NaN. In interpreted Python it changes nothing."""
    return x * 1.0


@kernel
def _div(a, b):
    """a / b with IEEE results for b == 0 also when interpreted (Python raises ZeroDivisionError):
    +-inf, or NaN for 0 / 0."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.inf if (a > 0) == (math.copysign(1.0, b) > 0) else -math.inf
    return a / b


@kernel
def sgd_step(p, g, buf, n, lr, momentum, dampening, weight_decay, nesterov, maximize, first_step):
    """SGD with momentum on n elements: p (parameter), g (gradient), buf (momentum buffer).

        d <- -g if maximize else g
        d <- d + weight_decay * p
        buf <- d                                        (first step)
        buf <- momentum * buf + (1 - dampening) * d     (later steps)
        d <- d + momentum * buf if nesterov else buf
        p <- p - lr * d

    `buf` is not touched when momentum == 0 (it may then be an empty buffer)."""
    for i in range(n):
        d = _f64(g[i])
        if maximize:
            d = -d
        if weight_decay != 0.0:
            d = d + weight_decay * _f64(p[i])
        if momentum != 0.0:
            if first_step:
                buf[i] = d
            else:
                buf[i] = _f64(buf[i]) * momentum  # PyTorch: buf.mul_(momentum)
                buf[i] = _f64(buf[i]) + (1.0 - dampening) * d  # .add_(d, alpha=1 - dampening)
            b = _f64(buf[i])
            if nesterov:
                d = d + momentum * b
            else:
                d = b
        p[i] = _f64(p[i]) - lr * d


@kernel
def adam_step(p, g, m, v, v_max, n, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad,
              maximize, step_size, bias_correction2_sqrt):
    """Adam / AdamW on n elements: p (parameter), g (gradient), m and v (first and second moment),
    v_max (running maximum of v, used only when amsgrad; may be empty otherwise).

        g <- -g if maximize else g
        p <- p * (1 - lr * weight_decay)                 (AdamW: decoupled weight decay)
        g <- g + weight_decay * p                        (Adam: L2 penalty in the gradient)
        m <- beta1 m + (1 - beta1) g
        v <- beta2 v + (1 - beta2) g^2
        v_max <- max(v_max, v)                           (amsgrad; then v_max replaces v below)
        p <- p - step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    with step_size = lr / (1 - beta1^t) computed by the caller: together this is
    p - lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t),
    except that eps is added to sqrt(v) / sqrt(1 - beta2^t), exactly where PyTorch adds it."""
    sign = -1.0 if maximize else 1.0
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    l2 = 0.0 if decoupled else weight_decay
    # Two copies of the loop, one per amsgrad value: LLVM vectorises a loop after checking at
    # run time that its buffers do not overlap, and without amsgrad the dummy v_max must not take
    # part in that check (with it the loop runs several times slower).
    if amsgrad:
        for i in range(n):
            _adam_element(i, p, g, m, v, v_max, True, sign, decay, l2, beta1, beta2, eps,
                          step_size, bias_correction2_sqrt)
    else:
        for i in range(n):
            _adam_element(i, p, g, m, v, v, False, sign, decay, l2, beta1, beta2, eps,
                          step_size, bias_correction2_sqrt)


@kernel
def _adam_element(i, p, g, m, v, v_max, amsgrad, sign, decay, l2, beta1, beta2, eps, step_size,
                  bias_correction2_sqrt):
    """Element i of `adam_step`. Its branches only choose values and every store is
    unconditional (except v_max's), which keeps the loop vectorisable."""
    gi = sign * _f64(g[i])
    pi = _f64(p[i])
    if decay != 1.0:
        pi = pi * decay
    if l2 != 0.0:
        gi = gi + l2 * pi
    p[i] = pi  # AdamW: PyTorch stores the decayed p (p.mul_), then updates it
    pi = _f64(p[i])

    # m <- beta1 m + (1 - beta1) g, written as PyTorch's lerp(m, g, w = 1 - beta1): the form
    # depends on w so that w = 1 (beta1 = 0) gives exactly m = g.
    w = 1.0 - beta1
    mi = _f64(m[i])
    if w < 0.5:
        mi = mi + w * (gi - mi)
    else:
        mi = gi - (gi - mi) * (1.0 - w)
    m[i] = mi
    mi = _f64(m[i])

    v[i] = _f64(v[i]) * beta2  # PyTorch: v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    v[i] = _f64(v[i]) + (1.0 - beta2) * gi * gi
    vi = _f64(v[i])

    if amsgrad:
        vm = _f64(v_max[i])
        if vi > vm or vi != vi:  # a NaN in either one propagates, as torch.maximum
            vm = vi
        v_max[i] = vm
        vi = _f64(v_max[i])

    denom = math.sqrt(vi) / bias_correction2_sqrt + eps
    p[i] = pi + _div(-step_size * mi, denom)
