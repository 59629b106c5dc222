"""The attention explorer: ONE self-contained HTML file that shows what a model attended to.

    from tinyattn import viz
    ex = viz.explorer(model, tokens, "explorer.html", inputs=(src,))    # runs the model once
    ex = viz.explorer({"encoder": weights}, tokens, "explorer.html")     # weights you have
    ex = viz.explorer.from_run("runs/transformer")                       # what a demo saved
    ex                                                                   # in Jupyter: inline

The page needs no network and no server: its script, styles and data are inside it, so it opens
from file:// and can be mailed. In it: a tab per attention kind (encoder self-, decoder self-,
cross-attention, an RNN's alignments, attention over an image's grid); a layers x heads grid of
thumbnails; a head view with lines from each query token to the keys it weighs (bertviz's picture)
beside the weights and the pre-softmax scores q.k/sqrt(d) with the mask; hover a token to see what
it attends to (a query) or what attends to it (a key), click to pin; a slider over the snapshots a
demo saved during training (the attention forming, step by step); "export SVG" of the view.

Groups (what `source` may be, besides a Module):
    {name: weights}   weights (layers, heads, T, S), (heads, T, S) or (T, S): a Tensor or lists,
                      or a list of per-layer (heads, T, S)
    {name: {"weights": ..., "scores": ..., "mask": ..., "queries": [...], "keys": [...],
            "image": (3, H, W), "grid": (h, w)}}     scores like weights; mask (T, S) or
                      broadcastable to the weights, True / -inf = may not attend
tokens: one list for queries and keys (self-attention); a pair (source, target), which labels
encoder groups with the source, decoder self-attention with the target and cross-attention with
target queries and source keys; a dict {group name: list or (queries, keys)}; or per group
("queries" / "keys" in its dict).

Storage (each block zlib-compressed, then base64): each weight is one byte, round(255 * sqrt(w)) (error under 0.004 near 1 and far smaller
near 0, where long rows put most weights); scores one byte each, scaled per head between their
smallest and largest value; masks one bit, each distinct mask stored once (a causal mask shared by
every head costs T*S/8 bytes in all). Masked weights are 0 and compress to almost nothing, so a
6-layer, 6-head, 256-token causal model takes about 2 MB of weights and as much again of scores.
"""
import base64
import json
import math
import os
import zlib
from pathlib import Path

from ..autograd import no_grad
from ..nn.attention import MultiheadAttention
from .image import _as_rgb, png_bytes

_PAGE = Path(__file__).with_name("explorer.js")


# ------------------------------------------------------------------------------ inputs

def _tolist(x):
    if hasattr(x, "detach"):
        x = x.detach()
    return x.tolist() if hasattr(x, "tolist") else x


def _depth(x):
    d = 0
    while isinstance(x, (list, tuple)):
        if not x:
            return d + 1
        x, d = x[0], d + 1
    return d


def _as_4d(who, x):
    """weights / scores -> nested lists (layers, heads, T, S) of floats."""
    if isinstance(x, (list, tuple)) and x and hasattr(x[0], "shape"):  # list of per-layer tensors
        x = [_tolist(t) for t in x]
    x = _tolist(x)
    d = _depth(x)
    if d == 2:
        x = [[x]]
    elif d == 3:
        x = [x]
    elif d != 4:
        raise ValueError(f"explorer: {who} must be (layers, heads, T, S), (heads, T, S) or (T, S);"
                         f" got {d} dimension(s)")
    L, H = len(x), len(x[0])
    if L == 0 or H == 0 or not x[0][0] or not x[0][0][0]:
        raise ValueError(f"explorer: {who} is empty")
    T, S = len(x[0][0]), len(x[0][0][0])
    for li, layer in enumerate(x):
        if len(layer) != H:
            raise ValueError(f"explorer: {who}: layer {li} has {len(layer)} heads, layer 0 "
                             f"has {H}")
        for hi, m in enumerate(layer):
            if len(m) != T or any(len(r) != S for r in m):
                raise ValueError(f"explorer: {who}: layer {li} head {hi} is not {T} x {S}")
    return x


