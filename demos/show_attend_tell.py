"""Show, Attend and Tell on scenes this script draws: a CNN reads the image, a GRU writes the caption,
and at every word the decoder chooses where on the CNN's feature grid to look.

Each scene is a 32x32 RGB canvas, drawn here in pure Python: 2-4 coloured shapes (circle, square,
triangle, cross; small or large; red, green, blue, yellow) at random places on a noisy background
with clutter, and a caption that names them from left to right:

    "large red circle , small blue square , small green triangle"

The generator knows every object's box, so where the model looked can be *scored*: for each object
word, does the grid cell with the highest attention lie inside (or touch) that object's box?

Three models share the encoder and decoder and differ only in the context z_t the decoder reads
(chapter 8 of the tour, docs/08-visual-attention.md):

- soft attention:  z_t = beta_t * sum_i alpha_{t,i} a_i, trained by back-propagation of the caption's
  cross-entropy, plus the "doubly stochastic" penalty sum_i (1 - sum_t alpha_{t,i})^2;
- hard attention:  z_t = a_{s_t} with the cell s_t ~ Categorical(alpha_t) sampled at training
  (REINFORCE with a moving-average baseline and an entropy bonus) and the argmax cell at test;
- no attention:    z_t = the mean of the grid, the same at every step (the baseline).

    python demos/show_attend_tell.py [--quick] [--seed N] [--out DIR] [--steps N]
                                     [--models soft,hard,none] [--resume]

Writes OUT/metrics.json, OUT/captions_<n>.svg (one panel per word, soft and hard side by side),
OUT/curves.svg (caption accuracy and localisation during training) and OUT/checkpoint.safetensors
(the state_dict of each model, under its name).
"""
import math
import random
import time

import common

import tinyattn as ta
import tinyattn.nn.functional as F
from tinyattn import nn, optim, viz

SIZE = 32          # canvas side, pixels
GRID = 8           # the encoder's feature grid is GRID x GRID (each cell covers 4 x 4 pixels)
CELL = SIZE // GRID
SHAPES = ("circle", "square", "triangle", "cross")
COLOURS = {"red": (0.92, 0.18, 0.15), "green": (0.15, 0.78, 0.22), "blue": (0.2, 0.38, 0.98),
           "yellow": (0.95, 0.86, 0.12)}
SIZES = {"small": (5, 6), "large": (9, 10)}
VOCAB = ["<pad>", "<bos>", "<eos>", ","] + list(SIZES) + list(COLOURS) + list(SHAPES)
PAD, BOS, EOS, COMMA = 0, 1, 2, 3
WORD = {w: i for i, w in enumerate(VOCAB)}
MAX_OBJECTS = 4
MAX_LEN = 4 * MAX_OBJECTS   # words + commas + <eos>


# ---------------------------------------------------------------------------- the scenes


