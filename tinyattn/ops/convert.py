"""Dtype conversion: x.to(dtype), x.float(), x.long(), ... as one differentiable op.

    ToDtype   out = x converted to dtype (a packed copy)     dx = g converted back to x's dtype

Floats carry gradients; a conversion to an integer dtype or bool cuts the graph (an integer
tensor has no gradient, as in PyTorch). Float -> int truncates toward zero, and uint8 / int32
keep the low 8 / 32 bits of the value (dtypes.py); -> bool tests `!= 0`. The copy loops are the
strided copies of `_launch.copy_into`. Most ops convert their operands with `to_dtype`, which is
why this file sits at the bottom of ops/.
"""
from .. import dtypes as _dt
from ..autograd import UnaryFunction
from ._launch import copy

_bool = _dt.bool


class ToDtype(UnaryFunction):
    """x converted to another dtype;  dx = g converted back (floats only carry gradients)."""

    reads_inputs = False  # backward reads only what forward saved, or nothing

    @staticmethod
    def forward(ctx, x, dtype):
        if dtype is _bool:
            return x != 0
        return copy(x, dtype)

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        return (copy(g, x.dtype) if x.dtype.is_floating_point else None), None


# create_graph=True: the conversion back, recorded (a float input: only floats carry gradients).
ToDtype.differentiable_backward = lambda ctx, g: (ToDtype.apply(g, ctx.inputs[0].dtype), None)


def to_dtype(x, dtype):
    if x.dtype is dtype:
        return x
    out = ToDtype.apply(x, dtype)
    if not dtype.is_floating_point and out.grad_fn is not None:  # integers carry no gradient
        out.grad_fn = None
        out._requires_grad = False
    return out