def _mask_rows(mask, T, S):
    """A (T, S) or broadcastable mask (bool True / float -inf = masked) -> rows of bools."""
    m = _tolist(mask)
    while _depth(m) > 2:                  # (1, 1, T, S), (B=1, T, S): the last two dims matter
        if len(m) != 1:
            raise ValueError("explorer: a mask with leading dimensions must have size 1 there "
                             "(pick the batch item and head first)")
        m = m[0]
    if _depth(m) == 1:                    # (S,): a key padding mask, the same for every query
        m = [m] * T
    if len(m) == 1:
        m = m * T
    if len(m) != T or any(len(r) not in (1, S) for r in m):
        raise ValueError(f"explorer: the mask does not broadcast to {T} x {S}")
    out = []
    for r in m:
        r = r * S if len(r) == 1 else r
        out.append([bool(v) if isinstance(v, bool) else (v == -math.inf) for v in r])
    return out


# -------------------------------------------------------------------------- quantising

def _b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def _packed(data):
    """bytes -> base64 of their zlib stream (the page inflates it with DecompressionStream)."""
    return _b64(zlib.compress(bytes(data), 6))


def quantise_weights(m):
    """(T, S) weights in [0, 1] -> base64 of round(255 sqrt(w)) bytes, row-major."""
    return _packed(min(255, int(math.sqrt(max(0.0, v if v == v else 0.0)) * 255 + 0.5))
                   for r in m for v in r)