def _inside(shape, s, dx, dy):
    """Is pixel (dx, dy) of an s x s box part of the shape?"""
    if shape == "square":
        return True
    if shape == "circle":
        r = s / 2
        return (dx + 0.5 - r) ** 2 + (dy + 0.5 - r) ** 2 <= r * r
    if shape == "triangle":        # pointing up: row dy is (dy + 1) / s of the width, centred
        half = (dy + 1) * s / (2 * s)
        return abs(dx + 0.5 - s / 2) <= half
    t = max(1, s // 3)             # cross: a bar of thickness t each way
    lo = (s - t) // 2
    return lo <= dx < lo + t or lo <= dy < lo + t


def scene(rng, n_objects=None):
    """(pixels, objects): pixels a list of 3*SIZE*SIZE floats (C, H, W order); objects a list of
    dicts {size, colour, shape, box=(x0, y0, x1, y1) inclusive}, left to right."""
    n = n_objects or rng.randint(2, MAX_OBJECTS)
    objects = []
    while len(objects) < n:
        size = rng.choice(list(SIZES))
        s = rng.choice(SIZES[size])
        x0, y0 = rng.randint(0, SIZE - s), rng.randint(0, SIZE - s)
        box = (x0, y0, x0 + s - 1, y0 + s - 1)
        # a pixel of space around each object, and centres at least 2 pixels apart across, so
        # that "left to right" is never a coin toss
        if any(box[0] <= o["box"][2] + 1 and o["box"][0] <= box[2] + 1 and box[1] <= o["box"][3]
               + 1 and o["box"][1] <= box[3] + 1 for o in objects):
            continue
        if any(abs((box[0] + box[2]) - (o["box"][0] + o["box"][2])) < 4 for o in objects):
            continue
        objects.append(dict(size=size, colour=rng.choice(list(COLOURS)),
                            shape=rng.choice(SHAPES), box=box))
    objects.sort(key=lambda o: o["box"][0] + o["box"][2])
    base = [0.08 + 0.06 * rng.random() for _ in range(3)]
    img = [[base[c]] * (SIZE * SIZE) for c in range(3)]
    for _ in range(rng.randint(2, 5)):   # clutter: dim specks of any colour
        x, y = rng.randrange(SIZE), rng.randrange(SIZE)
        for c in range(3):
            img[c][y * SIZE + x] = 0.15 + 0.3 * rng.random()
    for o in objects:
        x0, y0, x1, _ = o["box"]
        s = x1 - x0 + 1
        rgb = [min(1.0, max(0.0, v + rng.uniform(-0.08, 0.08))) for v in COLOURS[o["colour"]]]
        for dy in range(s):
            for dx in range(s):
                if _inside(o["shape"], s, dx, dy):
                    for c in range(3):
                        img[c][(y0 + dy) * SIZE + x0 + dx] = rgb[c]
    return img[0] + img[1] + img[2], objects


def caption_words(objects):
    """'large red circle , small blue square': the objects left to right."""
    words = []
    for k, o in enumerate(objects):
        words += ([","] if k else []) + [o["size"], o["colour"], o["shape"]]
    return words


def dataset(n, seed, noise=0.06):
    """n scenes: images (n, 3, SIZE, SIZE) with Gaussian pixel noise, captions (n, MAX_LEN + 1)
    token ids (<bos> words <eos> <pad>...), and each scene's objects."""
    rng = random.Random(seed)
    pixels, tokens, objects = [], [], []
    for _ in range(n):
        img, objs = scene(rng)
        ids = [BOS] + [WORD[w] for w in caption_words(objs)] + [EOS]
        pixels += img
        tokens.append(ids + [PAD] * (MAX_LEN + 1 - len(ids)))
        objects.append(objs)
    images = ta.tensor(pixels).view(n, 3, SIZE, SIZE)
    images = images + noise * ta.randn(n, 3, SIZE, SIZE, generator=ta.Generator(seed))
    return images, ta.tensor(tokens), objects


def word_objects(objects):
    """For each caption position (after <bos>), the index of the object the word names, or -1
    for commas and <eos>."""
    out = []
    for k in range(len(objects)):
        out += ([-1] if k else []) + [k, k, k]
    return out + [-1]


# ---------------------------------------------------------------------------- the model


class Encoder(nn.Module):
    """(B, 3, 32, 32) image -> (B, 64, D) annotation vectors a_i, one per cell of an 8x8 grid.

    Three 3x3 convolutions (two followed by 2x2 max pooling); a cell's receptive field is 18
    pixels, enough to see a whole object. A learned embedding of each cell's position is added,
    so the decoder can tell left from right (the caption's order)."""

    def __init__(self, D=64):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, D, 3, padding=1), nn.ReLU())
        self.position = nn.Parameter(ta.randn(1, GRID * GRID, D) * 0.1)

    def forward(self, images):
        grid = self.cnn(images)                                   # (B, D, 8, 8)
        B, D = grid.shape[0], grid.shape[1]
        return grid.view(B, D, GRID * GRID).transpose(1, 2) + self.position   # (B, 64, D)


