"""Transformer layers, stacks and the full model against PyTorch (same weights through
load_state_dict; outputs and gradients of inputs and parameters), gradchecks, recorded weights."""
import math

import pytest

import tinyattn
from tinyattn import nn
from tinyattn.testing import gradcheck

from _attn_testing import (assert_close, compare_module_grads, flat, rand, to_torch,
                           upstream_loss)

D, NH, FF = 8, 2, 12

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def load_from(torch, theirs, ours):
    """Give torch's module non-trivial LayerNorm and bias values, then copy them into ours."""
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if p.ndim == 1:
                p.add_(torch.randn(p.shape) * 0.3)
    ours.load_state_dict(theirs.state_dict())
    theirs.double()
    ours.double()
    return ours, theirs


def shaped(T, batch_first, B=3, unbatched=False):
    if unbatched:
        return rand(T, D)
    return rand(B, T, D) if batch_first else rand(T, B, D)


def masks(torch, kind, L, S, B=3):
    """(ours, torch's) attention mask (L, S) and key padding mask (B, S) of a kind."""
    if kind is None:
        return None, None, None, None
    tinyattn.manual_seed(7)
    allowed = (tinyattn.rand(L, S) > 0.4) | (tinyattn.arange(S) == 0)
    am = allowed.logical_not()  # True = may NOT attend
    kpm = nn.padding_mask([S - i for i in range(B)], convention="mha")
    if kind == "float":
        am = tinyattn.where(am, -math.inf, 0.0).double() + tinyattn.rand(L, S, dtype="float64")
        kpm = tinyattn.where(kpm, -math.inf, 0.0).double()
    return am, kpm, to_torch(torch, am), to_torch(torch, kpm)


def check_backward(torch, out, tout, ours, theirs, inputs):
    assert_close(out, tout, 1e-9, 1e-7, "output")
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    for i, (a, b) in enumerate(inputs):
        assert_close(a.grad, b.grad, 1e-9, 1e-7, f"grad of input {i}")
    compare_module_grads(ours, theirs, 1e-9, 1e-7)


LAYER_CASES = {
    "post-norm relu": dict(),
    "pre-norm relu": dict(norm_first=True),
    "post-norm gelu": dict(activation="gelu"),
    "pre-norm gelu, bool masks": dict(norm_first=True, activation="gelu", masks="bool"),
    "post-norm, float masks": dict(masks="float"),
    "batch-first, bool masks": dict(batch_first=True, masks="bool"),
    "batch-first pre-norm, float masks": dict(batch_first=True, norm_first=True, masks="float"),
    "unbatched": dict(unbatched=True),
    "no bias": dict(bias=False),
}


def layer_kwargs(c):
    return dict(dropout=0.0, activation=c.get("activation", "relu"),
                batch_first=c.get("batch_first", False), norm_first=c.get("norm_first", False),
                bias=c.get("bias", True))


