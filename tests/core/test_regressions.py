"""Bugs found while splitting the op library into ops/ (issue 9), each pinned by a test that failed
before its fix: the expected values are worked out by hand and, where PyTorch is installed, checked
against it too."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn.functional as F
from tinyattn.testing import gradcheck


def _sign_bits(values):
    return [math.copysign(1.0, v) for v in values]


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_relu_gives_positive_zero_and_zero_for_minus_infinity(dtype):
    # max(x, 0) computed as x * (x > 0) gave -0.0 for negative x and NaN for -inf (-inf * 0);
    # -0.0 itself passes through, as in PyTorch (it is not below 0)
    y = ta.tensor([-1.0, float("-inf"), 0.0, -0.0, 2.5], dtype=dtype).relu().tolist()
    assert y == [0.0, 0.0, 0.0, 0.0, 2.5]
    assert _sign_bits(y) == [1.0, 1.0, 1.0, -1.0, 1.0]
    assert math.isnan(ta.tensor([float("nan")], dtype=dtype).relu().item())


def test_sum_to_size_has_a_gradient():
    # `any` in ops/reduce.py was the module's own tensor `any`, not the builtin: every
    # non-trivial sum_to_size raised TypeError
    x = ta.ones(2, 3, dtype=ta.float64, requires_grad=True)
    y = x.sum_to_size(1, 3)
    assert y.tolist() == [[2.0, 2.0, 2.0]] and y.grad_fn is not None
    (y * ta.tensor([[1.0, 2.0, 3.0]], dtype=ta.float64)).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    assert gradcheck(lambda t: t.sum_to_size(2, 1), (ta.randn(2, 3, 4, dtype=ta.float64)
                                                     [:, :, 0].requires_grad_(),))
    with pytest.raises(ValueError, match=r"sum_to_size: size \(2, 2\)"):
        x.sum_to_size(2, 2)


@pytest.mark.parametrize("fn, expected", [(F.softmax, 1.0), (F.log_softmax, 0.0)])
def test_softmax_of_a_zero_dim_tensor(fn, expected):
    s = ta.tensor(3.0, requires_grad=True)
    p = fn(s, dim=0)
    assert p.shape == () and p.item() == expected
    p.backward()
    assert s.grad.item() == 0.0


@pytest.mark.parametrize("op", ["gather", "index_select"])
def test_negative_indices_are_rejected(op):
    # they used to wrap around like Python lists; PyTorch rejects them
    x, idx = ta.tensor([1.0, 2.0, 3.0]), ta.tensor([-1])
    call = (lambda: ta.gather(x, 0, idx)) if op == "gather" else (lambda: ta.index_select(x, 0, idx))
    with pytest.raises(IndexError, match=rf"{op}: index -1 is out of bounds"):
        call()


@pytest.mark.parametrize("padding_idx", [4, 7, -5])
def test_embedding_padding_idx_out_of_range(padding_idx):
    # its backward used to zero a row past the end of the gradient buffer
    with pytest.raises(ValueError, match=f"embedding: padding_idx {padding_idx} must be within"):
        F.embedding(ta.tensor([1]), ta.ones(4, 2), padding_idx=padding_idx)


def test_embedding_negative_padding_idx_counts_from_the_end():
    w = ta.ones(4, 2, requires_grad=True)
    F.embedding(ta.tensor([1, 3, 3]), w, padding_idx=-1).sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_embedding_weight_must_be_two_dimensional():
    with pytest.raises(ValueError, match=r"embedding: weight must be a 2-D.*\(4, 2, 2\)"):
        F.embedding(ta.tensor([1]), ta.ones(4, 2, 2))


def test_the_same_against_pytorch():
    torch = pytest.importorskip("torch")
    x = [-1.0, -0.0, float("-inf"), 0.0, 2.5]
    assert _sign_bits(ta.tensor(x).relu().tolist()) == \
        _sign_bits(torch.relu(torch.tensor(x)).tolist())
    assert F.softmax(ta.tensor(3.0), dim=0).item() == torch.softmax(torch.tensor(3.0), 0).item()
    w = torch.ones(4, 2, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor([1, 3, 3]), w, padding_idx=-1).sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(Exception):
        torch.nn.functional.embedding(torch.tensor([1]), torch.ones(4, 2), padding_idx=7)
    with pytest.raises(Exception):
        torch.gather(torch.ones(3), 0, torch.tensor([-1]))


@pytest.mark.parametrize("index, value_shape", [
    ((slice(None), slice(1, 3)), (4, 2)),
    ((1,), (5,)),
    ((slice(None, None, 2), 2), ()),
    ((Ellipsis, slice(0, 5, 2)), (1, 3)),
    ((None, 2, slice(1, None)), (4,)),
    ((slice(1, 3), slice(None)), (5,)),
])
def test_setitem_with_slices_writes_the_view_in_place(index, value_shape):
    # x[slices] = v copies into the strided view (it used to build an index of every element
    # of x: 0.3 ms for a KV-cache write); the result must be PyTorch's
    torch = pytest.importorskip("torch")
    x = ta.arange(20.0).reshape(4, 5)
    v = ta.arange(100.0, 100.0 + max(1, math.prod(value_shape))).reshape(value_shape)
    t = torch.arange(20.0).reshape(4, 5)
    t[index] = torch.tensor(v.tolist())
    x[index] = v
    assert x.tolist() == t.tolist()


def test_setitem_from_an_overlapping_view_reads_the_old_values():
    x = ta.arange(6.0)
    x[1:] = x[:-1]
    assert x.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    y = ta.zeros(2, 3, dtype=ta.int64)
    y[:, 1] = ta.tensor([2.7, -2.7])          # float into int64 truncates toward zero
    assert y.tolist() == [[0, 2, 0], [0, -2, 0]]
    with pytest.raises(ValueError, match=r"setitem: shapes \(2,\) and \(3,\)"):
        y[:, 1] = ta.tensor([1, 2, 3])
