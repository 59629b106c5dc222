"""Bahdanau attention reads dates: "sat 21 nov 2026", "November 21, 2026", "21.11.26" -> 2026-11-21.

    python demos/dates.py            # the full run: >= 99% exact match on 2,000 unseen dates
    python demos/dates.py --quick    # a short run (the test suite's smoke test)

A character-level GRU encoder-decoder with additive attention (Bahdanau et al., 2015) translates
dates written by people, in 17 formats, into ISO 8601 (YYYY-MM-DD):

    "Sat, 21 Nov 2026" -> embedding -> bidirectional GRU -> h_1 .. h_S    (one per character)
    decoder step t: a_t = softmax_j(v^T tanh(W s_{t-1} + U h_j)),   c_t = sum_j a_tj h_j
                    s_t = GRU([emb(y_{t-1}); c_t], s_{t-1}),    y_t = argmax W_out [s_t; c_t; ..]

The attention weights a_t say which source characters the decoder reads to write output character
t: the alignment picture. To write the year it looks at the year; for the month it looks at "Nov"
or "11", wherever the format puts it -- the picture shows the model found the date's parts.

The formats never mix day-month and month-day orders with the same separator, so every input has
one reading: '/' is month/day/year (US) or year/month/day, '.' is day.month.year (Europe), '-'
is day-Mon-year. Two-digit years follow the POSIX rule of strptime's %y: 69-99 -> 1969-1999,
00-68 -> 2000-2068, which is why dates run from 1969 to 2068. Within a format people vary: '5' or
'05', 'Sep' or 'Sept', 'Nov' or 'Nov.', lower, Title or UPPER case -- so do the examples.

Held out: 2,000 dates (each in a random format) are drawn first and never appear in training, in
any format; training draws fresh (date, format) pairs from the other 34,525 dates every epoch.

Writes runs/dates/: alignment_*.svg (attention of test examples), loss.svg, metrics.json
(exact = whole date right, per-format exact matches) and checkpoint.safetensors.
"""
import datetime
import random
import time

import common

import tinyattn as ta
from tinyattn import nn, optim, viz
from tinyattn.nn import functional as F
from tinyattn.nn.seq2seq import pad_sequences

FIRST, LAST = datetime.date(1969, 1, 1), datetime.date(2068, 12, 31)
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(n):
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 22 -> '22nd'."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{({1: 'st', 2: 'nd', 3: 'rd'}).get(n % 10, 'th')}"


# Each format: (name, template); the examples are Saturday 21 November 2026. The fields:
#   {d} {m}   day, month: 21, 11 (sometimes zero-padded: 05)   {dd} {mm}  always two digits
#   {yyyy} {yy}  2026, 26        {nth}  21st                   {Month} {Mon}  November, Nov
#   {Weekday} {Dow}  Saturday, Sat
FORMATS = [
    ("rfc2822", "{Dow}, {d} {Mon} {yyyy}"),              # Sat, 21 Nov 2026 (e-mail headers)
    ("dow_d_mon_y", "{Dow} {d} {Mon} {yyyy}"),           # Sat 21 Nov 2026
    ("month_d_y", "{Month} {d}, {yyyy}"),                # November 21, 2026
    ("dow_month_d_y", "{Weekday}, {Month} {d}, {yyyy}"),  # Saturday, November 21, 2026
    ("d_month_y", "{d} {Month} {yyyy}"),                 # 21 November 2026
    ("nth_of_month_y", "{nth} of {Month} {yyyy}"),       # 21st of November 2026
    ("the_nth_of_month_y", "the {nth} of {Month}, {yyyy}"),  # the 21st of November, 2026
    ("month_nth_y", "{Month} {nth}, {yyyy}"),            # November 21st, 2026
    ("mon_d_y", "{Mon} {d}, {yyyy}"),                    # Nov 21, 2026 / Nov. 21, 2026
    ("dd_mon_yyyy", "{dd}-{Mon}-{yyyy}"),                # 21-Nov-2026
    ("d_mon_yy", "{d} {Mon} '{yy}"),                     # 21 Nov '26
    ("dd.mm.yyyy", "{dd}.{mm}.{yyyy}"),                  # 21.11.2026 (day first: Europe)
    ("dd.mm.yy", "{dd}.{mm}.{yy}"),                      # 21.11.26
    ("m/d/yyyy", "{m}/{d}/{yyyy}"),                      # 11/21/2026 (month first: US)
    ("mm/dd/yy", "{mm}/{dd}/{yy}"),                      # 11/21/26
    ("yyyy/mm/dd", "{yyyy}/{mm}/{dd}"),                  # 2026/11/21
    ("yyyymmdd", "{yyyy}{mm}{dd}"),                      # 20261121
]
# ISO itself is not a source format: copying would teach nothing.


