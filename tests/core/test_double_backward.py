"""Gradients of gradients: autograd.grad(..., create_graph=True) records the backward pass, so a
gradient can be differentiated again (Hessian-vector products, gradient penalties, one step of
learning to learn), checked against finite differences of first-order gradients and against
PyTorch. Ops whose backward is not written as recorded ops raise instead of returning a wrong
second derivative."""
import pytest

import tinyattn as ta
from tinyattn import autograd

f64 = ta.float64


def _net(x, w1, b1, w2):
    """A two-layer MLP with the ops whose backward opts in: linear, tanh, sigmoid, exp, mul."""
    h = ta.nn.functional.linear(x, w1, b1).tanh()           # (N, H)
    return (h @ w2.t()).sigmoid().sum() * 2.0 + ((h * h).exp() / 3.0).sum()


def _params(seed=0):
    ta.manual_seed(seed)
    return [ta.randn(*s, dtype=f64, requires_grad=True) for s in ((5, 3), (4, 3), (4,), (2, 4))]


def _grad_at(params, i, delta, k):
    """d f / d params[k] with params[i] moved by delta (first order only)."""
    moved = [p.detach() + (delta if j == i else 0.0) for j, p in enumerate(params)]
    moved = [m.requires_grad_() for m in moved]
    return autograd.grad(_net(*moved), moved[k])[0]


def test_hessian_vector_product_matches_finite_differences_of_the_gradient():
    params = _params()
    x, w1 = params[0], params[1]
    v = ta.randn(*w1.shape, dtype=f64)
    g, = autograd.grad(_net(*params), w1, create_graph=True)
    hv, = autograd.grad((g * v).sum(), x)              # d/dx of <df/dw1, v>: a mixed 2nd derivative
    eps = 1e-6
    plus = [p.detach() for p in params]
    minus = [p.detach() for p in params]
    fd = ta.zeros(*x.shape, dtype=f64)
    for idx in range(x.numel()):
        r, c = divmod(idx, x.shape[1])
        plus = [p.detach().clone().requires_grad_() for p in params]
        minus = [p.detach().clone().requires_grad_() for p in params]
        with ta.no_grad():
            plus[0][r, c] += eps
            minus[0][r, c] -= eps
        gp = autograd.grad(_net(*plus), plus[1])[0]
        gm = autograd.grad(_net(*minus), minus[1])[0]
        fd[r, c] = ((gp - gm) * v).sum() / (2 * eps)
    assert (hv - fd).abs().max().item() < 1e-6


def test_gradient_penalty_matches_pytorch():
    torch = pytest.importorskip("torch")
    params = _params(1)
    theirs = [torch.tensor(p.tolist(), dtype=torch.float64, requires_grad=True) for p in params]

    def penalty(lib, ps):
        def net(x, w1, b1, w2):
            h = lib.nn.functional.linear(x, w1, b1).tanh()
            return (h @ w2.t()).sigmoid().sum() * 2.0 + ((h * h).exp() / 3.0).sum()
        g = lib.autograd.grad(net(*ps), ps[0], create_graph=True)[0]
        return lib.autograd.grad((g * g).sum(), ps[1:])

    for a, b in zip(penalty(ta, params), penalty(torch, theirs)):
        assert max(abs(p - q) for p, q in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())) < 1e-10


def test_one_step_of_learning_to_learn_matches_finite_differences():
    """The loss after one SGD step, differentiated with respect to the learning rate."""
    x = ta.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=f64)
    y = ta.tensor([1.0, -1.0], dtype=f64)
    w0 = ta.tensor([0.3, -0.2], dtype=f64)

    def after_step(lr, create_graph):
        w = w0.clone().requires_grad_()
        loss = ((x @ w - y) ** 2).sum()
        g, = autograd.grad(loss, w, create_graph=create_graph)
        w1 = w - lr * g
        return ((x @ w1 - y) ** 2).sum()

    lr = ta.tensor(0.05, dtype=f64, requires_grad=True)
    d_lr, = autograd.grad(after_step(lr, True), lr)
    eps = 1e-6
    fd = (after_step(ta.tensor(0.05 + eps, dtype=f64), False)
          - after_step(ta.tensor(0.05 - eps, dtype=f64), False)) / (2 * eps)
    assert abs(d_lr.item() - fd.item()) < 1e-6


def test_backward_with_create_graph_leaves_differentiable_grads():
    x = ta.tensor([1.0, 2.0], dtype=f64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)          # x.grad = 3 x^2, with a graph
    assert x.grad.tolist() == [3.0, 12.0] and x.grad.requires_grad
    d2, = autograd.grad(x.grad.sum(), x)                 # 6 x
    assert d2.tolist() == [6.0, 12.0]


class _KernelOnlySquare(autograd.Function):
    """y = x^2 with a backward that is not recorded ops (no differentiable_backward)."""

    @staticmethod
    def forward(ctx, x):
        return x.detach() * x.detach()

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.inputs[0]).detach() * 2.0


def test_a_function_whose_backward_is_not_differentiable_raises_and_names_it():
    x = ta.randn(3, 4, dtype=f64, requires_grad=True)
    assert autograd.grad(_KernelOnlySquare.apply(x).sum(), x)[0].tolist() == (2 * x).tolist()
    with pytest.raises(NotImplementedError, match="the backward of _KernelOnlySquareBackward"):
        autograd.grad(_KernelOnlySquare.apply(x).sum(), x, create_graph=True)


def test_first_order_gradients_are_unchanged_by_the_recorded_path():
    params = _params(2)
    plain = autograd.grad(_net(*params), params)
    recorded = autograd.grad(_net(*params), params, create_graph=True)
    for a, b in zip(plain, recorded):
        assert (a - b.detach()).abs().max().item() < 1e-12
