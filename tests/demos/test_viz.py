"""tinyattn.viz: every SVG parses as XML and holds what the data says; DOT graphs of known
expressions; terminal heatmaps with and without colour. Expected values are worked out by hand."""
import math
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn as ta
from tinyattn import viz
from tinyattn.viz import colors, ticks

NS = "{http://www.w3.org/2000/svg}"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse(svg):
    root = ET.fromstring(svg)  # raises on anything that is not well-formed XML
    assert root.tag == NS + "svg"
    return root


def group(root, cls):
    return [g for g in root.iter(NS + "g") if g.get("class") == cls]


def cell_rects(root):
    return [r for g in group(root, "cells") for r in g.iter(NS + "rect")]


def title_of(el):
    return el.find(NS + "title").text


def title_value(el):
    return float(re.search(r"value: (\S+)", title_of(el)).group(1))


def texts(el):
    return [t.text for t in el.iter(NS + "text")]


def size(root):
    return float(root.get("width")), float(root.get("height"))


def assert_inside(root):
    """No rect or text anchor lies outside the picture (nothing clipped at the edges)."""
    w, h = size(root)
    for r in root.iter(NS + "rect"):
        x, y = float(r.get("x")), float(r.get("y"))
        assert -0.01 <= x and x + float(r.get("width")) <= w + 0.5
        assert -0.01 <= y and y + float(r.get("height")) <= h + 0.5
    for t in root.iter(NS + "text"):
        assert 0 <= float(t.get("x")) <= w and 0 <= float(t.get("y")) <= h


# ---------------------------------------------------------------------------- heatmap

M = [[0.1, 0.2, 0.3, 0.4],
     [0.5, 0.25, 0.125, 0.125],
     [1.0, 0.0, 0.0, 0.0]]


def test_heatmap_cells_titles_and_values_match_input():
    root = parse(viz.heatmap(M, title="three by four"))
    rects = cell_rects(root)
    assert len(rects) == 12
    assert len(root.findall(f".//{NS}g[@class='cells']/{NS}rect/{NS}title")) == 12
    # row-major: cell k is row k // 4, column k % 4
    for k, r in enumerate(rects):
        i, j = divmod(k, 4)
        assert title_value(r) == pytest.approx(M[i][j])
        assert f"row {i}" in title_of(r) and f"column {j}" in title_of(r)
    # each cell sits at its row and column: one cell size apart
    x = [float(r.get("x")) for r in rects[:4]]
    y = [float(rects[4 * i].get("y")) for i in range(3)]
    step = x[1] - x[0]
    assert step > 0
    assert x == pytest.approx([x[0] + j * step for j in range(4)])
    assert y == pytest.approx([y[0] + i * step for i in range(3)])
    assert "three by four" in texts(root)
    assert_inside(root)


def test_heatmap_accepts_a_tensor_and_writes_path(tmp_path):
    t = ta.tensor(M, requires_grad=True) * 1.0  # a non-leaf: the picture must detach it
    path = tmp_path / "m.svg"
    svg = viz.heatmap(t, path=str(path))
    assert path.read_text(encoding="utf-8") == svg
    values = [title_value(r) for r in cell_rects(parse(svg))]
    assert values == pytest.approx([v for row in M for v in row], rel=1e-6)


def test_heatmap_colorbar_with_ticks_in_range():
    root = parse(viz.heatmap(M))
    bar = [g for g in root.iter(NS + "g") if g.get("id") == "colorbar"]
    assert len(bar) == 1
    labels = [float(s) for s in texts(bar[0])]
    assert len(labels) >= 2 and all(0.0 <= v <= 1.0 for v in labels)
    assert labels == sorted(labels)
    # the gradient the bar is filled with exists
    gradient = root.find(f".//{NS}linearGradient")
    assert bar[0].find(NS + "rect").get("fill") == f"url(#{gradient.get('id')})"
    assert viz.heatmap(M, colorbar=False).count("linearGradient") == 0


