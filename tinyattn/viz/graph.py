"""Drawings of the autograd graph, as Graphviz DOT text.

    a = tinyattn.tensor(2.0, requires_grad=True)
    b = tinyattn.tensor(-3.0, requires_grad=True)
    L = (a * b + a).tanh()
    retain_grads(L)                   # keep the intermediate grads too (before backward)
    L.backward()
    dot = draw_graph(L, names={"a": a, "b": b, "L": L})
    save_dot(dot, "graph.dot")        # then: dot -Tsvg graph.dot -o graph.svg, or render_dot(dot)
    graph_svg(L, names=..., path="graph.svg")   # or the SVG drawn by tinyattn (graph_svg.py)

The graph as autograd keeps it: `t.grad_fn` is the Function node that made t (None for a leaf), and
`node.inputs` holds the arguments that node's forward received. Nodes point only backwards, to their
inputs, never to their outputs, so the drawing is found by walking from the root -- iteratively, as
backward does, so a graph thousands of nodes deep draws without RecursionError.

Each tensor is a record box: its name, shape, the values of small tensors and, when present, .grad
(leaves have .grad after backward; intermediates only after retain_grad()). Each Function is an oval
with its op name; edges run input -> op -> output.

Names come from, in this order: the `names` argument ({tensor: "a"} or {"a": tensor}, so
`names=locals()` works), `label(tensor, "a")`, or a `.label` attribute on the tensor (nn.Parameter
and other Tensor subclasses accept one; plain Tensors have fixed slots, hence `label()`).

Chapter 1 of the tour (docs/01-autograd.md) walks through this file.
"""
import shutil
import subprocess
import weakref

_LABELS = {}  # id(tensor) -> name, the entry removed when the tensor is garbage-collected


def label(tensor, name):
    """Give `tensor` a name that draw_graph shows; returns the tensor, so it chains:

        w = label(tinyattn.randn(3, 3, requires_grad=True), "W")"""
    key = id(tensor)
    if key not in _LABELS:
        weakref.finalize(tensor, _LABELS.pop, key, None)
    _LABELS[key] = str(name)
    return tensor


def _is_tensor(x):
    return hasattr(x, "grad_fn") and hasattr(x, "shape")


def _walk(root):
    """(tensors, functions, edges) reachable from root.

    tensors / functions map id(object) -> (DOT node id, object); DOT ids are numbered in the order
    met (t0 is the root), so the same graph always gives the same text.
    edges: (from, to) pairs of DOT ids."""
    tensors = {id(root): ("t0", root)}
    functions = {}
    edges = []
    stack = [root]
    while stack:
        t = stack.pop()
        node = t.grad_fn
        if node is None:
            continue
        if id(node) not in functions:
            functions[id(node)] = (f"f{len(functions)}", node)
            fresh = True
        else:  # two tensors made by one node: its inputs are walked once
            fresh = False
        fid = functions[id(node)][0]
        edges.append((fid, tensors[id(t)][0]))  # op -> the tensor it made
        if not fresh:
            continue
        for x in node.inputs:
            if not _is_tensor(x):
                continue
            if id(x) not in tensors:
                tensors[id(x)] = (f"t{len(tensors)}", x)
                stack.append(x)
            edges.append((tensors[id(x)][0], fid))  # input -> op (twice for x * x)
    return tensors, functions, edges


def retain_grads(root):
    """Call retain_grad() on every intermediate tensor of root's graph (root included).

    Call it before backward(): afterwards draw_graph shows every tensor's gradient, not only the
    leaves'. Returns the list of those tensors."""
    tensors, _, _ = _walk(root)
    kept = [t for _, t in tensors.values() if t.grad_fn is not None]
    for t in kept:
        t.retain_grad()
    return kept


# ---------------------------------------------------------------------------- DOT text


def _record_escape(text):
    """Escape the characters that structure a Graphviz record label: { } | < > and quotes."""
    text = str(text).replace("\\", "\\\\")
    for ch in '{}|<>"':
        text = text.replace(ch, "\\" + ch)
    return text.replace("\n", "\\n")


def _values(t, max_values):
    """'[1.5, -2]' for a small tensor, '' for a big one (a drawing is not a printout)."""
    if t.numel() > max_values:
        return ""
    v = t.detach().tolist()
    return _nested(v)


def _nested(v):
    if isinstance(v, list):
        return "[" + ", ".join(_nested(x) for x in v) + "]"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    return f"{v:.4g}"


_SYMBOLS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Pow": "**"}