class Captioner(nn.Module):
    """The decoder of Show, Attend and Tell over the encoder's grid. One step, from word y_{t-1}
    and state h_{t-1}:

        e_{t,i}  = v . tanh(W_a a_i + W_h h_{t-1})          attention scores, one per cell
        alpha_t  = softmax(e_t)                              where to look
        beta_t   = sigmoid(w_b . h_{t-1} + b)                the gate: how much to look
        z_t      = beta_t * sum_i alpha_{t,i} a_i            soft;   beta_t * a_{s_t} hard
        w_t      = beta_t * sum_i alpha_{t,i} p_i            where it looked (p_i: cell i's
                                                             position embedding, part of a_i)
        h_t      = GRU([E y_{t-1}, w_t], h_{t-1})            feed='where' (default)
                   GRU([E y_{t-1}, z_t], h_{t-1})            feed='what' (the paper)
        p(y_t)   = softmax(W_o tanh(W_d [h_t, z_t, E y_{t-1}]))   a deep output, as the paper

    mode: 'soft', 'hard' or 'none' (z_t = the grid's mean: the decoder cannot choose where to look).
    feed: what the decoder's state remembers of each step's look. With the paper's 'what', it
    remembers an object's shape once it has read the object's size and colour, and looks away
    for the third word (the shape words were localised 30% of the time, measured); remembering
    only *where* it looked, it must look at the object again for every word that names it.
    """

    def __init__(self, mode, D=64, E=32, H=128, A=64, feed="where"):
        super().__init__()
        if feed not in ("where", "what"):
            raise ValueError(f"Captioner: feed must be 'where' or 'what', got {feed!r}")
        self.mode, self.feed = mode, feed
        self.encoder = Encoder(D)
        self.embed = nn.Embedding(len(VOCAB), E)
        self.init_h = nn.Linear(D, H)
        self.W_a = nn.Linear(D, A)
        self.W_h = nn.Linear(H, A, bias=False)
        self.v = nn.Linear(A, 1, bias=False)
        self.gate = nn.Linear(H, 1)
        self.cell = nn.GRUCell(E + D, H)
        self.out = nn.Sequential(nn.Linear(H + D + E, H), nn.Tanh(), nn.Linear(H, len(VOCAB)))

    def start(self, images):
        """Encode the images: the grid a (B, 64, D), its mean, W_a a (B, 64, A) and h_0 (B, H)."""
        grid = self.encoder(images)                                 # (B, 64, D)
        mean = grid.mean(1)                                         # (B, D)
        keys = self.W_a(grid) if self.mode != "none" else None      # (B, 64, A)
        return grid, mean, keys, self.init_h(mean).tanh()

    def step(self, grid, mean, keys, h, word, how):
        """One decoder step from the previous word ids (B,) and state h (B, H).

        how: 'soft' (weighted average), 'sample' (a cell drawn from alpha), 'argmax' (the most
        attended cell) or 'mean' (no attention). Returns logits (B, V), the new h, alpha (B, 64)
        (None for 'mean') and, for hard attention, log alpha of the chosen cell (B,) and the
        entropy of alpha (B,)."""
        y = self.embed(word)                                        # (B, E)
        alpha = logp_s = entropy = None
        if how == "mean":
            z = where = mean
        else:
            position = self.encoder.position                        # (1, 64, D)
            e = self.v((keys + self.W_h(h).unsqueeze(1)).tanh()).squeeze(-1)   # (B, 64)
            logp = e.log_softmax(-1)
            alpha = logp.exp()                                      # (B, 64)
            beta = self.gate(h).sigmoid()                           # (B, 1)
            if how == "soft":
                z = (alpha.unsqueeze(1) @ grid).squeeze(1)          # (B, D): sum_i alpha_i a_i
                where = alpha @ position[0]                         # (B, D): sum_i alpha_i p_i
            else:
                if how == "sample":  # Gumbel-max: argmax(log alpha + Gumbel noise) ~ alpha
                    u = ta.rand(*alpha.shape).clamp(1e-9, 1.0)
                    s = (logp.detach() - (-u.log()).log()).argmax(-1)
                else:
                    s = alpha.argmax(-1)
                rows = ta.arange(word.shape[0])
                z = grid[rows, s]                                   # (B, D): a_{s_t}
                where = position[0, s]                              # (B, D): p_{s_t}
                logp_s = logp[rows, s]
                entropy = -(alpha * logp).sum(-1)
            z, where = beta * z, beta * where
        h = self.cell(ta.cat([y, z if self.feed == "what" else where], -1), h)
        return self.out(ta.cat([h, z, y], -1)), h, alpha, logp_s, entropy

    def _how(self, sample, soft_fraction):
        if self.mode == "none":
            return "mean"
        if self.mode == "soft" or (sample and random.random() < soft_fraction):
            return "soft"
        return "sample" if sample else "argmax"

    def forward(self, images, tokens, sample=False, soft_fraction=0.0):
        """Teacher-forced pass over tokens (B, T + 1): logits (B, T, V), alpha (B, T, 64) and,
        for hard attention, log alpha of the chosen cells (B, T) and the entropies (B, T).
        sample=True (hard attention, training) draws each step's cell from alpha_t, except, with
        probability soft_fraction per batch, when it uses the soft context instead. The paper
        does this half of the time to reduce the variance of learning; the demo keeps
        soft_fraction at 1 for the first quarter of training and lowers it to 0 over the second
        quarter. A model that samples from the start mostly reads background cells, learns to
        ignore the context, and then no cell gives a better reward than another (with the fixed
        0.5: 1.5% exact captions after 1,250 steps, measured); a model that first learns where
        to look with soft attention then learns to caption from the one cell it picks (chapter 8
        of the tour has the runs)."""
        grid, mean, keys, h = self.start(images)
        how = self._how(sample, soft_fraction)
        outs = []
        for t in range(tokens.shape[1] - 1):
            logits, h, alpha, logp_s, entropy = self.step(grid, mean, keys, h, tokens[:, t], how)
            outs.append((logits, alpha, logp_s, entropy))
        return tuple(ta.stack(list(xs), 1) if xs[0] is not None else None for xs in zip(*outs))

    @ta.no_grad()
    def caption(self, images):
        """Greedy decoding: token ids (B, MAX_LEN) and attention (B, MAX_LEN, 64) (None without
        attention). Hard attention looks at the argmax cell."""
        grid, mean, keys, h = self.start(images)
        how = self._how(False, 0.0)
        word = ta.full((images.shape[0],), BOS, dtype=ta.int64)
        words, alphas = [], []
        for t in range(MAX_LEN):
            logits, h, alpha, _, _ = self.step(grid, mean, keys, h, word, how)
            word = logits.argmax(-1)
            words.append(word)
            alphas.append(alpha)
        return ta.stack(words, 1), (ta.stack(alphas, 1) if alphas[0] is not None else None)


