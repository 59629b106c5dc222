"""scaled_dot_product_attention, the mask helpers, SelfAttention and MultiheadAttention.

What holds: every mask convention means the same in the function that takes it; outputs, weights
and gradients match PyTorch's (float64 and float32, grouped-query, random shapes) and finite
differences; a fully masked query gets zero weights and finite gradients; errors name the problem.

Parity tests build the same inputs (and the same weights, through load_state_dict) in PyTorch and
compare outputs and gradients, with the non-uniform upstream gradient of ((out + 1) ** 2).mean().
"""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn
from tinyattn import nn
from tinyattn.testing import gradcheck
from tinyattn.nn import functional as F

from _attn_testing import assert_close, flat, rand, to_torch, upstream_loss


def allowed_mask(shape, S, p=0.4):
    """A random bool mask (True = may attend) in which key 0 is always allowed: no empty row."""
    m = tinyattn.rand(*shape) > p
    return m | (tinyattn.arange(S) == 0)


# ============================================================================ mask helpers


def test_causal_mask_conventions_by_hand():
    assert nn.causal_mask(2, 3, convention="sdpa").tolist() == [[True, False, False],
                                                                [True, True, False]]
    assert nn.causal_mask(2, 3, convention="mha").tolist() == [[False, True, True],
                                                               [False, False, True]]
    inf = math.inf
    assert nn.causal_mask(3).tolist() == [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
    assert nn.causal_mask(2, dtype=tinyattn.float64).dtype is tinyattn.float64
    with pytest.raises(ValueError, match="convention"):
        nn.causal_mask(3, convention="torch")


def test_padding_mask_conventions_by_hand():
    inf = math.inf
    assert nn.padding_mask([1, 3]).tolist() == [[0.0, -inf, -inf], [0.0, 0.0, 0.0]]
    assert nn.padding_mask([2, 0], max_len=3, convention="mha").tolist() == [
        [False, False, True], [True, True, True]]
    assert nn.padding_mask(tinyattn.tensor([2, 1]), convention="sdpa").tolist() == [
        [True, True], [True, False]]
    with pytest.raises(ValueError, match="does not fit"):
        nn.padding_mask([4], max_len=3)
    with pytest.raises(ValueError, match="non-negative"):
        nn.padding_mask([-1])


def test_mask_helpers_equal_torchs_masks():
    torch = pytest.importorskip("torch")
    assert flat(nn.causal_mask(5)) == flat(torch.nn.Transformer.generate_square_subsequent_mask(5))
    assert nn.causal_mask(4, 6, convention="sdpa").tolist() == \
        torch.ones(4, 6, dtype=torch.bool).tril().tolist()


def test_every_convention_means_the_same_in_its_consumer():
    tinyattn.manual_seed(0)
    q, k, v = rand(2, 2, 4, 3), rand(2, 2, 4, 3), rand(2, 2, 4, 3)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for mask in (nn.causal_mask(4, convention="sdpa"), nn.causal_mask(4, dtype=tinyattn.float64)):
        assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), ref, 1e-12)
    mha = nn.MultiheadAttention(4, 2).double()
    x = rand(3, 2, 4)
    lengths = [3, 1]
    outs = [mha(x, x, x, attn_mask=nn.causal_mask(3, convention=c, dtype=tinyattn.float64),
                key_padding_mask=nn.padding_mask(lengths, convention=c, dtype=tinyattn.float64))[0]
            for c in ("mha", "additive")]
    assert_close(outs[0], outs[1], 1e-12)


# ============================================================================ SDPA

B, H, L, S, E = 2, 3, 4, 5, 6

