"""autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp), gradcheck and gradgradcheck under
PyTorch's names: against hand-computed derivatives and against torch.autograd.functional."""
import pytest

import tinyattn as ta
from tinyattn.autograd import functional as AF

f64 = ta.float64


def _f(x):
    return (x.tanh() * x).sum()                  # f'' = 2 sech^2 x (1 - x tanh x), diagonal


def _close(a, b, tol=1e-10):
    a, b = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    return len(a) == len(b) and max((abs(p - q) for p, q in zip(a, b)), default=0) < tol


def test_hessian_and_hvp_of_a_separable_function_are_its_diagonal():
    x = ta.tensor([0.5, -1.0, 2.0], dtype=f64)
    t = x.tanh()
    d2 = (1 - t * t) * 2 * (1 - x * t)
    assert _close(AF.hessian(_f, x), ta.diag(d2))
    v = ta.tensor([1.0, 2.0, -1.0], dtype=f64)
    value, hv = AF.hvp(_f, x, v)
    assert _close(value, _f(x)) and _close(hv, d2 * v)
    assert _close(AF.vhp(_f, x, v)[1], d2 * v)


def test_jacobian_vjp_and_jvp_of_an_elementwise_map():
    x = ta.tensor([0.5, -1.0, 2.0], dtype=f64)
    g = lambda x: x * x * 3.0                      # noqa: E731  J = diag(6 x)
    assert _close(AF.jacobian(g, x), ta.diag(x * 6.0))
    v = ta.tensor([1.0, 0.0, 2.0], dtype=f64)
    assert _close(AF.vjp(g, x, v)[1], x * 6.0 * v)
    assert _close(AF.jvp(g, x, v)[1], x * 6.0 * v)


def test_the_functional_api_matches_pytorch_on_several_inputs():
    torch = pytest.importorskip("torch")
    ta.manual_seed(0)
    x, w = ta.randn(3, dtype=f64), ta.randn(2, 3, dtype=f64)
    tx, tw = (torch.tensor(t.tolist(), dtype=torch.float64) for t in (x, w))

    def ours(x, w):
        return (w @ x).sigmoid().sum() + (x * x).exp().sum() / 3.0

    def theirs(x, w):
        return (w @ x).sigmoid().sum() + (x * x).exp().sum() / 3.0

    H, TH = AF.hessian(ours, (x, w)), torch.autograd.functional.hessian(theirs, (tx, tw))
    for i in range(2):
        for j in range(2):
            assert _close(H[i][j], TH[i][j])
    J = AF.jacobian(lambda x, w: (w @ x).tanh(), (x, w))
    TJ = torch.autograd.functional.jacobian(lambda x, w: (w @ x).tanh(), (tx, tw))
    assert all(_close(a, b) for a, b in zip(J, TJ))
    v = (ta.ones(3, dtype=f64), ta.ones(2, 3, dtype=f64))
    tv = (torch.ones(3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64))
    assert all(_close(a, b) for a, b in zip(AF.hvp(ours, (x, w), v)[1],
                                             torch.autograd.functional.hvp(theirs, (tx, tw), tv)[1]))


def test_gradcheck_and_gradgradcheck_answer_as_pytorch():
    x = ta.tensor([0.5, -1.0, 2.0], dtype=f64, requires_grad=True)
    assert ta.autograd.gradcheck(_f, (x,)) is True
    assert ta.autograd.gradgradcheck(_f, (x,)) is True
    assert ta.autograd.gradcheck(lambda x: x.softmax(-1), (x,), raise_exception=False) is True
    assert ta.autograd.gradgradcheck(lambda x: (x.softmax(-1) * x).sum(), (x,)) is True
