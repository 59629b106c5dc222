"""clip_grad_norm_ / clip_grad_value_: hand-computed cases and PyTorch parity.

What holds: the total norm (p = 2, 1, inf) and the scaled gradients are the ones worked out by
hand and PyTorch's; gradients under the limit and parameters without one are left alone; a
non-finite norm raises when asked to."""
import math

import pytest

import tinyattn as ta
from tinyattn.nn.utils import clip_grad_norm_, clip_grad_value_


def _params(grads):
    ps = []
    for g in grads:
        p = ta.zeros(len(g), requires_grad=True)
        p.grad = ta.tensor(g)
        ps.append(p)
    return ps


def test_clip_grad_norm_hand_computed():
    ps = _params([[3.0], [4.0]])  # total 2-norm 5
    total = clip_grad_norm_(ps, 1.0)
    assert abs(total.item() - 5.0) < 1e-6
    assert abs(ps[0].grad.item() - 3.0 / (5.0 + 1e-6)) < 1e-6
    assert abs(ps[1].grad.item() - 4.0 / (5.0 + 1e-6)) < 1e-6


def test_clip_grad_norm_leaves_small_gradients_and_skips_missing():
    ps = _params([[0.3, -0.4]])
    ps.append(ta.zeros(2, requires_grad=True))  # no .grad: ignored
    total = clip_grad_norm_(ps, 10.0)
    assert abs(total.item() - 0.5) < 1e-6
    assert ps[0].grad.tolist() == pytest.approx([0.3, -0.4])
    assert clip_grad_norm_([ta.zeros(2, requires_grad=True)], 1.0).item() == 0.0


def test_clip_grad_norm_inf_and_p1():
    ps = _params([[1.0, -7.0], [2.0]])
    assert clip_grad_norm_(ps, 100.0, norm_type=math.inf).item() == 7.0
    assert clip_grad_norm_(ps, 100.0, norm_type=1).item() == 10.0
    clip_grad_norm_(ps, 3.5, norm_type="inf" if False else math.inf)
    assert ps[0].grad.tolist() == pytest.approx([0.5, -3.5], rel=1e-5)


def test_clip_grad_norm_nonfinite():
    ps = _params([[1.0, math.inf]])
    with pytest.raises(RuntimeError, match="total norm"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(ps, 1.0).item())


def test_clip_grad_value():
    ps = _params([[0.5, -3.0, 2.0]])
    clip_grad_value_(ps, 1.0)
    assert ps[0].grad.tolist() == [0.5, -1.0, 1.0]


@pytest.mark.parametrize("norm_type,max_norm", [(2.0, 1.0), (1.0, 0.5), (math.inf, 0.3),
                                                (3.0, 0.7), (2.0, 100.0)])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(3, 4, generator=g), torch.randn(5, generator=g) * 3]
    tp = [torch.zeros_like(x, requires_grad=True) for x in grads]
    for p, x in zip(tp, grads):
        p.grad = x.clone()
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    ap = [ta.zeros(*x.shape, requires_grad=True) for x in grads]
    for p, x in zip(ap, grads):
        p.grad = ta.tensor(x.tolist())
    an = clip_grad_norm_(ap, max_norm, norm_type)
    assert an.item() == pytest.approx(tn.item(), rel=1e-5)
    for p, q in zip(ap, tp):
        assert p.grad.reshape(-1).tolist() == pytest.approx(q.grad.reshape(-1).tolist(), rel=1e-5,
                                                            abs=1e-7)


def test_clip_after_real_backward():
    w = ta.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (w * w).sum().backward()  # grad = 2w, norm = 2 * sqrt(30)
    total = clip_grad_norm_(w, 1.0)
    assert total.item() == pytest.approx(2 * math.sqrt(30), rel=1e-6)
    assert math.sqrt(sum(v * v for v in w.grad.reshape(-1).tolist())) == pytest.approx(1.0, rel=1e-5)
