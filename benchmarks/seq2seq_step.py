"""One training step of a GRU seq2seq with Bahdanau attention: tinyattn vs PyTorch, same process.

    embed 32, hidden 64 (bidirectional encoder), src len 12, tgt len 10, batch 64, vocab 40;
    step = forward (teacher forcing) + cross-entropy + backward + SGD update written by hand.

Both models have the same architecture (tinyattn.nn.Seq2Seq and the PyTorch twin below) and start
from the same weights (load_state_dict). Run:

    python benchmarks/seq2seq_step.py [--steps 20] [--profile]
"""
import argparse
import cProfile
import pstats
import time

import tinyattn as ta
import tinyattn.nn as nn

E, H, S, T, B, V = 32, 64, 12, 10, 64, 40


def make_batch(gen):
    src = ta.randint(3, V, (B, S), generator=gen)
    tgt = ta.randint(3, V, (B, T + 1), generator=gen)
    tgt[:, 0] = 1
    return src, tgt


def tinyattn_step(model, params, src, tgt, lr=0.1):
    loss = model.loss(src, tgt)
    for p in params:
        p.grad = None
    loss.backward()
    with ta.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
    return loss


def torch_model(torch):
    tnn = torch.nn

    class Additive(tnn.Module):
        def __init__(self):
            super().__init__()
            self.query_proj = tnn.Linear(H, H, bias=False)
            self.key_proj = tnn.Linear(2 * H, H)
            self.v = tnn.Linear(H, 1, bias=False)

        def forward(self, s, keys, pk):
            scores = self.v(torch.tanh(pk + self.query_proj(s).unsqueeze(1))).squeeze(2)
            w = torch.softmax(scores, -1)
            return torch.bmm(w.unsqueeze(1), keys).squeeze(1)

    class Enc(tnn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = tnn.Embedding(V, E, padding_idx=0)
            self.rnn = tnn.GRU(E, H, batch_first=True, bidirectional=True)

    class Dec(tnn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = tnn.Embedding(V, E, padding_idx=0)
            self.bridge = tnn.Linear(2 * H, H)
            self.attention = Additive()
            self.cell = tnn.GRUCell(E + 2 * H, H)
            self.out = tnn.Linear(H + 2 * H + E, V)

    class Model(tnn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Enc()
            self.decoder = Dec()

        def loss(self, src, tgt):
            keys, h_n = self.encoder.rnn(self.encoder.embedding(src))
            final = torch.cat([h_n[0], h_n[1]], 1)
            d = self.decoder
            pk = d.attention.key_proj(keys)
            s = torch.tanh(d.bridge(final))
            feats = []
            for t in range(tgt.shape[1] - 1):
                e = d.embedding(tgt[:, t])
                c = d.attention(s, keys, pk)
                s = d.cell(torch.cat([e, c], 1), s)
                feats.append(torch.cat([s, c, e], 1))
            logits = d.out(torch.stack(feats, 1))
            return torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                                     tgt[:, 1:].reshape(-1), ignore_index=0)
    return Model()


def timeit(fn, steps):
    fn()  # warm-up (compiles kernels on a cold cache)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    ta.manual_seed(0)
    model = nn.Seq2Seq(V, V, embed_size=E, hidden_size=H, attention="bahdanau")
    params = list(model.parameters())
    src, tgt = make_batch(ta.Generator(0))
    ours = timeit(lambda: tinyattn_step(model, params, src, tgt), args.steps)
    print(f"tinyattn: {ours * 1e3:.1f} ms/step  (loss {model.loss(src, tgt).item():.4f})")
    try:
        import torch
    except ImportError:
        print("torch not installed: no comparison")
        torch = None
    if torch is not None:
        torch.set_num_threads(2)
        tm = torch_model(torch)
        tm.load_state_dict({k: torch.tensor(v.tolist()) for k, v in model.state_dict().items()})
        tsrc, ttgt = torch.tensor(src.tolist()), torch.tensor(tgt.tolist())
        tparams = list(tm.parameters())

        def torch_step():
            loss = tm.loss(tsrc, ttgt)
            for p in tparams:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in tparams:
                    p.sub_(p.grad * 0.1)

        theirs = timeit(torch_step, args.steps)
        print(f"PyTorch : {theirs * 1e3:.1f} ms/step  -> tinyattn / PyTorch = {ours / theirs:.2f}x")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(lambda: [tinyattn_step(model, params, src, tgt) for _ in range(5)])
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
