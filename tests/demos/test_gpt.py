"""demos/gpt.py: the causal mask, the KV cache, sampling filters, weight tying, and its PyTorch twin.

What holds: a future token never changes an earlier logit; generating with the KV cache gives the
full forward's logits and the same tokens; the context window is enforced; the filters keep the
tokens worked out by hand; tied weights are one parameter; the PyTorch twin with the same weights
has the same loss; and training repeats exactly and learns."""
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import tinyattn as ta

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "demos"))
import gpt  # noqa: E402

CFG = gpt.Config(block_size=12, n_layer=2, n_head=2, n_embd=16)
VOCAB = 11


def _model(seed=0, cfg=CFG):
    ta.manual_seed(seed)
    m = gpt.GPT(cfg, VOCAB)
    m.eval()
    return m


def _all_logits(model, ids):
    """Logits at every position (B, T, vocab) through the training path (targets given)."""
    x = ta.tensor([ids], dtype=ta.int64)
    logits, _ = model(x, x)
    return logits


def test_shapes_loss_and_parameter_count():
    m = _model()
    x = ta.randint(0, VOCAB, (3, 7), generator=ta.Generator(1))
    y = ta.randint(0, VOCAB, (3, 7), generator=ta.Generator(2))
    logits, loss = m(x, y)
    assert logits.shape == (3, 7, VOCAB) and loss.shape == ()
    # an untrained model predicts about uniformly: loss close to log(vocab) (for targets that
    # are not the inputs: with tied weights, the input's own token scores |e|^2 higher)
    assert abs(loss.item() - math.log(VOCAB)) < 0.1
    C, L, V, T = CFG.n_embd, CFG.n_layer, VOCAB, CFG.block_size
    per_block = 2 * 2 * C + (3 * C * C + 3 * C) + (C * C + C) + (4 * C * C + 4 * C) + (4 * C * C + C)
    assert sum(p.numel() for p in m.parameters()) == V * C + T * C + L * per_block + 2 * C
    last, none = m(x)
    assert last.shape == (3, 1, VOCAB) and none is None


def test_weight_tying_is_one_parameter():
    m = _model()
    assert m.lm_head.weight is m.transformer.wte.weight
    ids = [id(p) for p in m.parameters()]
    assert len(ids) == len(set(ids))
    sd = m.state_dict()
    assert "lm_head.weight" in sd and "transformer.wte.weight" in sd   # both keys, as PyTorch


def test_causal_a_future_token_does_not_change_earlier_logits():
    m = _model()
    a = [1, 2, 3, 4, 5, 6, 7]
    b = a[:4] + [9, 0, 10]
    la, lb = _all_logits(m, a), _all_logits(m, b)
    assert la[0, :4].tolist() == lb[0, :4].tolist()             # positions 0..3 identical
    assert la[0, 4].tolist() != lb[0, 4].tolist()


def test_cache_gives_the_logits_of_the_full_forward():
    m = _model()
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    full = _all_logits(m, ids)                                     # (1, T, V)
    with ta.no_grad():
        cache = gpt.KVCache(CFG, 1)
        first, _ = m(ta.tensor([ids[:3]], dtype=ta.int64), cache=cache)   # prefill 3
        rows = [first[0, -1]]
        for t in range(3, len(ids)):
            step, _ = m(ta.tensor([[ids[t]]], dtype=ta.int64), cache=cache)
            rows.append(step[0, -1])
        # two new positions at once after a prefill: the bottom-right aligned causal mask
        cache2 = gpt.KVCache(CFG, 1)
        m(ta.tensor([ids[:5]], dtype=ta.int64), cache=cache2)
        two, _ = m(ta.tensor([ids[5:7]], dtype=ta.int64), cache=cache2)
    for t, row in zip(range(2, len(ids)), rows):
        assert max(abs(u - v) for u, v in zip(row.tolist(), full[0, t].tolist())) < 1e-5
    assert max(abs(u - v) for u, v in zip(two[0, -1].tolist(), full[0, 6].tolist())) < 1e-5
    assert cache.length == len(ids)


def test_the_context_window_is_enforced():
    m = _model()
    with pytest.raises(ValueError, match="exceed the context window of 12"):
        m(ta.zeros(1, 13, dtype=ta.int64))
    cache = gpt.KVCache(CFG, 1)
    with ta.no_grad():
        m(ta.zeros(1, 12, dtype=ta.int64), cache=cache)
        with pytest.raises(ValueError, match="12 cached \\+ 1 new"):
            m(ta.zeros(1, 1, dtype=ta.int64), cache=cache)


