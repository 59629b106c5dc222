"""atan2: the angle of a point (x, y), elementwise, with broadcasting and its gradient.

    Atan2   out = atan2(a, b);  its kernel is kernels/elementwise.py's binary map ATAN2
"""
from .. import dtypes as _dt
from ..autograd import BinaryFunction
from ._launch import need_tensors
from .arithmetic import ATAN2, _binary_forward, add, mul, neg, reciprocal
from .convert import to_dtype
from .reduce import sum_to

_float32 = _dt.float32


class Atan2(BinaryFunction):
    """out = atan2(a, b), the angle of the point (x = b, y = a) in (-pi, pi];
    da = g * b / (a^2 + b^2),  db = -g * a / (a^2 + b^2)  (NaN at a = b = 0, as PyTorch)."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _binary_forward(ATAN2, a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        r = reciprocal(add(mul(a, a), mul(b, b)))
        return (sum_to(mul(mul(g, b), r), a.shape) if na else None,
                sum_to(mul(mul(g, neg(a)), r), b.shape) if nb else None)


# Its backward formula is recorded ops, differentiable again (create_graph=True).
Atan2.differentiable_backward = True


def atan2(input, other):  # noqa: A002 - PyTorch's argument names
    """The angle of the point (x = other, y = input), elementwise, in (-pi, pi] (broadcasting;
    integer and bool inputs give float32, as PyTorch). Gradient: see Atan2."""
    need_tensors("atan2", input, other)
    dt = _dt.promote_types(input.dtype, other.dtype)
    if not dt.is_floating_point:
        dt = _float32
    a = input if input.dtype is dt else to_dtype(input, dt)
    b = other if other.dtype is dt else to_dtype(other, dt)
    return Atan2.apply(a, b)


arctan2 = atan2
