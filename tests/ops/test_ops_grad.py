"""gradcheck (central differences, float64) for every differentiable op, on hypothesis-generated
shapes that include broadcasting, size-1 dims and non-contiguous inputs."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn as ta
from tinyattn.testing import gradcheck

from helpers import broadcastable_pair, layouts, make_tensor, matmul_shapes, seeds, shapes

SETTINGS = settings(max_examples=15, deadline=None)

UNARY = {
    "neg": (lambda x: -x, False),
    "abs": (lambda x: x.abs(), False),
    "exp": (lambda x: x.exp(), False),
    "log": (lambda x: x.log(), True),
    "sqrt": (lambda x: x.sqrt(), True),
    "rsqrt": (lambda x: x.rsqrt(), True),
    "tanh": (lambda x: x.tanh(), False),
    "sigmoid": (lambda x: x.sigmoid(), False),
    "relu": (lambda x: x.relu(), False),
    "gelu": (lambda x: ta.gelu(x), False),
    "gelu_tanh": (lambda x: ta.gelu(x, approximate="tanh"), False),
    "sin": (lambda x: x.sin(), False),
    "cos": (lambda x: x.cos(), False),
    "clamp": (lambda x: x.clamp(-0.4, 0.6), False),
    "clamp_min": (lambda x: x.clamp(min=0.1), False),
    "pow_scalar": (lambda x: x ** 3, False),
    "pow_frac": (lambda x: x ** 1.5, True),
    "square": (lambda x: x.square(), False),
    "reciprocal": (lambda x: 1 / x, True),
    "rpow": (lambda x: 2.0 ** x, False),
    "rsub": (lambda x: 3 - x, False),
    "scalar_mix": (lambda x: (x * 2.5 + 1) / 4 - 0.5, False),
}


def _away_from_kinks(x):
    # abs, relu and clamp are not differentiable at their kinks; finite differences straddling
    # a kink disagree with any one-sided derivative, so keep samples at least 0.01 away.
    with ta.no_grad():
        for pos in x._positions():
            v = x._data[pos]
            for k in (0.0, -0.4, 0.6, 0.1):
                if abs(v - k) < 0.01:
                    x._data[pos] = k + 0.02
    return x


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(shape=shapes(0, 3), layout=layouts, seed=seeds)
def test_unary(name, shape, layout, seed):
    fn, positive = UNARY[name]
    x = _away_from_kinks(make_tensor(shape, layout, seed, positive=positive)).requires_grad_()
    assert gradcheck(fn, (x,))


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "maximum": lambda a, b: ta.maximum(a, b),
    "minimum": lambda a, b: ta.minimum(a, b),
    "where": lambda a, b: ta.where(a > b, a, b * 2),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(pair=broadcastable_pair(), la=layouts, lb=layouts, seed=seeds)
def test_binary_broadcast(name, pair, la, lb, seed):
    positive = name in ("div", "pow")
    a = make_tensor(pair[0], la, seed, positive=positive).requires_grad_()
    b = make_tensor(pair[1], lb, seed + 1, positive=positive).requires_grad_()
    assert gradcheck(BINARY[name], (a, b))


REDUCE = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "var_biased": lambda x, d, k: x.var(d, keepdim=k, correction=0),
    "std": lambda x, d, k: x.std(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "logsumexp": lambda x, d, k: ta.logsumexp(x, d, keepdim=k),
    "norm": lambda x, d, k: x.norm(dim=d, keepdim=k),
}


@st.composite
def shape_and_dims(draw):
    shape = draw(shapes(1, 3, 1, 4))
    dims = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape),
                         unique=True))
    neg = draw(st.booleans())
    dims = tuple(d - len(shape) if neg else d for d in dims)
    return shape, dims if len(dims) > 1 else dims[0]


@pytest.mark.parametrize("name", sorted(REDUCE))
@SETTINGS
@given(sd=shape_and_dims(), keepdim=st.booleans(), layout=layouts, seed=seeds)
def test_reductions(name, sd, keepdim, layout, seed):
    shape, dims = sd
    if name in ("var", "std"):
        n = math.prod(shape[d] for d in (dims if isinstance(dims, tuple) else (dims,)))
        if n < 2:
            return  # the unbiased variance of one element is undefined (NaN), not a gradient test
    x = make_tensor(shape, layout, seed).requires_grad_()
    assert gradcheck(lambda t: REDUCE[name](t, dims, keepdim), (x,))


@SETTINGS
@given(shape=shapes(1, 3), layout=layouts, seed=seeds, data=st.data())
def test_max_min_along_dim(shape, layout, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    x = make_tensor(shape, layout, seed).requires_grad_()
    assert gradcheck(lambda t: t.max(dim, keepdim=keepdim).values, (x,))
    assert gradcheck(lambda t: t.min(dim, keepdim=keepdim).values, (x,))
    assert gradcheck(lambda t: t.max() + t.min(), (x,))


@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(shape=shapes(1, 3), layout=layouts, seed=seeds, data=st.data())
def test_softmax(log, shape, layout, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = make_tensor(shape, layout, seed).requires_grad_()
    fn = ta.log_softmax if log else ta.softmax
    assert gradcheck(lambda t: fn(t, dim), (x,))


@SETTINGS
@given(ab=matmul_shapes(), la=layouts, lb=layouts, seed=seeds)
def test_matmul(ab, la, lb, seed):
    a = make_tensor(ab[0], la, seed).requires_grad_()
    b = make_tensor(ab[1], lb, seed + 7).requires_grad_()
    assert gradcheck(lambda x, y: x @ y, (a, b))


@SETTINGS
@given(shape=shapes(1, 3, 1, 4), layout=layouts, seed=seeds, data=st.data())
def test_views(shape, layout, seed, data):
    x = make_tensor(shape, layout, seed).requires_grad_()
    n = x.ndim
    perm = data.draw(st.permutations(range(n)))
    d0, d1 = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    u = data.draw(st.integers(-n - 1, n))
    assert gradcheck(lambda t: t.permute(*perm) * 1.5, (x,))
    assert gradcheck(lambda t: t.transpose(d0, d1).reshape(-1) ** 2, (x,))
    assert gradcheck(lambda t: t.unsqueeze(u).squeeze() * t.sum(), (x,))
    assert gradcheck(lambda t: t.flatten().flip(0), (x,))
    assert gradcheck(lambda t: t.expand(2, *t.shape) * t, (x,))
    assert gradcheck(lambda t: t.contiguous().view(-1) + t.clone().reshape(-1), (x,))


@SETTINGS
@given(shape=shapes(1, 3, 2, 5), layout=layouts, seed=seeds, data=st.data())
def test_indexing(shape, layout, seed, data):
    x = make_tensor(shape, layout, seed).requires_grad_()
    n0 = shape[0]
    i = data.draw(st.integers(-n0, n0 - 1))
    start = data.draw(st.integers(0, n0 - 1))
    step = data.draw(st.integers(1, 2))
    idx = ta.tensor(data.draw(st.lists(st.integers(-n0, n0 - 1), min_size=1, max_size=6)))
    assert gradcheck(lambda t: t[i] * 2, (x,))
    assert gradcheck(lambda t: t[start::step, None] * 3, (x,))
    assert gradcheck(lambda t: t[idx] * 1.0, (x,))  # repeated indices add their gradients
    assert gradcheck(lambda t: t[..., None, :].sum(-1), (x,))
    mask = x.detach() > 0
    assert gradcheck(lambda t: t[mask] * 2, (x,))
    if len(shape) >= 2:
        j = ta.tensor(data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=1, max_size=4)))
        rows = ta.arange(j.shape[0]) % n0
        assert gradcheck(lambda t: t[rows, j], (x,))
        assert gradcheck(lambda t: t[:, j], (x,))
        assert gradcheck(lambda t: t[1:, j] if n0 > 1 else t[:, j], (x,))


@SETTINGS
@given(shape=shapes(1, 3, 1, 4), seed=seeds, data=st.data())
def test_cat_stack_split(shape, seed, data):
    a = make_tensor(shape, "contiguous", seed).requires_grad_()
    b = make_tensor(shape, "transposed", seed + 1).requires_grad_()
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert gradcheck(lambda x, y: ta.cat([x, y * 2, x], d), (a, b))
    assert gradcheck(lambda x, y: ta.stack([x, y], d) ** 2, (a, b))
    size = data.draw(st.integers(1, 4))
    assert gradcheck(lambda x: ta.cat([p * (k + 1) for k, p in enumerate(x.split(size, d))], d),
                     (a,))
    assert gradcheck(lambda x: x.chunk(2, d)[0] * 3, (a,))
    assert gradcheck(lambda x: x.unbind(d)[0] * 3, (a,))


@SETTINGS
@given(shape=shapes(2, 3, 1, 4), seed=seeds)
def test_misc(shape, seed):
    x = make_tensor(shape, "contiguous", seed).requires_grad_()
    mask = make_tensor(shape, "contiguous", seed + 3) > 0
    assert gradcheck(lambda t: t.masked_fill(mask, 0.5) * t, (x,))
    assert gradcheck(lambda t: t.tril() + t.triu(1) * 2, (x,))
    assert gradcheck(lambda t: t.repeat(2, *([1] * (t.ndim - 1))), (x,))
    idx = ta.zeros(x.shape, dtype=ta.int64)
    assert gradcheck(lambda t: t.gather(-1, idx) * t, (x,))
    assert gradcheck(lambda t: t.index_select(0, ta.tensor([0, 0])), (x,))
