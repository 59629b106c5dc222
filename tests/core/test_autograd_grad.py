"""autograd.grad returns gradients instead of accumulating them, as torch.autograd.grad does;
Tensor.backward(inputs=...) accumulates into the given tensors only."""
import pytest

import tinyattn as ta
from tinyattn import autograd


def _leaves():
    x = ta.tensor([1.0, 2.0, 3.0], dtype=ta.float64, requires_grad=True)
    w = ta.tensor([0.5, -1.0, 2.0], dtype=ta.float64, requires_grad=True)
    return x, w


def test_grad_returns_the_gradient_and_leaves_dot_grad_alone():
    x, w = _leaves()
    y = (x * w).sum() + (x * x).sum()                 # dy/dx = w + 2x, dy/dw = x
    gx, gw = autograd.grad(y, (x, w))
    assert gx.tolist() == [2.5, 3.0, 8.0] and gw.tolist() == [1.0, 2.0, 3.0]
    assert x.grad is None and w.grad is None


def test_grad_of_an_intermediate_tensor_and_of_several_outputs():
    x, w = _leaves()
    h = x * w                                          # a non-leaf input
    y1, y2 = h.sum(), (h * h).sum()
    gh, = autograd.grad((y1, y2), h, retain_graph=True)
    assert gh.tolist() == [1 + 2 * v for v in h.tolist()]
    gx, = autograd.grad(y1, x, grad_outputs=ta.tensor(3.0, dtype=ta.float64))
    assert gx.tolist() == [1.5, -3.0, 6.0]


def test_grad_of_a_non_scalar_output_needs_grad_outputs():
    x, _ = _leaves()
    y = x * 2
    with pytest.raises(RuntimeError, match="implicitly created only for a tensor with one element"):
        autograd.grad(y, x)
    gx, = autograd.grad(y, x, grad_outputs=ta.tensor([1.0, 0.0, -1.0], dtype=ta.float64))
    assert gx.tolist() == [2.0, 0.0, -2.0]


def test_an_unused_input_raises_unless_allowed():
    x, w = _leaves()
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        autograd.grad(y, (x, w), retain_graph=True)
    gx, gw = autograd.grad(y, (x, w), allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 2.0, 2.0] and gw is None
    gx, gw = autograd.grad(y, (x, w), materialize_grads=True)
    assert gw.tolist() == [0.0, 0.0, 0.0]


def test_the_graph_is_freed_unless_retained():
    x, _ = _leaves()
    y = (x * x).sum()
    autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        autograd.grad(y, x)


def test_batched_grad_outputs_say_they_are_not_implemented():
    x, _ = _leaves()
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        autograd.grad((x * x).sum(), x, is_grads_batched=True)


def test_backward_with_inputs_accumulates_into_those_only():
    x, w = _leaves()
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0, 3.0]
    (x * w).sum().backward(inputs=w)
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


def test_grad_matches_pytorch_on_a_small_network():
    torch = pytest.importorskip("torch")
    ta.manual_seed(0)
    lin = ta.nn.Linear(4, 3).double()
    x = ta.randn(5, 4, dtype=ta.float64, requires_grad=True)
    tl = torch.nn.Linear(4, 3).double()
    tl.load_state_dict({k: torch.tensor(v.tolist(), dtype=torch.float64)
                        for k, v in lin.state_dict().items()})
    tx = torch.tensor(x.tolist(), dtype=torch.float64, requires_grad=True)
    h, th = lin(x).tanh(), tl(tx).tanh()
    ours = autograd.grad((h.sum(), (h * h).mean()), (x, lin.weight, h))
    theirs = torch.autograd.grad((th.sum(), (th * th).mean()), (tx, tl.weight, th))
    for a, b in zip(ours, theirs):
        assert a.shape == tuple(b.shape)
        assert max(abs(p - q) for p, q in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())) < 1e-12