def _op_label(node):
    op = getattr(node, "op_name", type(node).__name__)
    # x * 2 is one ScalarOp node whose inputs are (x, op code, 2.0, reversed): show the constant
    if type(node).__name__ == "ScalarOp" and op in _SYMBOLS:
        _, _, c, reverse = node.inputs
        c = f"{c:.4g}"
        return f"{op}\\n{c} {_SYMBOLS[op]} x" if reverse else f"{op}\\nx {_SYMBOLS[op]} {c}"
    return op


def _names(names):
    """Both {tensor: name} and {name: tensor} (e.g. locals()) -> {id(tensor): name}."""
    out = {}
    for k, v in (names or {}).items():
        if _is_tensor(k):
            out[id(k)] = str(v)
        elif _is_tensor(v) and not str(k).startswith("_"):
            out.setdefault(id(v), str(k))  # the first name wins when locals() has aliases
    return out


def draw_graph(root, names=None, *, max_values=6, show_grad=True, rankdir="LR", path=None):
    """The computation graph that produced `root`, as Graphviz DOT text (also written to `path`).

    names: {tensor: "a"} or {"a": tensor, ...} (locals() works); see also label().
    max_values: tensors with at most this many elements show their values.
    show_grad: show .grad where it exists (leaves after backward; intermediates after
        retain_grads(root) was called before backward).
    rankdir: "LR" (inputs on the left, micrograd style) or "TB" (top to bottom).
    path: write the DOT text there; a path ending in .svg or .png is rendered with Graphviz's `dot`
        (which must be installed)."""
    if not _is_tensor(root):
        raise TypeError(f"draw_graph: expected a Tensor, got {type(root).__name__}")
    given = _names(names)
    tensors, functions, edges = _walk(root)
    lines = [
        "digraph autograd {",
        f"  rankdir={rankdir};",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [color="#555555", arrowsize=0.7];',
    ]
    for key, (tid, t) in tensors.items():
        name = given.get(key) or _LABELS.get(key) or getattr(t, "label", None)
        fields = [name] if name else []
        if t.shape:  # a 0-d tensor shows just its value, as micrograd's drawings do
            fields.append("shape " + str(tuple(t.shape)))
        values = _values(t, max_values)
        if values:
            fields.append("data " + values)
        grad = getattr(t, "grad", None)
        if show_grad and grad is not None:
            shown = _values(grad, max_values) or "shape " + str(tuple(grad.shape))
            fields.append("grad " + shown)
        record = " | ".join(_record_escape(f) for f in fields)
        # a leaf that requires grad (a parameter) is filled: it is what training changes
        leaf_param = t.grad_fn is None and t.requires_grad
        fill = ', style=filled, fillcolor="#dbe9f6"' if leaf_param else ""
        root_mark = ', penwidth=2' if t is root else ""
        lines.append(f'  {tid} [shape=record, label="{{ {record} }}"{fill}{root_mark}];')
    for fid, node in functions.values():
        op = _op_label(node).replace('"', '\\"')
        lines.append(f'  {fid} [shape=ellipse, label="{op}", style=filled, '
                     f'fillcolor="#f6e7c8"];')
    for a, b in edges:
        lines.append(f"  {a} -> {b};")
    lines.append("}")
    dot = "\n".join(lines) + "\n"
    if path is not None:
        if str(path).endswith((".svg", ".png", ".pdf")):
            render_dot(dot, path)
        else:
            save_dot(dot, path)
    return dot


def save_dot(dot, path):
    """Write DOT text to a file (`dot -Tsvg file.dot -o file.svg` renders it)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(dot)


def dot_available():
    """True when Graphviz's `dot` program is on the PATH."""
    return shutil.which("dot") is not None


def render_dot(dot, path=None, format=None):  # noqa: A002 - Graphviz calls it the format
    """Render DOT text with Graphviz's `dot`; returns the output (str for SVG, bytes otherwise).

    format defaults to the extension of `path`, else "svg". Raises RuntimeError naming the cure
    when `dot` is not installed (e.g. `apt-get install graphviz`)."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("render_dot: Graphviz's `dot` program was not found on the PATH; "
                           "install Graphviz (e.g. apt-get install graphviz) or use save_dot()")
    if format is None:
        format = str(path).rsplit(".", 1)[-1] if path is not None and "." in str(path) else "svg"
    run = subprocess.run([exe, f"-T{format}"], input=dot.encode("utf-8"), capture_output=True,
                         timeout=60)
    if run.returncode != 0:
        raise RuntimeError(f"render_dot: dot failed: {run.stderr.decode(errors='replace')}")
    if path is not None:
        with open(path, "wb") as f:
            f.write(run.stdout)
    return run.stdout.decode("utf-8") if format == "svg" else run.stdout