def test_heatmap_brighter_cells_for_larger_values():
    rects = cell_rects(parse(viz.heatmap([[0.0, 0.5, 1.0]])))
    lum = [colors.luminance(tuple(int(r.get("fill")[k:k + 2], 16) for k in (1, 3, 5)))
           for r in rects]
    assert lum[0] < lum[1] < lum[2]


def test_heatmap_labels_escaped_and_spaces_visible():
    xl = ["a<b", "&", '"q"', "it's"]
    yl = ["x y", "\t", "\x00"]
    svg = viz.heatmap(M, x_labels=xl, y_labels=yl)
    assert "a<b" not in svg and "a&lt;b" in svg
    root = parse(svg)
    assert texts(group(root, "x-labels")[0]) == xl  # XML parsing undoes the escaping
    shown = texts(group(root, "y-labels")[0])
    assert shown[0] == "x\u2423y"          # a space is drawn as a visible open box
    assert shown[1] == "\u21e5"            # a tab as an arrow
    assert shown[2] == "\u2400"            # a control character as its Unicode picture
    assert '"q"' in title_of(cell_rects(root)[2])


def test_heatmap_string_labels_give_one_per_character_and_axis_names():
    root = parse(viz.heatmap([[1, 0, 0], [0, 1, 0]], x_labels="abc", y_labels="xy",
                             x_name="source", y_name="output"))
    assert texts(group(root, "x-labels")[0]) == ["a", "b", "c"]
    assert texts(group(root, "y-labels")[0]) == ["x", "y"]
    names = [t.text for t in root.iter(NS + "text") if t.get("class") == "axis-name"]
    assert sorted(names) == ["output", "source"]
    t = title_of(cell_rects(root)[1])
    assert t.startswith("output 0: x\nsource 1: b\n")


def test_heatmap_values_printed_when_small_only():
    root = parse(viz.heatmap([[0.25, 0.75], [1.0, 0.0]]))
    assert texts(group(root, "cells")[0]) == ["0.25", "0.75", "1.00", "0.00"]
    ints = parse(viz.heatmap([[-20.0, 3.0], [0.0, 128.0]]))
    assert texts(group(ints, "cells")[0]) == ["-20", "3", "0", "128"]
    big = parse(viz.heatmap([[float(i * j) for j in range(30)] for i in range(30)]))
    assert texts(group(big, "cells")[0]) == []
    forced = parse(viz.heatmap([[0.25, 0.75]], show_values=True, fmt=".1f"))
    assert texts(group(forced, "cells")[0]) == ["0.2", "0.8"]


def test_heatmap_nan_and_inf_are_grey_and_do_not_set_the_scale():
    root = parse(viz.heatmap([[0.0, float("nan")], [float("-inf"), 1.0]]))
    rects = cell_rects(root)
    assert rects[1].get("fill") == rects[2].get("fill") == "#d4d4d4"
    assert "value: nan" in title_of(rects[1]) and "value: -inf" in title_of(rects[2])
    labels = [float(s) for s in texts([g for g in root.iter(NS + "g")
                                       if g.get("id") == "colorbar"][0])]
    assert min(labels) >= 0.0 and max(labels) <= 1.0


def test_heatmap_signed_data_gets_a_symmetric_diverging_scale():
    root = parse(viz.heatmap([[-0.5, 0.0, 2.0]]))
    labels = [float(s) for s in texts([g for g in root.iter(NS + "g")
                                       if g.get("id") == "colorbar"][0])]
    assert labels[0] == -labels[-1]                     # centred on zero
    zero_fill = cell_rects(root)[1].get("fill")
    rgb = tuple(int(zero_fill[k:k + 2], 16) for k in (1, 3, 5))
    assert min(rgb) > 235                               # zero is (nearly) white


def label_positions(root, cls, coord):
    return [(float(t.get(coord)), float(t.get("font-size")))
            for t in group(root, cls)[0].iter(NS + "text")]


