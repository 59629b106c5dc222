"""Tensor creation, metadata, conversion, views, in-place writes, randomness and printing.

What holds: PyTorch's dtypes for what Python gives (and for new_* and to(other)), views that
share storage, writes through slices and overlapping views that read the values from before the
write, runs that repeat under manual_seed, and PyTorch's repr. Values by hand; PyTorch beside
them where it is installed."""
import math

import pytest

import tinyattn as ta

from helpers import assert_close, check_value_and_dtype


def test_tensor_infers_dtype_and_shape():
    assert ta.tensor(1.5).dtype is ta.float32 and ta.tensor(1.5).shape == ()
    assert ta.tensor([1, 2]).dtype is ta.int64
    assert ta.tensor([True, False]).dtype is ta.bool
    assert ta.tensor([[1, 2.5]]).dtype is ta.float32
    assert ta.tensor([]).shape == (0,)
    t = ta.tensor([[1, 2, 3], [4, 5, 6]], dtype=ta.float64)
    assert t.shape == (2, 3) and t.ndim == 2 and t.numel() == 6 and t.size(-1) == 3
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert ta.tensor([ta.tensor(1.0), ta.tensor(2.0)]).tolist() == [1.0, 2.0]


def test_tensor_rejects_ragged_and_bad_elements():
    with pytest.raises(ValueError, match="length 2 at dim 1"):
        ta.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="str"):
        ta.tensor(["a"])


def test_factories():
    assert ta.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert ta.ones((2,)).tolist() == [1.0, 1.0]
    assert ta.full((2,), 7).dtype is ta.int64 and ta.full((2,), 7.0).dtype is ta.float32
    assert ta.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert ta.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert ta.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert ta.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert_close(ta.linspace(0, 1, 5), [0, 0.25, 0.5, 0.75, 1.0])
    x = ta.randn(2, 2, dtype=ta.float64)
    assert ta.zeros_like(x).dtype is ta.float64 and ta.ones_like(x).shape == (2, 2)
    with pytest.raises(ValueError, match="negative"):
        ta.zeros(-1)


@pytest.mark.parametrize("expr, expected, dtype", [
    ("x.new_zeros(2, 3)", [[0, 0, 0], [0, 0, 0]], "int64"),
    ("x.new_ones((2,), dtype=lib.float32)", [1.0, 1.0], "float32"),
    ("x.new_full((2,), 7)", [7, 7], "int64"),
    ("x.new_tensor([1.9, 2.0])", [1, 2], "int64"),
    ("x.new_empty(0, 2)", [], "int64"),
    ("lib.ones(2).type_as(x)", [1, 1], "int64"),
])
def test_new_tensors_take_this_tensors_dtype(expr, expected, dtype):
    # new_* are what real programs use to make a buffer "like" a tensor (nanoGPT, seq2seq code)
    out = eval(expr, {"lib": ta, "x": ta.tensor([5, 6])})
    assert out.tolist() == expected and out.dtype.name == dtype
    torch = pytest.importorskip("torch")
    theirs = eval(expr, {"lib": torch, "x": torch.tensor([5, 6])})
    assert theirs.tolist() == expected and str(theirs.dtype) == f"torch.{dtype}"


def test_new_tensors_on_another_device_fail_loudly():
    with pytest.raises(NotImplementedError, match="new_zeros: device 'cuda'"):
        ta.ones(2).new_zeros(3, device="cuda")


def test_manual_seed_makes_runs_repeatable():
    ta.manual_seed(123)
    a = [ta.rand(5).tolist(), ta.randn(3).tolist(), ta.randint(0, 10, (4,)).tolist()]
    ta.manual_seed(123)
    b = [ta.rand(5).tolist(), ta.randn(3).tolist(), ta.randint(0, 10, (4,)).tolist()]
    assert a == b
    assert ta.rand(5).tolist() != a[0]  # the next draw is a new stream
    state = ta.get_rng_state()
    c = ta.randn(4).tolist()
    ta.set_rng_state(state)
    assert ta.randn(4).tolist() == c


def test_random_distributions():
    ta.manual_seed(0)
    u = ta.rand(20000, dtype=ta.float64)
    assert 0 <= u.min().item() and u.max().item() < 1
    assert abs(u.mean().item() - 0.5) < 0.01 and abs(u.var().item() - 1 / 12) < 0.005
    n = ta.randn(20000, dtype=ta.float64)
    assert abs(n.mean().item()) < 0.03 and abs(n.std().item() - 1) < 0.03
    # the tails exist: a N(0, 1) sample of 20000 has |x| > 3 about 54 times
    assert 20 < (n.abs() > 3).sum().item() < 110
    r = ta.randint(3, 7, (5000,))
    assert set(r.tolist()) == {3, 4, 5, 6}
    p = ta.randperm(50)
    assert sorted(p.tolist()) == list(range(50))
    f = ta.rand(100000)  # float32 draws never round up to 1.0
    assert f.max().item() < 1.0


