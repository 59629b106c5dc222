"""A character-level GPT trained from scratch on the text every Python install carries.

    python demos/gpt.py            # the full run: about 4 minutes on 2 cores
    python demos/gpt.py --quick    # a small version (the test suite runs it)

Data: `pydoc_data.topics`, the help texts of `help("if")`, `help("with")`, ... (465k characters of
English about Python, 103 distinct characters), shipped with CPython, so nothing is downloaded.
The first 90% trains, the last 10% validates.

The model is a decoder-only Transformer (Radford et al., 2018) at toy scale, written with
tinyattn's own layers in the shape of nanoGPT (names included, so its state_dict reads like
nanoGPT's):

    idx (B, T) -> wte(idx) + wpe(0..T-1)                       token + learned position, (B, T, C)
               -> n_layer x Block:  x = x + attn(ln_1(x))      causal self-attention, pre-norm
                                    x = x + mlp(ln_2(x))       Linear(C, 4C), GELU, Linear(4C, C)
               -> ln_f -> lm_head (its weight IS wte.weight)   logits (B, T, vocab)

4 layers, 4 heads, C = 128, context 256 characters: 0.84M parameters. (At a context of 256
instead of 64, the same characters per step cost about 20% more to train, and generation has a
context worth caching.) AdamW (weight decay on the
matrices only), linear warm-up then cosine decay of the learning rate, gradient clipping at 1.

Generation samples one character at a time (temperature, top-k, top-p). With `use_cache=True`
each layer keeps the keys and values of the positions already seen (`KVCache`), so a new
character costs one row of attention instead of the whole context's forward pass; both ways give
the same characters for the same seed (the test suite checks it). When the context window is
full, the oldest half is dropped and the cache is refilled from the rest (learned positions
cannot slide), the same rule with and without the cache.

Writes runs/gpt/: loss.svg (training and validation loss), attention.svg (the last layer's heads
on a line of the validation text), samples.txt, metrics.json, checkpoint.safetensors.
Chapter 7 of the tour (docs/07-gpt.md) walks through the causal mask and the KV cache.
`benchmarks/gpt_twin.py` trains the same model on the same batches with PyTorch.
"""
import math
import time
from dataclasses import dataclass

import common

import tinyattn as ta
from tinyattn import nn, optim, viz
from tinyattn.nn import functional as F


@dataclass
class Config:
    block_size: int = 256       # context window, characters
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0        # off: 1,500 steps of 2,048 characters (7 passes) do not overfit
    batch_size: int = 8
    steps: int = 1500
    lr: float = 3e-3
    min_lr_ratio: float = 0.1   # the cosine decays to lr * min_lr_ratio
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 150
    eval_batches: int = 16
    sample_chars: int = 500


QUICK = dict(n_layer=2, n_embd=32, n_head=2, block_size=32, steps=60, eval_every=30,
             eval_batches=4, sample_chars=120)


# ---------------------------------------------------------------------------- data


def load_text():
    """The help topics of pydoc_data, in a fixed order, as one string."""
    from pydoc_data.topics import topics
    return "\n\n".join(topics[k].strip() for k in sorted(topics)) + "\n"


