"""Random numbers for tensors: the fills behind rand / randn / randint / randperm, and dropout.

The generator is counter-based (kernels/random.py): a draw is a hash of two keys from the
generator and the element's index, so the same seed gives the same numbers compiled or
interpreted, in any order, on any number of threads.

    Dropout   y = x * m, m[i] = 1/(1-p) with probability 1-p, else 0;   dx = g * m
              m is not stored: backward redraws it from the same two keys.

Chapter 5 of the tour (docs/05-transformer.md) uses dropout.
"""
from array import array

from .. import dtypes as _dt
from ..autograd import UnaryFunction
from .. import backend
from ..random import default_generator
from ..storage import TensorBase as Tensor, _empty
from ._launch import check_tensor, packed
from ._recorded import Adjoint


def uniform_fill(t, low, high, generator=None):
    """Fill the packed tensor t with U[low, high) samples, in place; returns t."""
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.uniform(t._data, t.numel(), k1, k2, float(low), float(high),
                           t.dtype is _dt.float32)
    return t


def normal_fill(t, mean, std, generator=None):
    """Fill the packed tensor t with N(mean, std^2) samples, in place; returns t."""
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.normal(t._data, t.numel(), k1, k2, float(mean), float(std))
    return t


def randint_fill(t, low, high, generator=None):
    """Fill the packed int64 tensor t with integers uniform on [low, high), in place."""
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.randint(t._data, t.numel(), k1, k2, int(low), int(high))
    return t


def randperm_fill(t, generator=None):
    """Fill the packed int64 tensor t (n,) with a random permutation of 0..n-1, in place."""
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.randperm(t._data, t.numel(), k1, k2)
    return t


def bernoulli_scale_fill(t, p, generator=None):
    """Fill t with 1/(1-p) with probability 1-p and 0 otherwise (inverted dropout's mask)."""
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.bernoulli_scale(t._data, t.numel(), k1, k2, float(p),
                                   1.0 / (1.0 - p) if p < 1 else 0.0)
    return t


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Indices drawn from the categories of each row of `input` (1-D (n,) or 2-D (B, n)
    non-negative weights, not necessarily normalised) -> int64 (num_samples,) or
    (B, num_samples). Without replacement a category is drawn at most once per row."""
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got "
                           f"{getattr(input, 'shape', type(input).__name__)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial: only supports floating-point dtypes for input, got "
                           f"{input.dtype}")
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample {num_samples!r} (<= 0) samples")
    rows, n = (1, input.shape[0]) if input.ndim == 1 else input.shape
    if n == 0:
        raise RuntimeError("multinomial: the number of categories cannot be 0")
    if not replacement and num_samples > n:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           f"without replacement ({num_samples} > {n})")
    w = packed(input.detach()).to(_dt.float64)
    values = w._data
    for r in range(rows):
        row = values[r * n:(r + 1) * n]
        if any(not (v >= 0.0) or v == float("inf") for v in row):
            raise RuntimeError("multinomial: probability tensor contains either inf, nan or "
                               "element < 0")
        positive = sum(1 for v in row if v > 0.0)
        if positive == 0:
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement and positive < num_samples:
            raise RuntimeError("multinomial: invalid multinomial distribution (with "
                               "replacement=False, not enough non-negative category to sample)")
    out = _empty((rows, num_samples), _dt.int64)
    k1, k2 = (generator or default_generator).next_keys()
    backend.random.multinomial(values, rows, n, num_samples, bool(replacement), out._data, k1, k2,
                               array("d", bytes(8 * n)))
    return out.view(num_samples) if input.ndim == 1 else out


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability p and scale the rest by 1/(1-p) (inverted dropout), so
    the expected value is unchanged and evaluation needs no rescaling."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability has to be between 0 and 1, but got {p}")
    check_tensor("dropout", input)
    if not training or p == 0.0:
        return input
    if not input.dtype.is_floating_point:
        raise TypeError(f"dropout: expected a floating-point tensor, got {input.dtype}")
    return Dropout.apply(input, float(p))


class Dropout(UnaryFunction):
    """y = x * m, m[i] = 1/(1-p) with probability 1-p, else 0;  dx = g * m.

    The same numbers as x * bernoulli_mask(...) (the same draw from the same generator), as one
    node: the random numbers are counter-based, so backward redraws m from the two keys instead
    of keeping an x-sized mask tensor (kernels/random.py: dropout_apply)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, p):
        k1, k2 = default_generator.next_keys()
        # the scale as a mask of x's dtype would store it (1/0.9 rounded to float32, say)
        scale = array(x.dtype.typecode, [1.0 / (1.0 - p) if p < 1 else 0.0])[0]
        x = packed(x)
        out = _empty(x.shape, x.dtype)
        backend.random.dropout_apply(x._data, out._data, len(out._data), k1, k2, p, scale)
        if ctx.needs_input_grad:
            ctx.draw = (k1, k2, p, scale)
        return out

    @staticmethod
    def backward(ctx, g):
        k1, k2, p, scale = ctx.draw
        g = packed(g)
        dx = _empty(g.shape, g.dtype)
        backend.random.dropout_apply(g._data, dx._data, len(dx._data), k1, k2, p, scale)
        return dx, None


def _dropout_recorded(ctx, g):
    """create_graph=True: g -> g * m is linear and its own transpose."""
    return Adjoint.apply(g, lambda u: Dropout.backward(ctx, u)[0],
                         lambda u: _dropout_recorded(ctx, u)[0]), None


Dropout.differentiable_backward = _dropout_recorded