@pytest.mark.parametrize("kwargs", [dict(), dict(temperature=0.7, top_k=3),
                                    dict(temperature=1.3, top_p=0.8), dict(temperature=0)])
def test_generation_with_and_without_cache_gives_the_same_tokens(kwargs):
    m = _model(seed=2)
    # 30 tokens from a 12-token window: the window moves on twice (the cache is refilled)
    outs = [gpt.generate(m, [1, 2], 30, use_cache=c, generator=ta.Generator(5), **kwargs)
            for c in (True, False)]
    assert outs[0] == outs[1]
    assert len(outs[0]) == 32 and outs[0][:2] == [1, 2]
    again = gpt.generate(m, [1, 2], 30, use_cache=True, generator=ta.Generator(5), **kwargs)
    assert again == outs[0]                                      # same seed, same text


def test_filters_by_hand():
    logits = [2.0, 1.0, 0.0, 3.0]
    e = [math.exp(v) for v in logits]
    p = gpt.filter_probs(logits)
    assert all(abs(a - b / sum(e)) < 1e-12 for a, b in zip(p, e))
    assert gpt.filter_probs(logits, temperature=0) == [0.0, 0.0, 0.0, 1.0]
    k2 = gpt.filter_probs(logits, top_k=2)                       # keeps 3.0 and 2.0
    assert k2[1] == k2[2] == 0.0 and abs(k2[3] - e[3] / (e[3] + e[0])) < 1e-12
    # probabilities e/sum: 0.2447, 0.0900, 0.0331, 0.6652 -> top_p 0.7 keeps 0.6652 + 0.2447
    tp = gpt.filter_probs(logits, top_p=0.7)
    assert tp[1] == tp[2] == 0.0 and abs(sum(tp) - 1) < 1e-12
    assert gpt.filter_probs(logits, top_p=0.5) == [0.0, 0.0, 0.0, 1.0]
    t2 = gpt.filter_probs(logits, temperature=2.0)
    e2 = [math.exp(v / 2) for v in logits]
    assert all(abs(a - b / sum(e2)) < 1e-12 for a, b in zip(t2, e2))
    assert gpt.sample([0.25, 0.0, 0.75], 0.2) == 0 and gpt.sample([0.25, 0.0, 0.75], 0.3) == 2


def test_learning_rate_schedule():
    cfg = replace(CFG, steps=110, warmup=10, min_lr_ratio=0.1)
    f = gpt.lr_factor(cfg)
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0)
    assert f(10) == pytest.approx(1.0) and f(60) == pytest.approx(0.55)
    assert f(110) == pytest.approx(0.1)


def test_same_weights_same_loss_as_the_pytorch_twin():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import gpt_twin
    m = _model()
    twin = gpt_twin.torch_twin(torch, CFG, VOCAB)
    twin.load_state_dict({k: torch.tensor(v.tolist()) for k, v in m.state_dict().items()})
    twin.eval()
    x = ta.randint(0, VOCAB, (2, 9), generator=ta.Generator(3))
    y = ta.randint(0, VOCAB, (2, 9), generator=ta.Generator(4))
    m.train()
    _, loss = m(x, y)
    loss.backward()
    tx, ty = (torch.tensor(t.tolist()) for t in (x, y))
    tloss = twin(tx, ty)
    tloss.backward()
    assert abs(loss.item() - tloss.item()) < 1e-5
    theirs = dict(twin.named_parameters())
    for name, p in m.named_parameters():
        g, tg = p.grad.flatten().tolist(), theirs[name].grad.flatten().tolist()
        assert max(abs(a - b) for a, b in zip(g, tg)) < 1e-5, name


def test_training_is_repeatable_and_learns():
    text = gpt.load_text()
    codec = gpt.Codec(text)
    train_ids, val_ids = gpt.split_data(codec.encode(text))
    cfg = replace(CFG, steps=12, eval_every=6, eval_batches=2, batch_size=4, warmup=3)
    runs = [gpt.train(cfg, seed, train_ids, val_ids, len(codec.chars), log=lambda *a: None)[1]
            for seed in (0, 0, 1)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert runs[0][-1][2] < runs[0][0][2]                  # the validation loss fell
    assert codec.decode(codec.encode("def f(x):\n")) == "def f(x):\n"
