"""The reference and fast kernel backends (tinyattn/kernels/, tinyattn/fast/) compute the same results.

Each case runs one op forward and backward through the public API, once on each backend, over
hypothesis shapes and memory layouts (contiguous, transposed, strided, offset views), and compares
the outputs and input gradients. A spy on the backends' functions checks that the cases between them call
every kernel whose two backends differ, so a fast kernel added without an agreement test fails here.
Runs compiled and with NUMBA_DISABLE_JIT=1."""
import importlib
import os
import subprocess
import sys

import pytest
from hypothesis import example, given, settings, strategies as st

import tinyattn as ta
import tinyattn.nn.functional as F
from helpers import assert_close, broadcastable_pair, layouts, make_tensor, seeds, shapes
from tinyattn import backend
from tinyattn.ops.attention import additive_score, attention_context

FEW = settings(max_examples=12, deadline=None)


def _on_both_backends(fn, *inputs):
    """(outputs, grads) of fn(*inputs) on each backend; the backward seeds with a fixed cotangent."""
    results = {}
    for which in backend.BACKENDS:
        with backend.use(which):
            xs = [x.detach().requires_grad_(x.dtype.is_floating_point) for x in inputs]
            out = fn(*xs)
            outs = out if isinstance(out, tuple) else (out,)
            loss = None
            for k, o in enumerate(outs):
                if o.requires_grad:
                    # a fixed, uneven cotangent, so every backward formula matters
                    w = ta.arange(o.numel(), dtype=o.dtype).reshape(o.shape).sin()
                    term = (o * w).sum()
                    loss = term if loss is None else loss + term
            if loss is not None:
                loss.backward()
            results[which] = ([o.detach() for o in outs],
                             [x.grad for x in xs if x.grad is not None])
    return results["reference"], results["fast"]


def _agree(fn, *inputs, rtol=1e-5, atol=1e-6):
    (ref_out, ref_grad), (fast_out, fast_grad) = _on_both_backends(fn, *inputs)
    assert len(ref_grad) == len(fast_grad)
    for r, f in zip(ref_out + ref_grad, fast_out + fast_grad):
        assert r.dtype == f.dtype
        assert_close(f, r, rtol=rtol, atol=atol)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == ta.float32 else dict(rtol=1e-12, atol=1e-12)


dtypes = st.sampled_from([ta.float32, ta.float64])

# ---------------------------------------------------------------------------- spy on the tables

_called = set()


class _Spy:
    """Stands in for a kernel (or a by-typecode table of kernels) and records that it was used."""

    def __init__(self, key, target):
        self.key, self.target = key, target

    def __getitem__(self, k):
        _called.add(self.key)
        return self.target[k]

    def __call__(self, *args):
        _called.add(self.key)
        return self.target(*args)


def _modules(family):
    """{backend: module} of a family in the two-package layout."""
    return {"reference": importlib.import_module(f"tinyattn.kernels.{family}"),
            "fast": importlib.import_module(f"tinyattn.fast.{family}")}


def _differing():
    """{(module, name, backend)} for every kernel whose reference and fast versions differ."""
    out = set()
    for family in backend.FAST:
        mods = _modules(family)
        for name in mods["reference"].__all__:
            fast, reference = (_unspied(getattr(mods[t], name)) for t in ("fast", "reference"))
            if fast is not reference:
                out |= {(f"tinyattn.kernels.{family}", name, t) for t in backend.BACKENDS}
    return out


def _unspied(fn):
    return fn.target if isinstance(fn, _Spy) else fn


@pytest.fixture(scope="module", autouse=True)
def spy_on_kernels():
    # The families' modules stay as they are (a reference kernel that calls another of its
    # file's kernels must find the kernel, not a spy): what the ops see as backend.<family> is
    # a stand-in whose interface functions are spies.
    stand_ins = {(family, which): _Family(family, which, module) for family in backend.FAST
                 for which, module in _modules(family).items()}
    bind = backend._bind

    def bind_stand_ins(name):
        bind(name)
        for family in backend.FAST:
            backend.__dict__[family] = stand_ins[family, name]
    backend._bind = bind_stand_ins
    backend.use(backend.active())          # re-bind the module names to the spies
    yield
    backend._bind = bind
    backend.use(backend.active())


