"""The autograd graph drawn as SVG by tinyattn itself: no Graphviz to install.

    L = (a * b + a).tanh()
    viz.graph_svg(L, names=locals(), path="graph.svg")     # inputs on the left, L on the right

The same boxes as draw_graph's DOT (graph.py): each tensor a box with its name, shape, values and
grad; each Function a rounded box with its op; edges input -> op -> output. The layout is the
layered drawing Graphviz's `dot` makes, in its simplest form (Sugiyama et al., 1981):
  1. layers: a node's column is its longest path from a leaf, so every edge points right, then
     it moves right up to its first consumer;
  2. order: within each column, nodes are sorted by the mean row of their neighbours in the
     column before (then after), a few sweeps each way: this removes most crossings;
  3. place: columns side by side, each as wide as its widest box, rows stacked and centred;
  4. edges: cubic curves from the right side of one box to the left side of the next.
An edge that skips columns goes through an invisible node in every column it crosses (as in
dot), so the ordering steers it around the boxes.
"""
from .graph import _LABELS, _is_tensor, _names, _op_label, _values, _walk
from .svg import Svg, text_width, write

_GAP_X, _GAP_Y, _PAD, _LINE = 46, 14, 12, 15


def _boxes(root, names, max_values, show_grad):
    """{node id: (kind, lines, is_root, is_param)} for every tensor and Function, and edges."""
    given = _names(names)
    tensors, functions, edges = _walk(root)
    boxes = {}
    for key, (tid, t) in tensors.items():
        name = given.get(key) or _LABELS.get(key) or getattr(t, "label", None)
        lines = [name] if name else []
        if t.shape:
            lines.append("shape " + str(tuple(t.shape)))
        values = _values(t, max_values)
        if values:
            lines.append("data " + values)
        grad = getattr(t, "grad", None)
        if show_grad and grad is not None:
            lines.append("grad " + (_values(grad, max_values) or "shape " + str(tuple(grad.shape))))
        boxes[tid] = ("tensor", lines or ["tensor"], t is root,
                      t.grad_fn is None and t.requires_grad)
    for fid, node in functions.values():
        boxes[fid] = ("op", _op_label(node).split("\\n"), False, False)
    return boxes, edges


def _layers(nodes, edges):
    """Longest path from a source, iteratively (Kahn's order), then every node pulled right
    next to its nearest consumer (a constant used late sits beside its op, not in column 0)."""
    preds = {n: [] for n in nodes}
    succs = {n: [] for n in nodes}
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)
    waiting = {n: len(set(preds[n])) for n in nodes}
    ready = [n for n in nodes if waiting[n] == 0]
    col = {n: 0 for n in nodes}
    order = []
    while ready:
        n = ready.pop()
        order.append(n)
        for m in set(succs[n]):
            col[m] = max(col[m], col[n] + 1)
            waiting[m] -= 1
            if waiting[m] == 0:
                ready.append(m)
    for n in reversed(order):
        if succs[n]:
            col[n] = max(col[n], min(col[m] for m in succs[n]) - 1)
    return col, preds, succs


def _order(columns, preds, succs, sweeps=4):
    """Barycentre ordering: each column sorted by the mean position of its neighbours."""
    def sweep(cols, neighbours):
        pos = {}
        for c in cols:
            if pos:
                now = {n: i for i, n in enumerate(columns[c])}

                def key(n):
                    near = [pos[m] for m in neighbours[n] if m in pos]
                    return sum(near) / len(near) if near else now[n]
                columns[c].sort(key=key)
            for i, n in enumerate(columns[c]):
                pos[n] = i
    keys = sorted(columns)
    for _ in range(sweeps):
        sweep(keys, preds)
        sweep(keys[::-1], succs)
    return columns