@pytest.mark.parametrize("case", list(LAYER_CASES), ids=list(LAYER_CASES))
def test_encoder_layer_matches_torch(case):
    torch = pytest.importorskip("torch")
    c = LAYER_CASES[case]
    torch.manual_seed(0)
    kw = layer_kwargs(c)
    theirs = torch.nn.TransformerEncoderLayer(D, NH, FF, **kw)
    ours, theirs = load_from(torch, theirs, nn.TransformerEncoderLayer(D, NH, FF, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = shaped(5, kw["batch_first"], unbatched=c.get("unbatched", False))
    am, kpm, tam, tkpm = masks(torch, c.get("masks"), 5, 5)
    tx = to_torch(torch, x, True)
    out = ours(x, src_mask=am, src_key_padding_mask=kpm)
    tout = theirs(tx, src_mask=tam, src_key_padding_mask=tkpm)
    check_backward(torch, out, tout, ours, theirs, [(x, tx)])


@pytest.mark.parametrize("case", list(LAYER_CASES), ids=list(LAYER_CASES))
def test_decoder_layer_matches_torch(case):
    torch = pytest.importorskip("torch")
    c = LAYER_CASES[case]
    torch.manual_seed(1)
    kw = layer_kwargs(c)
    theirs = torch.nn.TransformerDecoderLayer(D, NH, FF, **kw)
    ours, theirs = load_from(torch, theirs, nn.TransformerDecoderLayer(D, NH, FF, **kw))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    un = c.get("unbatched", False)
    tgt, mem = shaped(4, kw["batch_first"], unbatched=un), shaped(6, kw["batch_first"],
                                                                  unbatched=un)
    tm, tkpm, ttm, ttkpm = masks(torch, c.get("masks"), 4, 4)
    mm, mkpm, tmm, tmkpm = masks(torch, c.get("masks"), 4, 6)
    ttgt, tmem = to_torch(torch, tgt, True), to_torch(torch, mem, True)
    out = ours(tgt, mem, tgt_mask=tm, memory_mask=mm, tgt_key_padding_mask=tkpm,
               memory_key_padding_mask=mkpm)
    tout = theirs(ttgt, tmem, tgt_mask=ttm, memory_mask=tmm, tgt_key_padding_mask=ttkpm,
                  memory_key_padding_mask=tmkpm)
    check_backward(torch, out, tout, ours, theirs, [(tgt, ttgt), (mem, tmem)])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_full_transformer_matches_torch(batch_first, norm_first):
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    kw = dict(d_model=D, nhead=NH, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=FF, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    theirs = torch.nn.Transformer(**kw)
    ours = nn.Transformer(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours, theirs = load_from(torch, theirs, ours)
    src, tgt = shaped(6, batch_first), shaped(4, batch_first)
    causal = nn.Transformer.generate_square_subsequent_mask(4, dtype=tinyattn.float64)
    _, skpm, _, tskpm = masks(torch, "bool", 6, 6)
    tsrc, ttgt = to_torch(torch, src, True), to_torch(torch, tgt, True)
    out = ours(src, tgt, tgt_mask=causal, src_key_padding_mask=skpm,
               memory_key_padding_mask=skpm, tgt_is_causal=True)
    tout = theirs(tsrc, ttgt, tgt_mask=to_torch(torch, causal), src_key_padding_mask=tskpm,
                  memory_key_padding_mask=tskpm, tgt_is_causal=True)
    check_backward(torch, out, tout, ours, theirs, [(src, tsrc), (tgt, ttgt)])


def test_stacks_match_torch_with_causal_encoder():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    tl = torch.nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0, batch_first=True)
    theirs = torch.nn.TransformerEncoder(tl, 3, norm=torch.nn.LayerNorm(D),
                                         enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0,
                                                            batch_first=True), 3,
                                 norm=nn.LayerNorm(D))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours, theirs = load_from(torch, theirs, ours)
    x = shaped(5, True)
    tx = to_torch(torch, x, True)
    causal = nn.causal_mask(5, convention="mha")
    out = ours(x, mask=causal, is_causal=True)
    tout = theirs(tx, mask=to_torch(torch, causal), is_causal=True)
    check_backward(torch, out, tout, ours, theirs, [(x, tx)])


def test_generate_square_subsequent_mask_equals_torchs():
    torch = pytest.importorskip("torch")
    assert flat(nn.Transformer.generate_square_subsequent_mask(6)) == \
        flat(torch.nn.Transformer.generate_square_subsequent_mask(6))
    inf = math.inf
    assert nn.Transformer.generate_square_subsequent_mask(2).tolist() == [[0.0, -inf],
                                                                          [0.0, 0.0]]


# ============================================================================ without torch


def small_layers():
    tinyattn.manual_seed(4)
    enc = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu").double()
    dec = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True).double()
    for m in (enc, dec):  # non-trivial LayerNorm parameters and biases
        with tinyattn.no_grad():
            for p in m.parameters():
                if p.ndim == 1:
                    p.add_(tinyattn.randn(p.shape, dtype=tinyattn.float64) * 0.3)
    return enc, dec


def test_encoder_layer_gradcheck():
    enc, _ = small_layers()
    x = rand(3, 2, 4)
    kpm = tinyattn.tensor([[False, False, True], [False, False, False]])
    assert gradcheck(lambda x, w, w1, g: enc(x, src_key_padding_mask=kpm),
                     (x, enc.self_attn.in_proj_weight, enc.linear1.weight, enc.norm1.weight))


def test_decoder_layer_gradcheck():
    _, dec = small_layers()
    tgt, mem = rand(3, 2, 4), rand(2, 2, 4)
    causal = nn.causal_mask(3, convention="mha")
    assert gradcheck(lambda t, m, w, w2, g: dec(t, m, tgt_mask=causal),
                     (tgt, mem, dec.multihead_attn.in_proj_weight, dec.linear2.weight,
                      dec.norm3.bias))


def test_transformer_gradcheck():
    tinyattn.manual_seed(5)
    model = nn.Transformer(4, 2, 1, 1, 6, dropout=0.0, batch_first=True).double()
    src, tgt = rand(1, 3, 4), rand(1, 2, 4)
    assert gradcheck(lambda s, t: model(s, t, tgt_mask=nn.causal_mask(2, dtype="float64")),
                     (src, tgt))


def test_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(4, 2, 6)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [m.self_attn.in_proj_weight for m in enc.layers]
    assert len({id(w) for w in ws}) == 3 and all(w is not layer.self_attn.in_proj_weight
                                                 for w in ws)
    assert flat(ws[0]) == flat(ws[2])  # copies start equal...
    with tinyattn.no_grad():
        ws[0].fill_(0.5)
    assert flat(ws[1]) != flat(ws[0])  # ...and are separate tensors
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))