SDPA_CASES = {
    "no mask": dict(),
    "bool (L, S)": dict(mask="bool", mshape=(L, S)),
    "bool (B, 1, L, S)": dict(mask="bool", mshape=(B, 1, L, S)),
    "bool (1, H, 1, S)": dict(mask="bool", mshape=(1, H, 1, S)),
    "bool (1, S)": dict(mask="bool", mshape=(1, S)),
    "float (L, S)": dict(mask="float", mshape=(L, S)),
    "float (B, H, L, S)": dict(mask="float", mshape=(B, H, L, S)),
    "float (H, 1, S)": dict(mask="float", mshape=(H, 1, S)),
    "is_causal": dict(is_causal=True),
    "is_causal L < S": dict(is_causal=True, Lq=3),
    "is_causal L > S": dict(is_causal=True, Lq=7),
    "scale": dict(scale=0.3),
    "Ev != E": dict(Ev=2),
    "3-D, no heads": dict(shape=(B,)),
    "broadcast key batch": dict(kshape=(H,)),
}


@pytest.mark.parametrize("case", list(SDPA_CASES), ids=list(SDPA_CASES))
def test_sdpa_matches_torch(case):
    torch = pytest.importorskip("torch")
    c = SDPA_CASES[case]
    tinyattn.manual_seed(1)
    lead = c.get("shape", (B, H))
    Lq = c.get("Lq", L)
    q = rand(*lead, Lq, E)
    k = rand(*c.get("kshape", lead), S, E)
    v = rand(*c.get("kshape", lead), S, c.get("Ev", E))
    mask = tmask = None
    if c.get("mask") == "bool":
        mask = allowed_mask(c["mshape"], S)
        tmask = to_torch(torch, mask)
    elif c.get("mask") == "float":
        mask = tinyattn.rand(*c["mshape"], dtype=tinyattn.float64, low=-3.0, high=1.0)
        mask = mask.masked_fill(allowed_mask(c["mshape"], S).logical_not(), -math.inf)
        mask.requires_grad_(True)
        tmask = to_torch(torch, mask, requires_grad=True)
    kw = {"scale": c["scale"]} if "scale" in c else {}
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                         is_causal=c.get("is_causal", False), **kw)
    tq, tk, tv = (to_torch(torch, t, True) for t in (q, k, v))
    tout = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=tmask, is_causal=c.get("is_causal", False), **kw)
    assert_close(out, tout, 1e-10, 1e-8, "output")
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    for name, ours, theirs in (("q", q, tq), ("k", k, tk), ("v", v, tv)):
        assert_close(ours.grad, theirs.grad, 1e-10, 1e-8, f"grad {name}")
    if c.get("mask") == "float":
        assert_close(mask.grad, tmask.grad, 1e-10, 1e-8, "grad mask")


def test_sdpa_float32_matches_torch():
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(2)
    q, k, v = (rand(B, H, L, E, dtype=tinyattn.float32) for _ in range(3))
    mask = allowed_mask((L, L), L)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    tq, tk, tv = (to_torch(torch, t, True) for t in (q, k, v))
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv,
                                                            attn_mask=to_torch(torch, mask))
    assert out.dtype is tinyattn.float32
    assert_close(out, tout, 1e-5, 1e-4)
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    assert_close(q.grad, tq.grad, 1e-5, 1e-4)


def test_sdpa_gqa_matches_torch():
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(3)
    q, k, v = rand(2, 4, 3, 5), rand(2, 2, 4, 5), rand(2, 2, 4, 5)
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    tq, tk, tv = (to_torch(torch, t, True) for t in (q, k, v))
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)
    assert_close(out, tout, 1e-10)
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    assert_close(k.grad, tk.grad, 1e-10)
    assert_close(v.grad, tv.grad, 1e-10)


def test_sdpa_return_weights_are_the_softmax_of_the_scores():
    tinyattn.manual_seed(4)
    q, k, v = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 2)
    out, w = F.scaled_dot_product_attention(q, k, v, return_weights=True)
    scores = q.tolist()
    keys = k.tolist()
    for b in range(2):
        for i in range(3):
            s = [sum(a * c for a, c in zip(scores[b][i], keys[b][j])) / 2.0 for j in range(5)]
            z = sum(math.exp(x) for x in s)
            expect = [math.exp(x) / z for x in s]
            assert w[b, i].tolist() == pytest.approx(expect, abs=1e-12)
    assert_close(out, w @ v, 1e-12)


