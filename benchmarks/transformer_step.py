"""One training step of a small transformer-encoder classifier, tinyattn against PyTorch.

    tokens (B, T) -> Embedding -> + sinusoidal PE -> 2 x TransformerEncoderLayer -> mean over T
                  -> Linear -> cross-entropy (log_softmax + gather) -> backward -> SGD by hand

d_model 64, 4 heads, feed-forward 128, T 32, batch 32, vocab 32. Both libraries run in this
process; PyTorch with torch.set_num_threads(2). The time spent in the matmul kernel is measured
separately (it is a slow placeholder on some branches).

    python benchmarks/transformer_step.py [--steps 20] [--dropout 0.1] [--profile] [--no-torch]
                                          [--torch-threads 2]
"""
import argparse
import cProfile
import pstats
import statistics
import time

import tinyattn
from tinyattn.fast import matmul as _KM
from tinyattn import nn

VOCAB, D, HEADS, FF, T, B, CLASSES, LAYERS = 32, 64, 4, 128, 32, 32, 4, 2


class Classifier(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.PositionalEncoding(D, dropout=dropout, max_len=T, batch_first=True)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, tokens):
        x = self.pos(self.embed(tokens))                             # (B, T, D)
        x = self.encoder(x)                                          # (B, T, D)
        return self.head(x.mean(1))                                  # (B, classes)


def tinyattn_step(model, tokens, labels, lr=0.01):
    logits = model(tokens)                                           # (B, classes)
    logp = logits.log_softmax(-1)                                    # (B, classes)
    loss = -logp.gather(1, labels.unsqueeze(1)).mean()
    loss.backward()
    with tinyattn.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * lr)
            p.grad = None
    return loss


class MatmulTimer:
    """Wraps the matmul kernel to add up the seconds spent inside it."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0
        self.kernel = _KM.bmm

    def __call__(self, *args):
        t0 = time.perf_counter()
        self.kernel(*args)
        self.seconds += time.perf_counter() - t0
        self.calls += 1

    def install(self):
        _KM.bmm = self

    def remove(self):
        _KM.bmm = self.kernel


def time_tinyattn(steps, dropout, profile):
    tinyattn.manual_seed(0)
    model = Classifier(dropout)
    tokens = tinyattn.randint(0, VOCAB, (B, T))
    labels = tinyattn.randint(0, CLASSES, (B,))
    for _ in range(3):  # compile and warm up
        tinyattn_step(model, tokens, labels)
    timer = MatmulTimer()
    timer.install()
    times, shares = [], []
    try:
        for _ in range(steps):
            timer.seconds = 0.0
            t0 = time.perf_counter()
            tinyattn_step(model, tokens, labels)
            times.append(time.perf_counter() - t0)
            shares.append(timer.seconds)
        calls = timer.calls // steps
    finally:
        timer.remove()
    # min: the machine is shared, and the least disturbed step is the best estimate of the cost
    best = min(range(steps), key=lambda i: times[i] - shares[i])
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(5):
            tinyattn_step(model, tokens, labels)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return dict(total_min=min(times), total_median=statistics.median(times),
                matmul=shares[best], rest_min=times[best] - shares[best],
                rest_median=statistics.median(t - m for t, m in zip(times, shares)), calls=calls)


def torch_classifier(torch, dropout):
    """The same classifier in PyTorch (the positional table comes from tinyattn's, as a buffer)."""

    class TorchClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, D)
            self.pos_drop = torch.nn.Dropout(dropout)
            self.register_buffer("pe", torch.tensor(
                nn.PositionalEncoding(D, max_len=T).pe.squeeze(1).tolist()))
            layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=dropout,
                                                     batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
            self.head = torch.nn.Linear(D, CLASSES)

        def forward(self, tokens):
            x = self.pos_drop(self.embed(tokens) + self.pe)
            return self.head(self.encoder(x).mean(1))

    return TorchClassifier()


def time_torch(steps, dropout, threads=2):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_classifier(torch, dropout)
    tokens = torch.randint(0, VOCAB, (B, T))
    labels = torch.randint(0, CLASSES, (B,))

    def step():
        logits = model(tokens)
        loss = -logits.log_softmax(-1).gather(1, labels.unsqueeze(1)).mean()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(p.grad * 0.01)
                p.grad = None

    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--profile", action="store_true", help="cProfile 5 tinyattn steps")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-threads", type=int, default=2)
    args = ap.parse_args()
    r = time_tinyattn(args.steps, args.dropout, args.profile)
    print(f"tinyattn: {r['total_min'] * 1e3:.1f} ms/step min, {r['total_median'] * 1e3:.1f} "
          f"median of {args.steps}; matmul kernel {r['matmul'] * 1e3:.1f} ms in {r['calls']} "
          f"calls; everything else {r['rest_min'] * 1e3:.1f} ms min, "
          f"{r['rest_median'] * 1e3:.1f} median")
    if not args.no_torch:
        tmin, tmed = time_torch(args.steps, args.dropout, args.torch_threads)
        print(f"pytorch : {tmin * 1e3:.1f} ms/step min, {tmed * 1e3:.1f} median "
              f"({args.torch_threads} threads)")
        print(f"ratio   : tinyattn / pytorch = {r['total_min'] / tmin:.2f}x; tinyattn without "
              f"its matmul kernel / pytorch = {r['rest_min'] / tmin:.2f}x (min over min)")


if __name__ == "__main__":
    main()
