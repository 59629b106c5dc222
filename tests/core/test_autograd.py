"""The autograd engine: hand-computed gradients, accumulation, reuse, deep graphs, grad mode,
second backward, retain_grad, and gradcheck's own ability to catch a wrong gradient.

What holds: backward gives the gradients worked out by hand, sums every path into a leaf,
frees the graph, raises where PyTorch does, and keeps piecewise-constant ops (sign, norm(p=0))
in the graph with a zero gradient."""
import gc
import math
import weakref

import pytest

import tinyattn as ta
from tinyattn.autograd import Function
from tinyattn.testing import gradcheck

from helpers import assert_close


def test_hand_computed_scalar_expression():
    # f = (a*b + c)^2 / b at a=2, b=3, c=1: f = 49/3
    a = ta.tensor(2.0, requires_grad=True)
    b = ta.tensor(3.0, requires_grad=True)
    c = ta.tensor(1.0, requires_grad=True)
    f = (a * b + c) ** 2 / b
    assert f.item() == pytest.approx(49 / 3)
    f.backward()
    # df/da = 2(ab+c) b / b = 2(ab+c) = 14 ; df/dc = 2(ab+c)/b = 14/3
    # df/db = 2(ab+c) a / b - (ab+c)^2 / b^2 = 28/3 - 49/9
    assert a.grad.item() == pytest.approx(14)
    assert c.grad.item() == pytest.approx(14 / 3)
    assert b.grad.item() == pytest.approx(28 / 3 - 49 / 9)


def test_reused_node_gets_both_contributions():
    x = ta.tensor([3.0], requires_grad=True)
    (x * x).sum().backward()  # d(x^2)/dx = x + x
    assert x.grad.tolist() == [6.0]
    y = ta.tensor([2.0], requires_grad=True)
    h = y * 3
    (h + h * h).sum().backward()  # d/dy (3y + 9y^2) = 3 + 18y
    assert y.grad.tolist() == [39.0]


def test_gradients_accumulate_across_backward_calls_until_zeroed():
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0]
    w.grad = None
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_broadcast_gradient_is_summed_back_to_input_shape():
    x = ta.ones(4, 3, requires_grad=True)
    b = ta.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = ta.tensor(2.0, requires_grad=True)
    ((x + b) * s).sum().backward()
    assert b.grad.shape == (3,) and b.grad.tolist() == [8.0, 8.0, 8.0]  # 4 rows x s
    assert s.grad.shape == () and s.grad.item() == pytest.approx(4 * 3 + 4 * 6)
    assert x.grad.shape == (4, 3)


def test_leaves_do_not_share_gradient_buffers():
    a = ta.zeros(3, requires_grad=True)
    b = ta.zeros(3, requires_grad=True)
    (a + b).sum().backward()
    assert a.grad._data is not b.grad._data
    a.grad.mul_(5)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_deep_chain_has_no_recursion_limit():
    x = ta.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(10000):
        y = y * 1.0001
    y.sum().backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 10000, rel=1e-4)


def test_unused_branch_and_non_requiring_inputs():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    c = ta.tensor([5.0, 7.0])
    _unused = x * 100
    (x * c).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert c.grad is None and not c.requires_grad


def test_backward_with_explicit_gradient():
    x = ta.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(ta.tensor([1.0, 0.5, -1.0]))
    assert x.grad.tolist() == [2.0, 2.0, -6.0]


def test_backward_errors():
    x = ta.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.sum().backward()
    y = ta.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"one element.*shape \(2,\)"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"gradient has shape \(3,\)"):
        y.backward(ta.ones(3))


def test_second_backward_raises_unless_retain_graph():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    x.grad = None
    loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    first = x.grad.tolist()
    loss.backward()
    assert_close(x.grad, [2 * v for v in first])