class _Family:
    """Stands in for a split family's module of one backend: the functions of its __all__ are
    spies, anything else is the module's."""

    def __init__(self, family, which, module):
        self._module = module
        self._spies = {name: _Spy((f"tinyattn.kernels.{family}", name, which), getattr(module, name))
                       for name in module.__all__}

    def __getattr__(self, name):
        spy = self._spies.get(name)
        return spy if spy is not None else getattr(self._module, name)


# ---------------------------------------------------------------------------- elementwise

UNARY = {
    "neg": lambda x: -x, "abs": lambda x: x.abs(), "exp": lambda x: x.exp(),
    "log": lambda x: x.abs().add(0.5).log(), "sqrt": lambda x: x.abs().add(0.5).sqrt(),
    "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(), "relu": lambda x: x.relu(),
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "clamp": lambda x: x.clamp(-0.5, 0.7), "pow": lambda x: x.abs().add(0.5) ** 1.7,
    "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
}


@FEW
@given(name=st.sampled_from(sorted(UNARY)), shape=shapes(0, 3, 1, 5), layout=layouts,
       seed=seeds, dtype=dtypes)
def test_unary(name, shape, layout, seed, dtype):
    x = make_tensor(shape, layout, seed, dtype)
    _agree(UNARY[name], x, **_tol(dtype))


def test_every_unary_op_code_is_covered():
    from tinyattn.kernels import elementwise as KE
    codes = {KE.NEG, KE.ABS, KE.EXP, KE.LOG, KE.SQRT, KE.TANH, KE.SIGMOID, KE.RELU, KE.GELU,
             KE.GELU_TANH, KE.CLAMP, KE.POW, KE.SIN, KE.COS}
    assert len(codes) == len(UNARY)


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_unary_long_buffers(dtype):
    # long enough for the fast loops' vector bodies and their scalar tails (n % 16 != 0)
    x = ta.randn(1037, dtype=dtype, generator=ta.Generator(3)) * 4
    for name, fn in UNARY.items():
        _agree(fn, x, **_tol(dtype))


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5), "maximum": ta.maximum, "minimum": ta.minimum,
    "pow": lambda a, b: (a.abs() + 0.5) ** b,
}


@FEW
@given(name=st.sampled_from(sorted(BINARY)), pair=broadcastable_pair(max_side=5),
       la=layouts, lb=layouts, seed=seeds, dtype=dtypes)
def test_binary_broadcasting_views(name, pair, la, lb, seed, dtype):
    a = make_tensor(pair[0], la, seed, dtype)
    b = make_tensor(pair[1], lb, seed + 1, dtype)
    _agree(BINARY[name], a, b, **_tol(dtype))


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_binary_same_shape_and_scalar(dtype):
    gen = ta.Generator(5)
    a = ta.randn(3, 341, dtype=dtype, generator=gen)
    b = ta.randn(3, 341, dtype=dtype, generator=gen)
    for name, fn in BINARY.items():
        _agree(fn, a, b, **_tol(dtype))                            # packed
        _agree(fn, a[:, 1:], b[:, :-1], **_tol(dtype))             # strided rows
        _agree(lambda x: fn(x, ta.tensor(0.75, dtype=dtype)), a, **_tol(dtype))
    for fn in (lambda x: x + 2.5, lambda x: 2.5 - x, lambda x: x * 3, lambda x: 3 / (x.abs() + 1),
               lambda x: x.abs() ** 0.5, lambda x: 1.5 ** x):
        _agree(fn, a, **_tol(dtype))                               # tensor-scalar
        _agree(fn, a[:, 1:], **_tol(dtype))                        # strided tensor-scalar


@FEW
@given(shape=shapes(1, 3, 1, 6), layout=layouts, seed=seeds, dtype=dtypes)
def test_copies_of_views(shape, layout, seed, dtype):
    x = make_tensor(shape, layout, seed, dtype)
    _agree(lambda t: t.contiguous() * 1, x, **_tol(dtype))
    _agree(lambda t: t.clone(), x, **_tol(dtype))


def test_comparisons_agree():
    a = (ta.arange(132, dtype=ta.float32) % 5).reshape(4, 33)      # many ties
    b = ta.arange(33, dtype=ta.float32) % 3
    for fn in (ta.eq, ta.ne, ta.lt, ta.le, ta.gt, ta.ge, ta.logical_and, ta.logical_xor):
        _agree(fn, a, b)