def test_heatmap_64x64_labels_do_not_overlap_and_fit():
    pe = [[math.sin(p / 10000 ** (d / 64)) for d in range(64)] for p in range(64)]
    root = parse(viz.heatmap(pe, x_name="dimension", y_name="position"))
    assert len(cell_rects(root)) == 64 * 64
    for cls, coord in (("x-labels", "x"), ("y-labels", "y")):
        pos = label_positions(root, cls, coord)
        assert len(pos) >= 16 and pos[0][1] >= 8              # many labels, readable size
        assert all(b[0] - a[0] >= a[1] for a, b in zip(pos, pos[1:]))  # a line apart at least
    assert texts(group(root, "x-labels")[0])[:2] == ["0", "1"]
    assert_inside(root)
    w, h = size(root)
    assert w < 900 and h < 900


def test_heatmap_long_axis_shows_every_kth_label():
    rows = [[float(i * j) for j in range(16)] for i in range(128)]
    root = parse(viz.heatmap(rows))
    ys = texts(group(root, "y-labels")[0])
    k = int(ys[1])
    assert k in (2, 4, 5) and ys == [str(i) for i in range(0, 128, k)]
    pos = label_positions(root, "y-labels", "y")
    assert all(b[0] - a[0] >= a[1] for a, b in zip(pos, pos[1:]))
    assert_inside(root)


def test_heatmap_non_square_and_long_rotated_labels_fit():
    words = ["<start>", "transformers", "attend", "to", "everything", "&more"]
    rows = [[(i + j) % 3 / 2 for j in range(6)] for i in range(3)]
    root = parse(viz.heatmap(rows, x_labels=words, y_labels=["a", "b", "c"], title="t"))
    assert len(cell_rects(root)) == 18
    x_texts = list(group(root, "x-labels")[0].iter(NS + "text"))
    assert all("rotate(-90" in t.get("transform") for t in x_texts)
    assert_inside(root)


@pytest.mark.parametrize("bad, message", [
    ([[1, 2], [3]], "same, non-zero length"),
    ([[1, "x"]], "not a number"),
    ([], "non-empty"),
    ([1, 2, 3], "row 0"),
])
def test_heatmap_rejects_bad_data(bad, message):
    with pytest.raises(ValueError, match=message):
        viz.heatmap(bad)


def test_heatmap_rejects_wrong_label_count_and_3d_tensor():
    with pytest.raises(ValueError, match="x_labels has 2 labels but the data has 4 columns"):
        viz.heatmap(M, x_labels=["a", "b"])
    with pytest.raises(ValueError, match=r"shape \(2, 3, 4\).*heatmap_grid"):
        viz.heatmap(ta.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="vmin"):
        viz.heatmap(M, vmin=1.0, vmax=0.0)


# ---------------------------------------------------------------------------- heatmap_grid


def test_heatmap_grid_layers_by_heads_with_shared_scale():
    ta.manual_seed(0)
    w = ta.randn(2, 3, 4, 5).softmax(-1)
    lists = w.tolist()
    lists[1][2][0][0] = lists[0][0][0][0]  # the same value in two panels ...
    root = parse(viz.heatmap_grid(lists, row_titles=["layer 0", "layer 1"],
                                  col_titles=["head 0", "head 1", "head 2"],
                                  x_labels="abcde", y_labels="wxyz", title="heads"))
    panels = group(root, "panel")
    assert len(panels) == 6
    rects = cell_rects(root)
    assert len(rects) == 6 * 20
    first_cell = [list(p.iter(NS + "rect"))[0] for p in panels]
    assert first_cell[0].get("fill") == first_cell[5].get("fill")  # ... gets the same colour
    assert title_value(first_cell[5]) == pytest.approx(lists[0][0][0][0], rel=1e-5)  # 6 digits
    assert len([g for g in root.iter(NS + "g") if g.get("id") == "colorbar"]) == 1
    heads = [t.text for t in root.iter(NS + "text") if t.get("class") == "col-title"]
    layers = [t.text for t in root.iter(NS + "text") if t.get("class") == "row-title"]
    assert heads == ["head 0", "head 1", "head 2"] and layers == ["layer 0", "layer 1"]
    assert len(group(root, "x-labels")) == 3  # the bottom row of panels only
    assert len(group(root, "y-labels")) == 2  # the first column only
    assert_inside(root)