# ---------------------------------------------------------------------------- training


def step_loss(model, images, tokens, state, ds_weight=0.0, entropy_weight=0.002,
              soft_fraction=0.5):
    """(loss to minimise, the caption's cross-entropy per word, exact-caption accuracy) of one
    batch, teacher forced."""
    target = tokens[:, 1:]                                           # (B, T)
    mask = (target != PAD).to(ta.float32)                            # (B, T)
    hard = model.mode == "hard"
    logits, alpha, logp_s, entropy = model(images, tokens, sample=hard,
                                           soft_fraction=soft_fraction)
    B, T, V = logits.shape
    nll = F.cross_entropy(logits.reshape(B * T, V), target.reshape(B * T), ignore_index=PAD,
                          reduction="none").view(B, T)
    loss = (nll * mask).sum() / mask.sum()
    caption_loss = loss.item()
    if alpha is not None:
        # doubly stochastic attention: over a caption, every cell should be looked at about once
        coverage = (alpha * mask.unsqueeze(-1)).sum(1)               # (B, 64)
        loss = loss + ds_weight * ((1 - coverage) ** 2).sum(1).mean()
    if hard and logp_s is not None:
        # REINFORCE: d/dtheta E[r] = E[(r - b) * d log p(cells)]. The cell drawn at step t cannot
        # change the words before t, so its reward is the log-likelihood of the words from t on
        # (the "reward to go"); b_t, a moving average of it per step, is the baseline. A choice
        # that gave a better rest-of-caption than usual becomes more likely; the entropy bonus
        # keeps the choice open while the model learns.
        logl = -(nll * mask).detach()                                # (B, T)
        T_ = logl.shape[1]
        to_go = logl @ ta.ones(T_, T_).tril()                        # (B, T): sum over t' >= t
        count = mask.sum(0).clamp(min=1)                             # (T,)
        mean = to_go.sum(0) / count
        var = ((to_go - mean) ** 2 * mask).sum(0) / count
        if "baseline" not in state:
            state["baseline"], state["var"] = mean, var
        state["baseline"] = 0.9 * state["baseline"] + 0.1 * mean
        state["var"] = 0.9 * state["var"] + 0.1 * var
        # in units of the reward's running standard deviation, so that the REINFORCE term
        # weighs about as much as the cross-entropy whatever the scale of the rewards
        advantage = (to_go - state["baseline"]) / (state["var"].sqrt() + 1e-3)   # (B, T)
        loss = loss - ((advantage * logp_s + entropy_weight * entropy) * mask).sum() / mask.sum()
    with ta.no_grad():
        exact = ((logits.argmax(-1) == target) | (target == PAD)).all(1).to(ta.float32).mean()
    return loss, caption_loss, exact.item()


