"""Forward and backward parity with PyTorch for every op (skipped when torch is not installed).

Each case runs the same expression in both libraries on the same float64 inputs (in several memory
layouts), then back-propagates the same non-uniform upstream gradient and compares the gradients."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn as ta

from helpers import (assert_close, broadcastable_pair, layouts, make_tensor, matmul_shapes, seeds,
                     shapes, to_torch)

torch = pytest.importorskip("torch")
SETTINGS = settings(max_examples=12, deadline=None)


def check(fn_ta, fn_torch, *inputs, rtol=1e-7, atol=1e-9):
    """Compare fn(inputs) and d(sum(w * fn(inputs)))/d(inputs) in the two libraries."""
    xs = [x.detach().requires_grad_() if x.dtype.is_floating_point else x for x in inputs]
    ts = [to_torch(x, requires_grad=x.dtype.is_floating_point) for x in inputs]
    out, tout = fn_ta(*xs), fn_torch(*ts)
    assert_close(out, tout.detach(), rtol, atol, "forward")
    if not out.requires_grad:
        return
    w = ta.arange(out.numel(), dtype=out.dtype).reshape(out.shape) * 0.1 + 1  # non-uniform
    (out * w).sum().backward()
    (tout * to_torch(w)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        if t.grad is not None:
            assert x.grad is not None, f"input {i} got no gradient"
            assert_close(x.grad, t.grad, rtol, atol, f"grad of input {i}")


UNARY = [
    ("neg", lambda x: -x, lambda t: -t),
    ("abs", lambda x: x.abs(), lambda t: t.abs()),
    ("exp", lambda x: x.exp(), lambda t: t.exp()),
    ("log", lambda x: (x.abs() + 0.1).log(), lambda t: (t.abs() + 0.1).log()),
    ("sqrt", lambda x: (x.abs() + 0.1).sqrt(), lambda t: (t.abs() + 0.1).sqrt()),
    ("rsqrt", lambda x: (x.abs() + 0.1).rsqrt(), lambda t: (t.abs() + 0.1).rsqrt()),
    ("tanh", lambda x: x.tanh(), lambda t: t.tanh()),
    ("sigmoid", lambda x: x.sigmoid(), lambda t: t.sigmoid()),
    ("relu", lambda x: x.relu(), lambda t: t.relu()),
    ("gelu", lambda x: ta.gelu(x), lambda t: torch.nn.functional.gelu(t)),
    ("gelu_tanh", lambda x: ta.gelu(x, approximate="tanh"),
     lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
    ("sin", lambda x: x.sin(), lambda t: t.sin()),
    ("cos", lambda x: x.cos(), lambda t: t.cos()),
    ("clamp", lambda x: x.clamp(-0.3, 0.5), lambda t: t.clamp(-0.3, 0.5)),
    ("clamp_max", lambda x: x.clamp(max=0.2), lambda t: t.clamp(max=0.2)),
    ("pow3", lambda x: x ** 3, lambda t: t ** 3),
    ("pow_frac", lambda x: x.abs() ** 0.7, lambda t: t.abs() ** 0.7),
    ("rpow", lambda x: 1.7 ** x, lambda t: 1.7 ** t),
    ("rdiv", lambda x: 2 / (x.abs() + 1), lambda t: 2 / (t.abs() + 1)),
    ("sign", lambda x: x.sign() * x, lambda t: t.sign() * t),
    ("square", lambda x: x.square(), lambda t: t.square()),
]


@pytest.mark.parametrize("name,f,g", UNARY, ids=[u[0] for u in UNARY])
@SETTINGS
@given(shape=shapes(0, 3), layout=layouts, seed=seeds)
def test_unary(name, f, g, shape, layout, seed):
    check(f, g, make_tensor(shape, layout, seed))


BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("div", lambda a, b: a / (b.abs() + 0.5), lambda a, b: a / (b.abs() + 0.5)),
    ("pow", lambda a, b: (a.abs() + 0.5) ** b, lambda a, b: (a.abs() + 0.5) ** b),
    ("maximum", ta.maximum, torch.maximum),
    ("minimum", ta.minimum, torch.minimum),
    ("where", lambda a, b: ta.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b)),
    ("masked_fill", lambda a, b: a.masked_fill(b > 0, -2.0), lambda a, b: a.masked_fill(b > 0, -2.0)),
]


@pytest.mark.parametrize("name,f,g", BINARY, ids=[b[0] for b in BINARY])
@SETTINGS
@given(pair=broadcastable_pair(), la=layouts, lb=layouts, seed=seeds)
def test_binary(name, f, g, pair, la, lb, seed):
    a, b = make_tensor(pair[0], la, seed), make_tensor(pair[1], lb, seed + 1)
    if name == "masked_fill":
        full = torch.broadcast_shapes(pair[0], pair[1])
        if tuple(full) != pair[0]:
            return  # masked_fill's mask must broadcast to the input's shape
    check(f, g, a, b)


@SETTINGS
@given(pair=broadcastable_pair(), seed=seeds)
def test_comparisons(pair, seed):
    a = make_tensor(pair[0], "contiguous", seed)
    b = make_tensor(pair[1], "strided", seed + 1)
    ta_ops = [a == b, a != b, a < b, a <= b, a > b, a >= b, (a > 0) & (b > 0), (a > 0) | (b > 0),
              (a > 0) ^ (b > 0), ~(a > 0)]
    ta_, tb = to_torch(a), to_torch(b)
    torch_ops = [ta_ == tb, ta_ != tb, ta_ < tb, ta_ <= tb, ta_ > tb, ta_ >= tb,
                 (ta_ > 0) & (tb > 0), (ta_ > 0) | (tb > 0), (ta_ > 0) ^ (tb > 0), ~(ta_ > 0)]
    for x, y in zip(ta_ops, torch_ops):
        assert x.dtype is ta.bool
        assert x.tolist() == y.tolist()


REDUCE = [
    ("sum", lambda x, d, k: x.sum(d, keepdim=k), lambda t, d, k: t.sum(d, keepdim=k)),
    ("mean", lambda x, d, k: x.mean(d, keepdim=k), lambda t, d, k: t.mean(d, keepdim=k)),
    ("var", lambda x, d, k: x.var(d, keepdim=k), lambda t, d, k: t.var(d, keepdim=k)),
    ("std0", lambda x, d, k: x.std(d, keepdim=k, correction=0),
     lambda t, d, k: t.std(d, keepdim=k, correction=0)),
    ("amax", lambda x, d, k: x.amax(d, keepdim=k), lambda t, d, k: t.amax(d, keepdim=k)),
    ("amin", lambda x, d, k: x.amin(d, keepdim=k), lambda t, d, k: t.amin(d, keepdim=k)),
    ("logsumexp", lambda x, d, k: ta.logsumexp(x, d, keepdim=k),
     lambda t, d, k: torch.logsumexp(t, d, keepdim=k)),
    ("norm", lambda x, d, k: x.norm(dim=d, keepdim=k), lambda t, d, k: torch.linalg.vector_norm(t, dim=d, keepdim=k)),
]


@pytest.mark.parametrize("name,f,g", REDUCE, ids=[r[0] for r in REDUCE])
@SETTINGS
@given(shape=shapes(1, 3, 2, 4), layout=layouts, seed=seeds, data=st.data())
def test_reductions(name, f, g, shape, layout, seed, data):
    dims = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    k = data.draw(st.booleans())
    check(lambda x: f(x, dims, k), lambda t: g(t, dims, k), make_tensor(shape, layout, seed))


@SETTINGS
@given(shape=shapes(1, 3, 1, 4), layout=layouts, seed=seeds, data=st.data())
def test_max_min_argmax(shape, layout, seed, data):
    x = make_tensor(shape, layout, seed)
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.booleans())
    check(lambda a: a.max(d, keepdim=k).values, lambda t: t.max(d, keepdim=k).values, x)
    check(lambda a: a.min(d, keepdim=k).values, lambda t: t.min(d, keepdim=k).values, x)
    check(lambda a: a.max() * a.min(), lambda t: t.max() * t.min(), x)
    tx = to_torch(x)
    assert x.max(d, keepdim=k).indices.tolist() == tx.max(d, keepdim=k).indices.tolist()
    assert x.argmax(d, keepdim=k).tolist() == tx.argmax(d, keepdim=k).tolist()
    assert x.argmin(d).tolist() == tx.argmin(d).tolist()
    assert x.argmax().item() == tx.argmax().item()


@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(shape=shapes(1, 4, 1, 4), layout=layouts, seed=seeds, data=st.data())
def test_softmax(log, shape, layout, seed, data):
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = make_tensor(shape, layout, seed) * 5
    if log:
        check(lambda a: ta.log_softmax(a, d), lambda t: torch.log_softmax(t, d), x)
    else:
        check(lambda a: a.softmax(d), lambda t: t.softmax(d), x)


@SETTINGS
@given(la=layouts, lb=layouts, seed=seeds, data=st.data())
def test_matmul(la, lb, seed, data):
    sa, sb = data.draw(matmul_shapes())
    check(lambda a, b: a @ b, lambda a, b: a @ b, make_tensor(sa, la, seed),
          make_tensor(sb, lb, seed + 1))


@SETTINGS
@given(shape=shapes(2, 4, 1, 4), layout=layouts, seed=seeds, data=st.data())
def test_layout_ops(shape, layout, seed, data):
    x = make_tensor(shape, layout, seed)
    n = len(shape)
    perm = data.draw(st.permutations(range(n)))
    d0, d1 = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    check(lambda a: a.permute(*perm).reshape(-1), lambda t: t.permute(*perm).reshape(-1), x)
    check(lambda a: a.transpose(d0, d1).flatten(1), lambda t: t.transpose(d0, d1).flatten(1), x)
    check(lambda a: a.unsqueeze(1).expand(-1, 3, *a.shape[1:]),
          lambda t: t.unsqueeze(1).expand(-1, 3, *t.shape[1:]), x)
    check(lambda a: a.squeeze(), lambda t: t.squeeze(), x)
    check(lambda a: a.flip(d0), lambda t: t.flip(d0), x)
    check(lambda a: a.repeat(2, *([1] * (n - 1))), lambda t: t.repeat(2, *([1] * (n - 1))), x)
    check(lambda a: ta.cat([a, a * 2], d0), lambda t: torch.cat([t, t * 2], d0), x)
    check(lambda a: ta.stack([a, a], d1), lambda t: torch.stack([t, t], d1), x)
    check(lambda a: a.split(2, d0)[-1], lambda t: t.split(2, d0)[-1], x)
    check(lambda a: a.chunk(3, d1)[0], lambda t: t.chunk(3, d1)[0], x)
    check(lambda a: a.narrow(d0, 0, 1), lambda t: t.narrow(d0, 0, 1), x)
    check(lambda a: a.tril(), lambda t: t.tril(), x)
    check(lambda a: a.triu(-1), lambda t: t.triu(-1), x)
    check(lambda a: a.mT, lambda t: t.mT, x)


@SETTINGS
@given(shape=shapes(2, 3, 2, 4), layout=layouts, seed=seeds, data=st.data())
def test_indexing(shape, layout, seed, data):
    x = make_tensor(shape, layout, seed)
    n0, n1 = shape[0], shape[1]
    i0 = data.draw(st.lists(st.integers(-n0, n0 - 1), min_size=1, max_size=5))
    i1 = data.draw(st.lists(st.integers(-n1, n1 - 1), min_size=len(i0), max_size=len(i0)))
    a0, a1 = ta.tensor(i0), ta.tensor(i1)
    t0, t1 = torch.tensor(i0), torch.tensor(i1)
    cases = [
        (lambda a: a[1], lambda t: t[1]),
        (lambda a: a[-1, ..., ::2], lambda t: t[-1, ..., ::2]),
        (lambda a: a[None, :, 1:], lambda t: t[None, :, 1:]),
        (lambda a: a[a0], lambda t: t[t0]),
        (lambda a: a[:, a1], lambda t: t[:, t1]),
        (lambda a: a[a0, a1], lambda t: t[t0, t1]),
        (lambda a: a[a0[:, None], a1[None, :]], lambda t: t[t0[:, None], t1[None, :]]),
        (lambda a: a[i0], lambda t: t[i0]),
        (lambda a: a[a > 0], lambda t: t[t > 0]),
        (lambda a: a[a[..., 0] > 0], lambda t: t[t[..., 0] > 0]),
        (lambda a: a.gather(1, ta.zeros(a.shape, dtype=ta.int64)),
         lambda t: t.gather(1, torch.zeros(t.shape, dtype=torch.int64))),
        (lambda a: a.index_select(1, a1 % n1), lambda t: t.index_select(1, t1 % n1)),
    ]
    if len(shape) == 3:
        cases += [(lambda a: a[a0, :, a1 % shape[2]], lambda t: t[t0, :, t1 % shape[2]]),
                  (lambda a: a[:, a1, a1 % shape[2]], lambda t: t[:, t1, t1 % shape[2]]),
                  (lambda a: a[1:, None, a1], lambda t: t[1:, None, t1])]
    for f, g in cases:
        check(f, g, x)


def test_integer_and_bool_arithmetic_dtypes():
    """Type promotion follows PyTorch: int / int is float, bool + bool is int, int * float is float."""
    a, b = ta.tensor([1, 2, 3]), ta.tensor([2, 2, 2])
    ta_, tb = torch.tensor([1, 2, 3]), torch.tensor([2, 2, 2])
    pairs = [(a / b, ta_ / tb), (a * 2.5, ta_ * 2.5), (a + b, ta_ + tb), (a - 1, ta_ - 1),
             ((a > 1) + (b > 1), (ta_ > 1) + (tb > 1)), (a % 2, ta_ % 2), (-a // 2, -ta_ // 2),
             (a.float() ** 2, ta_.float() ** 2), (a.sum(), ta_.sum()), ((a > 1).sum(), (ta_ > 1).sum()),
             (a.double() + a.float(), ta_.double() + ta_.float())]
    for x, t in pairs:
        assert x.dtype.name == str(t.dtype).replace("torch.", ""), (x, t)
        assert_close(x, t)