def test_heatmap_grid_takes_tensors_and_rejects_mixed_shapes():
    root = parse(viz.heatmap_grid(ta.rand(2, 3, 3)))  # (heads, T, S): one row of panels
    assert len(group(root, "panel")) == 2
    with pytest.raises(ValueError, match="same shape"):
        viz.heatmap_grid([[[[1.0, 2.0]], [[1.0], [2.0]]]])
    with pytest.raises(ValueError, match="row_titles has 1 labels"):
        viz.heatmap_grid(ta.rand(2, 1, 3, 3), row_titles=["only one"])


# ---------------------------------------------------------------------------- line_chart


def test_line_chart_series_legend_and_point_titles():
    root = parse(viz.line_chart({"train": [3.0, 2.0, 1.5], "valid": [(0, 3.5), (2, 2.5)]},
                                title="loss", x_label="epoch", y_label="loss"))
    lines = list(root.iter(NS + "polyline"))
    assert [title_of(p) for p in lines] == ["train", "valid"]
    assert len(lines[0].get("points").split()) == 3
    legend = [t.text for t in root.iter(NS + "text") if t.get("class") == "legend"]
    assert legend == ["train", "valid"]
    dots = list(root.iter(NS + "circle"))
    assert len(dots) == 5
    assert title_of(dots[3]) == "valid\nx: 0\ny: 3.5"
    assert_inside(root)


def test_line_chart_points_are_placed_by_value():
    root = parse(viz.line_chart({"s": [(0, 0.0), (1, 1.0), (2, 0.5)]}))
    pts = [tuple(map(float, p.split(","))) for p in
           next(root.iter(NS + "polyline")).get("points").split()]
    (x0, y0), (x1, y1), (x2, y2) = pts
    assert x1 - x0 == pytest.approx(x2 - x1)          # equal x steps
    assert y1 < y2 < y0                                # y grows upwards on the page
    assert (y0 - y2) == pytest.approx(y2 - y1)         # 0.5 is half-way


def test_line_chart_ticks_are_1_2_5_steps():
    root = parse(viz.line_chart({"acc": [(5, 0.91), (40, 0.12)]}, y_min=0, y_max=1))
    y = [float(t.text) for t in root.iter(NS + "text") if t.get("class") == "y-tick"]
    x = [float(t.text) for t in root.iter(NS + "text") if t.get("class") == "x-tick"]
    assert y == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert x == [5, 10, 15, 20, 25, 30, 35, 40]


def test_line_chart_integer_x_gets_integer_ticks():
    root = parse(viz.line_chart({"acc": [(1, 0.5), (2, 0.7), (3, 0.8)]}))
    x = [t.text for t in root.iter(NS + "text") if t.get("class") == "x-tick"]
    assert x == ["1", "2", "3"]


def test_line_chart_log_y_ticks_and_positive_check():
    root = parse(viz.line_chart({"loss": [2.3, 0.9, 0.2, 0.03]}, log_y=True))
    y = [t.text for t in root.iter(NS + "text") if t.get("class") == "y-tick"]
    assert y == ["0.05", "0.1", "0.2", "0.5", "1", "2"]
    with pytest.raises(ValueError, match=r"log_y needs positive values.*'loss'.*x = 1"):
        viz.line_chart({"loss": [1.0, 0.0]}, log_y=True)