def test_sdpa_dropout_keeps_or_scales_each_weight():
    tinyattn.manual_seed(5)
    q, k, v = rand(2, 3, 4, 4), rand(2, 3, 4, 4), rand(2, 3, 4, 4)
    _, plain = F.scaled_dot_product_attention(q, k, v, return_weights=True)
    tinyattn.manual_seed(6)
    out, w = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, return_weights=True)
    kept = 0
    for a, b in zip(flat(w), flat(plain)):
        assert a == 0.0 or a == pytest.approx(2 * b, rel=1e-12)
        kept += a != 0.0
    assert 0 < kept < len(flat(w))
    assert_close(out, w @ v, 1e-12)
    tinyattn.manual_seed(6)  # same seed, same dropout pattern, now inside the fused kernel
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert type(again.grad_fn).__name__ == "FlashAttention"
    assert_close(again, out, atol=1e-12, rtol=1e-12)
    assert flat(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)) == [0.0] * out.numel()


def test_sdpa_fully_masked_rows_give_zero_weights_output_and_finite_grads():
    tinyattn.manual_seed(7)
    q, k, v = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 4)
    mask = allowed_mask((2, 3, 5), 5)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    noise = tinyattn.rand(2, 3, 5, dtype=tinyattn.float64)
    for m in (mask, tinyattn.where(mask, noise, -math.inf)):
        out, w = F.scaled_dot_product_attention(q, k, v, attn_mask=m, return_weights=True)
        assert w[0, 1].tolist() == [0.0] * 5 and out[0, 1].tolist() == [0.0] * 4
        assert w[0, 0].sum().item() == pytest.approx(1.0)
        q.grad = k.grad = v.grad = None
        upstream_loss(out).backward()
        for t in (q, k, v):
            assert all(math.isfinite(g) for g in flat(t.grad))
        assert q.grad[0, 1].tolist() == [0.0] * 4  # the masked query influences nothing


def test_sdpa_gradcheck_with_masks():
    tinyattn.manual_seed(8)
    q, k, v = rand(2, 3, 4), rand(2, 4, 4), rand(2, 4, 3)
    bias = tinyattn.rand(3, 4, dtype=tinyattn.float64, requires_grad=True)
    allowed = allowed_mask((2, 3, 4), 4)
    assert gradcheck(lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, attn_mask=b),
                     (q, k, v, bias))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                                                    scale=0.7), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                     (q, k, v))


def test_sdpa_errors_name_the_problem():
    q, k = rand(2, 3, 4), rand(2, 5, 4)
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=nn.causal_mask(3, 5), is_causal=True)
    with pytest.raises(ValueError, match=r"key has 3"):
        F.scaled_dot_product_attention(q, rand(2, 5, 3), k)
    with pytest.raises(ValueError, match=r"key has S=5 positions .* but value has 4"):
        F.scaled_dot_product_attention(q, k, rand(2, 4, 4))
    with pytest.raises(ValueError, match="attn_mask"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=tinyattn.ones(3, 4, dtype=tinyattn.bool))
    with pytest.raises(TypeError, match="only bool and floating-point"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=tinyattn.ones(3, 5, dtype=tinyattn.int64))
    with pytest.raises(TypeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.float(), k)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, k, k, dropout_p=1.5)


# ============================================================================ SelfAttention