def test_conversions_and_python_scalars():
    x = ta.tensor([[1.7, -2.5]])
    assert x.long().tolist() == [[1, -2]]  # toward zero, like a C cast (and PyTorch)
    assert x.double().dtype is ta.float64
    assert x.bool().tolist() == [[True, True]]
    assert ta.tensor([0.0, 2.0]).bool().tolist() == [False, True]
    assert float(ta.tensor([2.5])) == 2.5 and int(ta.tensor(3)) == 3
    assert ta.tensor(3).item() == 3 and ta.tensor(True).item() is True
    with pytest.raises(ValueError, match="one element"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    assert x.to("cpu") is x and x.to(ta.float32) is x
    assert len(ta.zeros(4, 2)) == 4 and [r.tolist() for r in ta.eye(2)] == [[1, 0], [0, 1]]


def test_to_another_tensor_takes_its_dtype():
    check_value_and_dtype("lib.ones(2).to(lib.zeros(1, dtype=lib.float64))", [1.0, 1.0], "float64")


def test_views_share_storage_and_clone_does_not():
    x = ta.arange(6).reshape(2, 3)
    t = x.T
    assert t.shape == (3, 2) and t._data is x._data and not t.is_contiguous()
    assert t.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert t.contiguous().is_contiguous()
    x[0, 1] = 100
    assert t[1, 0].item() == 100
    c = x.clone()
    c[0, 0] = -1
    assert x[0, 0].item() == 0
    with pytest.raises(RuntimeError, match="view"):
        t.view(6)
    assert t.reshape(6).tolist() == [0, 3, 100, 4, 2, 5]


def test_setitem_forms():
    x = ta.zeros(3, 4)
    x[1] = 1.0
    x[:, 0] = ta.tensor([5.0, 6.0, 7.0])
    x[x > 6] = -1.0
    x[ta.tensor([2, 2]), ta.tensor([3, 1])] = 9.0
    assert x.tolist() == [[5, 0, 0, 0], [6, 1, 1, 1], [-1, 9, 0, 9]]
    v = ta.zeros(4, 4).T[1:3]  # writes through a strided view reach the base
    v[:] = 2.0
    assert v.tolist() == [[2.0] * 4] * 2


@pytest.mark.parametrize("index, value_shape", [
    ((slice(None), slice(1, 3)), (4, 2)),
    ((1,), (5,)),
    ((slice(None, None, 2), 2), ()),
    ((Ellipsis, slice(0, 5, 2)), (1, 3)),
    ((None, 2, slice(1, None)), (4,)),
    ((slice(1, 3), slice(None)), (5,)),
])
def test_setitem_with_slices_writes_the_view_in_place(index, value_shape):
    # x[slices] = v copies into the strided view, with no index of every element of x (a KV-cache
    # write touches only its slots); the result must be PyTorch's
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


def test_inplace_ops():
    x = ta.ones(3)
    x.add_(2).mul_(ta.tensor([1.0, 2.0, 3.0]))
    assert x.tolist() == [3.0, 6.0, 9.0]
    x.zero_()
    assert x.tolist() == [0.0] * 3
    x.fill_(1.5)
    x.clamp_(max=1.0)
    assert x.tolist() == [1.0] * 3
    x.copy_(ta.tensor([4.0]))
    assert x.tolist() == [4.0] * 3


def test_repr_looks_like_pytorch():
    assert repr(ta.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ta.tensor([[0.5, 1.25]], requires_grad=True)) == \
        "tensor([[0.5000, 1.2500]], requires_grad=True)"
    assert repr(ta.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ta.tensor([1.0], dtype=ta.float64)) == "tensor([1.], dtype=tinyattn.float64)"
    assert repr(ta.tensor(True)) == "tensor(True)"
    assert repr(ta.zeros(2, 2)) == "tensor([[0., 0.],\n        [0., 0.]])"
    big = repr(ta.zeros(100, 100))
    assert "..." in big and big.count("\n") < 10
    assert "nan" in repr(ta.tensor([math.nan, 1.5]))


@pytest.mark.parametrize("shape, index, value_shape", [
    ((3, 10), 0, (1, 10)), ((3, 10), 0, (1, 1, 10)), ((3, 10), slice(0, 2), (1, 2, 10)),
    ((10,), slice(None), (1, 10)), ((3, 10), (slice(None), 0), (1, 3)), ((3,), 1, (1, 1, 1)),
])
def test_setitem_drops_a_values_leading_size_one_dims(shape, index, value_shape):
    n = 1
    for d in value_shape:
        n *= d
    x = ta.zeros(*shape)
    v = ta.arange(1.0, n + 1).reshape(value_shape).requires_grad_()
    x[index] = v                         # a (1, E) row into an (E,) slot, as PyTorch allows
    expected = ta.zeros(*shape)
    expected[index] = v.detach().reshape(-1).reshape(expected[index].shape)
    assert x.tolist() == expected.tolist()
    (x * ta.arange(float(x.numel())).reshape(shape)).sum().backward()
    weights = ta.arange(float(x.numel())).reshape(shape)[index]
    assert v.grad.shape == v.shape and v.grad.reshape(-1).tolist() == weights.reshape(-1).tolist()
    torch = pytest.importorskip("torch")
    t = torch.zeros(*shape)
    t[index] = torch.arange(1.0, n + 1).reshape(value_shape)
    assert x.tolist() == t.tolist()


def test_setitem_refuses_a_value_that_does_not_broadcast_to_the_region():
    x = ta.zeros(3, 10)
    for bad in ((2, 10), (10, 1)):
        with pytest.raises(ValueError, match=r"setitem: a value of shape \(\d+, \d+\)"):
            x[0] = ta.ones(*bad)
    assert x.tolist() == ta.zeros(3, 10).tolist()
