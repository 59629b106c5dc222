"""Recorded backwards for fused ops: what makes their gradients differentiable again.

A fused op's backward is a kernel: fast, but its result carries no graph. With create_graph=True
the engine runs the op's `differentiable_backward` instead (autograd.py), a function of recorded
ops made by one of the two helpers below; with it off the kernel stays the only path, unchanged.

    Adjoint          for an op L linear in its input (a slice, a row gather, a pooling, a
                     cumsum): dx = L^T g is the op's own backward kernel, and the gradient of
                     g -> L^T g is L again, the op itself, which is recorded: so every order of
                     derivative goes through the same two kernels.
    composed_grads   for any other fused op: the same function written again with recorded ops
                     (many small nodes), differentiated by autograd.grad(create_graph=True).
"""
from .. import autograd
from ..autograd import Function, UnaryFunction, no_grad
from ..storage import TensorBase as Tensor, _make


class Adjoint(Function):
    """y = L^T g for a linear op L:  forward `transposed(g)` (L's backward, run as a kernel),
    backward  dg = op(gy) = L gy (recorded, so differentiable again)."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, g, transposed, op):
        with no_grad():
            return transposed(g)

    @staticmethod
    def backward(ctx, gy):
        return ctx.inputs[2](gy), None, None


class _Alias(UnaryFunction):
    """x itself as a new node (dx = g): the point where composed_grads stops differentiating."""

    reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        return _make(x._data, x.shape, x.dtype, x._strides, x._offset, x._packed)

    @staticmethod
    def backward(ctx, g):
        return g


Adjoint.differentiable_backward = _Alias.differentiable_backward = True


def composed_grads(ctx, composed, g):
    """The gradients of node `ctx`'s op for upstream gradient g, as recorded ops: `composed`
    (called with ctx.inputs) computes the op's output from recorded ops, and is differentiated
    with create_graph=True. One gradient per input, None where none is needed."""
    needs = ctx.needs_input_grad
    args = [_Alias.apply(a) if need else a for a, need in zip(ctx.inputs, needs)]
    wanted = [a for a, need in zip(args, needs) if need]
    out = composed(*args)
    outs, gs = ((out,), (g,)) if isinstance(out, Tensor) else (tuple(out), tuple(g))
    # The inner pass needs nothing beyond the aliases: cut them from the inputs' history while
    # it runs, or it would walk the whole graph behind them at every fused node.
    edges = [(a.grad_fn, a.grad_fn._next) for a in wanted]
    for node, _ in edges:
        node._next = (None,)
    try:
        grads = iter(autograd.grad(outs, wanted, gs, create_graph=True, allow_unused=True))
    finally:
        for node, nxt in edges:
            node._next = nxt
    return tuple(next(grads) if need else None for need in needs)


def adjoint(op):
    """The recorded backward of a Function linear in its first input: dx = L^T g by the
    Function's own backward kernel, and L as `op(ctx, u)`, recorded (the forward op again)."""
    def recorded(ctx, g):
        fast = lambda u: type(ctx).backward(ctx, u)[0]    # noqa: E731
        return (Adjoint.apply(g, fast, lambda u: op(ctx, u)),) + (None,) * (len(ctx.inputs) - 1)
    return recorded


def composed(fn):
    """The recorded backward of a fused Function: `fn(*inputs)`, the same output computed with
    recorded ops, differentiated (composed_grads)."""
    return lambda ctx, g: composed_grads(ctx, fn, g)
