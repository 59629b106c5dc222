"""Attention solves what a bag of words cannot -- but only once it knows where each word is.

    python demos/order_matters.py           # three models, about half a minute
    python demos/order_matters.py --quick   # a smaller version (the test suite runs this)
    python demos/order_matters.py --resume  # after Ctrl-C: on from where it stopped

The task: is a short review positive or negative? Every review holds one positive and one negative
word, and one of them is negated:

    "the soup was good , not bad"            -> positive
    "the soup was bad , not good"            -> negative

Sentences come in such pairs: the same words in another order, with opposite labels (10 templates,
12 positive and 12 negative words, 12 nouns, optional intensifiers, openers and closers: 7 to 19
words). So anything that sees a sentence as a bag (a multiset) of words -- counts, averaged
embeddings -- gives both sentences of a pair the same answer and is right on exactly one: 50%.

Three models, trained the same way on the same sentences:
  (a) bag of words: the mean of the word embeddings -> MLP.
  (b) self-attention WITHOUT positional encoding: embeddings -> one attention block -> the
      maximum over the words -> linear.
  (c) the same, WITH the sinusoidal positional encoding added to the embeddings.

Why (b) must fail: self-attention is permutation-equivariant. Permute the words of a sentence and
its queries, keys and values are permuted the same way, so the attention matrix is the old one with
rows and columns permuted, and every word's output is the same as before, only at the word's new
place. The maximum over the words (like a mean or a sum) forgets places: (b) is a bag of words
too, however well it trains
(the demo checks this: shuffling the words of a sentence leaves (b)'s logits unchanged, up to float
rounding). Adding a vector that depends on the position, (c), breaks the symmetry: what a word
attends to, and what it passes on, now depend on where things are, and the model can learn which
word a "not" applies to.

The held-out test is honest: its sentences pair a positive with a negative word in combinations
never seen in training (every word is seen, but never with that partner), with every template,
filler and length.

Writes runs/order_matters/: attention.svg and attention_swapped.svg (what model (c) attends to in
both sentences of a held-out pair), loss.svg (the three training curves), metrics.json and
checkpoint.safetensors (model (c)).
"""
import math
import random
import time

import common

import tinyattn as ta
from tinyattn import nn, viz
from tinyattn.nn import functional as F

# ============================================================================ the sentences

POSITIVE = ["good", "great", "fine", "nice", "tasty", "fresh", "lovely", "superb", "pleasant",
            "excellent", "wonderful", "brilliant"]
NEGATIVE = ["bad", "awful", "poor", "bland", "stale", "dull", "terrible", "horrible", "boring",
            "nasty", "dreadful", "mediocre"]
NOUNS = ["soup", "film", "hotel", "service", "book", "show", "coffee", "room", "music", "staff",
         "pizza", "concert"]
INTENSIFIERS = ["very", "really", "quite", "so", "truly", "rather"]
OPENERS = [[], [], [], ["honestly", ","], ["to", "be", "fair", ","], ["overall", ","],
           ["i", "think"], ["well", ","]]
CLOSERS = [[], [], [], [",", "i", "would", "say"], ["overall"], ["to", "be", "honest"]]

# A holds (the label is its sentiment), B is negated. Each template read with A and B swapped is
# the other sentence of the pair: the same words, the opposite label.
TEMPLATES = [
    "the N was A , not B",
    "the N was not B , it was A",
    "the N was not B but A",
    "not B at all , the N was A",
    "the N was A rather than B",
    "A and not B : that was the N",
    "the N was A instead of B",
    "far from B , the N was A",
    "i would call the N A , never B",
    "the N ? A . not B",
]

PAD = "<pad>"


def vocabulary():
    words = set(POSITIVE + NEGATIVE + NOUNS + INTENSIFIERS)
    for phrase in OPENERS + CLOSERS + [t.split() for t in TEMPLATES]:
        words.update(w for w in phrase if w not in ("N", "A", "B"))
    return [PAD] + sorted(words)  # index 0 is padding