def test_line_chart_nan_breaks_the_line():
    root = parse(viz.line_chart({"loss": [1.0, 0.5, float("nan"), 0.4, 0.3]}))
    assert len(list(root.iter(NS + "polyline"))) == 2


def test_line_chart_escapes_names():
    svg = viz.line_chart({"<train & 'valid'>": [1, 2]}, title='a "b"')
    root = parse(svg)
    assert "<train & 'valid'>" in texts(root) and 'a "b"' in texts(root)


def test_nice_ticks_by_hand():
    assert ticks.nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert ticks.nice_ticks(0, 97) == [0, 20, 40, 60, 80]
    assert ticks.nice_ticks(-3, 3) == [-3, -2, -1, 0, 1, 2, 3]
    assert ticks.log_ticks(0.05, 3) == [0.05, 0.1, 0.2, 0.5, 1, 2]
    assert ticks.log_ticks(0.001, 10) == [0.001, 0.01, 0.1, 1, 10]  # many decades: powers only
    assert ticks.format_ticks([0, 0.5, 1.0]) == ["0.0", "0.5", "1.0"]
    assert ticks.format_ticks([0, 200, 400]) == ["0", "200", "400"]


@settings(max_examples=60, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e6))
def test_nice_ticks_property(lo, span):
    hi = lo + span
    t = ticks.nice_ticks(lo, hi, 5)
    step = ticks.nice_step(span, 5)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-9
    assert 3 <= len(t) <= 9                       # about 5, never a crowd, never a lone tick
    slack = 1e-9 * step + 1e-12 * max(abs(lo), abs(hi))
    assert lo - slack <= t[0] and t[-1] <= hi + slack
    for v in t:                                   # every tick a whole multiple of the step
        assert abs(v / step - round(v / step)) * step <= slack + 1e-12 * abs(v)


# ---------------------------------------------------------------------------- colours


def test_colormaps_are_perceptually_ordered():
    seq = colors.get_colormap("sequential")
    lum = [colors.luminance(seq(k / 20)) for k in range(21)]
    assert all(a < b for a, b in zip(lum, lum[1:]))      # lightness rises steadily
    div = colors.get_colormap("diverging")
    dl = [colors.luminance(div(k / 20)) for k in range(21)]
    assert max(dl) == dl[10]                              # white-ish in the middle
    assert all(abs(dl[k] - dl[20 - k]) < 0.03 for k in range(10))  # both arms equally dark
    assert div(0.0)[2] > div(0.0)[0] and div(1.0)[0] > div(1.0)[2]  # blue low, red high
    with pytest.raises(ValueError, match="unknown name 'jet'"):
        colors.get_colormap("jet")


def test_sequential_map_lightness_is_linear_in_oklab():
    seq = colors.get_colormap("sequential")
    for k in range(11):
        L = colors.to_oklab(seq(k / 10))[0]
        assert L == pytest.approx(0.27 + 0.65 * k / 10, abs=0.01)  # only chroma is ever clipped


def test_ansi256_maps_pure_colours_exactly():
    assert colors.ansi256((255, 0, 0)) == 196
    assert colors.ansi256((0, 0, 0)) == 16
    assert colors.ansi256((128, 128, 128)) == 244


# ---------------------------------------------------------------------------- terminal


def test_terminal_plain_dimensions_and_ramp():
    out = viz.terminal_heatmap([[0.0, 0.5, 1.0], [1.0, 0.25, 0.0]], x_labels="abc",
                               y_labels=["row0", "r1"], color=False, width=80)
    lines = out.split("\n")
    assert len(lines) == 1 + 2 + 1  # column labels, two rows, the scale
    assert lines[0] == "     a b c "
    # t in [k/10, (k+1)/10) is drawn with RAMP[k]: 0.5 -> '+', 0.25 -> ':'
    assert lines[1] == "row0   ++@@"
    assert lines[2] == "  r1 @@::  "
    assert "\x1b" not in out
    assert lines[3].startswith("     0 ' .:-=+*#%@' 1.00")


