"""AdditiveAttention and LuongAttention: hand-computed values, masks, gradcheck, precomputed keys."""
import math

import pytest

import tinyattn as ta
from tinyattn.testing import gradcheck
from tinyattn.nn import AdditiveAttention, LuongAttention
from tinyattn.nn.rnn_attention import additive_score


def padding_mask(lengths, S):
    return ta.nn.padding_mask(lengths, S, convention="mha")  # bool, True = padding


def approx(a, b, tol=1e-9):
    return a == pytest.approx(b, abs=tol, rel=tol)


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


KEYS = [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]  # (1, 3, 2)


def test_luong_dot_hand_computed():
    att = LuongAttention(2, 2, score="dot").double()
    q = ta.tensor([[2.0, 1.0]], dtype="float64")
    ctx, w = att(q, ta.tensor(KEYS, dtype="float64"))
    expect = softmax([2.0, 1.0, 3.0])
    assert approx(w.tolist()[0], expect)
    assert approx(ctx.tolist()[0], [expect[0] + expect[2], expect[1] + expect[2]])


def test_luong_general_hand_computed():
    att = LuongAttention(2, 2, score="general").double()
    with ta.no_grad():
        att.W_a.weight.copy_(ta.tensor([[0.0, 1.0], [2.0, 0.0]], dtype="float64"))
    q = ta.tensor([[1.0, -1.0]], dtype="float64")
    _, w = att(q, ta.tensor(KEYS, dtype="float64"))
    # W_a h for h = (1,0),(0,1),(1,1): (0,2),(1,0),(1,2); dot with q = (1,-1): -2, 1, -1
    assert approx(w.tolist()[0], softmax([-2.0, 1.0, -1.0]))


def _fill_additive(att, W, U, b, v):
    with ta.no_grad():
        att.query_proj.weight.copy_(ta.tensor(W, dtype="float64"))
        att.key_proj.weight.copy_(ta.tensor(U, dtype="float64"))
        att.key_proj.bias.copy_(ta.tensor(b, dtype="float64"))
        att.v.weight.copy_(ta.tensor([v], dtype="float64"))


def test_additive_hand_computed():
    att = AdditiveAttention(1, 2, hidden_size=2).double()
    W, U, b, v = [[1.0], [0.5]], [[1.0, 0.0], [0.0, -1.0]], [0.1, 0.0], [2.0, -1.0]
    _fill_additive(att, W, U, b, v)
    s = 0.3
    ctx, w = att(ta.tensor([[s]], dtype="float64"), ta.tensor(KEYS, dtype="float64"))
    scores = []
    for h in KEYS[0]:
        pre = [W[a][0] * s + U[a][0] * h[0] + U[a][1] * h[1] + b[a] for a in range(2)]
        scores.append(sum(v[a] * math.tanh(pre[a]) for a in range(2)))
    expect = softmax(scores)
    assert approx(w.tolist()[0], expect)
    assert approx(ctx.tolist()[0], [sum(expect[j] * KEYS[0][j][k] for j in range(3))
                                    for k in range(2)])


def test_luong_concat_hand_computed():
    att = LuongAttention(1, 2, score="concat", hidden_size=2).double()
    Wa = [[1.0, 1.0, 0.0], [0.5, 0.0, -1.0]]  # (A, H_dec + H_enc): [s; h]
    v = [2.0, -1.0]
    with ta.no_grad():
        att.W_a.weight.copy_(ta.tensor(Wa, dtype="float64"))
        att.v.weight.copy_(ta.tensor([v], dtype="float64"))
    s = 0.3
    _, w = att(ta.tensor([[s]], dtype="float64"), ta.tensor(KEYS, dtype="float64"))
    scores = [sum(v[a] * math.tanh(Wa[a][0] * s + Wa[a][1] * h[0] + Wa[a][2] * h[1])
                  for a in range(2)) for h in KEYS[0]]
    assert approx(w.tolist()[0], softmax(scores))


@pytest.mark.parametrize("make", [
    lambda: AdditiveAttention(3, 4, hidden_size=5),
    lambda: LuongAttention(4, 4, score="dot"),
    lambda: LuongAttention(3, 4, score="general"),
    lambda: LuongAttention(3, 4, score="concat", hidden_size=5)])