@pytest.mark.parametrize("dtype", [ta.int64, ta.uint8, ta.bool])
def test_bitwise_ops_agree(dtype):
    a = (ta.arange(60) * 7 % 11).reshape(4, 15).to(dtype)
    b = (ta.arange(15) % 4).to(dtype)
    for fn in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y, lambda x, y: ~x):
        _agree(fn, a, b)


@FEW
@given(pair=broadcastable_pair(max_side=5), la=layouts, lb=layouts, seed=seeds, dtype=dtypes)
def test_where_and_masked_fill_broadcasting_views(pair, la, lb, seed, dtype):
    a = make_tensor(pair[0], la, seed, dtype)
    b = make_tensor(pair[1], lb, seed + 1, dtype)
    _agree(lambda x, y: ta.where(x > y, x, y), a, b, **_tol(dtype))
    _agree(lambda x: x.masked_fill(x < 0, -2.0), a, **_tol(dtype))


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64, ta.int64])
def test_conversions_and_fills_agree(dtype):
    x = (ta.randn(5, 7, dtype=ta.float64, generator=ta.Generator(6)) * 300).to(dtype)
    for target in (ta.bool, ta.uint8, ta.int32, ta.int64, ta.float32, ta.float64):
        _agree(lambda t: t.T.to(target), x)
    _agree(lambda t: t.T.clone().fill_(3) * 1, x)


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_gradients_summed_in_place_agree(dtype):
    # a leaf used three times: the engine sums its third gradient into the first two in place
    x = ta.randn(7, 9, dtype=dtype, generator=ta.Generator(7))
    _agree(lambda t: t * t + t.exp(), x, **_tol(dtype))
    _agree(lambda t: t.T * t.T + t.T.sin(), x, **_tol(dtype))


# ---------------------------------------------------------------------------- softmax, norm


@FEW
@given(shape=shapes(1, 3, 1, 7), layout=layouts, seed=seeds, dtype=dtypes, log=st.booleans(),
       data=st.data())
