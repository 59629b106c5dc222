"""Dropout inside the fused attention kernel (kernels/flash.py, fast/flash.py, ops/flash.py).

The kernel multiplies the weights by z[b, i, j] = keep / (1 - p), a hash of two keys drawn from
the generator and of the element's index (b L + i) S + j, and the backward draws z again.
Held to: the composed ops given the same mask (`dropout_mask`), in float64 on both backends;
the composed path's own dropout (`sdpa_kernel(MATH)`), which draws the same mask for the same
seed; finite differences (gradcheck); the keep fraction; PyTorch through the mask (its dropout
stream is not ours); and the memory it allocates (nothing of size L x S).
"""
import math
import tracemalloc

import pytest

import tinyattn as ta
import tinyattn.nn.functional as F
from helpers import assert_close, to_torch
from tinyattn import backend
from tinyattn.fast import flash as KF
from tinyattn.kernels import flash as KR
from tinyattn.kernels import random as KRand
from tinyattn.nn.attention import SDPBackend, sdpa_kernel
from tinyattn.ops.flash import dropout_mask
from tinyattn.random import default_generator
from tinyattn.testing import gradcheck

FLASH, MATH = SDPBackend.FLASH_ATTENTION, SDPBackend.MATH
BACKENDS = ("reference", "fast")


def _keys(seed):
    """The keys the next draw after manual_seed(seed) takes: those a fused call then uses."""
    ta.manual_seed(seed)
    keys = default_generator.next_keys()
    ta.manual_seed(seed)
    return keys


def _qkv(seed, shape=(2, 3), L=13, S=41, E=5, Ev=4, dtype=ta.float64):
    ta.manual_seed(seed)
    return (ta.randn(*shape, L, E, dtype=dtype), ta.randn(*shape, S, E, dtype=dtype),
            ta.randn(*shape, S, Ev, dtype=dtype))


def _fwd_bwd(fn, q, k, v):
    """(out, dq, dk, dv) of fn(q, k, v) with a fixed uneven cotangent."""
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    out = fn(*xs)
    w = ta.arange(out.numel(), dtype=out.dtype).reshape(out.shape).sin()
    (out * w).sum().backward()
    return [out.detach()] + [x.grad for x in xs]


def test_the_mask_is_the_one_dropout_draws_with_the_same_keys():
    # One stream for the library: the fused kernel's factors are kernels/random.py's dropout mask
    # of a (..., L, S) tensor drawn with the same keys (the same hash, the same index).
    for x in (0, 1, 0x45D9F3B, 2**31 + 7, 2**32 - 1):
        assert KR._hash32(x) == KRand._hash32(x)
    shape, p = (2, 3, 7, 19), 0.35
    keys = _keys(11)
    composed = F.dropout(ta.ones(*shape, dtype=ta.float64), p)      # draws with the same keys
    assert dropout_mask(shape, p, keys, ta.float64).tolist() == composed.tolist()
    assert set(composed.flatten().tolist()) == {0.0, 1 / (1 - p)}


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_fused_output_and_gradients_equal_the_composed_ops_given_the_mask(name, causal):
    # out = (softmax(q k^T * scale + M) * z) @ v, z = dropout_mask(...): forward and gradients.
    q, k, v = _qkv(1)
    p, L, S = 0.3, q.shape[-2], k.shape[-2]
    mask = None if causal else ta.rand(L, S) > 0.2
    z = dropout_mask((2, 3, L, S), p, _keys(21), ta.float64)

    def fused(q, k, v):
        ta.manual_seed(21)
        with sdpa_kernel(FLASH):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                                  is_causal=causal)

    def by_hand(q, k, v):
        allowed = ta.nn.causal_mask(L, S, convention="sdpa") if causal else mask
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(allowed.logical_not(), -math.inf)
        return (ta.softmax(scores, -1) * z) @ v

    with backend.use(name):
        got, expected = _fwd_bwd(fused, q, k, v), _fwd_bwd(by_hand, q, k, v)
    for what, a, b in zip(("out", "dq", "dk", "dv"), got, expected):
        assert_close(a, b, rtol=1e-12, atol=1e-12, msg=what)


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_same_seed_gives_the_math_paths_result(name, dtype):
    # The composed path (matmul, softmax, dropout, matmul) draws its own mask, the same one: a
    # seeded run does not change when it moves between the paths. GQA and a broadcast batch too.
    q, k, v = _qkv(2, (2, 4), L=9, S=70, dtype=dtype)
    k, v = k[:, :2], v[:, :2]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == ta.float32 else dict(rtol=1e-12, atol=1e-12)
    cases = ((k[:1, :1], v[:1, :1], dict(is_causal=True)),      # batch (1, 1) against (2, 4)
             (k, v, dict(enable_gqa=True)),
             (k[:, :1], v[:, :1], dict(attn_mask=ta.rand(9, 70) > 0.5)))
    for k2, v2, kw in cases:
        results = []
        for path in (FLASH, MATH):
            def run(q, k, v, path=path):
                ta.manual_seed(5)
                with sdpa_kernel(path):
                    return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, **kw)
            with backend.use(name):
                results.append(_fwd_bwd(run, q, k2, v2))
        for what, a, b in zip(("out", "dq", "dk", "dv"), *results):
            assert_close(a, b, msg=what, **tol)


