"""Losses: hand-computed values, gradcheck (float64), PyTorch parity for every option, errors."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn as nn
import tinyattn.nn.functional as F
from tinyattn.testing import gradcheck


def close(a, b, tol=1e-6):
    a = a if isinstance(a, list) else [a]
    b = b if isinstance(b, list) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            close(x, y, tol)
        else:
            assert abs(x - y) <= tol * (1 + abs(y)), (x, y)


# ----------------------------------------------------------------------------- hand-computed


def test_cross_entropy_hand_computed():
    x = ta.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype="float64")
    t = ta.tensor([2, 0])
    lse0 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
    expect = [lse0 - 3.0, math.log(3.0)]
    close(F.cross_entropy(x, t, reduction="none").tolist(), expect)
    close(F.cross_entropy(x, t).item(), sum(expect) / 2)
    close(F.cross_entropy(x, t, reduction="sum").item(), sum(expect))


def test_cross_entropy_weighted_mean_divides_by_weights_of_kept_targets():
    x = ta.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [5.0, 0.0, 0.0]], dtype="float64")
    t = ta.tensor([2, 0, -100])
    w = ta.tensor([3.0, 1.0, 0.5], dtype="float64")
    lse0 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
    l0, l1 = 0.5 * (lse0 - 3.0), 3.0 * math.log(3.0)
    close(F.cross_entropy(x, t, weight=w).item(), (l0 + l1) / (0.5 + 3.0))
    close(F.cross_entropy(x, t, weight=w, reduction="none").tolist(), [l0, l1, 0.0])


def test_cross_entropy_label_smoothing_hand_computed():
    x = ta.tensor([[0.0, math.log(3.0)]], dtype="float64")  # p = (1/4, 3/4)
    t = ta.tensor([1])
    eps = 0.2
    # target distribution (eps/2, 1 - eps/2) = (0.1, 0.9)
    expect = -(0.1 * math.log(0.25) + 0.9 * math.log(0.75))
    close(F.cross_entropy(x, t, label_smoothing=eps).item(), expect)


def test_cross_entropy_stable_for_huge_logits():
    x = ta.tensor([[1e4, 0.0, -1e4]], requires_grad=True)
    loss = F.cross_entropy(x, ta.tensor([1]))
    loss.backward()
    close(loss.item(), 1e4, 1e-6)
    close(x.grad.tolist(), [[1.0, -1.0, 0.0]])


def test_cross_entropy_all_ignored_mean_is_nan():
    x = ta.randn(2, 3)
    assert math.isnan(F.cross_entropy(x, ta.tensor([-100, -100])).item())


def test_cross_entropy_unbatched_and_spatial_shapes():
    x = ta.randn(4)
    assert F.cross_entropy(x, ta.tensor(2), reduction="none").shape == ()
    x = ta.randn(2, 4, 3, 5)
    assert F.cross_entropy(x, ta.randint(0, 4, (2, 3, 5)), reduction="none").shape == (2, 3, 5)


def test_cross_entropy_target_out_of_range():
    with pytest.raises(IndexError, match=r"target 7 is out of bounds for 5 classes"):
        F.cross_entropy(ta.randn(3, 5), ta.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match=r"target -1 .* 5 classes"):
        F.nll_loss(ta.randn(3, 5), ta.tensor([0, -1, 1]))


def test_loss_argument_errors():
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(ta.randn(2, 3), ta.tensor([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match=r"target of shape \(2,\)"):
        F.cross_entropy(ta.randn(2, 3), ta.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match=r"weight must be a tensor of shape \(3,\)"):
        F.cross_entropy(ta.randn(2, 3), ta.tensor([0, 1]), weight=ta.ones(4))
    with pytest.raises(TypeError, match="int64"):
        F.nll_loss(ta.randn(2, 3), ta.tensor([True, False]))
    with pytest.raises(ValueError, match="same as input size"):
        F.binary_cross_entropy_with_logits(ta.randn(2, 3), ta.rand(3, 2))


def test_bce_with_logits_hand_computed_and_stable():
    x = ta.tensor([0.0, 2.0, -1e4, 1e4], dtype="float64", requires_grad=True)
    t = ta.tensor([1.0, 0.0, 1.0, 1.0], dtype="float64")
    out = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    close(out.tolist(), [math.log(2.0), math.log(1 + math.exp(2.0)), 1e4, 0.0])
    out.sum().backward()
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    close(x.grad.tolist(), [0.5 - 1.0, sig(2.0), -1.0, 0.0])  # sigmoid(x) - t, also at x = 0


def test_mse_hand_computed():
    a = ta.tensor([1.0, 2.0, 3.0])
    b = ta.tensor([1.0, 0.0, 0.0])
    close(F.mse_loss(a, b).item(), 13.0 / 3)
    close(nn.MSELoss(reduction="sum")(a, b).item(), 13.0)


# ----------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("kw", [dict(), dict(label_smoothing=0.3), dict(reduction="sum"),
                                dict(weight=True, label_smoothing=0.1, reduction="none")])
def test_gradcheck_cross_entropy(kw):
    ta.manual_seed(0)
    x = ta.randn(4, 3, 2, dtype="float64", requires_grad=True)
    t = ta.tensor([[0, 2], [1, -100], [2, 2], [0, 1]])
    if kw.get("weight"):
        kw = dict(kw, weight=ta.tensor([0.5, 2.0, 1.0], dtype="float64"))
    assert gradcheck(lambda x: F.cross_entropy(x, t, **kw), (x,))


def test_gradcheck_cross_entropy_probability_targets():
    ta.manual_seed(1)
    x = ta.randn(3, 4, dtype="float64", requires_grad=True)
    p = ta.randn(3, 4, dtype="float64").softmax(-1).requires_grad_()
    assert gradcheck(lambda x, p: F.cross_entropy(x, p, label_smoothing=0.2), (x, p))


def test_gradcheck_nll_bce_mse():
    ta.manual_seed(2)
    x = ta.randn(4, 3, dtype="float64", requires_grad=True)
    t = ta.tensor([0, 2, -100, 1])
    w = ta.tensor([0.5, 2.0, 1.0], dtype="float64")
    assert gradcheck(lambda x: F.nll_loss(x, t, weight=w), (x,))
    y = ta.rand(4, 3, dtype="float64", requires_grad=True)
    pw = ta.tensor([0.5, 2.0, 3.0], dtype="float64", requires_grad=True)
    assert gradcheck(lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
                     (x, y, pw))
    assert gradcheck(lambda x, y: F.mse_loss(x, y, reduction="sum"), (x, y))


# ----------------------------------------------------------------------------- PyTorch parity


def _torch_case():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, 3, generator=g)
    t = torch.randint(0, 5, (6, 3), generator=g)
    t[0, 0] = 4
    t[1, 2] = 4  # the ignore_index of some cases below
    w = torch.rand(5, generator=g) + 0.1
    return torch, x, t, w


def _compare(torch, fn_t, fn_a, x, tol=1e-5):
    xt = x.clone().requires_grad_()
    lt = fn_t(xt)
    ((lt + 1) ** 2).mean().backward()
    xa = ta.tensor(x.tolist(), requires_grad=True)
    la = fn_a(xa)
    ((la + 1) ** 2).mean().backward()
    close(la.tolist(), lt.tolist(), tol)
    close(xa.grad.tolist(), xt.grad.tolist(), tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("use_weight", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 4])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_matches_torch(reduction, use_weight, ignore_index, smoothing):
    torch, x, t, w = _torch_case()
    kw = dict(ignore_index=ignore_index, reduction=reduction, label_smoothing=smoothing)
    _compare(torch,
             lambda xt: torch.nn.functional.cross_entropy(xt, t, weight=w if use_weight else None,
                                                          **kw),
             lambda xa: nn.CrossEntropyLoss(weight=ta.tensor(w.tolist()) if use_weight else None,
                                            **kw)(xa, ta.tensor(t.tolist())), x)


def test_cross_entropy_2d_input_and_probability_targets_match_torch():
    torch, x, t, w = _torch_case()
    x2 = x[:, :, 0].contiguous()
    _compare(torch, lambda xt: torch.nn.functional.cross_entropy(xt, t[:, 0], weight=w,
                                                                 ignore_index=4),
             lambda xa: F.cross_entropy(xa, ta.tensor(t[:, 0].tolist()),
                                        weight=ta.tensor(w.tolist()), ignore_index=4), x2)
    p = torch.softmax(torch.randn(6, 5, 3), 1)
    for kw in (dict(), dict(label_smoothing=0.1, reduction="sum")):
        _compare(torch, lambda xt: torch.nn.functional.cross_entropy(xt, p, weight=w, **kw),
                 lambda xa: F.cross_entropy(xa, ta.tensor(p.tolist()),
                                            weight=ta.tensor(w.tolist()), **kw), x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_matches_torch(reduction):
    torch, x, t, w = _torch_case()
    _compare(torch, lambda xt: torch.nn.functional.nll_loss(xt.log_softmax(1), t, weight=w,
                                                            ignore_index=4, reduction=reduction),
             lambda xa: nn.NLLLoss(weight=ta.tensor(w.tolist()), ignore_index=4,
                                   reduction=reduction)(xa.log_softmax(1), ta.tensor(t.tolist())),
             x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weights", [False, True])
def test_bce_with_logits_matches_torch(reduction, weights):
    torch, x, _, _ = _torch_case()
    x = x * 4
    y = (torch.rand(6, 5, 3) > 0.5).float()
    w = torch.rand(5, 3) if weights else None
    pw = torch.rand(3) * 3 if weights else None
    _compare(torch, lambda xt: torch.nn.functional.binary_cross_entropy_with_logits(
        xt, y, weight=w, pos_weight=pw, reduction=reduction),
        lambda xa: nn.BCEWithLogitsLoss(
            weight=ta.tensor(w.tolist()) if weights else None,
            pos_weight=ta.tensor(pw.tolist()) if weights else None,
            reduction=reduction)(xa, ta.tensor(y.tolist())), x, tol=2e-4)
    # (tinyattn evaluates 1 - sigmoid(-x) in float64; PyTorch's float32 loses digits there)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_matches_torch(reduction):
    torch, x, _, _ = _torch_case()
    y = torch.randn(6, 5, 3)
    _compare(torch, lambda xt: torch.nn.functional.mse_loss(xt, y, reduction=reduction),
             lambda xa: F.mse_loss(xa, ta.tensor(y.tolist()), reduction=reduction), x)


def test_loss_modules_keep_weights_as_buffers():
    m = nn.CrossEntropyLoss(weight=ta.ones(3))
    assert list(m.state_dict()) == ["weight"]
    assert list(nn.BCEWithLogitsLoss(pos_weight=ta.ones(2)).state_dict()) == ["pos_weight"]