def test_transformer_initialisation_is_xavier_for_matrices():
    tinyattn.manual_seed(6)
    model = nn.Transformer(8, 2, 1, 1, 16)
    w = model.encoder.layers[0].linear1.weight  # (16, 8): xavier bound sqrt(6 / 24) = 0.5
    assert 0.4 < max(abs(v) for v in flat(w)) <= 0.5
    assert flat(model.encoder.norm.weight) == [1.0] * 8


def test_activation_choices():
    x = rand(3, 2, 4, requires_grad=False)
    relu = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0).double()
    custom = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=nn.ReLU()).double()
    custom.load_state_dict(relu.state_dict())
    assert_close(custom(x), relu(x), 0.0)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


def test_recorded_attention_maps_are_the_real_per_head_weights():
    tinyattn.manual_seed(7)
    model = nn.Transformer(8, 2, 2, 2, 16, dropout=0.1, batch_first=True).double().eval()
    src, tgt = rand(3, 5, 8, requires_grad=False), rand(3, 4, 8, requires_grad=False)
    model(src, tgt)
    assert nn.attention_maps(model) == {}  # nothing kept unless asked
    nn.record_attention(model)
    causal = nn.causal_mask(4)
    out = model(src, tgt, tgt_mask=causal)
    maps = nn.attention_maps(model)
    assert list(maps) == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn",
                          "decoder.layers.0.self_attn", "decoder.layers.0.multihead_attn",
                          "decoder.layers.1.self_attn", "decoder.layers.1.multihead_attn"]
    assert maps["encoder.layers.1.self_attn"].shape == (3, 2, 5, 5)
    assert maps["decoder.layers.0.self_attn"].shape == (3, 2, 4, 4)
    assert maps["decoder.layers.1.multihead_attn"].shape == (3, 2, 4, 5)
    for w in maps.values():
        assert not w.requires_grad
        for row in w.reshape(-1, w.shape[-1]).tolist():
            assert sum(row) == pytest.approx(1.0)
    assert maps["decoder.layers.1.self_attn"][2, 1, 0].tolist()[1:] == [0.0] * 3  # causal
    # layer 0 of the encoder sees src itself: its map is that MultiheadAttention's own weights
    layer0 = model.encoder.layers[0]
    _, w = layer0.self_attn(src, src, src, average_attn_weights=False)
    assert_close(maps["encoder.layers.0.self_attn"], w, 1e-12)
    # recording changes nothing in the output
    nn.record_attention(model, False)
    assert_close(model(src, tgt, tgt_mask=causal), out, 0.0)
    assert nn.attention_maps(model) == {}


def test_recorded_weights_match_torch_per_head_weights():
    torch = pytest.importorskip("torch")
    torch.manual_seed(8)
    theirs = torch.nn.TransformerDecoderLayer(D, NH, FF, dropout=0.0, batch_first=True)
    ours, theirs = load_from(torch, theirs, nn.TransformerDecoderLayer(
        D, NH, FF, dropout=0.0, batch_first=True, record_attn_weights=True))
    tgt, mem = shaped(4, True), shaped(6, True)
    ours(tgt, mem)
    ttgt, tmem = to_torch(torch, tgt), to_torch(torch, mem)
    _, tw = theirs.self_attn(ttgt, ttgt, ttgt, average_attn_weights=False)
    assert_close(ours.self_attn_weights, tw, 1e-10)
    x = theirs.norm1(ttgt + theirs.self_attn(ttgt, ttgt, ttgt)[0])
    _, tcw = theirs.multihead_attn(x, tmem, tmem, average_attn_weights=False)
    assert_close(ours.cross_attn_weights, tcw, 1e-10)


def test_transformer_errors():
    model = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(ValueError, match="batch sizes"):
        model(tinyattn.randn(5, 2, 8), tinyattn.randn(4, 3, 8))
    with pytest.raises(ValueError, match="d_model=8"):
        model(tinyattn.randn(5, 2, 8), tinyattn.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="is_causal"):
        model.encoder(tinyattn.randn(5, 2, 8), is_causal=True)


def test_weights_move_to_torch_too():
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(9)
    ours = nn.Transformer(D, NH, 1, 1, FF, dropout=0.0, batch_first=True).double()
    theirs = torch.nn.Transformer(D, NH, 1, 1, FF, dropout=0.0, batch_first=True).double()
    theirs.load_state_dict({k: to_torch(torch, v) for k, v in ours.state_dict().items()})
    src, tgt = shaped(5, True), shaped(3, True)
    out = ours(src, tgt)
    assert_close(out, theirs(to_torch(torch, src), to_torch(torch, tgt)), 1e-10)


def test_stack_of_layers_with_a_module_activation():
    tinyattn.manual_seed(10)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=nn.GELU())
    enc = nn.TransformerEncoder(layer, 2)
    assert list(enc.state_dict()) == [k for i in range(2) for k in
                                      ("layers.%d." % i + n for n in layer.state_dict())]
    assert enc.layers[0].activation is not enc.layers[1].activation
    assert enc(tinyattn.randn(3, 2, 4)).shape == (3, 2, 4)