def test_same_seed_same_result_other_seed_other_result():
    q, k, v = _qkv(3)

    def run(seed):
        ta.manual_seed(seed)
        return _fwd_bwd(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
                        q, k, v)
    first, again, other = run(1), run(1), run(2)
    for a, b, c in zip(first, again, other):
        assert a.tolist() == b.tolist()
        assert (a - c).abs().max().item() > 1e-3
    # a call takes one draw from the generator, as the composed path's dropout does
    ta.manual_seed(1)
    F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert default_generator.get_state() == (1, 1)
    F.scaled_dot_product_attention(q, k, v)                  # no dropout: no draw
    assert default_generator.get_state() == (1, 1)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_fraction_is_one_minus_p(p):
    # 32,768 factors: the kept fraction is within 0.015 of 1 - p (more than 5 standard deviations),
    # in each head too (within 4.5), and the kept ones are 1 / (1 - p).
    z = dropout_mask((2, 128, 128), p, _keys(7), ta.float64)
    values = z.flatten().tolist()
    assert set(values) == {0.0, 1 / (1 - p)}
    assert abs(sum(v != 0.0 for v in values) / len(values) - (1 - p)) < 0.015
    for head in z.unbind(0):
        kept = sum(v != 0.0 for v in head.flatten().tolist()) / head.numel()
        assert abs(kept - (1 - p)) < 4.5 * math.sqrt(p * (1 - p) / head.numel())


def test_dropout_one_drops_everything_and_zero_is_plain_attention():
    q, k, v = _qkv(4)
    out, dq, dk, dv = _fwd_bwd(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, dropout_p=1.0), q, k, v)
    for t in (out, dq, dk, dv):
        assert t.abs().max().item() == 0.0
    plain = _fwd_bwd(F.scaled_dot_product_attention, q, k, v)
    zero = _fwd_bwd(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.0),
                    q, k, v)
    assert [t.tolist() for t in plain] == [t.tolist() for t in zero]


@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_with_a_fixed_seed(causal):
    q, k, v = (t.requires_grad_() for t in _qkv(5, (2,), L=5, S=7, E=3, Ev=2))
    mask = ta.tensor([True] * 6 + [False])

    def fn(q, k, v):
        ta.manual_seed(9)                       # every evaluation drops the same weights
        with sdpa_kernel(FLASH):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=causal,
                                                  attn_mask=None if causal else mask)
    assert gradcheck(fn, (q, k, v))


def test_both_backends_give_the_same_mask_bit_for_bit():
    for p in (0.05, 0.5, 0.97):
        masks = []
        for name in BACKENDS:
            with backend.use(name):
                masks.append(dropout_mask((3, 37, 133), p, _keys(8), ta.float32).tolist())
        assert masks[0] == masks[1]
    # a row whose indices cross 2^32 (the hash of the index's high half changes inside it)
    from array import array
    k1, k2 = _keys(8)
    for p in (0.2, 0.7):
        row = array("d", [1.0] * 20)
        KF._dropout_row(row, 20, 2**32 - 9, k1, k2, p)
        assert row.tolist() == [KR._dropout_factor(k1, k2, p, 2**32 - 9 + j) for j in range(20)]
        assert 0.0 in row.tolist() and 1 / (1 - p) in row.tolist()


