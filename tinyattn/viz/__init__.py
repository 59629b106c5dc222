"""Pictures of attention and of the autograd graph, with no plotting library: SVG written as text,
Graphviz DOT for graphs, ANSI colours for terminals.

Attention weights (rows: output / query positions, columns: source / key positions)::

    from tinyattn import viz
    viz.heatmap(weights, x_labels="the cat sat", y_labels="le chat", x_name="source",
                y_name="output", title="attention", path="attention.svg")
    viz.heatmap_grid(weights_per_layer,              # (layers, heads, T, S) or nested lists
                     row_titles=["layer 0", "layer 1"], col_titles=["head 0", "head 1"],
                     x_labels=tokens, y_labels=tokens, path="heads.svg")
    viz.heatmap(pe, x_name="dimension", y_name="position")  # signed data: blue-white-red map

Training curves::

    viz.line_chart({"train": losses, "valid": [(step, loss), ...]}, x_label="step",
                   y_label="loss", log_y=True, path="loss.svg")

An image with attention over its grid of CNN features (chapter 8)::

    viz.image(img, overlay=weights, path="look.svg")        # img (3, H, W), weights (h, w)
    viz.image_attention(img, [("soft", words, weights_per_word)], path="caption.svg")
    viz.print_image(img, overlay=weights)                    # in a console

In a console (colour on a terminal, ' .:-=+*#%@' otherwise or when NO_COLOR is set)::

    viz.print_heatmap(weights, x_labels="the cat sat", y_labels="le chat")

The attention explorer: one self-contained HTML page (no network) with a layers x heads grid, a
head view to hover and pin, scores and masks, and a slider over training snapshots::

    viz.explorer(model, tokens, "explorer.html", inputs=(src,))     # or {name: weights}

The graph behind a value, micrograd style::

    a, b = tinyattn.tensor(2.0, requires_grad=True), tinyattn.tensor(-3.0, requires_grad=True)
    L = (a * b + a).tanh()
    viz.retain_grads(L)                  # before backward: keep intermediate grads for the picture
    L.backward()
    viz.graph_svg(L, names={"a": a, "b": b, "L": L}, path="graph.svg")   # drawn here, no Graphviz
    dot = viz.draw_graph(L, names={"a": a, "b": b, "L": L})   # DOT text; names=locals() works
    viz.save_dot(dot, "graph.dot")       # with Graphviz: viz.render_dot(dot, "graph.svg")

Every SVG function returns the SVG text and writes it to `path` when one is given; open the file in
a browser and hover over a cell or point to read its exact value.

Files: svg.py (the SVG writer), colors.py (colour maps computed in OKLab), ticks.py (1-2-5 axis
ticks), heatmap.py, chart.py, image.py, terminal.py, graph.py (DOT), graph_svg.py (the graph's
layered layout), explorer.py + explorer.js (the HTML attention explorer).
"""
from .chart import line_chart
from .colors import get_colormap
from .graph import dot_available, draw_graph, label, render_dot, retain_grads, save_dot
from .graph_svg import graph_svg
from .heatmap import heatmap, heatmap_grid
from .explorer import Explorer, Snapshots, explorer
from .image import image, image_attention, print_image, terminal_image
from .terminal import print_heatmap, terminal_heatmap

__all__ = ["heatmap", "heatmap_grid", "line_chart", "print_heatmap", "terminal_heatmap",
           "draw_graph", "graph_svg", "retain_grads", "label", "save_dot", "render_dot", "dot_available",
           "get_colormap", "image", "image_attention", "print_image", "terminal_image", "explorer",
           "Explorer", "Snapshots"]
