"""Blends: a tensor plus a scaled term, composed of elementwise ops (the gradients are autograd's).

    lerp(x, end, w)           x + w (end - x)         linear interpolation
    addcmul(x, t1, t2, v)     x + v t1 t2
    addcdiv(x, t1, t2, v)     x + v t1 / t2           (Adam's update has this shape)
"""
from .arithmetic import mul, sub


def lerp(input, end, weight):  # noqa: A002
    """input + weight * (end - input)."""
    return input + mul(sub(end, input), weight)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + mul(mul(tensor1, tensor2), value)


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + mul(tensor1 / tensor2, value)