def test_softmax(shape, layout, seed, dtype, log, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = make_tensor(shape, layout, seed, dtype) * 3
    fn = F.log_softmax if log else F.softmax
    _agree(lambda t: fn(t, dim=dim), x, **_tol(dtype))


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_softmax_long_rows_and_masked_rows(dtype):
    x = ta.randn(6, 301, dtype=dtype, generator=ta.Generator(2)) * 5
    x[1] = float("-inf")                     # a fully masked row
    x[2, ::3] = float("-inf")
    for fn in (F.softmax, F.log_softmax):
        _agree(lambda t: fn(t, dim=-1), x, **_tol(dtype))
        _agree(lambda t: fn(t, dim=0), x[:, :40], **_tol(dtype))


@FEW
@given(shape=shapes(1, 3, 1, 9), layout=layouts, seed=seeds, dtype=dtypes,
       affine=st.booleans())
def test_layer_norm(shape, layout, seed, dtype, affine):
    x = make_tensor(shape, layout, seed, dtype)
    D = shape[-1]
    if affine:
        w = make_tensor((D,), "contiguous", seed + 1, dtype)
        b = make_tensor((D,), "strided", seed + 2, dtype)
        _agree(lambda t, w, b: F.layer_norm(t, (D,), w, b), x, w, b, **_tol(dtype))
    else:
        _agree(lambda t: F.layer_norm(t, (D,)), x, **_tol(dtype))


@FEW
@given(N=st.integers(2, 4), C=st.integers(1, 5), HW=st.sampled_from([(), (3,), (2, 5)]),
       training=st.booleans(), affine=st.booleans(), seed=seeds, dtype=dtypes)
def test_batch_norm(N, C, HW, training, affine, seed, dtype):
    # Training: the batch's statistics (and the gradient through them); evaluation: the running
    # statistics, constants for the backward.
    x = make_tensor((N, C) + HW, "contiguous", seed, dtype)
    mean = make_tensor((C,), "contiguous", seed + 1, dtype)
    var = make_tensor((C,), "contiguous", seed + 2, dtype).abs() + 0.5
    params = [make_tensor((C,), "contiguous", seed + s, dtype) for s in (3, 4)] if affine else []

    def bn(x, *wb):
        return F.batch_norm(x, mean.clone(), var.clone(), *wb, training=training)
    _agree(bn, x, *params, **_tol(dtype))


# ---------------------------------------------------------------------------- matmul


@st.composite
def matmul_case(draw):
    m, k, n = (draw(st.integers(1, 40)) for _ in range(3))
    batch = draw(st.sampled_from([(), (3,), (2, 2)]))
    return batch + (m, k), batch + (k, n)


@FEW
@given(shapes_=matmul_case(), la=layouts, lb=layouts, seed=seeds, dtype=dtypes)
def test_matmul_views(shapes_, la, lb, seed, dtype):
    a = make_tensor(shapes_[0], la, seed, dtype)
    b = make_tensor(shapes_[1], lb, seed + 1, dtype)
    k = shapes_[0][-1]
    tol = dict(rtol=1e-4, atol=1e-5 * k) if dtype == ta.float32 else _tol(dtype)
    _agree(ta.matmul, a, b, **tol)


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_matmul_blocked_sizes_and_linear(dtype):
    # larger than the fast backend's cache blocks in every dimension, with ragged edges
    gen = ta.Generator(4)
    a = ta.randn(133, 270, dtype=dtype, generator=gen)
    b = ta.randn(270, 77, dtype=dtype, generator=gen)
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == ta.float32 else _tol(dtype)
    _agree(ta.matmul, a, b, **tol)
    _agree(lambda x, y: x.mT @ y, a[:, :60].contiguous(), a[:, 60:80].contiguous(), **tol)
    w = ta.randn(19, 270, dtype=dtype, generator=gen)
    bias = ta.randn(19, dtype=dtype, generator=gen)
    _agree(F.linear, a, w, bias, **tol)


# ---------------------------------------------------------------------------- RNN attention


@FEW
@given(B=st.integers(1, 3), S=st.integers(1, 7), A=st.integers(1, 20), seed=seeds,
       dtype=dtypes)
def test_additive_score(B, S, A, seed, dtype):
    pk = make_tensor((B, S, A), "contiguous", seed, dtype)
    q = make_tensor((B, A), "contiguous", seed + 1, dtype)
    v = make_tensor((A,), "contiguous", seed + 2, dtype)
    _agree(additive_score, pk, q, v, **_tol(dtype))


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
@pytest.mark.parametrize("B,lengths", [(3, None), (11, [5, 1, 3, 5, 2, 4, 5, 0, 5, 3, 1])])
def test_gru_sequences(B, lengths, dtype):
    """A bidirectional GRU (both directions at once) over a sequence, with and without lengths:
    the whole-sequence kernels, forward and backward (few-rows and tiled products)."""
    from tinyattn.ops.rnn import bi_gru_sequence, gru_sequence
    T, H = 5, 4
    gi_f, gi_b = (make_tensor((T, B, 3 * H), "contiguous", s, dtype) for s in (1, 2))
    h_f, h_b = (make_tensor((B, H), "contiguous", s, dtype) for s in (3, 4))
    w_f, w_b = (make_tensor((3 * H, H), "contiguous", s, dtype) for s in (5, 6))
    bias = [make_tensor((3 * H,), "contiguous", s, dtype) for s in (7, 8, 9, 10)]
    _agree(lambda *xs: bi_gru_sequence(*xs, lengths=lengths), gi_f, gi_b, h_f, h_b, w_f, w_b,
           *bias, **_tol(dtype))
    _agree(lambda *xs: gru_sequence(*xs, lengths=lengths, reverse=True), gi_b, h_b, w_b,
           *bias[2:], **_tol(dtype))


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
@pytest.mark.parametrize("bias", [False, True])
def test_gru_cell(dtype, bias):
    """One GRU step as one node: the two products, the fused gates, and their backward."""
    from tinyattn.ops.rnn import gru_cell
    B, I, H = 5, 3, 4
    x, h = make_tensor((B, I), "contiguous", 1, dtype), make_tensor((B, H), "strided", 2, dtype)
    w_ih, w_hh = (make_tensor((3 * H, n), "contiguous", s, dtype) for s, n in ((3, I), (4, H)))
    biases = [make_tensor((3 * H,), "contiguous", s, dtype) for s in (5, 6)] if bias else []
    _agree(gru_cell, x, h, w_ih, w_hh, *biases, **_tol(dtype))


@FEW
@given(B=st.integers(1, 3), S=st.integers(1, 7), C=st.integers(1, 40), layout=layouts,
       seed=seeds, dtype=dtypes)
def test_attention_context(B, S, C, layout, seed, dtype):
    w = F.softmax(make_tensor((B, S), "contiguous", seed, dtype), dim=-1)
    keys = make_tensor((B, S, C), layout, seed + 1, dtype)
    _agree(attention_context, w, keys, **_tol(dtype))


# ---------------------------------------------------------------------------- the switch


@st.composite
def conv_case(draw):
    """A convolution geometry: kernel, stride, padding, dilation and an image it fits."""
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    H = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 10))
    W = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 10))
    return k, s, p, d, H, W