class Codec:
    """Characters <-> token ids (the sorted set of characters in the text)."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        return [self.index[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def split_data(ids):
    n = int(0.9 * len(ids))
    return ids[:n], ids[n:]


def get_batch(data, cfg, gen):
    """x, y (B, T) int64: B random windows of the text and the same windows one character on."""
    starts = ta.randint(0, len(data) - cfg.block_size - 1, (cfg.batch_size,), generator=gen)
    rows = [data[s:s + cfg.block_size + 1] for s in starts.tolist()]
    x = ta.tensor([r[:-1] for r in rows], dtype=ta.int64)
    y = ta.tensor([r[1:] for r in rows], dtype=ta.int64)
    return x, y


# ---------------------------------------------------------------------------- model


class KVCache:
    """The keys and values of the positions seen so far, per layer, for generation.

    k[layer], v[layer]: (B, H, block_size, hs) buffers filled in place, `length` positions used.
    A new position costs one write per layer; nothing already cached is recomputed."""

    def __init__(self, cfg, batch_size, dtype=ta.float32):
        shape = (batch_size, cfg.n_head, cfg.block_size, cfg.n_embd // cfg.n_head)
        self.k = [ta.zeros(shape, dtype=dtype) for _ in range(cfg.n_layer)]
        self.v = [ta.zeros(shape, dtype=dtype) for _ in range(cfg.n_layer)]
        self.length = 0

    def update(self, layer, k, v):
        """Store k, v (B, H, T, hs) after the cached positions; return every key and value so
        far, (B, H, length + T, hs) views of the buffers."""
        t0, T = self.length, k.shape[2]
        self.k[layer].narrow(2, t0, T).copy_(k)        # k_cache[:, :, t0:t0 + T] = k
        self.v[layer].narrow(2, t0, T).copy_(v)
        return self.k[layer].narrow(2, 0, t0 + T), self.v[layer].narrow(2, 0, t0 + T)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head, self.n_embd, self.dropout = cfg.n_head, cfg.n_embd, cfg.dropout
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)   # q, k, v for all heads at once
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.weights = None       # set by forward when record_weights is on (for the pictures)
        self.scores = None        # q.k/sqrt(hs) before the mask, likewise (for the explorer)
        self.record_weights = False

    def forward(self, x, cache=None, layer=0):
        B, T, C = x.shape
        H = self.n_head
        qkv = self.c_attn(x).view(B, T, 3, H, C // H)            # (B, T, 3, H, hs)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)           # (B, H, T, hs) each, views
        past = 0
        if cache is not None:
            past = cache.length
            k, v = cache.update(layer, k, v)                      # (B, H, past + T, hs)
        if T > 1 and past > 0:
            # new query i (at position past + i) sees keys 0 .. past + i (bottom-right aligned)
            mask = ta.ones(T, past + T, dtype=ta.bool).tril(diagonal=past)
            args = dict(attn_mask=mask)
        else:
            args = dict(is_causal=T > 1)      # one new query may see every key: no mask at all
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training
                                           else 0.0, return_weights=self.record_weights, **args)
        if self.record_weights:
            y, self.weights = y                                   # weights (B, H, T, past + T)
            self.scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        y = y.transpose(1, 2).reshape(B, T, C)                    # (B, T, C): heads side by side
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))   # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x, cache=None, layer=0):
        x = x + self.attn(self.ln_1(x), cache, layer)             # (B, T, C)
        return x + self.mlp(self.ln_2(x))                          # (B, T, C)


class GPT(nn.Module):
    def __init__(self, cfg, vocab_size):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, cfg.n_embd),
            wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            drop=nn.Dropout(cfg.dropout),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
            ln_f=nn.LayerNorm(cfg.n_embd),
        ))
        self.lm_head = nn.Linear(cfg.n_embd, vocab_size, bias=False)
        # Weight tying (Press & Wolf, 2017): the output layer scores each character by the dot
        # product with its input embedding. One Parameter, listed once by parameters().
        self.transformer.wte.weight = self.lm_head.weight
        # GPT-2's initialisation: N(0, 0.02), and residual projections scaled by 1/sqrt(2 n_layer)
        # so that the residual stream's variance does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg.n_layer))
            elif name.endswith("weight") and p.ndim == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets=None, cache=None):
        """idx (B, T) -> logits (B, T, vocab) and the mean cross-entropy against targets (B, T);
        without targets only the last position's logits (B, 1, vocab), as generation needs."""
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if past + T > self.cfg.block_size:
            raise ValueError(f"GPT: {past} cached + {T} new positions exceed the context "
                             f"window of {self.cfg.block_size}")
        tr = self.transformer
        pos = ta.arange(past, past + T)                            # (T,)
        x = tr.drop(tr.wte(idx) + tr.wpe(pos))                     # (B, T, C)
        for i, block in enumerate(tr.h):
            x = block(x, cache, i)                                 # (B, T, C)
        x = tr.ln_f(x)
        if cache is not None:
            cache.length += T
        if targets is None:
            return self.lm_head(x.narrow(1, T - 1, 1)), None       # (B, 1, vocab): x[:, -1:]
        logits = self.lm_head(x)                                   # (B, T, vocab)
        loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss


# ---------------------------------------------------------------------------- generation


def filter_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """Next-character probabilities (a list) from one row of logits (a list of floats).

    temperature divides the logits (0: greedy, all probability on the largest); top_k keeps the k
    largest logits (ties with the k-th included); top_p keeps the smallest set of the most likely
    characters whose probabilities add up to at least top_p."""
    n = len(logits)
    if temperature == 0:
        best = max(range(n), key=lambda i: logits[i])
        return [1.0 if i == best else 0.0 for i in range(n)]
    z = [v / temperature for v in logits]
    if top_k is not None and top_k < n:
        kth = sorted(z, reverse=True)[top_k - 1]
        z = [v if v >= kth else -math.inf for v in z]
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    p = [v / s for v in e]
    if top_p is not None and top_p < 1.0:
        order = sorted(range(n), key=lambda i: -p[i])
        kept, total = set(), 0.0
        for i in order:
            kept.add(i)
            total += p[i]
            if total >= top_p:
                break
        p = [v if i in kept else 0.0 for i, v in enumerate(p)]
        s = sum(p)
        p = [v / s for v in p]
    return p


def sample(probs, u):
    """The index where the cumulative probability passes u in [0, 1)."""
    acc = 0.0
    for i, v in enumerate(probs):
        acc += v
        if u < acc:
            return i
    return max(i for i, v in enumerate(probs) if v > 0)


@ta.no_grad()
def generate(model, prompt, n, *, temperature=1.0, top_k=None, top_p=None, use_cache=True,
             generator=None):
    """prompt (a list of token ids, at least one) followed by n sampled tokens.

    The context is tokens[start:]; when it fills the window, start moves on by half a window.
    With use_cache the context is run through the model once (filling a KVCache) and each new
    token then costs one position per layer; without, every token reruns the whole context."""
    model.eval()
    block = model.cfg.block_size
    tokens = list(prompt)
    start = max(0, len(tokens) - block)
    cache = None
    for _ in range(n):
        if len(tokens) - start == block:
            start += block // 2
            cache = None
        if not use_cache:
            logits, _ = model(ta.tensor([tokens[start:]], dtype=ta.int64))
        elif cache is None:
            cache = KVCache(model.cfg, 1)
            logits, _ = model(ta.tensor([tokens[start:]], dtype=ta.int64), cache=cache)
        else:
            logits, _ = model(ta.tensor([tokens[-1:]], dtype=ta.int64), cache=cache)
        probs = filter_probs(logits.view(-1).tolist(), temperature, top_k, top_p)
        u = ta.rand((), generator=generator).item()
        tokens.append(sample(probs, u))
    return tokens


# ---------------------------------------------------------------------------- training


def lr_factor(cfg):
    """Linear warm-up to 1 over `warmup` steps, then a cosine down to min_lr_ratio at the end."""
    def f(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        t = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))
    return f