def sentence(template, noun, held, negated, rng):
    """One sentence as a list of words: the template filled in, with random fillers."""
    words = list(rng.choice(OPENERS))
    for slot in template.split():
        if slot == "N":
            words.append(noun)
        elif slot in "AB":
            if rng.random() < 0.3:
                words.append(rng.choice(INTENSIFIERS))
            words.append(held if slot == "A" else negated)
        else:
            words.append(slot)
    return words + list(rng.choice(CLOSERS))


def split_pairs(rng):
    """The (positive, negative) combinations for training and for the held-out test: a quarter
    held out, chosen so that every word still occurs in training (each positive word loses 3 of
    its 12 partners, and so does each negative word)."""
    shift = rng.randrange(12)
    test = {(p, NEGATIVE[(i + k + shift) % 12]) for i, p in enumerate(POSITIVE) for k in range(3)}
    train = [(p, n) for p in POSITIVE for n in NEGATIVE if (p, n) not in test]
    return train, sorted(test)


def make_pairs(combinations, n_pairs, rng):
    """n_pairs pairs of sentences: (words, label) for both orders of one template, noun, fillers.
    Label 1 = positive."""
    data = []
    for _ in range(n_pairs):
        pos, neg = rng.choice(combinations)
        template, noun = rng.choice(TEMPLATES), rng.choice(NOUNS)
        # the same random fillers for both sentences of the pair: replay the random stream
        state = rng.getstate()
        data.append((sentence(template, noun, pos, neg, rng), 1))
        rng.setstate(state)
        data.append((sentence(template, noun, neg, pos, rng), 0))
    return data


def encode(batch, index):
    """Word lists -> token ids (B, T) padded with 0, and labels (B,)."""
    T = max(len(words) for words, _ in batch)
    ids = [[index[w] for w in words] + [0] * (T - len(words)) for words, _ in batch]
    return ta.tensor(ids, dtype=ta.int64), ta.tensor([y for _, y in batch], dtype=ta.int64)


# ============================================================================ the three models


def masked_mean(x, real):
    """Mean over the real (non-padding) positions: x (B, T, E), real (B, T) bool -> (B, E)."""
    m = real.float().unsqueeze(-1)                                   # (B, T, 1)
    return (x * m).sum(1) / m.sum(1)                                 # (B, E)


def masked_max(x, real):
    """Maximum over the real positions, feature by feature: x (B, T, E), real (B, T) -> (B, E)."""
    padding = real.logical_not().unsqueeze(-1)                       # (B, T, 1)
    return x.masked_fill(padding, -math.inf).amax(1)                 # (B, E)


class BagOfWords(nn.Module):
    """(a) The mean of the word embeddings -> MLP. Sees which words occur, never where."""

    def __init__(self, vocab, d):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, 2))

    def forward(self, tokens):
        x = masked_mean(self.embed(tokens), tokens != 0)             # (B, E)
        return self.mlp(x), None                                     # (B, 2)


class AttentionClassifier(nn.Module):
    """(b) and (c): embeddings (+ positional encoding) -> a self-attention block -> max -> linear.

    The block is a post-norm transformer layer with one head:
        h = LayerNorm(x + SelfAttention(x));   y = LayerNorm(h + FFN(h))
    Padding is masked: no word attends to it, and the maximum is over the real words only. Why
    the maximum rather than the mean: both are blind to order, but with the mean a single word's
    finding is diluted by the length, and (c) trained far less reliably (a plateau of up to 5
    epochs, and 1 seed in 13 stuck below 98%; with the maximum, 14 seeds of 14 reach 99.8%)."""

    def __init__(self, vocab, d, positions):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.positions = nn.PositionalEncoding(d, max_len=64, batch_first=True) if positions \
            else None
        self.attn = nn.SelfAttention(d)
        self.norm1 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
        self.norm2 = nn.LayerNorm(d)
        self.head = nn.Linear(d, 2)

    def forward(self, tokens):
        B, T = tokens.shape
        real = tokens != 0                                           # (B, T)
        x = self.embed(tokens)                                       # (B, T, E)
        if self.positions is not None:
            x = self.positions(x)                                    # (B, T, E) + PE[:T]
        # SelfAttention's mask: True = may attend (as in SDPA); every query, no padded key
        a, weights = self.attn(x, mask=real.view(B, 1, T))           # (B, T, E), (B, T, T)
        h = self.norm1(x + a)                                        # (B, T, E)
        y = self.norm2(h + self.ff(h))                               # (B, T, E)
        return self.head(masked_max(y, real)), weights               # (B, 2), (B, T, T)