class FakeTTY:
    def isatty(self):
        return True


def test_terminal_colour_only_on_a_tty_without_no_color(monkeypatch):
    w = [[0.0, 1.0]]
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("COLORTERM", "truecolor")
    coloured = viz.terminal_heatmap(w, stream=FakeTTY(), width=40)
    assert "\x1b[48;2;" in coloured
    monkeypatch.setenv("COLORTERM", "")
    assert "\x1b[48;5;" in viz.terminal_heatmap(w, stream=FakeTTY(), width=40)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b" not in viz.terminal_heatmap(w, stream=FakeTTY(), width=40)
    monkeypatch.delenv("NO_COLOR")
    import io
    assert "\x1b" not in viz.terminal_heatmap(w, stream=io.StringIO(), width=40)
    # the same grid with and without colour: same layout once escape codes are removed
    plain = viz.terminal_heatmap(w, color=False, width=40).split("\n")
    stripped = ANSI.sub("", viz.terminal_heatmap(w, color="256", width=40)).split("\n")
    assert [len(s) for s in plain[:-1]] == [len(s) for s in stripped[:-1]]


def test_terminal_width_limit_and_vertical_labels():
    rows = [[float(i + j) for j in range(64)] for i in range(4)]
    out = viz.terminal_heatmap(rows, color=False, width=50)
    lines = out.split("\n")
    assert all(len(s) <= 50 for s in lines)
    assert lines[-1] == "(16 of 64 columns cut to fit 50 characters)"
    assert lines[0][2:12] == "0123456789" and lines[1][12:14] == "01"  # 10, 11 written downwards
    words = viz.terminal_heatmap([[1.0, 0.0]], x_labels=["hello", "a b"], color=False, width=40)
    head = words.split("\n")[:5]
    assert [s[2] for s in head] == list("hello")
    assert [s[4] for s in head[:3]] == ["a", "\u2423", "b"]


def test_terminal_two_digit_labels_are_not_run_together():
    lines = viz.terminal_heatmap([[0.0] * 12], color=False, width=80).split("\n")
    assert lines[0] == "  0 1 2 3 4 5 6 7 8 9 1 1 "   # '10' and '11' are written downwards
    assert lines[1] == "                      0 1 "


def test_print_heatmap_writes_to_file():
    import io
    buf = io.StringIO()
    viz.print_heatmap([[1.0, 2.0]], file=buf, title="T")
    assert buf.getvalue().startswith("T\n") and "\x1b" not in buf.getvalue()


# ---------------------------------------------------------------------------- graphs


def node_lines(dot, shape):
    return [s for s in dot.splitlines() if f"shape={shape}" in s]


def edges(dot):
    return re.findall(r"^\s*(\w+) -> (\w+);", dot, re.M)


def micrograd_example():
    a = ta.tensor(2.0, requires_grad=True)
    b = ta.tensor(-3.0, requires_grad=True)
    c = ta.tensor(10.0, requires_grad=True)
    f = ta.tensor(-2.0, requires_grad=True)
    e = a * b
    d = e + c
    L = d * f
    return dict(a=a, b=b, c=c, f=f, e=e, d=d, L=L)


def test_draw_graph_structure_of_a_known_expression():
    v = micrograd_example()
    dot = viz.draw_graph(v["L"], names=v)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert len(node_lines(dot, "record")) == 7      # a, b, c, f, e, d, L
    assert len(node_lines(dot, "ellipse")) == 3     # Mul, Add, Mul
    assert sorted(re.findall(r'label="(\w+)"', dot)) == ["Add", "Mul", "Mul"]
    assert len(edges(dot)) == 9                     # 2 inputs + 1 output for each op
    ids = {name: re.search(rf'(\w+) \[shape=record, label="{{ {name} \|', dot).group(1)
           for name in v}
    e = edges(dot)
    op_of = {b: a for a, b in e if b.startswith("t")}   # tensor -> the op that made it
    assert ids["a"] not in op_of and ids["L"] in op_of
    assert (ids["a"], op_of[ids["e"]]) in e and (ids["b"], op_of[ids["e"]]) in e
    assert (ids["d"], op_of[ids["L"]]) in e and (ids["f"], op_of[ids["L"]]) in e
    assert "| grad" not in dot                       # nothing has run backward yet
    assert "data -8 " in dot                         # L = (2 * -3 + 10) * -2