def test_self_attention_is_the_textbook_formula():
    tinyattn.manual_seed(9)
    sa = nn.SelfAttention(4, kdim=3, out_dim=2, bias=True).double()
    with tinyattn.no_grad():
        for b in (sa.b_Q, sa.b_K, sa.b_V):
            b.copy_(tinyattn.randn(b.shape, dtype=tinyattn.float64))
    x = rand(5, 4)
    out, A = sa(x)
    assert out.shape == (5, 2) and A.shape == (5, 5)
    Q = x @ sa.W_Q + sa.b_Q
    K = x @ sa.W_K + sa.b_K
    V = x @ sa.W_V + sa.b_V
    A_ref = (Q @ K.T / math.sqrt(3)).softmax(-1)
    assert_close(A, A_ref, 1e-12)
    assert_close(out, A_ref @ V, 1e-12)
    assert [n for n, _ in sa.named_parameters()] == ["W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"]


def test_self_attention_batched_masked_and_gradcheck():
    tinyattn.manual_seed(10)
    sa = nn.SelfAttention(3).double()
    assert sa.b_Q is None and len(list(sa.parameters())) == 3
    x = rand(2, 4, 3)
    out, A = sa(x, is_causal=True)
    assert out.shape == (2, 4, 3) and A.shape == (2, 4, 4)
    assert A[0, 0].tolist()[1:] == [0.0, 0.0, 0.0]
    single, _ = sa(x[1], mask=nn.causal_mask(4, convention="sdpa"))
    assert_close(out[1], single, 1e-12)
    assert gradcheck(lambda x, w: sa(x, is_causal=True)[0], (x, sa.W_Q))


def test_self_attention_matches_torch_sdpa():
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(11)
    sa = nn.SelfAttention(4, bias=True).double()
    x = rand(2, 3, 4)
    out, _ = sa(x)
    tx = to_torch(torch, x, True)
    w = {n: to_torch(torch, p, True) for n, p in sa.named_parameters()}
    tout = torch.nn.functional.scaled_dot_product_attention(
        tx @ w["W_Q"] + w["b_Q"], tx @ w["W_K"] + w["b_K"], tx @ w["W_V"] + w["b_V"])
    assert_close(out, tout, 1e-12)
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    assert_close(x.grad, tx.grad, 1e-10)
    for n, p in sa.named_parameters():
        assert_close(p.grad, w[n].grad, 1e-10, what=n)


# ============================================================================ MultiheadAttention


def make_pair(torch, E=8, H=2, dtype="float64", **kw):
    """Our MultiheadAttention and torch's, with the same weights (torch's, loaded into ours)."""
    theirs = torch.nn.MultiheadAttention(E, H, **kw)
    with torch.no_grad():  # non-zero biases, so that they are tested too
        for name, p in theirs.named_parameters():
            if "bias" in name:
                p.copy_(torch.randn(p.shape) * 0.5)
    ours = nn.MultiheadAttention(E, H, **kw)
    ours.load_state_dict(theirs.state_dict())
    if dtype == "float64":
        theirs.double()
        ours.double()
    return ours, theirs


def test_mha_parameters_and_initialisation_follow_pytorch():
    torch = pytest.importorskip("torch")
    for kw in (dict(), dict(kdim=5, vdim=3), dict(bias=False)):
        ours, theirs = nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for (n, p), (_, tp) in zip(ours.state_dict().items(), theirs.state_dict().items()):
            assert tuple(p.shape) == tuple(tp.shape), n
    m = nn.MultiheadAttention(8, 2)
    bound = math.sqrt(6.0 / (8 + 24))  # xavier_uniform_ on the (3E, E) in_proj_weight
    w = flat(m.in_proj_weight)
    assert max(abs(x) for x in w) <= bound and max(abs(x) for x in w) > 0.8 * bound
    assert flat(m.in_proj_bias) == [0.0] * 24 and flat(m.out_proj.bias) == [0.0] * 8
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


L_, S_, B_ = 4, 5, 3


