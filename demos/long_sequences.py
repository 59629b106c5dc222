"""Why attention was invented: a fixed context vector forgets long inputs, attention does not.

    python demos/long_sequences.py            # three models, about 2 minutes on 2 cores
    python demos/long_sequences.py --quick    # a short run (the test suite's smoke test)
    python demos/long_sequences.py --resume   # after Ctrl-C: on from where it stopped

The task: reverse a sequence of 5 to 40 letters ("k q b r" -> "r b q k"). Three GRU
encoder-decoders of the same size learn it from the same examples, for the same number of steps:

    none      the decoder sees the source only through one fixed vector c, the encoder's final
              state (Cho et al., 2014): s_t = GRU([emb(y_{t-1}); c], s_{t-1}). Every letter of a
              40-letter input has to fit into c.
    bahdanau  additive attention (Bahdanau et al., 2015): at every step the decoder scores every
              encoder output, v^T tanh(W s_{t-1} + U h_j), and reads their softmax-weighted mean.
    luong     multiplicative attention (Luong et al., 2015): scores s_t^T W_a h_j, and the context
              is mixed into the output: h~_t = tanh(W_c [c_t; s_t]).

Accuracy against input length tells the story the papers told: without attention, accuracy falls
as inputs grow longer than the vector can hold; with attention it stays high, because the decoder
can look back at the one source position it needs (here the mirror image of its own position).
The pictures also show the two attentions differ: Luong's weights become a sharp one-hot on the
mirror position, Bahdanau's spread over it and its neighbours -- and both read the right letter.

Writes runs/long_sequences/: accuracy_by_length.svg (the chart), loss.svg (training loss),
attention_*.svg (where the attention models look on a 40-letter input), metrics.json (letter
accuracy and exact match per length bucket, e.g. acc_none_len_31_40) and checkpoint.safetensors
(the three models).
"""
import random
import time

import common

import tinyattn as ta
from tinyattn import nn, optim, viz
from tinyattn.nn import functional as F
from tinyattn.nn.seq2seq import pad_sequences

LETTERS = "abcdefghijklmnopqrstuvwxyz"
OFFSET = 3  # token ids 0, 1, 2 are pad, bos, eos; letter k is token k + OFFSET
VOCAB = OFFSET + len(LETTERS)
MIN_LEN, MAX_LEN = 5, 40
BUCKETS = [(5, 10), (11, 20), (21, 30), (31, 40)]
KINDS = ["none", "bahdanau", "luong"]


def make_example(rng):
    n = rng.randint(MIN_LEN, MAX_LEN)
    src = [rng.randrange(len(LETTERS)) + OFFSET for _ in range(n)]
    return src, src[::-1]


def text(tokens):
    return "".join(LETTERS[t - OFFSET] if t >= OFFSET else "?" for t in tokens)


def batches(examples, batch_size, rng):
    """Mini-batches of similar lengths (sort within chunks of 16 batches) in random order, as
    lists of indices into `examples`: a batch of 40-letter inputs padded from 5 would spend
    most of its steps on padding."""
    chunk = 16 * batch_size
    out = []
    for i in range(0, len(examples), chunk):
        part = sorted(range(i, min(i + chunk, len(examples))), key=lambda j: len(examples[j][0]))
        out += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(out)
    return out


def train_step(model, optimizer, batch, clip):
    src, lengths = pad_sequences([e[0] for e in batch])
    tgt, _ = pad_sequences([e[1] for e in batch], bos_idx=1, eos_idx=2)
    logits = model(src, tgt[:, :-1], lengths)  # (B, T, V), teacher forcing
    target = tgt[:, 1:].reshape(-1)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), target, ignore_index=0)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    # teacher-forced accuracy over the real (non-padding) target tokens
    real = target != 0
    hits = ((logits.reshape(-1, VOCAB).argmax(-1) == target) & real).sum().item()
    return loss.item(), hits / real.sum().item()


def make_model(kind):
    return nn.Seq2Seq(VOCAB, VOCAB, embed_size=32, hidden_size=64, attention=kind)