def quantise_scores(m):
    """(T, S) scores -> {"q": base64 bytes 0..254 between lo and hi, "lo", "hi"}; 255 marks a
    cell whose score is not finite."""
    finite = [v for r in m for v in r if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    span = (hi - lo) or 1.0
    data = bytearray()
    for r in m:
        for v in r:
            data.append(int((v - lo) / span * 254 + 0.5) if math.isfinite(v) else 255)
    return {"q": _packed(data), "lo": lo, "hi": hi}


def _pack_bits(rows):
    flat = [b for r in rows for b in r]
    out = bytearray((len(flat) + 7) // 8)
    for k, b in enumerate(flat):
        if b:
            out[k >> 3] |= 1 << (k & 7)
    return _packed(out)


# ---------------------------------------------------------------------------- the document

def _labels(who, labels, n):
    if labels is None:
        return [str(i) for i in range(n)]
    labels = labels.split() if isinstance(labels, str) else [str(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"explorer: {who} has {len(labels)} tokens but the weights have {n}")
    return labels


def _tokens_for(name, tokens, T, S):
    """The (queries, keys) labels of a group from the `tokens` argument."""
    if tokens is None:
        return None, None
    if isinstance(tokens, dict):                    # {group name: tokens or (queries, keys)}
        if name not in tokens:
            raise ValueError(f"explorer: tokens has no entry for the group {name!r} (it has "
                             f"{sorted(tokens)})")
        tokens = tokens[name]
        if isinstance(tokens, tuple) and len(tokens) == 2:
            return list(tokens[0]), list(tokens[1])
    if isinstance(tokens, str):
        tokens = tokens.split()
    if isinstance(tokens, tuple) and len(tokens) == 2 and not isinstance(tokens[0], str):
        src, tgt = list(tokens[0]), list(tokens[1])
        low = name.lower()
        if "cross" in low or "multihead_attn" in low:
            return tgt, src
        if "decoder" in low:
            return tgt, tgt
        if "encoder" in low:
            return src, src
        by_len = {len(src): src, len(tgt): tgt}  # otherwise by length (src wins a tie for keys)
        return by_len.get(T, tgt), src if len(src) == S else by_len.get(S)
    return list(tokens), list(tokens)


class _Masks:
    """Distinct mask bitmaps, each stored once."""
    def __init__(self):
        self.table, self.index = [], {}

    def add(self, rows):
        if rows is None or not any(any(r) for r in rows):
            return -1
        key = _pack_bits(rows)
        if key not in self.index:
            self.index[key] = len(self.table)
            self.table.append(key)
        return self.index[key]


def _group(name, spec, tokens, masks, image_cache):
    if not isinstance(spec, dict):
        spec = {"weights": spec}
    unknown = set(spec) - {"weights", "scores", "mask", "queries", "keys", "image", "grid",
                           "layer_names", "head_names"}
    if unknown:
        raise ValueError(f"explorer: group {name!r} has unknown entries {sorted(unknown)}")
    if "weights" not in spec:
        raise ValueError(f"explorer: group {name!r} has no 'weights'")
    w = _as_4d(f"group {name!r} weights", spec["weights"])
    L, H, T, S = len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])
    q_tok, k_tok = _tokens_for(name, tokens, T, S)
    if "image" in spec:
        k_tok = None
    queries = _labels(f"group {name!r} queries", spec.get("queries", q_tok), T)
    keys = _labels(f"group {name!r} keys", spec.get("keys", k_tok), S)
    scores = None
    if spec.get("scores") is not None:
        scores = _as_4d(f"group {name!r} scores", spec["scores"])
        if (len(scores), len(scores[0]), len(scores[0][0]), len(scores[0][0][0])) != (L, H, T, S):
            raise ValueError(f"explorer: group {name!r}: scores are not the weights' shape "
                             f"({L}, {H}, {T}, {S})")
    mask_rows = _mask_rows(spec["mask"], T, S) if spec.get("mask") is not None else None
    g = {"name": str(name), "queries": queries, "keys": keys, "layers": L, "heads": H,
         "layer_names": list(spec.get("layer_names") or [f"layer {i}" for i in range(L)]),
         "head_names": list(spec.get("head_names") or [f"head {i}" for i in range(H)]),
         "weights": [], "scores": [], "masks": []}
    for li in range(L):
        for hi in range(H):
            g["weights"].append(quantise_weights(w[li][hi]))
            s = scores[li][hi] if scores else None
            rows = mask_rows
            if rows is None and s is not None:
                rows = [[v == -math.inf for v in r] for r in s]
            g["scores"].append(quantise_scores(s) if s is not None else None)
            g["masks"].append(masks.add(rows))
    if "image" in spec:
        grid = spec.get("grid")
        if grid is None:
            side = int(round(math.sqrt(S)))
            grid = (side, side)
        gh, gw = int(grid[0]), int(grid[1])
        if gh * gw != S:
            raise ValueError(f"explorer: group {name!r}: a {gh} x {gw} grid has {gh * gw} cells "
                             f"but the weights have {S} keys")
        if "keys" not in spec:        # the cells, by (row, column) of the grid
            g["keys"] = [f"({i // gw}, {i % gw})" for i in range(S)]
        img = spec["image"]
        key = id(img)
        if key not in image_cache:
            rows = _as_rgb("explorer", img)
            image_cache[key] = {"png": _b64(png_bytes(rows)), "width": len(rows[0]),
                                "height": len(rows)}
        g["image"] = dict(image_cache[key], grid=[gh, gw])
    return g


def _groups(source):
    if not hasattr(source, "items"):
        raise TypeError(f"explorer: expected a Module or a mapping {{name: weights}}, got "
                        f"{type(source).__name__}")
    if not source:
        raise ValueError("explorer: no attention groups given")
    return list(source.items())


class Snapshots:
    """Attention weights saved during training, for the explorer's scrubber.

        snaps = viz.Snapshots()
        for step in ...:
            if step % 50 == 0:
                snaps.add(step, {"cross-attention": weights})   # same forms as explorer()
        viz.explorer(final_groups, tokens, "explorer.html", snapshots=snaps)

        snaps.add(step, model, inputs=(src, tgt))            # or a Module run on inputs

    Only weights are kept (quantised at once, so a snapshot costs T*S bytes per head); each
    snapshot's groups must have the final weights' shapes (teacher-force a fixed example)."""

    def __init__(self):
        self.steps = []

    def add(self, step, groups, label=None, *, inputs=None, index=0):
        if hasattr(groups, "named_modules"):
            groups = _model_groups(groups, inputs, index)
        snap = {"step": int(step), "label": label or f"step {int(step)}", "weights": {}}
        for name, spec in groups.items():
            w = _as_4d(f"snapshot {step} group {name!r}",
                       spec["weights"] if isinstance(spec, dict) else spec)
            snap["weights"][str(name)] = [quantise_weights(m) for layer in w for m in layer]
        self.steps.append(snap)
        return self

    def __len__(self):
        return len(self.steps)


def _record_model(model, inputs, index):
    """Run model(*inputs) once in eval mode with every MultiheadAttention keeping its scores,
    mask and weights -> {module path: {"weights", "scores", "mask"}} for batch item `index`."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(m, MultiheadAttention)]
    if not found:
        raise ValueError(f"explorer: {type(model).__name__} has no MultiheadAttention inside; "
                         f"pass the weights as {{name: weights}} instead")
    if inputs is None:
        raise ValueError("explorer: a model needs inputs=(args for its forward)")
    was_training = model.training
    model.eval()
    try:
        for _, m in found:
            m.recorded = {}
        with no_grad():
            model(*(inputs if isinstance(inputs, tuple) else (inputs,)))
        out = {}
        for n, m in found:
            r = m.recorded
            if not r:
                continue
            w, s, mask = r["weights"], r["scores"], r["mask"]     # (B, H, T, S)
            if not 0 <= index < w.shape[0]:
                raise IndexError(f"explorer: index {index} is out of range for a batch of "
                                 f"{w.shape[0]}")
            if mask is not None:
                mask = _first_head_mask((mask + s * 0)[index])      # broadcast, then (T, S)
            out[n] = {"weights": w[index], "scores": s[index], "mask": mask}
        return out
    finally:
        for _, m in found:
            m.recorded = None
        model.train(was_training)


def _first_head_mask(mask):
    """(H, T, S) additive mask -> (T, S) when every head shares it (the usual case)."""
    rows = _tolist(mask)
    if any(r != rows[0] for r in rows[1:]):
        raise ValueError("explorer: per-head masks differ; pass the weights directly")
    return rows[0]


def _model_groups(model, inputs, index):
    """Module paths like transformer.encoder.layers.3.self_attn -> groups 'encoder self_attn'
    with one layer per number in the path."""
    recorded = _record_model(model, inputs, index)
    groups = {}
    for path, r in recorded.items():
        parts = path.split(".")
        nums = [i for i, p in enumerate(parts) if p.isdigit()]
        if nums:
            k = nums[0]
            name = " ".join(p for p in parts[:k] + parts[k + 1:] if p not in ("layers", "h"))
            layer = int(parts[k])
        else:
            name, layer = path or "attention", 0
        name = name.replace("multihead_attn", "cross-attention").replace("self_attn",
                                                                           "self-attention")
        g = groups.setdefault(name, {"weights": [], "scores": [], "masks": [], "order": []})
        g["order"].append(layer)
        g["weights"].append(_tolist(r["weights"]))
        g["scores"].append(_tolist(r["scores"]))
        g["masks"].append(r["mask"])
    out = {}
    for name, g in groups.items():
        order = sorted(range(len(g["order"])), key=g["order"].__getitem__)
        spec = {"weights": [g["weights"][i] for i in order],
                "scores": [g["scores"][i] for i in order],
                "layer_names": [f"layer {g['order'][i]}" for i in order]}
        # scores + (finite) mask, with -inf where masked: one per layer, same mask per head
        masked_scores = []
        for i in order:
            m, s = g["masks"][i], g["scores"][i]
            if m is None:
                masked_scores.append(s)
                continue
            masked_scores.append([[[a + b if b != -math.inf and b is not True else -math.inf
                                    for a, b in zip(sr, mr)] for sr, mr in zip(head, m)]
                                  for head in s])
        spec["scores"] = masked_scores
        out[name] = spec
    return out


class Explorer:
    """The explorer page: `.html()` is its text, `.save(path)` writes it (or the data, for a path
    ending in .json, which `explorer.from_run` reads back); Jupyter shows it inline."""

    def __init__(self, doc):
        self.doc = doc

    def html(self):
        data = json.dumps(self.doc, separators=(",", ":")).replace("</", "<\\/")
        title = self.doc.get("title") or "attention explorer"
        script = _PAGE.read_text(encoding="utf-8")
        esc = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f'<title>{esc}</title>\n'
                f'<script>window.__errors=[];window.addEventListener("error",'
                f'function(e){{window.__errors.push(String(e.message))}});</script>\n'
                f'</head><body>\n<div id="app"></div>\n'
                f'<script type="application/json" id="data">{data}</script>\n'
                f'<script>\n{script}\n</script>\n</body></html>\n')

    def save(self, path):
        path = os.fspath(path)
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            raise FileNotFoundError(f"explorer: the folder {parent!r} does not exist")
        text = json.dumps(self.doc, separators=(",", ":")) if path.endswith(".json") \
            else self.html()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _repr_html_(self):
        page = self.html().replace("&", "&amp;").replace('"', "&quot;")
        return (f'<iframe srcdoc="{page}" style="width:100%;height:760px;border:1px solid #ddd"'
                f' sandbox="allow-scripts allow-downloads"></iframe>')

    def __repr__(self):
        names = ", ".join(g["name"] for g in self.doc["groups"])
        return (f"Explorer({names}; {len(self.doc.get('snapshots', []))} snapshots, "
                f"{len(self.html()) / 1e6:.2f} MB)")


def explorer(source, tokens=None, path=None, *, inputs=None, index=0, title=None,
             snapshots=None):
    """Build the attention explorer of `source` (a Module run once on `inputs`, or a mapping
    {name: weights}; see the module docstring) and write it to `path` when given.

    tokens label the positions; index picks the batch item of a model run; snapshots is a
    `Snapshots` (or its list) for the training scrubber. Returns an Explorer."""
    if hasattr(source, "named_modules"):
        source = _model_groups(source, inputs, index)
    elif inputs is not None:
        raise ValueError("explorer: inputs= is for a Module; the weights were given directly")
    masks, images = _Masks(), {}
    groups = [_group(n, s, tokens, masks, images) for n, s in _groups(source)]
    snaps = snapshots.steps if isinstance(snapshots, Snapshots) else list(snapshots or [])
    by_name = {g["name"]: g for g in groups}
    for s in snaps:
        for name, heads in s["weights"].items():
            g = by_name.get(name)
            if g is None:
                raise ValueError(f"explorer: snapshot {s['label']!r} has a group {name!r} that "
                                 f"the explorer does not show (groups: {sorted(by_name)})")
            if len(heads) != len(g["weights"]) or \
                    len(zlib.decompress(base64.b64decode(heads[0]))) != \
                    len(g["queries"]) * len(g["keys"]):
                raise ValueError(f"explorer: snapshot {s['label']!r} of group {name!r} does "
                                 f"not have the final weights' layers, heads and shape")
    doc = {"version": 1, "title": title or "attention explorer", "groups": groups,
           "masks": masks.table, "snapshots": snaps}
    ex = Explorer(doc)
    if path is not None:
        ex.save(path)
    return ex


def from_run(run_dir, path=None):
    """The explorer a demo saved in `run_dir` (its explorer.json), written again to `path`
    (default: run_dir/explorer.html). Returns the Explorer."""
    run_dir = Path(run_dir)
    data = run_dir / "explorer.json"
    if not data.is_file():
        raise FileNotFoundError(f"explorer.from_run: {str(data)!r} not found (a demo run writes "
                                f"it beside explorer.html)")
    doc = json.loads(data.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("version") != 1 or "groups" not in doc:
        raise ValueError(f"explorer.from_run: {str(data)!r} is not an explorer document")
    ex = Explorer(doc)
    ex.save(path if path is not None else run_dir / "explorer.html")
    return ex


explorer.from_run = from_run
