"""Seq2Seq: shapes, padding invariance, gradcheck, greedy == beam(k=1), beam beats greedy on a
constructed model, and a tiny model that learns to copy."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn.functional as F
from tinyattn.testing import gradcheck
from tinyattn.nn import Seq2Seq
from tinyattn.nn.seq2seq import beam_search, pad_sequences

KINDS = [dict(attention="bahdanau"), dict(attention="luong", luong_score="general"),
         dict(attention="luong", luong_score="dot", bidirectional=False),
         dict(attention="luong", luong_score="concat"),
         dict(attention="none")]


def model(kind, **kw):
    ta.manual_seed(0)
    return Seq2Seq(11, 9, **dict(dict(embed_size=6, hidden_size=8), **kind, **kw))


def test_pad_sequences():
    t, lengths = pad_sequences([[5, 6], [7]], pad_idx=0, bos_idx=1, eos_idx=2)
    assert t.tolist() == [[1, 5, 6, 2], [1, 7, 2, 0]] and lengths == [4, 3]


@pytest.mark.parametrize("kind", KINDS)
def test_shapes(kind):
    m = model(kind)
    src, lengths = pad_sequences([[3, 4, 5, 6], [7, 8]], eos_idx=2)
    tgt, _ = pad_sequences([[3, 4, 5], [6]], bos_idx=1, eos_idx=2)
    logits, attn = m(src, tgt[:, :-1], lengths, return_attention=True)
    assert logits.shape == (2, 4, 9)
    if kind["attention"] == "none":
        assert attn is None
    else:
        assert attn.shape == (2, 4, 5)
        assert attn[1, :, 3:].abs().sum().item() == 0.0  # padding of source 1 gets no weight
    loss = m.loss(src, tgt, lengths)
    assert loss.shape == () and math.isfinite(loss.item())
    loss.backward()
    assert all(p.grad is not None for p in m.parameters())


@pytest.mark.parametrize("kind", KINDS)
def test_extra_source_padding_changes_nothing(kind):
    m = model(kind)
    src, lengths = pad_sequences([[3, 4, 5], [7, 8]])
    wider = ta.cat([src, ta.zeros(2, 3, dtype=ta.int64)], 1)
    tgt_in = ta.tensor([[1, 3, 4], [1, 5, 6]])
    a = m(src, tgt_in, lengths).reshape(-1).tolist()
    b = m(wider, tgt_in).reshape(-1).tolist()  # lengths derived from the padding
    assert a == pytest.approx(b, abs=1e-6)


@pytest.mark.parametrize("kind", [KINDS[0], KINDS[1], KINDS[4]])
def test_gradcheck_whole_model(kind):
    ta.manual_seed(0)
    m = Seq2Seq(5, 5, embed_size=2, hidden_size=2, attn_size=2, **kind).double()
    src = ta.tensor([[3, 4, 3], [4, 0, 0]])
    tgt = ta.tensor([[1, 3, 4, 2], [1, 4, 2, 0]])
    params = list(m.parameters())
    assert gradcheck(lambda *ps: m.loss(src, tgt, [3, 1]), params)


@pytest.mark.parametrize("kind", KINDS)
def test_greedy_equals_beam_with_k1(kind):
    m = model(kind)
    src, lengths = pad_sequences([[3, 4, 5, 6], [7, 8], [9, 10, 3]])
    greedy = m.greedy_decode(src, lengths, max_len=6)
    beam = m.beam_search(src, lengths, beam_size=1, max_len=6)
    for g, b, n in zip(greedy, beam, lengths):
        assert g.tokens == b.tokens
        assert g.score == pytest.approx(b.score, abs=1e-5)
        if kind["attention"] == "none":
            assert g.attention is None and b.attention is None
        elif g.tokens:
            assert g.attention.shape == (len(g.tokens), n)  # this source's own length
            assert g.attention.reshape(-1).tolist() == pytest.approx(
                b.attention.reshape(-1).tolist(), abs=1e-6)


def test_greedy_score_is_the_models_log_probability():
    m = model(KINDS[0])
    src, lengths = pad_sequences([[3, 4, 5]])
    hyp = m.greedy_decode(src, lengths, max_len=4)[0]
    full = hyp.tokens + ([2] if len(hyp.tokens) < 4 else [])
    tgt_in = ta.tensor([[1] + full[:-1]])
    logp = F.log_softmax(m(src, tgt_in, lengths), -1)[0]
    score = sum(logp[t, tok].item() for t, tok in enumerate(full))
    assert hyp.score == pytest.approx(score, abs=1e-4)


def _markov_step(table):
    """A hand-made 'model': the next-token distribution depends only on the last token."""
    def step(tokens, state):
        rows = [[math.log(p) if p > 0 else -math.inf for p in table[t]] for t in tokens.tolist()]
        return ta.tensor(rows, dtype="float64"), state, None
    return step


def test_beam_finds_a_better_sequence_than_greedy():
    # tokens: 0 = bos, 1 = eos, 2 = "a", 3 = "b"
    # from bos: a 0.6, b 0.4; after a: eos 0.3, a 0.35, b 0.35 (spread out); after b: eos 1.0
    table = {0: [0, 0, 0.6, 0.4], 2: [0, 0.3, 0.35, 0.35], 3: [0, 1.0, 0, 0]}
    step = _markov_step(table)
    greedy = beam_search(step, (ta.zeros(1, 1),), 0, 1, beam_size=1, max_len=5)
    best = beam_search(step, (ta.zeros(3, 1),), 0, 1, beam_size=3, max_len=5)
    assert best.tokens == [3]  # "b" then eos: probability 0.4
    assert best.score == pytest.approx(math.log(0.4))
    assert greedy.score < best.score  # greedy took "a" (0.6) and can at best reach 0.6 * 0.35
    assert greedy.tokens[0] == 2


def test_length_normalisation_prefers_longer_hypotheses():
    # after bos: eos 0.5 or a 0.5; after a: eos 0.9
    table = {0: [0, 0.5, 0.5, 0], 2: [0, 0.9, 0.1, 0]}
    step = _markov_step(table)
    short = beam_search(step, (ta.zeros(2, 1),), 0, 1, beam_size=2, max_len=4, alpha=0.0)
    long_ = beam_search(step, (ta.zeros(2, 1),), 0, 1, beam_size=2, max_len=4, alpha=1.0)
    assert short.tokens == [] and long_.tokens == [2]


def test_beam_keeps_searching_while_a_live_hypothesis_beats_the_finished_ones():
    # The search stops when no live hypothesis can beat the best finished one, not as soon as
    # beam_size hypotheses have ended: those may be unlikely early stops while a live one is far
    # better, and beam search would return a worse (shorter) output than greedy.
    # tokens: 0 = bos, 1 = eos, 2 = "a", 3 = "b". The state counts the tokens so far: the model
    # says "a" three times, then eos, and gives a stop at every step a small chance.
    def step(tokens, state):
        rows = []
        for n in state[0].reshape(-1).tolist():
            p = [0, 0.9, 0.05, 0.05] if n >= 3 else [0, 0.06, 0.9, 0.04]
            rows.append([math.log(x) if x > 0 else -math.inf for x in p])
        return ta.tensor(rows, dtype="float64"), (state[0] + 1,), None

    greedy = beam_search(step, (ta.zeros(1, 1),), 0, 1, beam_size=1, max_len=8)
    best = beam_search(step, (ta.zeros(2, 1),), 0, 1, beam_size=2, max_len=8)
    assert greedy.tokens == [2, 2, 2]
    assert best.tokens == [2, 2, 2]  # not [], the eos of step 1 (probability 0.06)
    assert best.score == pytest.approx(3 * math.log(0.9) + math.log(0.9))
    # with length normalisation the bound divides by max_len ** alpha: same answer
    normed = beam_search(step, (ta.zeros(2, 1),), 0, 1, beam_size=2, max_len=8, alpha=1.0)
    assert normed.tokens == [2, 2, 2]
    assert normed.score == pytest.approx(4 * math.log(0.9) / 4)


def _adam(params, lr=0.02):
    state = {id(p): [ta.zeros_like(p), ta.zeros_like(p)] for p in params}
    t = [0]

    def step():
        t[0] += 1
        with ta.no_grad():
            for p in params:
                m, v = state[id(p)]
                m.mul_(0.9).add_(p.grad * 0.1)
                v.mul_(0.999).add_(p.grad * p.grad * 0.001)
                mh = m / (1 - 0.9 ** t[0])
                vh = v / (1 - 0.999 ** t[0])
                p.sub_(mh * lr / (vh.sqrt() + 1e-8))
    return step


@pytest.mark.jit_only
def test_tiny_model_learns_to_copy():
    ta.manual_seed(0)
    m = Seq2Seq(8, 8, embed_size=16, hidden_size=32, attention="bahdanau")
    params = list(m.parameters())
    step = _adam(params)
    gen = ta.Generator(1)
    for it in range(150):
        lengths = (ta.randint(2, 5, (32,), generator=gen)).tolist()
        toks = ta.randint(3, 8, (32, 4), generator=gen).tolist()
        seqs = [row[:n] for row, n in zip(toks, lengths)]
        src, src_len = pad_sequences(seqs)
        tgt, _ = pad_sequences(seqs, bos_idx=1, eos_idx=2)
        loss = m.loss(src, tgt, src_len)
        for p in params:
            p.grad = None
        loss.backward()
        step()
    tests = [[3, 4], [7, 5, 6], [6, 6, 3, 4], [5, 3, 7]]
    src, src_len = pad_sequences(tests)
    hyps = m.greedy_decode(src, src_len, max_len=6)
    assert [h.tokens for h in hyps] == tests, (loss.item(), [h.tokens for h in hyps])


def test_errors():
    with pytest.raises(ValueError, match="distinct"):
        Seq2Seq(5, 5, pad_idx=0, bos_idx=0)
    with pytest.raises(ValueError, match="attention must be"):
        Seq2Seq(5, 5, attention="self")
    with pytest.raises(ValueError, match="int64"):
        Seq2Seq(5, 5).greedy_decode(ta.zeros(2, 3))
    with pytest.raises(ValueError, match="beam_size"):
        Seq2Seq(5, 5).beam_search(ta.tensor([[3, 4]]), beam_size=0)


def test_decoded_attention_covers_only_the_real_source():
    ta.manual_seed(0)
    m = Seq2Seq(10, 10, embed_size=8, hidden_size=8, attention="bahdanau")
    src, lengths = pad_sequences([[3, 4, 5, 6, 7], [3, 4]])
    for hyps in (m.greedy_decode(src, lengths, max_len=4),
                 m.beam_search(src, lengths, beam_size=2, max_len=4)):
        for h, n in zip(hyps, lengths):
            if h.attention is not None:
                assert h.attention.shape == (len(h.tokens), n)
                # the cut columns were padding: their weights were exactly zero
                assert all(abs(sum(row) - 1) < 1e-5 for row in h.attention.tolist())
    assert ta.nn.pad_sequences is pad_sequences and ta.nn.Hypothesis._fields == (
        "tokens", "score", "attention")