def graph_svg(root, names=None, *, max_values=6, show_grad=True, path=None):
    """The computation graph that produced `root`, drawn as SVG (returns the text; writes `path`).

    names, max_values, show_grad: as in draw_graph. Parameters (leaves that require grad) are
    filled blue, ops sand, the root outlined bold."""
    if not _is_tensor(root):
        raise TypeError(f"graph_svg: expected a Tensor, got {type(root).__name__}")
    boxes, edges = _boxes(root, names, max_values, show_grad)
    # edges run from inputs to the root; _walk lists them root-first (op -> tensor it made)
    col, preds, succs = _layers(list(boxes), edges)
    # an edge that skips columns runs through a small invisible node in each column it crosses,
    # which the ordering places like any other: long edges then go around the boxes
    chains = []
    for a, b in sorted(set(edges)):
        chain = [a]
        for c in range(col[a] + 1, col[b]):
            dummy = f"d{len(col)}"
            col[dummy] = c
            preds[dummy], succs[dummy] = [chain[-1]], []
            succs[chain[-1]].append(dummy)
            chain.append(dummy)
        if len(chain) > 1:
            succs[chain[-1]].append(b)
            preds[b].append(chain[-1])
        chain.append(b)
        chains.append(chain)
    columns = {}
    for n in sorted(col, key=lambda n: (n[0] != "t", n[0], int(n[1:]))):   # tensors, dummies, ops
        columns.setdefault(col[n], []).append(n)
    _order(columns, preds, succs)
    size = {n: (0, 6) for n in col if n[0] == "d"}
    for n, (kind, lines, _, _) in boxes.items():
        w = max(text_width(s, 11, mono=kind == "tensor") for s in lines) + 2 * 8
        size[n] = (max(w, 40), len(lines) * _LINE + 10)
    x, place = _PAD, {}
    col_h = {c: sum(size[n][1] for n in ns) + _GAP_Y * (len(ns) - 1) for c, ns in columns.items()}
    tallest = max(col_h.values())
    for c in sorted(columns):
        width = max(size[n][0] for n in columns[c])
        y = _PAD + (tallest - col_h[c]) / 2
        for n in columns[c]:
            w, h = size[n]
            place[n] = (x + (width - w) / 2, y, w, h)
            y += h + _GAP_Y
        x += width + _GAP_X
    svg = Svg(x - _GAP_X + _PAD, tallest + 2 * _PAD)
    svg.defs.append('<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                    'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" '
                    'fill="#555555"/></marker>')
    svg.group(id="edges", fill="none", stroke="#555555", stroke_width=1.2)
    for chain in chains:
        pts = []
        for k, n in enumerate(chain):
            bx, by, bw, bh = place[n]
            if k > 0:
                pts.append((bx, by + bh / 2))          # in at the left side
            if k < len(chain) - 1:
                pts.append((bx + bw, by + bh / 2))     # out at the right side
        d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
        for (x1, y1), (x2, y2) in zip(pts[0::2], pts[1::2]):
            mid = (x1 + x2) / 2
            d += f" C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
            if (x2, y2) != pts[-1]:
                d += " h0"                              # through the dummy, which has no width
        svg.add("path", d=d, marker_end="url(#arrow)", data_from=chain[0], data_to=chain[-1])
    svg.end_group()
    for n, (kind, lines, is_root, is_param) in boxes.items():
        bx, by, w, h = place[n]
        fill = "#f6e7c8" if kind == "op" else "#dbe9f6" if is_param else "#ffffff"
        svg.rect(bx, by, w, h, title=" | ".join(lines), rx=10 if kind == "op" else 2, fill=fill,
                 stroke="#333333", stroke_width=2.2 if is_root else 1, data_node=n)
        for i, s in enumerate(lines):
            svg.text(bx + w / 2, by + 5 + _LINE * (i + 0.5) + 2, s, size=11, anchor="middle",
                     mono=kind == "tensor",
                     font_weight="bold" if i == 0 and kind == "tensor" and len(lines) > 1
                     and not s.startswith(("shape", "data", "grad")) else None)
    return write(str(svg), path)