def write_date(date, fmt, rng):
    """A date in format number fmt, with the small variations people make: zero-padded or not,
    'Sept' or 'Sep', 'Nov.' or 'Nov', and lower, Title or UPPER case."""
    template = FORMATS[fmt][1]
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    mon = "Sept" if date.month == 9 and rng.random() < 0.3 else month[:3]
    if "{Mon} " in template and rng.random() < 0.25:
        mon += "."
    pad = rng.random() < 0.2
    text = template.format(
        d=f"{date.day:02d}" if pad else str(date.day),
        m=f"{date.month:02d}" if pad else str(date.month),
        dd=f"{date.day:02d}", mm=f"{date.month:02d}", yyyy=str(date.year),
        yy=f"{date.year % 100:02d}", nth=ordinal(date.day), Month=month, Mon=mon,
        Weekday=weekday, Dow=weekday[:3])
    style = rng.random()
    if style < 0.3:
        text = text.lower()
    elif style < 0.4:
        text = text.upper()
    return text


# Vocabularies: 0 pads, 1 starts the decoder input (bos), 2 ends the output (eos).
SPECIALS = ["<pad>", "<bos>", "<eos>"]
SRC_CHARS = SPECIALS + list(" ',-./0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
TGT_CHARS = SPECIALS + list("-0123456789")
SRC_ID = {c: i for i, c in enumerate(SRC_CHARS)}
TGT_ID = {c: i for i, c in enumerate(TGT_CHARS)}


def split_dates(seed, n_test):
    """All dates of the range, shuffled: the first n_test are held out, the rest train."""
    days = (LAST - FIRST).days + 1
    dates = [FIRST + datetime.timedelta(days=k) for k in range(days)]
    random.Random(seed).shuffle(dates)
    return dates[n_test:], dates[:n_test]


def sample(dates, n, rng):
    """n (source text, ISO text, format number) triples for random dates of `dates`."""
    out = []
    for _ in range(n):
        date = rng.choice(dates)
        fmt = rng.randrange(len(FORMATS))
        out.append((write_date(date, fmt, rng), date.isoformat(), fmt))
    return out


def encode(texts, ids):
    return [[ids[c] for c in t] for t in texts]


def batches(examples, batch_size, rng):
    """Mini-batches of examples of similar source length (less padding, faster steps) in random
    order: sort by length within chunks of 16 batches, cut, shuffle the batches."""
    examples = list(examples)
    rng.shuffle(examples)
    chunk = 16 * batch_size
    out = []
    for i in range(0, len(examples), chunk):
        part = sorted(examples[i:i + chunk], key=lambda e: len(e[0]))
        out += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(out)
    return out


def tensors(batch):
    src, lengths = pad_sequences(encode([e[0] for e in batch], SRC_ID))
    tgt, _ = pad_sequences(encode([e[1] for e in batch], TGT_ID), bos_idx=1, eos_idx=2)
    return src, lengths, tgt


def train_step(model, optimizer, batch, clip):
    """Teacher forcing: the decoder reads bos + the true date and predicts the date + eos."""
    src, lengths, tgt = tensors(batch)
    logits = model(src, tgt[:, :-1], lengths)  # (B, T, V)
    V = logits.shape[2]
    target = tgt[:, 1:].reshape(-1)
    loss = F.cross_entropy(logits.reshape(-1, V), target, ignore_index=0)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    # every output character right, eos included (the padding of a shorter target never occurs:
    # ISO dates are all 10 characters)
    exact = (logits.argmax(-1) == tgt[:, 1:]).all(-1).float().mean()
    return loss.item(), exact.item()


def translate(model, texts, batch_size=250):
    """Greedy decoding of a list of strings -> list of (output text, Hypothesis)."""
    out = []
    for i in range(0, len(texts), batch_size):
        src, lengths = pad_sequences(encode(texts[i:i + batch_size], SRC_ID))
        for h in model.greedy_decode(src, lengths, max_len=12):
            out.append(("".join(TGT_CHARS[t] for t in h.tokens), h))
    return out


def main(argv=None):
    parser = common.parser("dates", __doc__, resumable=True)
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default 6; quick 5)")
    parser.add_argument("--per-epoch", type=int, default=None,
                        help="fresh training examples per epoch (default 10000; quick 4000)")
    parser.add_argument("--test-size", type=int, default=None,
                        help="held-out dates (default 2000; quick 400)")
    args = parser.parse_args(argv)
    epochs = args.epochs or (5 if args.quick else 6)
    per_epoch = args.per_epoch or (4000 if args.quick else 10000)
    n_test = args.test_size or (400 if args.quick else 2000)
    batch_size, lr, clip = 64, 0.004, 1.0
    out = common.output_dir(args, "dates")

    ta.manual_seed(args.seed)
    rng = random.Random(args.seed)
    train_dates, test_dates = split_dates(args.seed, n_test)
    test = []
    for date in test_dates:  # each held-out date once, in a random format
        fmt = rng.randrange(len(FORMATS))
        test.append((write_date(date, fmt, rng), date.isoformat(), fmt))

    model = nn.Seq2Seq(len(SRC_CHARS), len(TGT_CHARS), embed_size=32, hidden_size=64,
                       attention="bahdanau")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"dates: {len(FORMATS)} formats -> ISO 8601; GRU encoder-decoder with Bahdanau "
          f"attention ({n_params:,} parameters)")
    print(f"train: {epochs} epochs x {per_epoch} fresh examples from {len(train_dates):,} dates; "
          f"test: {len(test)} unseen dates")
    for text, iso, _ in sample(train_dates, 4, random.Random(args.seed + 1)):
        print(f"    {text!r:34} -> {iso}")

    optimizer = optim.Adam(model.parameters(), lr=lr)
    steps_per_epoch = -(-per_epoch // batch_size)
    total = epochs * steps_per_epoch
    # a short warm-up, then a linear decay to 5%: large steps early, a clean finish
    scheduler = optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 100) * max(0.05, 1.0 - s / total))

    # the explorer: three held-out dates in different formats, teacher-forced, at 13 points
    shown = ["dow_month_d_y", "the_nth_of_month_y", "dd.mm.yy", "m/d/yyyy", "d_mon_yy"]
    first = {}
    for i, (_, _, fmt) in enumerate(test):
        first.setdefault(FORMATS[fmt][0], i)
    explored = {}
    for name in [n for n in shown if n in first][:3]:
        text, iso, _ = test[first[name]]
        src, lengths, tgt = tensors([test[first[name]]])
        explored[f"{text} -> {iso}"] = (src, tgt[:, :-1], lengths, list(text),
                                        list(iso) + ["</s>"])

    def alignments():
        return {k: {"weights": common.alignment(model, *v[:3]), "queries": v[4], "keys": v[3]}
                for k, v in explored.items()}

    snap_at, snaps = set(common.snapshot_steps(total)), viz.Snapshots()
    snaps.add(0, alignments())
    start = time.perf_counter()
    losses, train_exact = [], []
    with common.Training(args, out, model=model, optimizer=optimizer, scheduler=scheduler,
                         py_random=rng, state={"losses": losses, "train_exact": train_exact,
                                               "snapshots": snaps.steps}) as run:
        for epoch in run.epochs(epochs):
            epoch_batches = run.order(
                lambda: batches(sample(train_dates, per_epoch, rng), batch_size, rng))
            with run.progress(per_epoch, f"epoch {epoch}/{epochs}") as bar:
                for i in run.batches(len(epoch_batches), 1):
                    batch = epoch_batches[i]
                    loss, exact = train_step(model, optimizer, batch, clip)
                    scheduler.step()
                    if run.step + 1 in snap_at:
                        snaps.add(run.step + 1, alignments())
                    bar.update(len(batch), loss=loss, exact=exact)
                    run.step_done()
            means = bar.means()
            losses.append(means["loss"])
            train_exact.append(means["exact"])
    train_seconds = time.perf_counter() - start

    model.eval()
    results = translate(model, [t[0] for t in test])
    right = [out_text == iso for (out_text, _), (_, iso, _) in zip(results, test)]
    exact = sum(right) / len(right)
    per_format = {}
    for ok, (_, _, fmt) in zip(right, test):
        per_format.setdefault(FORMATS[fmt][0], []).append(ok)
    seconds = time.perf_counter() - start

    print(f"\nheld-out exact match {exact:.2%} ({sum(right)}/{len(right)}); by format:")
    for name, oks in per_format.items():
        print(f"    {name:18} {sum(oks) / len(oks):7.2%}  ({len(oks)})")
    wrong = [(t, o) for ok, t, (o, _) in zip(right, test, results) if not ok]
    for (text, iso, _), got in wrong[:8]:
        print(f"    wrong: {text!r:34} -> {got} (should be {iso})")

    # alignment pictures: one example from each of a few formats, chosen to look different
    printed = False
    for name in shown:
        if name not in first or results[first[name]][1].attention is None:
            continue  # no test date in this format, or the model wrote nothing
        text, (got, hyp) = test[first[name]][0], results[first[name]]
        weights = hyp.attention  # (output chars, source chars), padding already cut off
        rows = [TGT_CHARS[t] for t in hyp.tokens]  # one label per output token
        safe = name.replace("/", "").replace(".", "")
        viz.heatmap(weights, x_labels=text, y_labels=rows, x_name="source",
                    y_name="output", title=f"Bahdanau attention: {text!r} -> {got}",
                    path=out / f"alignment_{safe}.svg")
        if not printed:
            print()
            viz.print_heatmap(weights, x_labels=text, y_labels=rows,
                              title=f"where the decoder looks: {text!r} -> {got}")
            printed = True
    viz.line_chart({"training loss": list(enumerate(losses, 1))}, title="dates: training loss",
                   x_label="epoch", y_label="cross-entropy per character", log_y=True,
                   path=out / "loss.svg")
    common.write_explorer(out, alignments(), snapshots=snaps,
                          title="dates: Bahdanau attention (rows: the character being written)")
    common.save_checkpoint(out, model, epochs=epochs)
    metrics = {"exact": exact, "train_exact": train_exact[-1], "final_loss": losses[-1],
               "seconds": seconds, "train_seconds": train_seconds, "test_dates": len(test),
               "parameters": n_params}
    for name, oks in per_format.items():
        metric = "exact_" + name.replace("/", "").replace(".", "")
        metrics[metric] = sum(oks) / len(oks)
    common.write_metrics(out, **metrics)
    common.summary(f"dates: {exact:.2%} exact match on {len(test):,} held-out dates "
                   f"({len(FORMATS)} formats -> ISO 8601), trained in {train_seconds:.0f} s")
    return {"losses": losses, "exact": exact}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
