"""scatter / scatter_add / scatter_reduce / index_add / index_fill (and their in-place forms),
unique / unique_consecutive, atan / atan2, F.pad (constant, reflect, replicate, circular; negative
amounts crop) and F.one_hot.

Hand-computed values (no torch needed), PyTorch's results where torch is installed, float64
gradients by gradcheck, and the errors PyTorch raises (naming the op and the offending value)."""
import math

import pytest

import tinyattn as ta
from tinyattn.nn import functional as F
from tinyattn.testing import gradcheck

from helpers import assert_close, to_torch


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def f64(*shape, seed=0, low=-2.0, high=2.0):
    return ta.rand(*shape, dtype=ta.float64, low=low, high=high,
                   generator=ta.Generator(seed)).requires_grad_(True)


def idx(values):
    return ta.tensor(values, dtype=ta.int64)


# ------------------------------------------------------------------------ hand-computed values

def test_scatter_writes_src_along_dim():
    x = ta.zeros(3, 4)
    src = ta.arange(1, 9).float().view(2, 4)
    out = x.scatter(0, idx([[1, 2, 0, 1]]), src)      # only src[:1] is used (index's shape)
    assert out.tolist() == [[0, 0, 3, 0], [1, 0, 0, 4], [0, 2, 0, 0]]
    out = ta.scatter(x, 1, idx([[3], [0]]), src)     # out[i][index[i][j]] = src[i][j]
    assert out.tolist() == [[0, 0, 0, 1], [5, 0, 0, 0], [0, 0, 0, 0]]
    assert x.tolist() == [[0] * 4] * 3                # out of place
    assert ta.scatter(x, 1, idx([[1, 2]]), value=7.5).tolist()[0] == [0, 7.5, 7.5, 0]
    assert ta.scatter(x, 1, idx([[1, 2]]), 2).tolist()[0] == [0, 2, 2, 0]   # src as a number
    assert x.scatter(1, idx([[0, 0]]), ta.ones(1, 2), reduce="add").tolist()[0] == [2, 0, 0, 0]
    y = ta.full((1, 3), 3.0)
    assert y.scatter(1, idx([[2, 2]]), ta.full((1, 2), 2.0),
                     reduce="multiply").tolist() == [[3, 3, 12]]


def test_scatter_add_and_scatter_reduce():
    x = ta.ones(2, 3)
    src = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    i = idx([[0, 0, 2], [1, 1, 1]])
    assert ta.scatter_add(x, 1, i, src).tolist() == [[4, 1, 4], [1, 16, 1]]
    r = lambda red, inc=True: ta.scatter_reduce(x, 1, i, src, red, include_self=inc).tolist()
    assert r("sum") == [[4, 1, 4], [1, 16, 1]]
    assert r("prod") == [[2, 1, 3], [1, 120, 1]]
    assert_close(r("mean"), [[4 / 3, 1, 2], [1, 4, 1]])
    assert r("amax") == [[2, 1, 3], [1, 6, 1]]
    assert r("amin") == [[1, 1, 1], [1, 1, 1]]
    assert r("sum", False) == [[3, 1, 3], [1, 15, 1]]
    assert r("mean", False) == [[1.5, 1, 3], [1, 5, 1]]
    assert r("amin", False) == [[1, 1, 3], [1, 4, 1]]
    # integers: the mean rounds down, as PyTorch
    xi = ta.zeros(3, dtype=ta.int64)
    assert xi.scatter_reduce(0, idx([0, 0]), idx([2, 3]), "mean").tolist() == [1, 0, 0]


def test_index_add_and_index_fill():
    x = ta.zeros(3, 2)
    src = ta.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert x.index_add(0, idx([2, 0, 2]), src, alpha=2).tolist() == [[6, 8], [0, 0], [12, 16]]
    assert ta.index_add(x.long(), 0, idx([1]), ta.tensor([[1, 1]])).tolist() == [[0, 0], [1, 1],
                                                                                    [0, 0]]
    assert x.index_fill(1, idx([-1]), 4).tolist() == [[0, 4], [0, 4], [0, 4]]   # -1: the last
    assert ta.index_fill(x, 0, idx([0, 0]), ta.tensor(2.0)).tolist()[0] == [2, 2]