def test_draw_graph_shows_grads_after_backward():
    v = micrograd_example()
    kept = viz.retain_grads(v["L"])
    assert len(kept) == 3                            # e, d, L
    v["L"].backward()
    dot = viz.draw_graph(v["L"], names=v)
    # dL/da = b f = 6, dL/db = a f = -4, dL/dc = f = -2, dL/df = d = 4, dL/dd = dL/de = f = -2
    expect = {"a": 6, "b": -4, "c": -2, "f": 4, "e": -2, "d": -2, "L": 1}
    for name, g in expect.items():
        assert re.search(rf'label="{{ {name} \| data \S+ \| grad {g} }}"', dot), name


def test_draw_graph_without_retain_shows_leaf_grads_only():
    v = micrograd_example()
    v["L"].backward()
    dot = viz.draw_graph(v["L"], names=v)
    assert dot.count("| grad ") == 4


def test_draw_graph_reuse_scalar_constants_and_names():
    x = viz.label(ta.tensor([1.0, 2.0], requires_grad=True), "x")
    y = (x * x).sum() * 2
    dot = viz.draw_graph(y, rankdir="TB")
    assert "rankdir=TB" in dot
    xid = re.search(r'(\w+) \[shape=record, label="\{ x \|', dot).group(1)
    mul = re.search(r'(\w+) \[shape=ellipse, label="Mul"', dot).group(1)
    assert edges(dot).count((xid, mul)) == 2             # x used twice by x * x
    assert 'label="Mul\\nx * 2"' in dot                  # the constant is shown with its op
    assert "data [1, 2]" in dot and "shape (2,)" in dot
    p = ta.nn.Parameter(ta.ones(2))
    p.label = "weight"
    assert "{ weight |" in viz.draw_graph((p * 3).sum())


def test_draw_graph_escapes_record_characters():
    x = ta.tensor(1.0, requires_grad=True)
    y = x * 2
    dot = viz.draw_graph(y, names={x: 'a|b{c}<d> "e"'})
    assert 'a\\|b\\{c\\}\\<d\\> \\"e\\"' in dot
    if viz.dot_available():
        parse(viz.render_dot(dot))


def test_draw_graph_deep_chain_has_no_recursion_error():
    x = ta.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y + 1.0
    dot = viz.draw_graph(y)
    assert len(node_lines(dot, "ellipse")) == 3000 and len(node_lines(dot, "record")) == 3001


