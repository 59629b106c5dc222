"""Positional encodings: hand-computed values, odd d_model, layouts, and why they are needed
(attention alone is permutation-equivariant; adding positions breaks that)."""
import math

import pytest

import tinyattn
from tinyattn import nn
from tinyattn.testing import gradcheck

from _attn_testing import assert_close, flat, rand, to_torch


def by_hand(pos, j, d):
    angle = pos / 10000 ** (2 * (j // 2) / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("d", [1, 4, 5, 7])
def test_sinusoidal_values_by_hand_including_odd_d_model(d):
    pe = nn.PositionalEncoding(d, max_len=50)
    table = pe.pe
    assert table.shape == (50, 1, d) and table.dtype is tinyattn.float32
    for pos in (0, 1, 2, 17, 49):
        got = table[pos, 0].tolist()
        assert got == pytest.approx([by_hand(pos, j, d) for j in range(d)], abs=1e-6)


def test_sinusoidal_first_rows_exactly():
    t = nn.positional.sinusoidal_table(2, 5, dtype=tinyattn.float64)
    assert t[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    f = 10000 ** (-2 / 5)
    assert t[1].tolist() == pytest.approx([math.sin(1), math.cos(1), math.sin(f), math.cos(f),
                                           math.sin(f * f)], abs=1e-15)


def test_table_is_a_buffer_not_a_parameter():
    pe = nn.PositionalEncoding(6, dropout=0.1, max_len=10)
    assert list(pe.state_dict()) == ["pe"]
    assert list(pe.parameters()) == []


@pytest.mark.parametrize("layout", ["seq-first", "batch-first", "unbatched"])
def test_positional_encoding_adds_the_right_rows(layout):
    pe = nn.PositionalEncoding(4, max_len=20, batch_first=layout == "batch-first").double()
    T, B = 3, 2
    shape = {"seq-first": (T, B, 4), "batch-first": (B, T, 4), "unbatched": (T, 4)}[layout]
    x = rand(*shape)
    out = pe(x, offset=5)
    assert out.shape == x.shape
    diff = (out - x).tolist()
    for t in range(T):
        row = [by_hand(t + 5, j, 4) for j in range(4)]
        if layout == "seq-first":
            got = [diff[t][b] for b in range(B)]
        elif layout == "batch-first":
            got = [diff[b][t] for b in range(B)]
        else:
            got = [diff[t]]
        for g in got:
            assert g == pytest.approx(row, abs=1e-6)
    assert gradcheck(lambda x: pe(x, offset=5), (x,))


def test_positional_encoding_dropout_only_in_training():
    pe = nn.PositionalEncoding(8, dropout=0.5, max_len=10)
    x = tinyattn.ones(6, 2, 8)
    tinyattn.manual_seed(0)
    y = pe(x)
    assert 0.0 in flat(y)
    pe.eval()
    assert_close(pe(x), x + pe.pe[:6], 0.0)


def test_matches_pytorch_tutorial_encoding_and_loads_its_buffer():
    torch = pytest.importorskip("torch")
    d, max_len = 7, 64  # the tutorial's formula needs an even d; we pad it to compare
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d + 1, 2) * (-math.log(10000.0) / d))
    ref = torch.zeros(max_len, 1, d + 1)
    ref[:, 0, 0::2] = torch.sin(position * div_term)
    ref[:, 0, 1::2] = torch.cos(position * div_term)
    ref = ref[:, :, :d]
    ours = nn.PositionalEncoding(d, max_len=max_len)
    assert_close(ours.pe, ref, atol=2e-5)  # torch computes the angles in float32
    fresh = nn.PositionalEncoding(d, max_len=max_len)
    fresh.load_state_dict({"pe": ref})
    assert_close(fresh.pe, ref, atol=0.0)


def test_positional_encoding_errors():
    pe = nn.PositionalEncoding(4, max_len=5)
    with pytest.raises(ValueError, match="do not fit in max_len=5"):
        pe(tinyattn.zeros(6, 1, 4))
    with pytest.raises(ValueError, match="do not fit"):
        pe(tinyattn.zeros(3, 1, 4), offset=3)
    with pytest.raises(ValueError, match=r"expected x of shape \(T, B, 4\)"):
        pe(tinyattn.zeros(3, 1, 5))


def test_learned_positional_embedding():
    tinyattn.manual_seed(0)
    lpe = nn.LearnedPositionalEmbedding(50, 8, batch_first=True)
    assert [n for n, _ in lpe.named_parameters()] == ["weight"]
    assert lpe.weight.shape == (50, 8)
    std = math.sqrt(sum(v * v for v in flat(lpe.weight)) / 400)
    assert 0.015 < std < 0.025
    lpe = lpe.double()
    x = rand(2, 3, 8)
    out = lpe(x, offset=4)
    assert_close(out - x, lpe.weight[4:7].unsqueeze(0).expand(2, 3, 8), 1e-15)
    out.sum().backward()
    g = lpe.weight.grad.tolist()
    assert all(v == 0.0 for r in g[:4] + g[7:] for v in r)
    assert all(v == 2.0 for r in g[4:7] for v in r)  # each row used once per batch element
    assert gradcheck(lambda x, w: lpe(x), (x, lpe.weight))
    with pytest.raises(ValueError, match="max_len=50"):
        lpe(tinyattn.zeros(1, 51, 8, dtype=tinyattn.float64))


# ============================================================================ why positions


def permuted(x, perm, dim):
    return x.index_select(dim, tinyattn.tensor(perm))


@pytest.mark.parametrize("batch_first", [False, True])
def test_attention_is_permutation_equivariant_and_positions_break_it(batch_first):
    tinyattn.manual_seed(1)
    E, T = 8, 6
    mha = nn.MultiheadAttention(E, 2, batch_first=batch_first).double()
    pe = nn.PositionalEncoding(E, max_len=T, batch_first=batch_first).double()
    tdim = 1 if batch_first else 0
    x = rand(*((2, T, E) if batch_first else (T, 2, E)))
    perm = [3, 0, 5, 1, 4, 2]

    def attend(x):
        return mha(x, x, x)[0]
    # Without positions: permuting the tokens permutes the outputs, nothing else changes.
    assert_close(attend(permuted(x, perm, tdim)), permuted(attend(x), perm, tdim), 1e-12)
    # With positions: the same permutation changes what each token sees.
    a = attend(pe(permuted(x, perm, tdim)))
    b = permuted(attend(pe(x)), perm, tdim)
    biggest = max(abs(u - v) for u, v in zip(flat(a), flat(b)))
    assert biggest > 1e-2


def test_self_attention_and_encoder_layer_are_equivariant_without_positions():
    tinyattn.manual_seed(2)
    perm = [2, 0, 3, 1]
    sa = nn.SelfAttention(4, bias=True).double()
    x = rand(4, 4)
    out, A = sa(x)
    pout, pA = sa(permuted(x, perm, 0))
    assert_close(pout, permuted(out, perm, 0), 1e-12)
    assert_close(pA, permuted(permuted(A, perm, 0), perm, 1), 1e-12)  # A -> P A P^T
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).double()
    x = rand(2, 4, 4)
    assert_close(layer(permuted(x, perm, 1)), permuted(layer(x), perm, 1), 1e-12)


def test_positional_encoding_parity_as_module_input_to_torch_layer():
    """The same embeddings + PE through our encoder layer and torch's give the same output."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).double()
    ours = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).double()
    ours.load_state_dict(theirs.state_dict())
    pe = nn.PositionalEncoding(8, max_len=10).double()
    x = pe(rand(5, 2, 8, requires_grad=False))
    assert_close(ours(x), theirs(to_torch(torch, x)), 1e-10)