def train(run, kind, data, epochs, batch_size, lr, seed, on_step=None):
    """Train one model on `data` (the same examples for every kind): one stage of `run`
    (common.Training), from the step a checkpoint stopped at, if any. Returns (model, losses).
    on_step(model, step) runs before the first step and after every step."""
    ta.manual_seed(seed)  # all three start from the same encoder weights
    model = make_model(kind)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    rng = random.Random(seed)
    per_epoch = -(-len(data) // batch_size)
    total = epochs * per_epoch
    # warm up for 50 steps (fewer in a short run), then decay linearly to 5% of lr
    warmup = min(50, total // 10 + 1)
    scheduler = optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.05, 1.0 - s / total))
    losses = []
    run.begin(model=model, optimizer=optimizer, scheduler=scheduler, py_random=rng,
              state={"losses": losses})
    if on_step is not None and run.step == 0:
        on_step(model, 0)
    for epoch in run.epochs(epochs):
        order = run.order(lambda: batches(data, batch_size, rng))
        with run.progress(len(data), f"{kind:8} epoch {epoch}/{epochs}") as bar:
            for i in run.batches(len(order), 1):
                batch = [data[j] for j in order[i]]
                loss, acc = train_step(model, optimizer, batch, clip=1.0)
                scheduler.step()
                if on_step is not None:
                    on_step(model, run.step + 1)
                bar.update(len(batch), loss=loss, acc=acc)
                run.step_done()
        losses.append(bar.means()["loss"])
    return model, losses


def evaluate(model, test, batch_size=200):
    """Greedy decoding; per example (length, letters right at their position / length, exact)."""
    model.eval()
    out = []
    for i in range(0, len(test), batch_size):
        part = test[i:i + batch_size]
        src, lengths = pad_sequences([e[0] for e in part])
        hyps = model.greedy_decode(src, lengths, max_len=MAX_LEN + 2)
        for (s, want), h in zip(part, hyps):
            right = sum(a == b for a, b in zip(h.tokens, want))
            out.append((len(s), right / len(want), h.tokens == want, h))
    return out