def localisation(alpha, objects):
    """Fraction of object words whose highest-attention cell lies inside or touches the box of the
    object the word names. alpha (B, T, 64), teacher forced on the reference caption."""
    hits = total = 0
    best = alpha.argmax(-1).tolist()                                 # (B, T)
    for cells, objs in zip(best, objects):
        for t, k in enumerate(word_objects(objs)):
            if k < 0:
                continue
            r, c = divmod(cells[t], GRID)
            x0, y0, x1, y1 = objs[k]["box"]
            cx0, cy0 = c * CELL, r * CELL
            cx1, cy1 = cx0 + CELL - 1, cy0 + CELL - 1
            hits += cx0 <= x1 + 1 and x0 - 1 <= cx1 and cy0 <= y1 + 1 and y0 - 1 <= cy1
            total += 1
    return hits / max(total, 1)


def evaluate(model, images, tokens, objects, batch=250):
    """(exact-caption accuracy by greedy decoding, localisation, exact by object count,
    generated token lists, attention)."""
    model.eval()
    right, by_count, loc_hits, loc_total, generated, attention = [], {}, 0.0, 0, [], []
    for i in range(0, images.shape[0], batch):
        img, tok, objs = images[i:i + batch], tokens[i:i + batch], objects[i:i + batch]
        out, _ = model.caption(img)
        with ta.no_grad():
            _, alpha, _, _ = model(img, tok)
        for got, ref, o in zip(out.tolist(), tok.tolist(), objs):
            got = got[:got.index(EOS) + 1] if EOS in got else got
            ref = ref[1:ref.index(EOS) + 1]
            right.append(got == ref)
            by_count.setdefault(len(o), []).append(got == ref)
            generated.append(got)
        if alpha is not None:
            loc = localisation(alpha, objs)
            words = sum(3 * len(o) for o in objs)
            loc_hits += loc * words
            loc_total += words
            attention += [a for a in alpha.unbind(0)]
    model.train()
    exact = sum(right) / len(right)
    counts = {k: sum(v) / len(v) for k, v in sorted(by_count.items())}
    return exact, (loc_hits / loc_total if loc_total else None), counts, generated, attention