def mha_inputs(case, batch_first):
    """(query, key, value) for a case, shaped for batch_first, float64, requiring grad."""
    E, kd, vd = 8, case.get("kdim", 8), case.get("vdim", 8)
    Lq = S_ if case.get("self") else L_

    def shape(T, F_):
        if case.get("unbatched"):
            return (T, F_)
        return (B_, T, F_) if batch_first else (T, B_, F_)
    q = rand(*shape(Lq, E))
    if case.get("self"):
        return q, q, q
    return q, rand(*shape(S_, kd)), rand(*shape(S_, vd))


def mha_masks(torch, case, Lq):
    """(ours, torch's) attn_mask and key_padding_mask for a case; no query loses every key."""
    B = 1 if case.get("unbatched") else B_
    am = kpm = None
    kind = case.get("attn_mask")
    if kind:
        shape = (B * 2, Lq, S_) if kind.endswith("3d") else (Lq, S_)
        allowed = allowed_mask(shape, S_)
        if case.get("unbatched") and kind.endswith("3d"):
            allowed = allowed_mask((2, Lq, S_), S_)
        am = allowed.logical_not()  # MHA: True = may NOT attend
        if kind.startswith("float"):
            am = tinyattn.rand(allowed.shape, dtype=tinyattn.float64, low=-2.0, high=0.5)
            am = am.masked_fill(allowed.logical_not(), -math.inf)
    kind = case.get("kpm")
    if kind:
        lengths = [S_ - i for i in range(B)]
        kpm = nn.padding_mask(lengths, convention="mha")  # True = padding
        if case.get("unbatched"):
            kpm = kpm[0].masked_fill(tinyattn.arange(S_) == 3, True)
        if kind == "float":
            kpm = tinyattn.where(kpm, -math.inf, 0.0).double() + tinyattn.rand(
                kpm.shape, dtype=tinyattn.float64, low=-1.0, high=0.0)
    conv = (lambda m: None if m is None else to_torch(torch, m))
    return am, kpm, conv(am), conv(kpm)


MHA_CASES = {
    "self-attention": dict(self=True),
    "cross-attention": dict(),
    "kdim vdim": dict(kdim=5, vdim=3),
    "unbatched": dict(unbatched=True),
    "unbatched masks": dict(unbatched=True, attn_mask="bool3d", kpm="bool"),
    "kpm bool": dict(kpm="bool"),
    "kpm float": dict(kpm="float"),
    "attn_mask bool 2-D": dict(attn_mask="bool"),
    "attn_mask float 2-D": dict(attn_mask="float"),
    "attn_mask bool 3-D": dict(attn_mask="bool3d"),
    "attn_mask float 3-D": dict(attn_mask="float3d"),
    "both masks bool": dict(attn_mask="bool", kpm="bool", self=True),
    "float mask, bool kpm": dict(attn_mask="float3d", kpm="bool"),
    "is_causal": dict(self=True, causal=True),
    "no bias": dict(bias=False),
    "weights per head": dict(average=False, attn_mask="bool"),
    "no weights": dict(need_weights=False, kpm="bool"),
}


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq-first", "batch-first"])
@pytest.mark.parametrize("case", list(MHA_CASES), ids=list(MHA_CASES))
def test_mha_matches_torch(case, batch_first):
    torch = pytest.importorskip("torch")
    c = MHA_CASES[case]
    torch.manual_seed(0)
    tinyattn.manual_seed(0)
    kw = dict(batch_first=batch_first, bias=c.get("bias", True))
    if "kdim" in c:
        kw.update(kdim=c["kdim"], vdim=c["vdim"])
    ours, theirs = make_pair(torch, **kw)
    q, k, v = mha_inputs(c, batch_first)
    Lq = S_ if c.get("self") else L_
    am, kpm, tam, tkpm = mha_masks(torch, c, Lq)
    if c.get("causal"):
        am, tam = nn.causal_mask(Lq, convention="mha"), torch.nn.Transformer.\
            generate_square_subsequent_mask(Lq).isinf()
    call = dict(need_weights=c.get("need_weights", True),
                average_attn_weights=c.get("average", True), is_causal=c.get("causal", False))
    out, w = ours(q, k, v, key_padding_mask=kpm, attn_mask=am, **call)
    tq = to_torch(torch, q, True)
    tk, tv = (tq, tq) if c.get("self") else (to_torch(torch, k, True), to_torch(torch, v, True))
    tout, tw = theirs(tq, tk, tv, key_padding_mask=tkpm, attn_mask=tam, **call)
    assert_close(out, tout, 1e-10, 1e-8, "output")
    if tw is None:
        assert w is None
    else:
        assert_close(w, tw, 1e-10, 1e-8, "weights")
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    assert_close(q.grad, tq.grad, 1e-10, 1e-8, "grad query")
    if not c.get("self"):
        assert_close(k.grad, tk.grad, 1e-10, 1e-8, "grad key")
        assert_close(v.grad, tv.grad, 1e-10, 1e-8, "grad value")
    from _attn_testing import compare_module_grads
    compare_module_grads(ours, theirs, 1e-10, 1e-8)


