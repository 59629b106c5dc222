"""softmax and log_softmax (ops/softmax.py), and sigmoid beside them: finite on huge logits.

What holds: no overflow or NaN for logits of +-1e4, a fully masked row (all -inf) gives zeros
with a finite gradient, and a 0-d tensor is a row of one element (softmax 1, log_softmax 0,
gradient 0). Values by hand; the 0-d case against PyTorch where it is installed."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn.functional as F

from helpers import assert_close


def test_stable_functions_on_huge_logits():
    x = ta.tensor([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4]], requires_grad=True)
    for y in (x.softmax(-1), ta.log_softmax(x, -1), x.sigmoid()):
        assert all(math.isfinite(v) for v in y.tolist_flat())
    assert_close(x.softmax(-1), [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]])
    assert_close(ta.log_softmax(x, -1)[0], [0.0, -1e4, -2e4])
    assert_close(x.sigmoid()[0], [1.0, 0.5, 0.0])
    (ta.log_softmax(x, -1)[:, 0].sum() + x.sigmoid().sum()).backward()
    assert all(math.isfinite(v) for v in x.grad.tolist_flat())


def test_softmax_of_fully_masked_row_is_zero_with_finite_gradient():
    x = ta.tensor([[-math.inf, -math.inf], [0.0, -math.inf]], requires_grad=True)
    y = x.softmax(-1)
    assert y.tolist() == [[0.0, 0.0], [1.0, 0.0]]
    (y * ta.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert all(math.isfinite(v) for v in x.grad.tolist_flat())


@pytest.mark.parametrize("fn, expected", [(F.softmax, 1.0), (F.log_softmax, 0.0)])
def test_softmax_of_a_zero_dim_tensor(fn, expected):
    s = ta.tensor(3.0, requires_grad=True)
    p = fn(s, dim=0)
    assert p.shape == () and p.item() == expected
    p.backward()
    assert s.grad.item() == 0.0


def test_softmax_of_a_zero_dim_tensor_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert F.softmax(ta.tensor(3.0), dim=0).item() == torch.softmax(torch.tensor(3.0), 0).item()