def test_bool_and_int_dtypes():
    b = ta.tensor([False, False, True])
    assert b.scatter_add(0, idx([0, 0]), ta.tensor([True, True])).tolist() == [True, False, True]
    assert b.scatter(0, idx([2]), value=False).tolist() == [False, False, False]
    assert b.index_fill(0, idx([1]), True).tolist() == [False, True, True]
    i = ta.tensor([5, 6, 7])
    assert i.scatter_add(0, idx([2, 2]), ta.tensor([1, 1])).tolist() == [5, 6, 9]
    assert i.scatter_reduce(0, idx([0]), ta.tensor([9]), "amax").dtype is ta.int64


def test_unique_and_unique_consecutive():
    x = ta.tensor([[3, 1, 2], [1, 3, 5]])
    assert ta.unique(x).tolist() == [1, 2, 3, 5]
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    assert inverse.tolist() == [[2, 0, 1], [0, 2, 3]] and inverse.dtype is ta.int64
    assert counts.tolist() == [2, 1, 2, 1]
    assert values[inverse].tolist() == x.tolist()
    assert ta.unique(x, sorted=False).tolist() == [1, 2, 3, 5]
    v, c = ta.unique(ta.tensor([1.0, math.nan, math.nan, 1.0]), return_counts=True)
    assert c.tolist() == [2, 1, 1] and math.isnan(v.tolist()[1])      # each NaN is distinct
    assert ta.unique(ta.tensor([True, False, True])).tolist() == [False, True]
    assert ta.unique(ta.zeros(0)).shape == (0,)
    v, inv = ta.unique(ta.tensor(4), return_inverse=True)
    assert v.tolist() == [4] and inv.shape == () and inv.item() == 0
    v, inv, c = ta.unique_consecutive(ta.tensor([3, 3, 1, 1, 3]), return_inverse=True,
                                      return_counts=True)
    assert (v.tolist(), inv.tolist(), c.tolist()) == ([3, 1, 3], [0, 0, 1, 1, 2], [2, 2, 1])
    assert ta.tensor([2, 2, 2]).unique_consecutive().tolist() == [2]
    assert ta.unique(f64(4)).grad_fn is None            # no gradient, as in PyTorch


def test_atan_and_atan2_quadrants_and_dtypes():
    y = ta.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0])
    x = ta.tensor([1.0, -1.0, -1.0, 1.0, -1.0, 1.0])
    want = [math.atan2(a, b) for a, b in zip(y.tolist(), x.tolist())]
    assert_close(ta.atan2(y, x), want)
    assert_close(y.atan2(x), want)
    assert_close(ta.arctan2(y, x), want)
    assert ta.atan2(ta.tensor([1, 2]), ta.tensor([1, 1])).dtype is ta.float32
    assert ta.atan2(ta.tensor([True]), ta.tensor([1.0], dtype=ta.float64)).dtype is ta.float64
    assert ta.atan2(ta.ones(2, 1), ta.ones(3)).shape == (2, 3)                # broadcasting
    assert_close(ta.atan(ta.tensor([1.0, -1.0])), [math.pi / 4, -math.pi / 4])
    assert ta.tensor([1]).atan().dtype is ta.float32 and ta.arctan is ta.atan


def test_pad_modes_hand_computed():
    x = ta.tensor([[[1.0, 2.0, 3.0]]])
    assert F.pad(x, (2, 1), mode="reflect").tolist() == [[[3, 2, 1, 2, 3, 2]]]
    assert F.pad(x, (2, 1), mode="replicate").tolist() == [[[1, 1, 1, 2, 3, 3]]]
    assert F.pad(x, (2, 1), mode="circular").tolist() == [[[2, 3, 1, 2, 3, 1]]]
    assert F.pad(x, (1, -1), mode="circular").tolist() == [[[2, 1, 2]]]   # crop, then wrap
    m = ta.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    assert F.pad(m, (1, 0, 0, 1), mode="replicate").tolist() == [[[1, 1, 2], [3, 3, 4],
                                                                  [3, 3, 4]]]
    assert F.pad(ta.zeros(0, 2, 3), (1, 1), mode="reflect").shape == (0, 2, 5)