def train(run, mode, data, test, args, on_eval=None):
    """Train one model: one stage of `run` (common.Training), from the step a checkpoint stopped
    at, if any. Returns (model, history, losses, seconds). on_eval(model, step) runs before the
    first step and at every evaluation."""
    images, tokens, _ = data
    ta.manual_seed(args.seed)
    random.seed(args.seed)
    model = Captioner(mode, feed=args.feed)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    total = args.steps
    scheduler = optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 100) * (0.5 + 0.5 * math.cos(math.pi * s / total)))
    print(f"\n{mode} attention: {sum(p.numel() for p in model.parameters()):,} parameters, "
          f"{total} steps of {args.batch}")
    order = list(range(images.shape[0]))
    rng = random.Random(args.seed)
    state, history, losses = {}, [], []
    # hard attention draws from Python's random module (Captioner._how) and tinyattn's generator
    run.begin(model=model, optimizer=optimizer, scheduler=scheduler, py_random=(rng, random),
              state={"order": order, "reinforce": state, "history": history, "losses": losses})
    start = time.perf_counter()
    every = max(1, total // args.evals)
    per_pass = max(1, len(order) // args.batch)     # batches per shuffled pass over the scenes
    if on_eval is not None and run.step == 0:
        on_eval(model, 0)
    periods = -(-total // every)                    # an evaluation ends each full one
    for k in run.epochs(periods):
        first = (k - 1) * every
        chunk = min(every, total - first)
        with run.progress(chunk * args.batch, f"{mode} {k}/{periods}") as bar:
            for i in run.batches(chunk, 1):
                step = first + i
                if step % per_pass == 0:
                    rng.shuffle(order)
                at = step % per_pass * args.batch
                idx = ta.tensor(order[at:at + args.batch])
                # hard attention: every batch reads the soft context for the first quarter,
                # then fewer and fewer, none in the second half (Captioner.forward)
                soft = min(1.0, max(0.0, 2.0 - 4.0 * step / total))
                loss, caption_loss, exact = step_loss(model, images[idx], tokens[idx], state,
                                                      args.ds_weight, args.entropy_weight, soft)
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                bar.update(args.batch, loss=caption_loss, exact=exact)
                run.step_done()
        if chunk < every:
            continue
        losses.append(bar.means()["loss"])
        n = min(200, test[0].shape[0])
        ex, loc, _, _, _ = evaluate(model, test[0][:n], test[1][:n], test[2][:n])
        history.append((first + chunk, ex, loc))
        if on_eval is not None:
            on_eval(model, first + chunk)
        print(f"    step {first + chunk}: held-out exact {ex:.1%}"
              + (f", localisation {loc:.1%}" if loc is not None else ""), flush=True)
    seconds = time.perf_counter() - start
    return model, history, losses, seconds


# ---------------------------------------------------------------------------- pictures


def words_of(ids):
    return [VOCAB[i] for i in ids if i not in (PAD, BOS)]


def draw_examples(models, test, out, n=3):
    """captions_<k>.svg: each test image, then one panel per generated word with the model's
    attention over the image (Figure 15 of the paper), one row per model."""
    images, _, objects = test
    paths = []
    for k in range(n):
        img = images[k]
        rows = []
        for mode, model in models.items():
            if mode == "none":
                continue
            out_ids, alpha = model.caption(img.unsqueeze(0))
            ids = out_ids[0].tolist()
            ids = ids[:ids.index(EOS) + 1] if EOS in ids else ids
            words = [VOCAB[i] for i in ids]
            rows.append((mode, words, alpha[0, :len(words)].view(len(words), GRID, GRID)))
        path = out / f"captions_{k + 1}.svg"
        truth = " ".join(caption_words(objects[k]))
        viz.image_attention(img, rows, title=f"scene {k + 1}: \u201c{truth}\u201d", path=path)
        paths.append(path)
    return paths


def explored(model, test, n=2):
    """The explorer's groups: the model's attention over each of n test scenes while it reads
    the true caption (teacher-forced: the same words at every point of training)."""
    images, tokens, _ = test
    was_training = model.training
    model.eval()
    with ta.no_grad():
        _, alpha, _, _ = model(images[:n], tokens[:n])              # (n, T, 64)
    model.train(was_training)
    groups = {}
    for k in range(n):
        ids = tokens[k, 1:].tolist()
        words = [VOCAB[i] for i in ids[:ids.index(EOS) + 1]]
        groups[f"scene {k + 1}: {model.mode}"] = {
            "weights": alpha[k, :len(words)], "queries": words, "image": images[k],
            "grid": (GRID, GRID)}
    return groups


def main(argv=None):
    parser = common.parser("show_attend_tell", __doc__, resumable=True)
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps per model (default 1600; quick 60)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="training scenes (default 20000; quick 1000)")
    parser.add_argument("--test-size", type=int, default=None,
                        help="held-out scenes (default 1000; quick 100)")
    parser.add_argument("--models", default="soft,hard,none",
                        help="which models to train, comma-separated (default soft,hard,none)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--ds-weight", type=float, default=0.0,
                        help="weight of the doubly stochastic penalty (default 0: see the "
                             "docstring of step_loss)")
    parser.add_argument("--feed", choices=["where", "what"], default="where",
                        help="what the decoder state gets from each look: where it looked "
                             "(default) or what it saw (the paper); see Captioner")
    parser.add_argument("--entropy-weight", type=float, default=0.002,
                        help="weight of the entropy bonus of hard attention (default 0.002)")
    args = parser.parse_args(argv)
    args.steps = args.steps or (60 if args.quick else 1600)
    args.evals = 3 if args.quick else 6
    n_train = args.train_size or (1000 if args.quick else 20000)
    n_test = args.test_size or (100 if args.quick else 1000)
    modes = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in modes:
        if m not in ("soft", "hard", "none"):
            parser.error(f"--models: unknown model {m!r}; choose from soft, hard, none")
    out = common.output_dir(args, "show_attend_tell")

    start = time.perf_counter()
    data = dataset(n_train, seed=1000 + args.seed)
    test = dataset(n_test, seed=2000 + args.seed)
    print(f"show_attend_tell: {n_train:,} training scenes, {n_test:,} held-out scenes "
          f"(drawn in {time.perf_counter() - start:.1f} s); e.g.")
    for k in range(3):
        print(f"    {' '.join(caption_words(test[2][k]))}")
    viz.print_image(test[0][0], title=" ".join(caption_words(test[2][0])))

    models, metrics, curves, curves_loss, weights, snaps = {}, {}, {}, {}, {}, viz.Snapshots()
    # one run of up to three stages: Ctrl-C saves where it was, --resume goes on from there (the
    # models finished before it are not trained again: their weights and results are saved)
    with common.Training(args, out, state={"weights": weights, "metrics": metrics,
                                           "curves": curves, "curves_loss": curves_loss,
                                           "snapshots": snaps.steps}) as run:
        for mode in run.stages(modes):
            on_eval = None if mode == "none" else (
                lambda m, step: snaps.add(step, explored(m, test)))
            model, history, losses, seconds = train(run, mode, data, test, args, on_eval)
            models[mode], weights[mode] = model, model.state_dict()
            curves_loss.setdefault("first", losses)
            exact, loc, counts, _, _ = evaluate(model, *test)
            name = {"none": "no_attention"}.get(mode, mode)
            metrics[f"exact_{name}"] = exact
            metrics[f"seconds_{name}"] = seconds
            for n_obj, acc in counts.items():
                metrics[f"exact_{name}_{n_obj}_objects"] = acc
            if loc is not None:
                metrics[f"localisation_{mode}"] = loc
            curves[mode] = history
            print(f"{mode}: held-out exact captions {exact:.1%}"
                  + (f", localisation {loc:.1%}" if loc is not None else "")
                  + "; by objects: " + ", ".join(f"{k}: {v:.1%}" for k, v in counts.items())
                  + f"; trained in {seconds:.0f} s")
    for mode in modes:      # in --models order; one finished before a --resume: its saved weights
        models[mode] = models.pop(mode, None) or Captioner(mode, feed=args.feed)
        models[mode].load_state_dict(weights[mode])

    if "soft" in models or "hard" in models:
        paths = draw_examples(models, test, out)
        print(f"pictures: {', '.join(str(p) for p in paths)}")
        shown = models.get("soft") or models.get("hard")
        ids, alpha = shown.caption(test[0][:1])
        ids = ids[0].tolist()
        words = [VOCAB[i] for i in (ids[:ids.index(EOS)] if EOS in ids else ids)]
        t = next((t for t, w in enumerate(words) if w != ","), None)
        if t is not None:
            viz.print_image(test[0][0], overlay=alpha[0, t].view(GRID, GRID),
                            title=f"{shown.mode} attention for {words[t]!r}")
    series = {}
    for mode, history in curves.items():
        series[f"{mode}: exact captions"] = [(s, e) for s, e, _ in history]
        if history and history[0][2] is not None:
            series[f"{mode}: localisation"] = [(s, l) for s, _, l in history]
    viz.line_chart(series, title="show_attend_tell: held-out accuracy during training",
                   x_label="step", y_label="fraction", path=out / "curves.svg")
    if "soft" in models or "hard" in models:
        final = {}
        for k in range(2):   # soft and hard side by side, scene by scene
            for mode in ("soft", "hard"):
                if mode in models:
                    final.update({n: g for n, g in explored(models[mode], test).items()
                                  if n.startswith(f"scene {k + 1}:")})
        common.write_explorer(out, final, snapshots=snaps,
                              title="Show, Attend and Tell: where each word of the caption looked")
    ta.save({mode: model.state_dict() for mode, model in models.items()},
            out / "checkpoint.safetensors")
    metrics["seconds"] = time.perf_counter() - start
    common.write_metrics(out, **metrics)
    parts = [f"{m} {metrics[f'exact_{n}']:.1%}" for m, n in (("soft", "soft"), ("hard", "hard"),
                                                            ("no attention", "no_attention"))
             if f"exact_{n}" in metrics]
    common.summary(f"show_attend_tell: exact captions on {n_test:,} held-out scenes: "
                   + ", ".join(parts) + f" ({metrics['seconds']:.0f} s)")
    # the first model's caption loss per evaluation period (the test suite checks it falls)
    return dict(metrics, losses=curves_loss.get("first", []))


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