def test_mha_float32_and_eval_dropout_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    ours, theirs = make_pair(torch, dtype="float32", dropout=0.3)
    ours.eval()
    theirs.eval()
    x = rand(4, 2, 8, dtype=tinyattn.float32)
    out, w = ours(x, x, x)
    tx = to_torch(torch, x, True)
    tout, tw = theirs(tx, tx, tx)
    assert out.dtype is tinyattn.float32
    assert_close(out, tout, 1e-5, 1e-4)
    assert_close(w, tw, 1e-6, 1e-4)


def test_mha_dropout_in_training_acts_on_the_weights():
    tinyattn.manual_seed(2)
    m = nn.MultiheadAttention(4, 2, dropout=0.5).double()
    x = rand(3, 2, 4)
    out, w = m(x, x, x, average_attn_weights=False)
    m.eval()
    _, plain = m(x, x, x, average_attn_weights=False)
    for a, b in zip(flat(w), flat(plain)):
        assert a == 0.0 or a == pytest.approx(2 * b, rel=1e-12)
    assert 0.0 in flat(w)


def test_mha_fully_masked_query_gets_zero_weights_and_finite_grads():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    ours, theirs = make_pair(torch)
    q, k, v = mha_inputs({}, False)
    am = allowed_mask((L_, S_), S_).logical_not()
    am[2] = True  # query 2 may attend to no key, in every batch
    out, w = ours(q, k, v, attn_mask=am, average_attn_weights=False)
    assert flat(w[:, :, 2]) == [0.0] * (B_ * 2 * S_)
    # its attention output is 0, so the layer outputs out_proj's bias there
    for b in range(B_):
        assert_close(out[2, b], ours.out_proj.bias, 1e-12)
    upstream_loss(out).backward()
    for t in [q, k, v] + list(ours.parameters()):
        assert all(math.isfinite(g) for g in flat(t.grad))
    assert flat(q.grad[2]) == [0.0] * (B_ * 8)
    # PyTorch gives NaN on that row; every other row agrees
    tq, tk, tv = (to_torch(torch, t) for t in (q, k, v))
    tout, _ = theirs(tq, tk, tv, attn_mask=to_torch(torch, am))
    assert torch.isnan(tout[2]).all()
    for i in (0, 1, 3):
        assert_close(out[i], tout[i], 1e-10)


def test_mha_gradcheck():
    tinyattn.manual_seed(4)
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=2, batch_first=True).double()
    with tinyattn.no_grad():
        m.in_proj_bias.copy_(tinyattn.randn(12, dtype=tinyattn.float64))
    q, k, v = rand(2, 3, 4), rand(2, 2, 3), rand(2, 2, 2)
    kpm = tinyattn.tensor([[False, True], [False, False]])
    am = tinyattn.rand(3, 2, dtype=tinyattn.float64)

    def fn(q, k, v, wq, wk, b, wo):
        out, w = m(q, k, v, key_padding_mask=kpm, attn_mask=am, average_attn_weights=False)
        return out, w
    assert gradcheck(fn, (q, k, v, m.q_proj_weight, m.k_proj_weight, m.in_proj_bias,
                          m.out_proj.weight))