@pytest.mark.parametrize("amounts", [(1, 2), (0, 0, 1, 0), (-1, 1), (2, -2, 1, 1)])
def test_pad_values_and_gradient(amounts):
    x = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = F.pad(x, amounts, value=-1.0)
    if amounts == (1, 2):   # by hand: -1 | row | -1 -1
        assert y.tolist() == [[-1.0, 1.0, 2.0, 3.0, -1.0, -1.0], [-1.0, 4.0, 5.0, 6.0, -1.0, -1.0]]
    assert gradcheck(lambda t: F.pad(t, amounts), (x.detach().double().requires_grad_(),))
    torch = pytest.importorskip("torch")
    t = torch.tensor(x.tolist(), requires_grad=True)
    z = torch.nn.functional.pad(t, amounts, value=-1.0)
    assert y.tolist() == z.tolist()
    w = [[float(i * 7 + j) for j in range(z.shape[1])] for i in range(z.shape[0])]
    (y * ta.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    assert x.grad.tolist() == t.grad.tolist()

# ------------------------------------------------------------------------ in place

def test_inplace_forms_write_into_self_and_return_it():
    x = ta.zeros(2, 3)
    assert x.scatter_(1, idx([[2], [0]]), ta.ones(2, 1)) is x
    assert x.tolist() == [[0, 0, 1], [1, 0, 0]]
    x.scatter_add_(1, idx([[2], [2]]), ta.ones(2, 1))
    x.index_add_(0, idx([1]), ta.ones(1, 3), alpha=3)
    x.index_fill_(1, idx([1]), -1.0)
    x.scatter_(0, idx([[0]]), value=9.0)
    assert x.tolist() == [[9, -1, 2], [4, -1, 4]]
    v = x[:, 1:]                                     # a view writes into its base
    v.scatter_(1, idx([[1], [1]]), value=0.0)
    assert x.tolist() == [[9, -1, 0], [4, -1, 0]]
    x.scatter_reduce_(1, idx([[0]]), ta.tensor([[1.0]]), "amin")
    assert x.tolist()[0] == [1, -1, 0]


def test_inplace_forms_are_recorded_like_the_out_of_place_ops():
    def run(inplace):
        a, b = f64(2, 3, seed=1), f64(2, 1, seed=2)
        h = a * 2
        i = idx([[2], [0]])
        if inplace:
            h.scatter_(1, i, b)
            h.index_add_(0, idx([1, 1]), a, alpha=0.5)
            h.index_fill_(1, idx([0]), 1.0)
            h.scatter_add_(1, i, b * b)
        else:
            h = h.scatter(1, i, b)
            h = h.index_add(0, idx([1, 1]), a, alpha=0.5)
            h = h.index_fill(1, idx([0]), 1.0)
            h = h.scatter_add(1, i, b * b)
        (h * ta.arange(6).double().view(2, 3)).sum().backward()
        return h.tolist(), a.grad.tolist(), b.grad.tolist()
    assert run(True) == run(False)
    leaf = f64(3)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        leaf.scatter_(0, idx([0]), value=1.0)
    with ta.no_grad():
        leaf.index_fill_(0, idx([0]), 1.0)
    assert leaf.tolist()[0] == 1.0
    # an op that saved h's values notices the change
    h = f64(3) * 1
    e = h.exp()
    h.scatter_(0, idx([1]), value=0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


# ------------------------------------------------------------------------ gradients (float64)

def test_scatter_family_gradients():
    x, s = f64(3, 4, seed=3), f64(2, 4, seed=4)
    i = idx([[0, 2, 1, 0], [1, 0, 2, 2]])
    gradcheck(lambda x, s: ta.scatter(x, 0, idx([[0, 2, 1, 0]]), s), (x, s))
    gradcheck(lambda x: ta.scatter(x, 1, idx([[3, 1]]), value=2.0), (x,))
    gradcheck(lambda x, s: ta.scatter_add(x, 0, i, s), (x, s))
    gradcheck(lambda x, s: x.index_add(0, idx([2, 2]), s, alpha=-1.5), (x, s))
    v = ta.tensor(0.5, dtype=ta.float64).requires_grad_(True)
    gradcheck(lambda x, v: ta.index_fill(x, 1, idx([3, 0, 3]), v), (x, v))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(reduce, include_self):
    x, s = f64(2, 3, seed=5), f64(2, 4, seed=6)
    if reduce == "prod":     # zeros: the product of the others, exactly
        with ta.no_grad():
            s[0, 1] = 0.0
            x[1, 0] = 0.0
    i = idx([[0, 0, 2, 0], [1, 0, 0, 1]])
    gradcheck(lambda x, s: ta.scatter_reduce(x, 1, i, s, reduce, include_self=include_self),
              (x, s))


def test_atan_atan2_and_pad_gradients():
    gradcheck(lambda y, x: ta.atan2(y, x), (f64(2, 3, seed=7), f64(3, seed=8)))
    gradcheck(ta.atan, (f64(5, seed=9),))
    for mode in ("reflect", "replicate", "circular"):
        gradcheck(lambda x: F.pad(x, (2, 1, 1, 2), mode=mode), (f64(1, 3, 3, 4, seed=10),))
        gradcheck(lambda x: F.pad(x, (-1, 2), mode=mode), (f64(2, 4, seed=11),))


# ------------------------------------------------------------------------ errors

def test_errors_name_the_op_and_the_offending_value():
    x = ta.zeros(3, 4)
    with pytest.raises(IndexError, match="scatter: index 5 is out of bounds for dimension 0 "
                                         "with size 3"):
        x.scatter(0, idx([[5]]), 1.0)
    with pytest.raises(IndexError, match="scatter_add: index -1 is out of bounds"):
        x.scatter_add(0, idx([[-1]]), ta.ones(1, 1))
    with pytest.raises(TypeError, match="scatter: expected dtype int64 for index"):
        x.scatter(0, ta.tensor([[1.0]]), 1.0)
    with pytest.raises(TypeError, match="scatter: expected self.dtype to be equal to src.dtype"):
        x.scatter(0, idx([[1]]), ta.ones(1, 1, dtype=ta.float64))
    with pytest.raises(ValueError, match=r"scatter: index shape \(1, 5\) must be no larger"):
        x.scatter(0, idx([[1, 2, 1, 1, 1]]), ta.ones(1, 5))
    with pytest.raises(ValueError, match="same number of dims as self"):
        x.scatter(0, idx([1, 2]), ta.ones(2))
    with pytest.raises(ValueError, match="scatter_reduce: reduce argument must be one of"):
        x.scatter_reduce(0, idx([[0]]), ta.ones(1, 1), "max")
    with pytest.raises(IndexError, match="index_add: index -1 is out of bounds"):
        x.index_add(0, idx([-1]), ta.ones(1, 4))
    with pytest.raises(ValueError, match=r"index_add: the number of indices \(2\) must equal "
                                         r"source.size\(0\) \(1\)"):
        x.index_add(0, idx([0, 1]), ta.ones(1, 4))
    with pytest.raises(IndexError, match="index_fill: index 3 is out of bounds"):
        x.index_fill(0, idx([3]), 1.0)
    with pytest.raises(RuntimeError, match="unique: a tensor of shape \\(3, 0\\) has 0-sized"):
        ta.unique(ta.zeros(3, 0), dim=0)
    with pytest.raises(TypeError, match="atan2: expected Tensor operands"):
        ta.atan2(x, 2.0)


def test_pad_errors_as_pytorch():
    x = ta.zeros(1, 2, 3)
    with pytest.raises(ValueError, match=r"should be less than .* padding \(3, 3\) at dimension 2"):
        F.pad(x, (3, 3), mode="reflect")
    with pytest.raises(ValueError, match="wrap around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(ValueError, match="doesn't take in value"):
        F.pad(x, (1, 0), mode="reflect", value=1.0)
    with pytest.raises(NotImplementedError, match="last 1, 2 or 3 dims"):
        F.pad(ta.zeros(3), (1, 0), mode="reflect")
    with pytest.raises(ValueError, match="non-zero sizes"):
        F.pad(ta.zeros(2, 0, 3), (1, 0), mode="replicate")
    with pytest.raises(ValueError, match="mode must be"):
        F.pad(x, (1, 0), mode="wrap")



def test_pad_and_one_hot_errors_and_one_hot_values():
    with pytest.raises(ValueError, match="pad: pad must be a tuple of an even number of ints"):
        F.pad(ta.ones(2, 3), (1,))
    assert F.pad(ta.tensor([[1.0, 2.0, 3.0]]), (1, 1), mode="reflect").tolist() == [[2, 1, 2, 3, 2]]
    with pytest.raises(NotImplementedError, match="pad: mode 'reflect' pads the last 1, 2 or 3"):
        F.pad(ta.ones(3), (1, 1), mode="reflect")
    assert F.one_hot(ta.tensor([0, 2, 1])).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(ta.tensor([[3]]), 5).tolist() == [[[0, 0, 0, 1, 0]]]
    with pytest.raises(ValueError, match="one_hot: class value 5 is out of range"):
        F.one_hot(ta.tensor([5]), 3)
    with pytest.raises(ValueError, match="one_hot: class values must be non-negative"):
        F.one_hot(ta.tensor([-1]))

# ------------------------------------------------------------------------ against PyTorch

def test_scatter_family_against_pytorch(torch):
    g = torch.Generator().manual_seed(0)
    for dt, tdt in ((ta.float32, torch.float32), (ta.float64, torch.float64),
                    (ta.int64, torch.int64)):
        xt = torch.randint(-5, 5, (4, 5), generator=g).to(tdt)
        st = torch.randint(-5, 5, (3, 6), generator=g).to(tdt)
        it = torch.randint(0, 4, (3, 5), generator=g)
        x, s, i = to_torch_back(xt, dt), to_torch_back(st, dt), to_torch_back(it, ta.int64)
        assert x.scatter(0, i, s).tolist() == xt.scatter(0, it, st).tolist()
        assert x.scatter_add(0, i, s).tolist() == xt.scatter_add(0, it, st).tolist()
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (True, False):
                want = xt.scatter_reduce(0, it, st, red, include_self=inc)
                assert_close(x.scatter_reduce(0, i, s, red, include_self=inc), want.tolist())
        jt = torch.tensor([3, 0, 3, 1, 4])
        j = to_torch_back(jt, ta.int64)
        at = torch.randint(-5, 5, (4, 5), generator=g).to(tdt)
        assert_close(x.index_add(1, j, to_torch_back(at, dt), alpha=2),
                     xt.index_add(1, jt, at, alpha=2).tolist())
        assert x.index_fill(1, j, 3).tolist() == xt.index_fill(1, jt, 3).tolist()


def test_unique_against_pytorch(torch):
    g = torch.Generator().manual_seed(1)
    xt = torch.randint(0, 6, (4, 7), generator=g)
    x = to_torch_back(xt, ta.int64)
    for inv in (False, True):
        for cnt in (False, True):
            want = torch.unique(xt, return_inverse=inv, return_counts=cnt)
            got = ta.unique(x, return_inverse=inv, return_counts=cnt)
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            assert [w.tolist() for w in want] == [t.tolist() for t in got]
            want = torch.unique_consecutive(xt, return_inverse=inv, return_counts=cnt)
            got = ta.unique_consecutive(x, return_inverse=inv, return_counts=cnt)
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            assert [w.tolist() for w in want] == [t.tolist() for t in got]


def test_atan2_and_pad_against_pytorch_with_gradients(torch):
    y, x = f64(3, 4, seed=12), f64(4, seed=13)
    yt, xt = to_torch(y, True), to_torch(x, True)
    out, out_t = ta.atan2(y, x), torch.atan2(yt, xt)
    ((out + 1) ** 2).mean().backward()
    ((out_t + 1) ** 2).mean().backward()
    assert_close(out, out_t.tolist())
    assert_close(y.grad, yt.grad.tolist())
    assert_close(x.grad, xt.grad.tolist())
    for mode in ("reflect", "replicate", "circular"):
        for p in ((1, 2), (2, 1, 0, 2), (1, 1, 2, 0, 1, 1), (-1, 2), (2, -1, 1, 0)):
            a = f64(*(2, 3, 4, 5, 6)[3 - len(p) // 2:], seed=14)
            at = to_torch(a, True)
            out, out_t = F.pad(a, p, mode=mode), torch.nn.functional.pad(at, p, mode=mode)
            ((out + 1) ** 2).mean().backward()
            ((out_t + 1) ** 2).mean().backward()
            assert_close(out, out_t.tolist())
            assert_close(a.grad, at.grad.tolist())


def to_torch_back(t, dtype):
    """A torch tensor -> tinyattn (same values)."""
    return ta.tensor(t.tolist(), dtype=dtype)


def test_numbers_are_cast_to_the_tensor_dtype():
    z = ta.zeros(3, dtype=ta.int64)
    assert z.scatter(0, idx([1]), 2.7).tolist() == [0, 2, 0]          # as PyTorch: truncated
    assert z.index_fill(0, idx([1]), 2.7).tolist() == [0, 2, 0]
    assert ta.zeros(3, dtype=ta.bool).index_fill(0, idx([1]), 2.7).tolist() == [False, True, False]
    assert ta.zeros(3).index_fill(0, idx([1]), True).tolist() == [0.0, 1.0, 0.0]