def test_masks_zero_weights_and_fully_masked_rows(make):
    ta.manual_seed(0)
    att = make().double()
    qsize = att.query_size
    q = ta.randn(3, qsize, dtype="float64", requires_grad=True)
    keys = ta.randn(3, 4, 4, dtype="float64", requires_grad=True)
    mask = padding_mask([4, 2, 0], 4)  # True = padding; row 2 has nothing to attend to
    assert mask.tolist() == [[False] * 4, [False, False, True, True], [True] * 4]
    ctx, w = att(q, keys, mask)
    rows = w.tolist()
    assert approx(sum(rows[0]), 1.0) and approx(sum(rows[1]), 1.0)
    assert rows[1][2:] == [0.0, 0.0] and rows[2] == [0.0] * 4
    assert ctx.tolist()[2] == [0.0] * 4
    # a masked key changes nothing
    keys2 = keys.detach().clone()
    keys2[1, 3] = 100.0
    ctx2, w2 = att(q, keys2, mask)
    assert approx(ctx2.tolist()[1], ctx.tolist()[1]) and approx(w2.tolist()[1], rows[1])
    (ctx.sum() + (w * w).sum()).backward()
    for t in [q.grad, keys.grad] + [p.grad for p in att.parameters()]:
        assert all(math.isfinite(v) for v in t.reshape(-1).tolist())
    assert keys.grad[2].abs().sum().item() == 0.0  # a fully masked row sends no gradient back
    assert gradcheck(lambda q, k, *ps: att(q, k, mask), (q, keys, *att.parameters()))


@pytest.mark.parametrize("make", [
    lambda: AdditiveAttention(3, 4),
    lambda: LuongAttention(3, 4, score="general"),
    lambda: LuongAttention(3, 4, score="concat")])
def test_precomputed_keys_give_the_same_result(make):
    ta.manual_seed(1)
    att = make()
    q, keys = ta.randn(2, 3), ta.randn(2, 5, 4)
    c1, w1 = att(q, keys)
    c2, w2 = att(q, keys, projected_keys=att.precompute_keys(keys))
    assert c1.tolist() == c2.tolist() and w1.tolist() == w2.tolist()


def test_additive_score_gradcheck_and_matches_ops():
    ta.manual_seed(2)
    pk = ta.randn(2, 3, 4, dtype="float64", requires_grad=True)
    q = ta.randn(2, 4, dtype="float64", requires_grad=True)
    v = ta.randn(4, dtype="float64", requires_grad=True)
    assert gradcheck(additive_score, (pk, q, v))
    ref = (pk + q.unsqueeze(1)).tanh() @ v
    assert approx(additive_score(pk, q, v).reshape(-1).tolist(), ref.reshape(-1).tolist(), 1e-12)
    big = additive_score(pk * 1e4, q, v)  # saturated tanh: no overflow, no NaN
    assert all(math.isfinite(x) for x in big.reshape(-1).tolist())


def test_errors():
    att = AdditiveAttention(3, 4)
    with pytest.raises(ValueError, match=r"query must have shape \(B, 3\)"):
        att(ta.randn(2, 4), ta.randn(2, 5, 4))
    with pytest.raises(ValueError, match=r"keys .* \(2, S, 4\)"):
        att(ta.randn(2, 3), ta.randn(2, 5, 3))
    with pytest.raises(TypeError, match="True = padding"):
        att(ta.randn(2, 3), ta.randn(2, 5, 4), ta.zeros(2, 5))
    with pytest.raises(ValueError, match=r"\(2, 5\)"):
        att(ta.randn(2, 3), ta.randn(2, 5, 4), padding_mask([1, 2], 4))
    with pytest.raises(ValueError, match="query_size == key_size"):
        LuongAttention(3, 4, score="dot")
    with pytest.raises(ValueError, match="score must be"):
        LuongAttention(3, 3, score="bilinear")


def test_parameter_names():
    assert list(AdditiveAttention(3, 4, 5).state_dict()) == [
        "query_proj.weight", "key_proj.weight", "key_proj.bias", "v.weight"]
    assert list(LuongAttention(3, 4, "concat", 5).state_dict()) == ["W_a.weight", "v.weight"]
    assert tuple(LuongAttention(3, 4).W_a.weight.shape) == (3, 4)