def test_mha_per_head_weights_are_each_heads_softmax():
    tinyattn.manual_seed(5)
    m = nn.MultiheadAttention(6, 3, batch_first=True).double()
    x = rand(2, 4, 6)
    _, w = m(x, x, x, average_attn_weights=False)
    _, avg = m(x, x, x)
    assert w.shape == (2, 3, 4, 4) and avg.shape == (2, 4, 4)
    assert_close(avg, w.mean(1), 1e-12)
    # head 1 by hand: its slice of the projections, then softmax(q k^T / sqrt(hs))
    Wq, Wk = m.in_proj_weight[2:4], m.in_proj_weight[8:10]
    q = x @ Wq.T + m.in_proj_bias[2:4]
    k = x @ Wk.T + m.in_proj_bias[8:10]
    assert_close(w[:, 1], (q @ k.transpose(1, 2) / math.sqrt(2)).softmax(-1), 1e-12)


def test_mha_errors_name_the_problem():
    m = nn.MultiheadAttention(4, 2)
    x = tinyattn.randn(3, 2, 4)
    with pytest.raises(ValueError, match="expected query with 4 features"):
        m(tinyattn.randn(3, 2, 5), x, x)
    with pytest.raises(ValueError, match="key_padding_mask must have shape"):
        m(x, x, x, key_padding_mask=tinyattn.ones(3, 2, dtype=tinyattn.bool))
    with pytest.raises(ValueError, match="attn_mask must have shape"):
        m(x, x, x, attn_mask=tinyattn.ones(2, 3, 3, dtype=tinyattn.bool))
    with pytest.raises(RuntimeError, match="is_causal"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match="batch sizes"):
        m(x, tinyattn.randn(3, 1, 4), tinyattn.randn(3, 1, 4))
    with pytest.raises(TypeError, match="only bool and floating-point"):
        m(x, x, x, attn_mask=tinyattn.zeros(3, 3, dtype=tinyattn.int64))


def test_sdpa_gqa_errors():
    with pytest.raises(ValueError, match="enable_gqa"):
        F.scaled_dot_product_attention(rand(2, 3, 4, 5), rand(2, 2, 4, 5), rand(2, 2, 4, 5),
                                       enable_gqa=True)
    with pytest.raises(ValueError, match="enable_gqa"):
        F.scaled_dot_product_attention(rand(3, 5), rand(4, 5), rand(4, 5), enable_gqa=True)


# ============================================================================ random shapes


@settings(deadline=None, max_examples=25)
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 5), S=st.integers(1, 5),
       E=st.integers(1, 4), Ev=st.integers(1, 4), kind=st.sampled_from(["none", "bool", "float",
                                                                         "causal"]),
       seed=st.integers(0, 1000))
def test_sdpa_random_shapes_match_torch(B, H, L, S, E, Ev, kind, seed):
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(seed)
    q, k, v = rand(B, H, L, E), rand(B, H, S, E), rand(B, H, S, Ev)
    mask = tmask = None
    if kind == "bool":
        mask = allowed_mask((B, 1, L, S), S)
        tmask = to_torch(torch, mask)
    elif kind == "float":
        mask = tinyattn.rand(L, S, dtype=tinyattn.float64, low=-2.0, high=2.0)
        tmask = to_torch(torch, mask)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal")
    tq, tk, tv = (to_torch(torch, t, True) for t in (q, k, v))
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask,
                                                            is_causal=kind == "causal")
    assert_close(out, tout, 1e-10, 1e-8)
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        assert_close(ours.grad, theirs.grad, 1e-10, 1e-8)