def make_optimizer(model, cfg):
    """AdamW with weight decay on the weight matrices only (not on biases, layer norms)."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                       {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.99))
    return opt, optim.lr_scheduler.LambdaLR(opt, lr_factor(cfg))


@ta.no_grad()
def evaluate(model, batches):
    model.eval()
    losses = [model(x, y)[1].item() for x, y in batches]
    model.train()
    return sum(losses) / len(losses)


def train(cfg, seed, train_ids, val_ids, vocab, log=print, on_eval=None, args=None, out=None,
          state=None):
    """Train a GPT; returns (model, history) with history = [(step, train_loss, val_loss)].
    on_eval(step, model) is called at every evaluation (and at step 0). With the demo's `args`
    and `out`, Ctrl-C saves where training was and `--resume` continues it (common.Training;
    `state`: more of the caller's lists to save with it)."""
    ta.manual_seed(seed)
    model = GPT(cfg, vocab)
    gen = ta.Generator(seed)
    val_batches = [get_batch(val_ids, cfg, ta.Generator(10_000 + i)) for i in
                   range(cfg.eval_batches)]
    opt, sched = make_optimizer(model, cfg)
    history = [(0, evaluate(model, val_batches), evaluate(model, val_batches))]
    if on_eval is not None:
        on_eval(0, model)
    with common.Training(args, out, model=model, optimizer=opt, scheduler=sched, generator=gen,
                         state={"history": history, **(state or {})}) as run:
        for k in run.epochs(-(-cfg.steps // cfg.eval_every)):   # an evaluation ends each
            first = (k - 1) * cfg.eval_every
            chunk = min(cfg.eval_every, cfg.steps - first)
            with run.progress(chunk * cfg.batch_size * cfg.block_size,
                              f"steps {first + 1}-{first + chunk}") as bar:
                for _ in run.batches(chunk, 1):
                    x, y = get_batch(train_ids, cfg, gen)
                    _, loss = model(x, y)
                    opt.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                    opt.step()
                    sched.step()
                    bar.update(x.numel(), loss=loss.item())
                    run.step_done()
            step = first + chunk
            train_loss = bar.means()["loss"]
            history.append((step, train_loss, evaluate(model, val_batches)))
            log(f"  step {step}: train loss {train_loss:.4f}, validation loss "
                f"{history[-1][2]:.4f}")
            if on_eval is not None:
                on_eval(step, model)
    return model, [tuple(h) for h in history]


def generation_speed(model, prompt, n, seed):
    """Seconds to generate n tokens with and without the cache, and whether they agree."""
    times, outs = [], []
    for use_cache in (True, False):
        t0 = time.perf_counter()
        outs.append(generate(model, prompt, n, temperature=0.8, top_k=40, use_cache=use_cache,
                             generator=ta.Generator(seed)))
        times.append(time.perf_counter() - t0)
    return times[0], times[1], outs[0] == outs[1], outs[0]


def record_attention(model, ids):
    """Every layer's attention on the characters `ids`, for the explorer: {"weights": (layers,
    heads, T, T), "scores": q.k/sqrt(hs) likewise, "mask": (T, T) True above the diagonal}."""
    attns = [block.attn for block in model.transformer.h]
    was_training = model.training
    model.eval()
    for a in attns:
        a.record_weights = True
    with ta.no_grad():
        x = ta.tensor([ids], dtype=ta.int64)
        model(x, x)
    for a in attns:
        a.record_weights = False
    model.train(was_training)
    T = len(ids)
    return {"weights": [a.weights[0] for a in attns], "scores": [a.scores[0] for a in attns],
            "mask": ta.ones(T, T, dtype=ta.bool).triu(1)}


def char_labels(codec, ids):
    return [repr(c)[1:-1] or " " for c in codec.decode(ids)]


def attention_picture(model, codec, text, path):
    """The last layer's attention weights, one panel per head, on a line of text."""
    ids = codec.encode(text)[:model.cfg.block_size]
    attn = model.transformer.h[-1].attn
    attn.record_weights = True
    with ta.no_grad():
        model.eval()
        model(ta.tensor([ids], dtype=ta.int64), ta.tensor([ids], dtype=ta.int64))
    attn.record_weights = False
    w = attn.weights[0]                                             # (H, T, T)
    labels = char_labels(codec, ids)
    grid = [[w[h].tolist() for h in range(w.shape[0])]]
    return viz.heatmap_grid(grid, col_titles=[f"head {h}" for h in range(w.shape[0])],
                            x_labels=labels, y_labels=labels,
                            title="last layer: where each character (row) looks (columns)",
                            path=path)


def main(argv=None):
    p = common.parser("gpt", __doc__.split("\n\n")[0], resumable=True)
    p.add_argument("--steps", type=int, default=None, help="training steps (default 1500)")
    args = p.parse_args(argv)
    out = common.output_dir(args, "gpt")
    cfg = Config(**(QUICK if args.quick else {}))
    if args.steps is not None:
        cfg.steps = args.steps
    t_start = time.perf_counter()

    text = load_text()
    codec = Codec(text)
    ids = codec.encode(text)
    train_ids, val_ids = split_data(ids)
    vocab = len(codec.chars)
    print(f"text: {len(text):,} characters of pydoc_data.topics, {vocab} distinct; "
          f"{len(train_ids):,} train / {len(val_ids):,} validation")

    ta.manual_seed(args.seed)
    untrained = GPT(cfg, vocab)
    n_params = sum(p.numel() for p in untrained.parameters())
    print(f"model: {cfg.n_layer} layers, {cfg.n_head} heads, width {cfg.n_embd}, context "
          f"{cfg.block_size}: {n_params:,} parameters")
    prompt = codec.encode("\n")
    before = codec.decode(generate(untrained, prompt, 120, generator=ta.Generator(args.seed)))
    print(f"sample before training:\n{before}\n")

    line = val_ids[:cfg.block_size]
    seen = line[:96]           # the explorer's text: 96 validation characters (a few lines)
    snaps = viz.Snapshots()
    t_train = time.perf_counter()
    model, history = train(cfg, args.seed, train_ids, val_ids, vocab, on_eval=lambda step, m:
                           snaps.add(step, {"causal self-attention": record_attention(m, seen)}),
                           args=args, out=out, state={"snapshots": snaps.steps})
    train_seconds = time.perf_counter() - t_train

    t_cache, t_full, same, tokens = generation_speed(model, prompt, cfg.sample_chars, args.seed)
    after = codec.decode(tokens)
    print(f"sample after training (temperature 0.8, top-k 40):\n{after}\n")
    print(f"generating {cfg.sample_chars} characters: {t_cache:.2f} s with the KV cache, "
          f"{t_full:.2f} s recomputing the context ({t_full / t_cache:.1f}x); "
          f"same characters: {same}")

    viz.line_chart({"train": [(h[0], h[1]) for h in history[1:]],
                    "validation": [(h[0], h[2]) for h in history]},
                   title="GPT on pydoc_data.topics: cross-entropy per character",
                   x_label="step", y_label="loss (nats)", path=out / "loss.svg")
    attention_picture(model, codec, codec.decode(line), out / "attention.svg")
    common.write_explorer(out, {"causal self-attention": record_attention(model, seen)},
                          char_labels(codec, seen), snapshots=snaps,
                          title="GPT on pydoc_data.topics: a line of validation text")
    (out / "samples.txt").write_text(f"before training:\n{before}\n\nafter training:\n{after}\n")
    common.save_checkpoint(out, model)
    seconds = time.perf_counter() - t_start
    common.write_metrics(out, val_loss=history[-1][2], train_loss=history[-1][1],
                         val_loss_initial=history[0][2], parameters=n_params,
                         steps=cfg.steps, train_seconds=train_seconds,
                         generate_seconds_cache=t_cache, generate_seconds_no_cache=t_full,
                         cache_speedup=t_full / t_cache, cache_same_tokens=int(same),
                         seconds=seconds)
    common.summary(f"GPT ({n_params:,} parameters): validation loss {history[-1][2]:.4f} "
                   f"nats/char after {cfg.steps} steps in {train_seconds:.0f} s; "
                   f"KV cache {t_full / t_cache:.1f}x faster generation")
    return {"losses": [h[2] for h in history], "history": history}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