def test_no_grad_context_and_decorator():
    x = ta.tensor([1.0], requires_grad=True)
    with ta.no_grad():
        y = x * 2
        with ta.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None

    @ta.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    assert ta.is_grad_enabled()
    with ta.set_grad_enabled(False):
        assert not (x * 1).requires_grad
    assert (x * 1).requires_grad


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating-point"):
        ta.tensor([1, 2], requires_grad=True)
    x = ta.tensor([1.0], requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d._data is y._data


def test_retain_grad_on_intermediate():
    x = ta.tensor([1.0, -2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h.relu() * 2).sum().backward()
    assert h.grad.tolist() == [2.0, 0.0]
    assert x.grad.tolist() == [6.0, 0.0]


def test_graph_is_freed_without_garbage_collector():
    """Nodes point backwards only, so a graph dies by reference counting alone (no cycles)."""
    gc.disable()
    try:
        x = ta.randn(10, requires_grad=True)
        y = (x.exp() * x).softmax(0).sum()
        node = weakref.ref(y.grad_fn)
        saved = weakref.ref(y.grad_fn.inputs[0])
        del y
        assert node() is None and saved() is None
    finally:
        gc.enable()


def test_inplace_guards():
    w = ta.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.add_(1)
    with ta.no_grad():
        w.add_(1)
    assert w.tolist() == [1.0, 1.0]
    h = w * 2
    h.mul_(2)          # a tensor inside the graph: recorded, as in PyTorch
    h2 = h
    h2 += 1            # in place too: h and h2 are one tensor
    assert h2.tolist() == [5.0, 5.0] and h.tolist() == [5.0, 5.0]
    h.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]    # d/dw ((w * 2) * 2 + 1)


class _WrongSquare(Function):
    """x^2 with a deliberately wrong derivative (2x + 0.1) to check that gradcheck catches it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x * 2 + 0.1)


def test_gradcheck_catches_a_wrong_gradient_and_names_it():
    x = ta.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=ta.float64, requires_grad=True)
    with pytest.raises(AssertionError, match=r"input 0 .*element \(0, 0\).*analytic.*numeric"):
        gradcheck(lambda t: _WrongSquare.apply(t), (x,))
    assert gradcheck(lambda t: t * t, (x,))


def test_gradcheck_requires_float64():
    x = ta.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="float64"):
        gradcheck(lambda t: t * 2, (x,))


def test_grad_fn_names_for_drawing():
    x = ta.tensor([1.0], requires_grad=True)
    assert (x * 2).grad_fn.name() == "MulBackward"
    assert x.exp().grad_fn.name() == "ExpBackward"
    assert "grad_fn=<AddBackward>" in repr(x + x)


def test_log_and_sqrt_of_zero_give_inf_not_errors():
    x = ta.tensor([0.0, 1.0], requires_grad=True)
    y = x.log()
    assert y.tolist()[0] == -math.inf
    y = ta.tensor([0.0]).sqrt()
    assert y.tolist() == [0.0]



@pytest.mark.parametrize("expr", ["lib.sign(x)", "lib.norm(x, 0)"])
def test_piecewise_constant_ops_record_a_zero_gradient(expr):
    """sign and norm(p=0) stay in the graph with gradient 0, as in PyTorch: backward runs."""
    x = ta.tensor([-2.0, 0.0, 3.0], dtype=ta.float64, requires_grad=True)
    y = eval(expr, {"lib": ta, "x": x})
    assert y.requires_grad
    (y * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]

@pytest.mark.parametrize("op", ["softmax", "sum", "transpose", "mul_scalar"])
def test_unary_function_records_what_function_apply_records(op):
    from tinyattn.ops.arithmetic import MUL, ScalarOp
    from tinyattn.ops.layout import Permute
    from tinyattn.ops.reduce import Sum
    from tinyattn.ops.softmax import Softmax
    cls, rest = {"softmax": (Softmax, (1, False)), "sum": (Sum, ((0,), False)),
                 "transpose": (Permute, ((1, 0),)), "mul_scalar": (ScalarOp, (MUL, 2.0, False))}[op]
    general_apply = Function.apply.__func__      # the loop over every argument
    x = ta.randn(3, 4, requires_grad=True) * 1.0  # a non-leaf: its grad_fn is what _next holds
    lean, general = cls.apply(x, *rest), general_apply(cls, x, *rest)
    assert type(lean.grad_fn) is cls and lean.requires_grad
    assert len(lean.grad_fn.inputs) == len(general.grad_fn.inputs)
    assert all(p is q for p, q in zip(lean.grad_fn.inputs, general.grad_fn.inputs))
    assert lean.grad_fn.needs_input_grad == general.grad_fn.needs_input_grad
    assert lean.grad_fn._next == general.grad_fn._next == (x.grad_fn,) + (None,) * len(rest)
    assert lean.tolist() == general.tolist()
    leaf = ta.randn(3, 4, requires_grad=True)
    cls.apply(leaf, *rest).sum().backward()
    lean_grad, leaf.grad = leaf.grad.tolist(), None
    general_apply(cls, leaf, *rest).sum().backward()
    assert leaf.grad.tolist() == lean_grad
    with ta.no_grad():
        assert cls.apply(x, *rest).grad_fn is None
    assert cls.apply(x.detach(), *rest).grad_fn is None