def test_draw_graph_is_deterministic_and_saves(tmp_path):
    v = micrograd_example()
    dot = viz.draw_graph(v["L"])
    assert viz.draw_graph(v["L"]) == dot
    viz.save_dot(dot, tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == dot
    viz.draw_graph(v["L"], path=str(tmp_path / "h.dot"))
    assert (tmp_path / "h.dot").read_text() == dot
    with pytest.raises(TypeError, match="expected a Tensor"):
        viz.draw_graph([1.0])


def test_render_dot_to_svg(tmp_path):
    if not viz.dot_available():
        pytest.skip("Graphviz's dot is not installed")
    v = micrograd_example()
    svg = viz.draw_graph(v["L"], names=v, path=str(tmp_path / "g.svg"))
    root = parse((tmp_path / "g.svg").read_text())
    assert "Mul" in "".join(t.text or "" for t in root.iter(NS + "text"))
    assert svg.startswith("digraph")


def test_render_dot_without_graphviz_says_so(monkeypatch):
    monkeypatch.setattr(viz.graph.shutil, "which", lambda name: None)
    assert not viz.dot_available()
    with pytest.raises(RuntimeError, match="Graphviz"):
        viz.render_dot("digraph { a }")


# ------------------------------------------------------------- the graph as SVG, no Graphviz

SVG_NS = "{http://www.w3.org/2000/svg}"


def graph_boxes(svg):
    root = ET.fromstring(svg)
    boxes = {}
    for r in root.iter(SVG_NS + "rect"):
        if "data-node" in r.attrib:
            x, y, w, h = (float(r.attrib[k]) for k in ("x", "y", "width", "height"))
            boxes[r.attrib["data-node"]] = (x, y, w, h, r.find(SVG_NS + "title").text, r.attrib)
    paths = [p for p in root.iter(SVG_NS + "path") if "data-from" in p.attrib]
    return boxes, paths


def test_graph_svg_draws_every_node_and_edge_left_to_right():
    v = micrograd_example()                 # L = (a * b + c) * f: 7 tensors and 3 ops
    v["L"].backward()
    svg = viz.graph_svg(v["L"], names=v)
    boxes, paths = graph_boxes(svg)
    titles = sorted(b[4] for b in boxes.values())
    assert len(boxes) == 10 and titles.count("Mul") == 2 and titles.count("Add") == 1
    assert any(t.startswith("a | data 2 | grad 6") for t in titles)     # dL/da = b f = 6
    assert any(t.startswith("L | data -8") for t in titles)
    # 9 edges: a, b -> Mul -> e; e, c -> Add -> d; d, f -> Mul -> L
    assert len(paths) == 9
    ends = {(p.attrib["data-from"], p.attrib["data-to"]) for p in paths}
    dot_edges = set(edges(viz.draw_graph(v["L"], names=v)))
    assert ends == dot_edges, "the same graph as the DOT drawing"
    for a, b in ends:        # inputs on the left, outputs on the right
        assert boxes[a][0] + boxes[a][2] < boxes[b][0]
    for a, ba in boxes.items():      # no two boxes overlap
        for b, bb in boxes.items():
            if a < b:
                apart = (ba[0] + ba[2] <= bb[0] or bb[0] + bb[2] <= ba[0] or
                         ba[1] + ba[3] <= bb[1] or bb[1] + bb[3] <= ba[1])
                assert apart, (ba[4], bb[4])
    root_box = [b for b in boxes.values() if b[4].startswith("L |")][0]
    assert root_box[5]["stroke-width"] == "2.2"


def test_graph_svg_routes_a_long_edge_around_the_boxes_and_handles_deep_graphs(tmp_path):
    a = ta.tensor(2.0, requires_grad=True)
    y = ((a * 3).exp().tanh() * 2 + a)       # a is used first and last: a long edge
    svg = viz.graph_svg(y, path=tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text() == svg
    boxes, paths = graph_boxes(svg)
    long = [p for p in paths if len(re.findall("C", p.attrib["d"])) > 1]
    assert long, "an edge across several columns goes through its own waypoints"
    x = ta.tensor(1.0, requires_grad=True)
    z = x
    for _ in range(600):
        z = z * 1.0
    boxes, paths = graph_boxes(viz.graph_svg(z))
    assert len(boxes) == 1201 and len(paths) == 1200
    with pytest.raises(TypeError, match="graph_svg"):
        viz.graph_svg([1.0])


def test_pictures_are_strings_that_jupyter_shows_as_svg():
    pic = viz.heatmap([[0.5, 0.5], [0.2, 0.8]])
    assert isinstance(pic, str) and pic._repr_svg_() == str(pic) and pic.startswith("<svg")
    a = ta.tensor(1.0, requires_grad=True)
    assert viz.graph_svg(a * 2)._repr_svg_().startswith("<svg")
    assert viz.line_chart({"x": [1.0, 2.0]})._repr_svg_().startswith("<svg")