def main(argv=None):
    parser = common.parser("long_sequences", __doc__, resumable=True)
    parser.add_argument("--epochs", type=int, default=None, help="epochs per model (default 6)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="training sequences (default 8000)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.005)
    args = parser.parse_args(argv)
    epochs = args.epochs or (4 if args.quick else 6)
    n_train = args.train_size or (1500 if args.quick else 8000)
    per_length = 4 if args.quick else 20
    out = common.output_dir(args, "long_sequences")

    rng = random.Random(args.seed)
    data = [make_example(rng) for _ in range(n_train)]
    # the test set: per_length fresh sequences of every length
    test = []
    for n in range(MIN_LEN, MAX_LEN + 1):
        for _ in range(per_length):
            src = [rng.randrange(len(LETTERS)) + OFFSET for _ in range(n)]
            test.append((src, src[::-1]))
    print(f"reverse {MIN_LEN}-{MAX_LEN} letters, e.g. {text(data[0][0])} -> {text(data[0][1])}")
    print(f"{n_train} training sequences x {epochs} epochs per model; {len(test)} test sequences "
          f"({per_length} per length)")

    # the explorer: a 30-letter test sequence, teacher-forced, at 13 points of each training
    ex_src = next(s for s, _ in test if len(s) == min(30, MAX_LEN))
    ex = pad_sequences([ex_src])
    ex_tgt, _ = pad_sequences([ex_src[::-1]], bos_idx=1, eos_idx=2)
    ex_in = (ex[0], ex_tgt[:, :-1], ex[1])
    snaps = viz.Snapshots()
    snap_at = set(common.snapshot_steps(epochs * len(batches(data, args.batch_size,
                                                             random.Random(0)))))

    def explored(kind, model):
        return {f"{kind.capitalize()} attention": {
            "weights": common.alignment(model, *ex_in), "keys": list(text(ex_src)),
            "queries": list(text(ex_src[::-1])) + ["</s>"]}}

    def snapshot(kind):
        if kind == "none":
            return None
        return lambda model, step: step in snap_at and snaps.add(step, explored(kind, model))

    start = time.perf_counter()
    models, losses, results, seconds, weights = {}, {}, {}, {}, {}
    # one run of three stages: Ctrl-C saves where it was, --resume goes on from there (the
    # models finished before it are not trained again: their weights and results are saved)
    with common.Training(args, out, state={"weights": weights, "losses": losses,
                                           "seconds": seconds, "snapshots": snaps.steps}) as run:
        for kind in run.stages(KINDS):
            t0 = time.perf_counter()
            models[kind], losses[kind] = train(run, kind, data, epochs, args.batch_size,
                                               args.lr, args.seed, snapshot(kind))
            weights[kind] = models[kind].state_dict()
            results[kind] = evaluate(models[kind], test)
            seconds[kind] = time.perf_counter() - t0
            acc = sum(r[1] for r in results[kind]) / len(test)
            print(f"{kind}: letter accuracy {acc:.1%} on the test set ({seconds[kind]:.0f} s)\n")
    for kind in KINDS:      # finished before a --resume: evaluated with the weights it saved
        if kind not in models:
            models[kind] = make_model(kind)
            models[kind].load_state_dict(weights[kind])
            results[kind] = evaluate(models[kind], test)
    total_seconds = time.perf_counter() - start

    metrics = {"seconds": total_seconds}
    print(f"{'letter accuracy':16}" + "".join(f"{lo:>5}-{hi:<5}" for lo, hi in BUCKETS))
    for kind in KINDS:
        row = []
        for lo, hi in BUCKETS:
            sel = [r for r in results[kind] if lo <= r[0] <= hi]
            acc = sum(r[1] for r in sel) / len(sel)
            metrics[f"acc_{kind}_len_{lo}_{hi}"] = acc
            metrics[f"exact_{kind}_len_{lo}_{hi}"] = sum(r[2] for r in sel) / len(sel)
            row.append(acc)
        metrics[f"acc_{kind}"] = sum(r[1] for r in results[kind]) / len(test)
        metrics[f"seconds_{kind}"] = seconds[kind]
        print(f"{kind:16}" + "".join(f"{a:^11.1%}" for a in row))

    series = {}
    for kind in KINDS:
        by_len = {}
        for n, acc, _, _ in results[kind]:
            by_len.setdefault(n, []).append(acc)
        label = "no attention (fixed context)" if kind == "none" else f"{kind} attention"
        series[label] = [(n, sum(v) / len(v)) for n, v in sorted(by_len.items())]
    viz.line_chart(series, title="reversing sequences: accuracy against input length",
                   x_label="input length (letters)", y_label="letters right (greedy decoding)",
                   y_min=0.0, y_max=1.0, path=out / "accuracy_by_length.svg")
    viz.line_chart({("no attention" if k == "none" else k): list(enumerate(losses[k], 1))
                    for k in KINDS}, title="reversing sequences: training loss", x_label="epoch",
                   y_label="cross-entropy per letter", log_y=True, path=out / "loss.svg")
    longest = max(range(len(test)), key=lambda i: len(test[i][0]))
    for kind, name in (("bahdanau", "Bahdanau"), ("luong", "Luong")):
        _, _, _, hyp = results[kind][longest]
        if hyp.attention is None:
            continue
        src = text(test[longest][0])
        viz.heatmap(hyp.attention, x_labels=src, y_labels=text(hyp.tokens),
                    x_name="source", y_name="output", path=out / f"attention_{kind}.svg",
                    title=f"{name} attention reversing {len(src)} letters")
    # a short example fits in a terminal
    short = next(i for i in range(len(test)) if len(test[i][0]) == 12)
    hyp = results["bahdanau"][short][3]
    if hyp.attention is not None:
        src = text(test[short][0])
        print()
        viz.print_heatmap(hyp.attention, x_labels=src, y_labels=text(hyp.tokens),
                          title=f"Bahdanau attention: {src} -> {text(hyp.tokens)}")
    common.write_explorer(out, {**explored("bahdanau", models["bahdanau"]),
                                **explored("luong", models["luong"])}, snapshots=snaps,
                          title=f"reversing {len(ex_src)} letters: Bahdanau and Luong attention")
    common.save_checkpoint(out, models["bahdanau"],
                           **{f"{k}_model": models[k].state_dict() for k in ("none", "luong")})
    common.write_metrics(out, **metrics)
    common.summary(
        f"reversing 31-40 letters: no attention {metrics['acc_none_len_31_40']:.1%}, Bahdanau "
        f"{metrics['acc_bahdanau_len_31_40']:.1%}, Luong {metrics['acc_luong_len_31_40']:.1%} "
        f"of letters right; three models in {total_seconds:.0f} s")
    return {"losses": losses["bahdanau"], **{f"losses_{k}": losses[k] for k in KINDS},
            "metrics": metrics}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
