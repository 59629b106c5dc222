"""demos/gpt.py's model trained with PyTorch: the same initial weights, batches and recipe.

    python benchmarks/gpt_twin.py [--seeds 0,1,2] [--steps N] [--json PATH]

For each seed, tinyattn trains the demo's GPT (demos/gpt.py's `train`), and PyTorch trains a twin
written with torch.nn: the same architecture and parameter names, the same initial weights (copied
from tinyattn's model before training), the same batches in the same order (drawn by the demo's
`get_batch` from the same generator), AdamW with the same parameter groups, the same warm-up and
cosine schedule, gradient clipping, and the same validation batches. The two differ only in
floating-point rounding, so their validation losses should agree closely; the table shows both,
the difference, and each library's training time on this machine (PyTorch on 2 threads).

Skips (exit 0 with a message) when PyTorch is not installed.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "demos"))
sys.path.insert(0, ROOT)

import gpt  # noqa: E402  (demos/gpt.py)

import tinyattn as ta  # noqa: E402


def torch_twin(torch, cfg, vocab):
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
            self.resid_dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            B, T, C = x.shape
            H = cfg.n_head
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=cfg.dropout if self.training else 0.0, is_causal=True)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(cfg.n_embd), CausalSelfAttention()
            self.ln_2, self.mlp = nn.LayerNorm(cfg.n_embd), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                drop=nn.Dropout(cfg.dropout), h=nn.ModuleList([Block() for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd)))
            self.lm_head = nn.Linear(cfg.n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            B, T = idx.shape
            tr = self.transformer
            x = tr.drop(tr.wte(idx) + tr.wpe(torch.arange(T)))
            for block in tr.h:
                x = block(x)
            logits = self.lm_head(tr.ln_f(x))
            return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))

    return GPT()


def train_torch(torch, cfg, seed, train_ids, val_ids, vocab):
    ta.manual_seed(seed)
    ours = gpt.GPT(cfg, vocab)                      # the same initial weights as the demo's
    model = torch_twin(torch, cfg, vocab)
    model.load_state_dict({k: torch.tensor(v.tolist(), dtype=torch.float32)
                           for k, v in ours.state_dict().items()})
    to_torch = lambda t: torch.tensor(t.tolist(), dtype=torch.int64)  # noqa: E731
    val = [tuple(map(to_torch, gpt.get_batch(val_ids, cfg, ta.Generator(10_000 + i))))
           for i in range(cfg.eval_batches)]
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr,
                            betas=(0.9, 0.99))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, gpt.lr_factor(cfg))
    gen = ta.Generator(seed)
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        x, y = map(to_torch, gpt.get_batch(train_ids, cfg, gen))
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
    seconds = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        val_loss = sum(model(x, y).item() for x, y in val) / len(val)
    return val_loss, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--json", default=os.path.join(HERE, "gpt_twin-latest.json"))
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpt_twin: PyTorch is not installed; nothing to compare (pip install torch==2.13.0)")
        return 0
    torch.set_num_threads(2)
    cfg = gpt.Config()
    if args.steps is not None:
        cfg.steps = args.steps
    text = gpt.load_text()
    codec = gpt.Codec(text)
    train_ids, val_ids = gpt.split_data(codec.encode(text))
    vocab = len(codec.chars)
    from run import machine_info
    print(f"# {machine_info()['cpu']}; {cfg.steps} steps of {cfg.batch_size} x {cfg.block_size}")
    print(f"{'seed':>4} {'tinyattn':>9} {'PyTorch':>9} {'diff':>8} {'tinyattn s':>11} "
          f"{'PyTorch s':>10}")
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        t0 = time.perf_counter()
        _, history = gpt.train(cfg, seed, train_ids, val_ids, vocab, log=lambda *a: None)
        ours_s = time.perf_counter() - t0
        ours = history[-1][2]
        theirs, theirs_s = train_torch(torch, cfg, seed, train_ids, val_ids, vocab)
        rows.append(dict(seed=seed, tinyattn=ours, pytorch=theirs, diff=ours - theirs,
                         tinyattn_seconds=ours_s, pytorch_seconds=theirs_s))
        print(f"{seed:4d} {ours:9.4f} {theirs:9.4f} {ours - theirs:+8.4f} {ours_s:11.1f} "
              f"{theirs_s:10.1f}", flush=True)
    with open(args.json, "w") as f:
        json.dump(dict(machine=machine_info(), steps=cfg.steps, rows=rows), f, indent=2)
    worst = max(abs(r["diff"]) for r in rows)
    print(f"largest |difference|: {worst:.4f} nats/char (target <= 0.05)")
    return 0 if math.isfinite(worst) else 1


if __name__ == "__main__":
    sys.exit(main())
