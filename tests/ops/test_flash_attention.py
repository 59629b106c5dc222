"""The fused attention kernel (kernels/flash.py, fast/flash.py, ops/flash.py) behind
scaled_dot_product_attention, on whichever backend is active.

Held to: the composed path (matmul, softmax, matmul: `sdpa_kernel(SDPBackend.MATH)`), which the
rest of the suite checks against PyTorch and by hand; finite differences (gradcheck, float64); a
plain-Python softmax by hand; PyTorch's own scaled_dot_product_attention where installed. The two
backends' kernels are held to each other in tests/kernels/test_backends_agree.py.
"""
import math

import pytest
from hypothesis import given, settings, strategies as st

import tinyattn as ta
import tinyattn.nn.functional as F
from helpers import assert_close, to_torch
from tinyattn.fast import flash as KF
from tinyattn.nn.attention import SDPBackend, sdpa_kernel
from tinyattn.testing import gradcheck

FLASH, MATH = SDPBackend.FLASH_ATTENTION, SDPBackend.MATH


def _run(backend, q, k, v, **kw):
    """(out, dq, dk, dv) of scaled_dot_product_attention on one backend, with a fixed uneven
    cotangent so that every gradient formula matters."""
    xs = [x.detach().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(*xs, **kw)
    w = ta.arange(out.numel(), dtype=out.dtype).reshape(out.shape).sin()
    (out * w).sum().backward()
    return [out.detach()] + [x.grad for x in xs]


def _agree(q, k, v, tol=None, **kw):
    # float32: agreement to 1e-5. A gradient that is 0 in exact arithmetic comes out as float32
    # rounding of a sum over the queries: dk of a single key (softmax of one score is 1, whatever
    # the score) is about 2.5e-6 for 15 queries, where the composed ops happen to cancel exactly.
    tol = tol or (dict(rtol=2e-5, atol=1e-5) if q.dtype == ta.float32 else
                  dict(rtol=1e-11, atol=1e-12))
    fused, composed = _run(FLASH, q, k, v, **kw), _run(MATH, q, k, v, **kw)
    for name, a, b in zip(("out", "dq", "dk", "dv"), fused, composed):
        assert_close(a, b, msg=name, **tol)
    return fused


@st.composite
def attention_case(draw):
    batch = draw(st.sampled_from([(), (1,), (2,), (2, 3), (1, 2, 2)]))
    L, S = draw(st.integers(1, 80)), draw(st.integers(1, 150))
    E, Ev = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    return batch, L, S, E, Ev


@settings(max_examples=25, deadline=None)
@given(case=attention_case(), causal=st.booleans(), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([ta.float32, ta.float64]))
def test_fused_matches_composed(case, causal, seed, dtype):
    # Shapes that are not multiples of the blocks (64 x 128) or of the tile (8 x 16), L != S.
    batch, L, S, E, Ev = case
    ta.manual_seed(seed)
    q, k, v = (ta.randn(*batch, n, d, dtype=dtype) for n, d in ((L, E), (S, E), (S, Ev)))
    _agree(q, k, v, is_causal=causal)


@pytest.mark.parametrize("mask_shape", [(7, 300), (300,), (2, 1, 7, 300), (2, 3, 1, 300),
                                        (1, 3, 7, 1)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fused_masks_broadcast(mask_shape, kind):
    # Padding masks (B, 1, 1, S), per-head masks, a 1-d mask: views with stride 0, no copy.
    ta.manual_seed(1)
    q, k, v = ta.randn(2, 3, 7, 16), ta.randn(2, 3, 300, 16), ta.randn(2, 3, 300, 8)
    mask = ta.rand(*mask_shape) > 0.3
    if kind == "float":
        mask = ta.where(mask, 0.0, -math.inf) + ta.randn(*mask_shape)
    _agree(q, k, v, attn_mask=mask)


def test_scale_and_gqa():
    ta.manual_seed(2)
    q, k, v = ta.randn(2, 4, 9, 8), ta.randn(2, 2, 20, 8), ta.randn(2, 2, 20, 5)
    _agree(q, k, v, scale=0.3, enable_gqa=True)
    _agree(q, k[:, :1], v[:, :1], scale=-0.7, is_causal=True)  # batch broadcast; a negative scale


def test_fully_masked_rows_are_zero_with_zero_gradients():
    ta.manual_seed(3)
    q, k, v = ta.randn(1, 2, 5, 4), ta.randn(1, 2, 6, 4), ta.randn(1, 2, 6, 3)
    mask = ta.ones(5, 6, dtype=ta.bool)
    mask[2] = False                                   # query 2 may attend to nothing
    out, dq, dk, dv = _agree(q, k, v, attn_mask=mask)
    assert out[:, :, 2].abs().max().item() == 0.0
    assert dq[:, :, 2].abs().max().item() == 0.0
    for t in (out, dq, dk, dv):
        assert not t.isnan().any().item()


def test_by_hand_one_query():
    # q = (1, 0), keys (1, 0), (0, 1), (1, 1), scale 1: scores 1, 0, 1 -> weights e/(2e+1), ...
    q = ta.tensor([[1.0, 0.0]], dtype=ta.float64)
    k = ta.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=ta.float64)
    v = ta.tensor([[1.0], [10.0], [100.0]], dtype=ta.float64)
    with sdpa_kernel(FLASH):
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    e = math.e
    assert abs(out.item() - (e * 1 + 1 * 10 + e * 100) / (2 * e + 1)) < 1e-12


def test_long_rows_online_softmax_is_exact():
    # Many key blocks with a maximum that keeps growing: the running rescale must be exact.
    S = 1000
    q = ta.ones(1, 1, 4, dtype=ta.float64)
    k = (ta.arange(S, dtype=ta.float64) / 50).reshape(S, 1).expand(S, 4).contiguous()
    v = ta.arange(S, dtype=ta.float64).reshape(S, 1)
    with sdpa_kernel(FLASH):
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    s = [4 * j / 50 for j in range(S)]
    m = max(s)
    w = [math.exp(x - m) for x in s]
    assert abs(out.item() - sum(wi * j for j, wi in enumerate(w)) / sum(w)) < 1e-9


# (float32 has no 3.0 case: scores ~1300 carry its rounding, ~1e-4, into every weight, on both
# paths alike.)
@pytest.mark.parametrize("step, dtype", [(s, d) for d in (ta.float32, ta.float64)
                                         for s in (-0.2, 0.05, 0.2, 3.0)
                                         if not (s == 3.0 and d == ta.float32)],
                         ids=lambda x: str(x).replace("tinyattn.", ""))
def test_lazy_rescale_paths(step, dtype):
    # Scores s_ij = q_i . k_j / sqrt(E) + step * j that fall or grow along the keys, across key
    # blocks of BC = 128. After a row's first block the kernel exponentiates with the old shift
    # m; it keeps m while no score exceeds it by more than LAZY_RESCALE (16), else recomputes the
    # block's scores and moves m. step -0.2: m never moves; 0.05: +6.4 per block, kept for two
    # blocks, moved at the third (+19.2); 0.2 and 3.0: moved at every block (3.0: scores ~1300).
    ta.manual_seed(9)
    L, S, E = 70, 3 * KF.BC + 40, 8
    assert 0.05 * KF.BC < KF.LAZY_RESCALE < 3 * 0.05 * KF.BC < 0.2 * KF.BC
    q, k = ta.randn(1, 2, L, E, dtype=dtype), ta.randn(1, 2, S, E, dtype=dtype)
    v = ta.randn(1, 2, S, 5, dtype=dtype)
    growth = step * ta.arange(S, dtype=dtype)
    _agree(q, k, v, attn_mask=ta.where(ta.rand(L, S) > 0.2, growth, -math.inf))
    if abs(step) < 1:
        # the same growth through the keys (q ~ 1, so q . k_j / sqrt(E) ~ step * j), causal
        q = 1 + 0.1 * q
        k = k * 0.01 + (growth / math.sqrt(E)).reshape(S, 1)
        _agree(q, k, v, is_causal=True)


@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck(causal):
    ta.manual_seed(4)
    q = ta.randn(2, 5, 3, dtype=ta.float64, requires_grad=True)
    k = ta.randn(2, 7, 3, dtype=ta.float64, requires_grad=True)
    v = ta.randn(2, 7, 2, dtype=ta.float64, requires_grad=True)
    mask = ta.tensor([True] * 6 + [False])

    def fn(q, k, v):
        with sdpa_kernel(FLASH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                  attn_mask=None if causal else mask)
    assert gradcheck(fn, (q, k, v))


def test_no_weights_stored():
    # The node keeps q, k, v, out and lse (..., L): nothing of size L x S.
    q = ta.randn(1, 2, 200, 8, requires_grad=True)
    k, v = ta.randn(1, 2, 300, 8), ta.randn(1, 2, 300, 8)
    with sdpa_kernel(FLASH):
        out = F.scaled_dot_product_attention(q, k, v)
    saved = [t for t in out.grad_fn.saved if isinstance(t, ta.Tensor)]
    assert max(t.numel() for t in saved) < 200 * 300
    assert out.grad_fn.saved[4].shape == (1, 2, 200)       # lse


def test_backend_choice():
    q = ta.randn(2, 4, 3, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    assert type(out.grad_fn).__name__ == "FlashAttention"          # the default when it can
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert type(out.grad_fn).__name__ == "FlashAttention"          # dropout inside the kernel
    with sdpa_kernel(MATH):
        assert type(F.scaled_dot_product_attention(q, q, q).grad_fn).__name__ != "FlashAttention"
    with sdpa_kernel([FLASH]):
        with pytest.raises(RuntimeError, match="return_weights"):
            F.scaled_dot_product_attention(q, q, q, return_weights=True)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        with pytest.raises(RuntimeError, match="neither MATH nor FLASH"):
            F.scaled_dot_product_attention(q, q, q)
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel(["flash"]):
            pass
    out = F.scaled_dot_product_attention(q, q, q)                  # restored after the blocks
    assert type(out.grad_fn).__name__ == "FlashAttention"


def test_empty():
    q, k, v = ta.randn(2, 0, 4), ta.randn(2, 5, 4), ta.randn(2, 5, 3)
    with sdpa_kernel(FLASH):
        assert F.scaled_dot_product_attention(q, k, v).shape == (2, 0, 3)


def test_block_sizes_shrink_for_short_sequences():
    assert KF.block_sizes(1000, 1000) == (KF.BR, KF.BC)
    assert KF.block_sizes(5, 20) == (8, 32)


@pytest.mark.parametrize("causal,masked", [(False, False), (True, False), (False, True)])
def test_against_pytorch(causal, masked):
    torch = pytest.importorskip("torch")
    ta.manual_seed(5)
    q, k, v = ta.randn(2, 3, 70, 16), ta.randn(2, 3, 140, 16), ta.randn(2, 3, 140, 8)
    mask = (ta.rand(2, 1, 70, 140) > 0.2) if masked else None
    with sdpa_kernel(FLASH):
        tq, tk, tv = (to_torch(x, requires_grad=True) for x in (q, k, v))
        ours = [x.detach().requires_grad_() for x in (q, k, v)]
        out = F.scaled_dot_product_attention(*ours, attn_mask=mask, is_causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=None if mask is None else to_torch(mask), is_causal=causal)
    g = ta.randn(*out.shape)
    out.backward(g)
    ref.backward(to_torch(g))
    assert_close(out, ref.detach().tolist(), rtol=1e-4, atol=1e-5)
    for a, b in zip(ours, (tq, tk, tv)):
        assert_close(a.grad, b.grad.tolist(), rtol=1e-4, atol=1e-5)


def test_multihead_attention_without_weights_takes_the_fused_path():
    # As in PyTorch, need_weights=False lets MultiheadAttention use the fused kernel.
    from tinyattn.autograd import _topological_order
    ta.manual_seed(6)
    mha = ta.nn.MultiheadAttention(16, 4, batch_first=True)
    x = ta.randn(2, 9, 16, requires_grad=True)
    pad = ta.tensor([[False] * 9, [False] * 6 + [True] * 3])
    causal = ta.nn.Transformer.generate_square_subsequent_mask(9)
    fused, none = mha(x, x, x, key_padding_mask=pad, attn_mask=causal, need_weights=False)
    assert none is None
    assert "FlashAttentionBackward" in [n.name() for n in _topological_order(fused.grad_fn)]
    composed, _ = mha(x, x, x, key_padding_mask=pad, attn_mask=causal, need_weights=True)
    assert_close(fused, composed, rtol=1e-5, atol=1e-6)
    g = ta.randn(2, 9, 16)
    fused.backward(g)
    g_fused = x.grad
    x.grad = None
    composed.backward(g)
    assert_close(g_fused, x.grad, rtol=1e-5, atol=1e-6)


def test_reference_kernel_sums_in_float64():
    # The reference kernel is the oracle the fast one is measured against, so it must not add
    # float32 rounding of its own: its float32 gradients are the float64 ones up to a few
    # roundings (of the inputs, lse and the result). Summed in float32 one term at a time, dk and
    # dv of this causal head come out about 2x the bound away.
    from tinyattn import backend
    T, E = 256, 8
    ta.manual_seed(0)
    q, k, v, g = (ta.randn(1, T, E, dtype=ta.float64) for _ in range(4))

    def grads(dtype):
        xs = [x.to(dtype).requires_grad_() for x in (q, k, v)]
        with backend.use("reference"), sdpa_kernel(FLASH):
            F.scaled_dot_product_attention(*xs, is_causal=True).backward(g.to(dtype))
        return [x.grad.double() for x in xs]

    for name, a, b in zip(("dq", "dk", "dv"), grads(ta.float32), grads(ta.float64)):
        assert ((a - b).abs() / (b.abs() + 1)).max().item() <= 3e-7, name


@pytest.mark.parametrize("name", ["reference", "fast"])
def test_each_backend_runs_its_fused_kernel_and_math_runs_the_composed_ops(name, monkeypatch):
    # On either backend the default path is one FlashAttention node whose kernels are that
    # backend's flash_forward / flash_backward; sdpa_kernel(MATH) never calls them.
    import importlib
    from tinyattn import backend
    package = "kernels" if name == "reference" else "fast"
    module = importlib.import_module(f"tinyattn.{package}.flash")
    calls = []
    for fn in ("flash_forward", "flash_backward"):
        real = getattr(module, fn)
        monkeypatch.setattr(module, fn, lambda *a, fn=fn, real=real: (calls.append(fn), real(*a)))
    q = ta.randn(1, 2, 20, 4, requires_grad=True)
    with backend.use(name):
        assert backend.flash is module
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        assert type(out.grad_fn).__name__ == "FlashAttention"
        out.sum().backward()
        assert calls == ["flash_forward", "flash_backward"]
        with sdpa_kernel(MATH):
            out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
            out.sum().backward()
        assert calls == ["flash_forward", "flash_backward"]
        assert "MatMul" in type(out.grad_fn).__name__