def _agree_sums(fn, *inputs, rtol, atol):
    """_agree for an op whose outputs and gradients are sums of products (a convolution), each
    element within atol + rtol * (the sum of its terms' magnitudes): what fn gives on the
    inputs' magnitudes with the cotangent's magnitudes.

    Why not rtol * |result|: the backends add the terms in different orders (the reference
    term by term, the fast backend blocked, with fused multiply-adds), and in float32 each
    order's rounding errors grow with the terms, while the result can cancel to far less than
    they are. A weight gradient summed from 60 terms of about 0.5 came to 0.0082, and the
    backends differed by 1.2e-6 there: both within float32's rounding of such a sum."""
    (ref_out, ref_grad), (fast_out, fast_grad) = _on_both_backends(fn, *inputs)
    with backend.use("reference"):
        xs = [x.detach().abs().requires_grad_() for x in inputs]
        outs = fn(*xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        sum(o.mul(ta.arange(o.numel(), dtype=o.dtype).reshape(o.shape).sin().abs()).sum()
            for o in outs).backward()
        scales = [o.detach() for o in outs] + [x.grad for x in xs]
    for r, f, m in zip(ref_out + ref_grad, fast_out + fast_grad, scales):
        for i, (u, v, w) in enumerate(zip(f.reshape(-1).tolist(), r.reshape(-1).tolist(),
                                          m.reshape(-1).tolist())):
            assert abs(u - v) <= atol + rtol * w, f"element {i}: {u} != {v} (terms' sum {w})"


@FEW
@given(case=conv_case(), N=st.integers(1, 3), C=st.integers(1, 3), G=st.integers(1, 2),
       bias=st.booleans(), seed=seeds, dtype=dtypes)
@example(case=((3, 3), (1, 1), (0, 0), (1, 1), 8, 7), N=2, C=2, G=2, bias=False, seed=894,
         dtype=ta.float32)       # a weight gradient that cancels (see _agree_sums)
def test_conv_unfold_fold_pooling(case, N, C, G, bias, seed, dtype):
    # conv2d: the definition's loops against unfold + matmul one image at a time (images shared
    # among the threads, whose weight-gradient parts are added). fold's forward and backward are
    # unfold's two directions swapped.
    k, s, p, d, H, W = case
    x = make_tensor((N, C * G, H, W), "contiguous", seed, dtype)
    w = make_tensor((2 * G, C, *k), "contiguous", seed + 1, dtype)
    b = make_tensor((2 * G,), "contiguous", seed + 2, dtype) if bias else None
    _agree_sums(lambda x, w, *b: F.conv2d(x, w, b[0] if b else None, s, p, d, G), x, w,
                *([b] if bias else []), **_tol(dtype))
    x = x[:, :C]
    cols = F.unfold(x, k, d, p, s).detach()
    _agree(lambda c: F.fold(c, (H, W), k, d, p, s), cols, **_tol(dtype))
    pool_p = (k[0] // 2, k[1] // 2)      # pooling: windows inside the image and over padding
    if H + 2 * pool_p[0] >= d[0] * (k[0] - 1) + 1 and W + 2 * pool_p[1] >= d[1] * (k[1] - 1) + 1:
        _agree(lambda x: F.max_pool2d(x, k, s, pool_p, d), x, **_tol(dtype))
    if H >= k[0] and W >= k[1]:
        _agree(lambda x: F.max_pool2d(x, k, s, 0, 1, True), x, **_tol(dtype))
    if H + 2 * pool_p[0] >= k[0] and W + 2 * pool_p[1] >= k[1]:
        _agree(lambda x: F.avg_pool2d(x, k, s, pool_p, count_include_pad=bias), x, **_tol(dtype))
    _agree(lambda x: F.adaptive_avg_pool2d(x, (max(1, H - 2), W + 1)), x, **_tol(dtype))


@FEW
@given(L=st.integers(1, 70), S=st.integers(1, 140), E=st.integers(1, 9), causal=st.booleans(),
       masked=st.booleans(), seed=seeds, dtype=dtypes)
def test_flash_attention(L, S, E, causal, masked, seed, dtype):
    # The fused kernel: kernels/flash.py's loops against fast/flash.py's tiles on the micro-kernel.
    from tinyattn.nn.attention import SDPBackend, sdpa_kernel
    q = make_tensor((2, L, E), "contiguous", seed, dtype)
    k = make_tensor((2, S, E), "transposed" if E > 1 else "contiguous", seed + 1, dtype)
    v = make_tensor((2, S, 3), "contiguous", seed + 2, dtype)
    mask = None
    if masked and not causal:
        mask = make_tensor((L, S), "contiguous", seed + 3, dtype) > -0.5

    def attn(q, k, v):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    # float32: dK sums up to 70 terms dS_ij q_i, dS = P (dP - D). With a single key, dK is 0
    # exactly (softmax over one key is constant) and the reference (float64 sums) gives 0, while
    # the fast backend's float32 dP and D differ by a rounding each: |dK| reached 1.13e-6 at L = 66
    # (1 case of 150 random ones above atol 1e-6, none above 5e-7 but the two with S = 1).
    tol = dict(rtol=1e-5, atol=5e-6) if dtype == ta.float32 else _tol(dtype)
    _agree(attn, q, k, v, **tol)


@FEW
@given(L=st.integers(1, 70), S=st.integers(1, 140), E=st.integers(1, 9), causal=st.booleans(),
       p=st.sampled_from([0.1, 0.5, 0.9]), seed=seeds, dtype=dtypes)
def test_flash_attention_dropout(L, S, E, causal, p, seed, dtype):
    # The dropout factors of kernels/flash.py (_dropout_factor) against fast/flash.py's rows
    # (_dropout_row): in the forward, drawn again in the backward, and as `dropout_mask`.
    from tinyattn.ops.flash import dropout_mask
    q = make_tensor((2, L, E), "contiguous", seed, dtype)
    k = make_tensor((2, S, E), "contiguous", seed + 1, dtype)
    v = make_tensor((2, S, 3), "contiguous", seed + 2, dtype)

    def attn(q, k, v):
        ta.manual_seed(seed)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)
    # the weights are up to 1 / (1 - p) = 10 times larger, and so are their roundings
    tol = dict(rtol=1e-5, atol=5e-6 / (1 - p)) if dtype == ta.float32 else _tol(dtype)
    _agree(attn, q, k, v, **tol)
    masks = []
    for which in backend.BACKENDS:
        with backend.use(which):
            masks.append(dropout_mask((2, L, S), p, (seed, 3 * seed + 1), dtype).tolist())
    assert masks[0] == masks[1]


def test_every_differing_kernel_was_compared(request):
    """Every kernel with two versions was called on both backends by the tests above (which run
    first: pytest keeps a file's order). Skipped when only some of them were selected."""
    here = [i for i in request.session.items if i.module is request.module]
    if len({i.originalname for i in here}) < len([n for n in dir(request.module)
                                                  if n.startswith("test_")]):
        pytest.skip("only part of test_backends_agree.py was selected")
    missing = sorted(_differing() - _called)
    assert not missing, f"kernels whose backends are never compared: {missing}"


def test_use_switches_and_restores():
    before = backend.active()
    with backend.use("reference"):
        assert backend.active() == "reference"
        assert backend.softmax.__name__ == "tinyattn.kernels.softmax"
    with backend.use("fast"):
        assert backend.active() == "fast"
        assert backend.softmax.__name__ == "tinyattn.fast.softmax"
    assert backend.active() == before
    assert ta.backend.use is backend.use and ta.backend.active is backend.active


def test_use_rejects_unknown_tier():
    with pytest.raises(ValueError, match="backend.use.*'quick'"):
        backend.use("quick")
    assert backend.active() in backend.BACKENDS


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)


def test_environment_variable_selects_the_tier():
    code = "import tinyattn as ta; print(ta.backend.active(), ta.backend.matmul.__name__)"
    r = _python(code, TINYATTN_KERNELS="reference")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["reference", "tinyattn.kernels.matmul"]
    r = _python(code, TINYATTN_KERNELS="bogus")
    assert r.returncode != 0
    assert "TINYATTN_KERNELS" in r.stderr and "'bogus'" in r.stderr