# ============================================================================ training


def accuracy(model, data, index, batch_size=256):
    correct = 0
    with ta.no_grad():
        for i in range(0, len(data), batch_size):
            tokens, labels = encode(data[i:i + batch_size], index)
            logits, _ = model(tokens)
            correct += (logits.argmax(-1) == labels).sum().item()
    return correct / len(data)


def shuffled_indices(n, rng):
    """range(n) shuffled: the order of shuffling n sentences, as indices (a small checkpoint)."""
    perm = list(range(n))
    rng.shuffle(perm)
    return perm


def train(run, name, model, train_data, index, epochs, batch_size, lr, seed, on_step=None):
    """Adam on the cross-entropy, the learning rate annealed to 0 along a cosine, one progress
    bar per epoch: one stage of `run` (common.Training), from the step a checkpoint stopped at,
    if any. Returns the mean loss of each epoch. on_step(step) runs before the first step and
    after every step."""
    order = random.Random(seed)
    opt = ta.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(train_data) / batch_size)
    schedule = ta.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    run.begin(model=model, optimizer=opt, scheduler=schedule, py_random=order,
              state={"losses": losses})
    if on_step is not None and run.step == 0:
        on_step(0)
    for epoch in run.epochs(epochs):
        perm = run.order(lambda: shuffled_indices(len(train_data), order))
        with run.progress(len(perm), desc=f"{name} epoch {epoch:2d}/{epochs}") as bar:
            for i in run.batches(len(perm), batch_size):
                tokens, labels = encode([train_data[j] for j in perm[i:i + batch_size]], index)
                logits, _ = model(tokens)
                loss = F.cross_entropy(logits, labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
                schedule.step()
                if on_step is not None:
                    on_step(run.step + 1)
                acc = (logits.argmax(-1) == labels).float().mean().item()
                bar.update(len(labels), loss=loss.item(), acc=acc)
                run.step_done()
        losses.append(bar.means()["loss"])
    return losses


def same_answer_pairs(model, data, index):
    """The fraction of test pairs whose two sentences get the same answer: a bag-of-words model
    answers both alike (and so is right on exactly one), whatever it learned."""
    tokens, _ = encode(data, index)
    with ta.no_grad():
        answers = model(tokens)[0].argmax(-1).tolist()
    return sum(a == b for a, b in zip(answers[0::2], answers[1::2])) / (len(data) // 2)


def shuffle_gap(model, data, index, rng):
    """The largest change of any logit when the words of every sentence are shuffled: ~1e-7
    (float rounding) for a model that is blind to word order."""
    shuffled = []
    for words, label in data:
        words = list(words)
        rng.shuffle(words)
        shuffled.append((words, label))
    with ta.no_grad():
        a = model(encode(data, index)[0])[0].tolist()
        b = model(encode(shuffled, index)[0])[0].tolist()
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def attention_maps(model, pair, index):
    """The (T, T) attention weights of `model` on each sentence of a pair, as lists of rows."""
    tokens, _ = encode(pair, index)                                  # (2, T), same lengths
    with ta.no_grad():
        _, weights = model(tokens)                                   # (2, T, T)
    return weights.tolist()


def distance_from_permuted(first, second, words_first, words_second):
    """max |second - P first P^T|, P swapping the two words that trade places in the pair: 0 for
    a model that is blind to order, which sees the second sentence as the first one shuffled.
    Returns the distance and the row of `second` where it is largest."""
    swapped = [i for i, (a, b) in enumerate(zip(words_first, words_second)) if a != b]
    perm = list(range(len(words_first)))
    perm[swapped[0]], perm[swapped[1]] = swapped[1], swapped[0]
    gaps = [(abs(second[i][j] - first[perm[i]][perm[j]]), i)
            for i in range(len(perm)) for j in range(len(perm))]
    return max(gaps)


def show_attention(models, pair, index, out):
    """Model (c)'s attention on both sentences of a held-out pair, as SVGs and in the terminal,
    and how far each map is from the other one permuted, for (b) and (c). Row = the word that
    attends (the query), column = the word attended to (the key)."""
    model = models["attention with positions"]
    maps = attention_maps(model, pair, index)
    tokens, _ = encode(pair, index)
    with ta.no_grad():
        answers = model(tokens)[0].argmax(-1).tolist()
    for k, ((words, _), weights) in enumerate(zip(pair, maps)):
        title = f'"{" ".join(words)}" -> {"positive" if answers[k] == 1 else "negative"}'
        name = "attention.svg" if k == 0 else "attention_swapped.svg"
        viz.heatmap(weights, x_labels=words, y_labels=words, title=title,
                    x_name="attended word (key)", y_name="attending word (query)",
                    path=out / name)
        print()
        viz.print_heatmap(weights, x_labels=words, y_labels=words,
                          title=f"model (c): {title}  ({out / name})")
    (first, _), (second, _) = pair
    swap = [w for w, v in zip(first, second) if w != v]
    gap_b, _ = distance_from_permuted(*attention_maps(models["attention without positions"],
                                                      pair, index), first, second)
    gap_c, row = distance_from_permuted(*maps, first, second)
    print(f"Each row is where one word looks (it sums to 1). Blind to order, (b) sees the second "
          f"sentence\nas the first one shuffled: its second map is its first with the rows and "
          f"columns of {swap[0]!r}\nand {swap[1]!r} swapped (they differ by {gap_b:.2g}). For (c) "
          f"they differ by up to {gap_c:.2f}", end="")
    if gap_c > 0.1:
        word = second[row]
        row_first = first.index(word) if word in swap else row
        look_first = max(range(len(first)), key=lambda j: maps[0][row_first][j])
        look_second = max(range(len(second)), key=lambda j: maps[1][row][j])
        print(f": the positions\nchanged where the words look. {word!r} looks most at "
              f"{first[look_first]!r} ({maps[0][row_first][look_first]:.2f}) in the first "
              f"sentence,\nat {second[look_second]!r} ({maps[1][row][look_second]:.2f}) in the "
              f"second.")
    else:
        print(": (c) looks at the\nsame words in both, but what it reads there differs: each "
              "word's value carries its position.")
    return gap_b, gap_c


def main(argv=None):
    parser = common.parser("order_matters", __doc__, resumable=True)
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs per model (default 12; 6 with --quick)")
    args = parser.parse_args(argv)
    out = common.output_dir(args, "order_matters")
    start = time.perf_counter()
    epochs = args.epochs or (6 if args.quick else 12)
    n_train, n_test = (3000, 250) if args.quick else (6000, 1000)  # pairs: 2 sentences each

    ta.manual_seed(args.seed)
    rng = random.Random(args.seed)
    words = vocabulary()
    index = {w: i for i, w in enumerate(words)}
    train_pairs, test_pairs = split_pairs(rng)
    train_data = make_pairs(train_pairs, n_train, rng)
    test_data = make_pairs(test_pairs, n_test, rng)
    print(f"order matters: {len(train_data)} training sentences, {len(test_data)} held-out ones "
          f"pairing words never paired in training ({len(words)} words in all). A pair:")
    for sent, label in train_data[:2]:
        print(f"  {' '.join(sent)!r:60} -> {'positive' if label else 'negative'}")

    d = 32
    models = {
        "bag of words": BagOfWords(len(words), d),
        "attention without positions": AttentionClassifier(len(words), d, positions=False),
        "attention with positions": AttentionClassifier(len(words), d, positions=True),
    }
    keys = {"bag of words": "bag_of_words", "attention without positions": "no_positions",
            "attention with positions": "positions"}
    # the shortest held-out pair with a plain "not": the clearest picture, and the explorer's
    k = min(range(0, len(test_data), 2),
            key=lambda i: (("not" not in test_data[i][0]), len(test_data[i][0]), i))
    pair = test_data[k:k + 2]

    def explored(name):
        was_training = models[name].training
        models[name].eval()
        maps = attention_maps(models[name], pair, index)
        models[name].train(was_training)
        return {f"({'b' if 'without' in name else 'c'}) {name}: {' '.join(words)}":
                {"weights": m, "queries": words, "keys": words}
                for (words, _), m in zip(pair, maps)}

    steps = epochs * math.ceil(len(train_data) / 32)
    snap_at, snaps = set(common.snapshot_steps(steps)), viz.Snapshots()
    curves, metrics = {}, {}
    # one run of three stages: Ctrl-C saves where it was, --resume goes on from there (the
    # models finished before it are not trained again: their weights and results are saved)
    with common.Training(args, out, state={"curves": curves, "metrics": metrics,
                                           "snapshots": snaps.steps,
                                           "models": nn.ModuleDict(models)}) as run:
        for name in run.stages(models):
            letter, model = "abc"[list(models).index(name)], models[name]
            n_params = sum(p.numel() for p in model.parameters())
            print(f"\n({letter}) {name}, {n_params:,} parameters")
            t0 = time.perf_counter()
            on_step = None if letter == "a" else (
                lambda step, name=name: step in snap_at and snaps.add(step, explored(name)))
            curves[name] = train(run, f"({letter})", model, train_data, index, epochs, 32, 5e-3,
                                 args.seed, on_step)
            key = keys[name]
            model.eval()
            metrics[f"{key}_test_acc"] = accuracy(model, test_data, index)
            metrics[f"{key}_train_acc"] = accuracy(model, train_data, index)
            metrics[f"{key}_same_answer_pairs"] = same_answer_pairs(model, test_data, index)
            metrics[f"{key}_seconds"] = time.perf_counter() - t0
            print(f"    held-out accuracy {metrics[f'{key}_test_acc']:.1%} (training sentences "
                  f"{metrics[f'{key}_train_acc']:.1%}); both sentences of a pair get the same "
                  f"answer in {metrics[f'{key}_same_answer_pairs']:.0%} of the held-out pairs")
    for model in models.values():   # (one finished before a --resume is in training mode)
        model.eval()

    gap = shuffle_gap(models["attention without positions"], test_data[:200], index,
                      random.Random(args.seed))
    print(f"\nshuffling the words of 200 test sentences changes the logits of (b) by at most "
          f"{gap:.1e}: without positions, attention followed by a maximum sees a bag of words")
    gap_c = shuffle_gap(models["attention with positions"], test_data[:200], index,
                        random.Random(args.seed))
    print(f"and those of (c) by up to {gap_c:.1f}")

    map_gap_b, map_gap_c = show_attention(models, pair, index, out)
    common.write_explorer(out, {**explored("attention with positions"),
                                **explored("attention without positions")}, snapshots=snaps,
                          title="order matters: self-attention on a held-out pair")
    viz.line_chart({name: list(enumerate(c, 1)) for name, c in curves.items()},
                   title="order matters: training loss", x_label="epoch",
                   y_label="cross-entropy (log scale)", log_y=True, path=out / "loss.svg")
    common.save_checkpoint(out, models["attention with positions"], epochs=epochs)
    seconds = time.perf_counter() - start
    common.write_metrics(out, seconds=seconds, no_positions_shuffle_gap=gap,
                         no_positions_map_gap=map_gap_b, positions_map_gap=map_gap_c, **metrics)
    common.summary(f"order matters: held-out accuracy: bag of words "
                   f"{metrics['bag_of_words_test_acc']:.1%}, attention without positions "
                   f"{metrics['no_positions_test_acc']:.1%}, attention with positions "
                   f"{metrics['positions_test_acc']:.1%} ({seconds:.0f} s)")
    return {"losses": curves["attention with positions"], "curves": curves,
            "no_positions_shuffle_gap": gap, "no_positions_map_gap": map_gap_b, **metrics}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