def test_against_pytorch_through_the_mask():
    # PyTorch's dropout stream is not ours: compare with its math path given our mask.
    torch = pytest.importorskip("torch")
    q, k, v = _qkv(6, (2, 3), L=20, S=33, E=8, Ev=6, dtype=ta.float32)
    p = 0.25
    z = dropout_mask((2, 3, 20, 33), p, _keys(3))
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    ta.manual_seed(3)
    out = F.scaled_dot_product_attention(*xs, dropout_p=p, is_causal=True)
    tq, tk, tv = (to_torch(x, requires_grad=True) for x in (q, k, v))
    causal = torch.ones(20, 33, dtype=torch.bool).tril()
    scores = (tq @ tk.transpose(-2, -1) / math.sqrt(8)).masked_fill(~causal, -math.inf)
    ref = (torch.softmax(scores, -1) * to_torch(z)) @ tv
    g = ta.randn(*out.shape)
    out.backward(g)
    ref.backward(to_torch(g))
    assert_close(out, ref.detach().tolist(), rtol=1e-4, atol=1e-5)
    for a, b in zip(xs, (tq, tk, tv)):
        assert_close(a.grad, b.grad.tolist(), rtol=1e-4, atol=1e-5)


def test_layers_in_training_take_the_fused_path_with_dropout():
    from tinyattn.autograd import _topological_order

    def nodes(out):
        return [n.name() for n in _topological_order(out.grad_fn)]
    ta.manual_seed(6)
    mha = ta.nn.MultiheadAttention(16, 4, dropout=0.3, batch_first=True)
    x = ta.randn(2, 9, 16, requires_grad=True)
    out, _ = mha(x, x, x, need_weights=False)
    assert "FlashAttentionBackward" in nodes(out)
    assert "DropoutBackward" not in nodes(out)
    mha.eval()                                 # evaluation: dropout_p = 0, the same kernel
    plain, _ = mha(x, x, x, need_weights=False)
    again, _ = mha(x, x, x, need_weights=False)
    assert plain.tolist() == again.tolist() and plain.tolist() != out.tolist()
    layer = ta.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.2, batch_first=True)
    assert "FlashAttentionBackward" in nodes(layer(x))


@pytest.mark.jit_only
@pytest.mark.parametrize("name", BACKENDS)
def test_no_buffer_of_size_t_by_t_is_allocated(name):
    # T = 2048, one head: a (T, T) float32 matrix is 16 MiB. Every buffer of a tensor or a kernel's
    # scratch is an array.array, which Python's allocator hands out, and tracemalloc sees each.
    # The fused call with dropout, forward and backward, stays under a quarter of that (its
    # buffers are O(T): gradients, lse, and per thread a scratch of a few (T, E) blocks; two
    # threads here); the composed path (the check's check) needs several (T, T) matrices.
    T = 2048
    ta.manual_seed(0)
    q, k, v = (ta.randn(1, 1, T, 16, requires_grad=True) for _ in range(3))
    g = ta.randn(1, 1, T, 16)

    def peak(path):
        q.grad = k.grad = v.grad = None
        tracemalloc.start()
        try:
            with sdpa_kernel(path):
                F.scaled_dot_product_attention(q, k, v, dropout_p=0.1).backward(g)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    threads = backend._num_threads              # None: the default count
    ta.set_num_threads(2)
    try:
        with backend.use(name):
            peak(FLASH)                         # compiled and warm
            fused, composed = peak(FLASH), peak(MATH)
    finally:
        backend.set_num_threads(threads)
    assert fused < T * T * 4 / 4, fused
    assert composed > 2 * T * T * 4, composed


def test_second_derivatives_through_the_fused_kernel_with_dropout_use_the_same_mask():
    ta.manual_seed(0)
    q, k, v = [ta.randn(1, 2, 4, 3, dtype=ta.float64, requires_grad=True) for _ in range(3)]

    def attend(q, k, v):
        ta.manual_seed(5)      # one draw per call: the same mask at every evaluation
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)

    assert ta.autograd.gradgradcheck(attend, (q, k, v))
