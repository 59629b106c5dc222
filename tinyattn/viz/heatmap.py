"""Heatmaps as SVG: attention weights, positional encodings, any matrix with labelled axes.

    heatmap(weights, x_labels="hello", y_labels="bonjour", x_name="source", y_name="output")

Row i, column j of the matrix is the cell at row i (top to bottom), column j (left to right); for
attention weights of shape (T_out, T_src) that puts the queries down the side and the keys along the
bottom, so each row sums to 1. Every cell carries a <title> (row, column, value) that a browser
shows on hover. Missing values (NaN, +-inf, e.g. masked scores) are drawn grey.
"""
import hashlib
import math

from . import colors, ticks
from ._inputs import as_labels, as_matrix, is_signed, value_range
from .svg import Svg, text_width, visible, write

MISSING = "#d4d4d4"  # the colour of NaN / inf cells
_MAX_LABEL = 14      # longer labels are shortened with an ellipsis (the <title> keeps them whole)
_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 500, 1000)


# ---------------------------------------------------------------------------- layout helpers


def _short(label):
    label = visible(label)
    return label if len(label) <= _MAX_LABEL else label[:_MAX_LABEL - 1] + "\u2026"


class _Axis:
    """How one axis's tick labels fit: font size, every how many cells a label, rotated or not.

    Labels shrink with the cells down to 8 px; below that only every 2nd, 4th, 5th... is written,
    which is what a 64-position axis needs. Along x, labels too wide for their cell stand upright
    (rotated -90 degrees) instead of overlapping."""

    def __init__(self, labels, cell, along_x):
        self.labels = [_short(s) for s in labels]
        self.size = min(13.0, max(8.0, 0.75 * cell))
        widest = max(text_width(s, self.size, mono=True) for s in self.labels)
        self.rotate = along_x and widest > cell - 2
        if along_x and not self.rotate:
            needed = widest + 3          # side by side: a label's width
        else:
            needed = 1.15 * self.size    # stacked (y labels, or rotated x labels): a line height
        self.step = next((k for k in _STEPS if k * cell >= needed), len(labels))
        # how far the labels reach out from the grid edge
        self.extent = widest if (self.rotate or not along_x) else 1.2 * self.size

    def shown(self):
        return [(i, s) for i, s in enumerate(self.labels) if i % self.step == 0]


def _cell_size(rows, cols, width=800.0, height=640.0, smallest=8.0, largest=44.0):
    """Square cells that fit the grid in width x height px, within [smallest, largest]."""
    return max(smallest, min(largest, width / cols, height / rows))


def _value_font(cell):
    return min(12.0, max(7.0, 0.3 * cell))


def _auto_show_values(rows, cell, fmt):
    if cell < 28:  # beyond about 22 x 22 cells, hundreds of numbers are noise: hover instead
        return False
    size = _value_font(cell)
    widest = max(text_width(fmt(v), size) for row in rows for v in row)
    return widest <= cell - 4


def _formatter(fmt, rows):
    if fmt is None:
        return ticks.value_formatter([v for row in rows for v in row])
    return lambda v: format(v, fmt)


def _pick_colormap(cmap, all_rows):
    if cmap == "auto":
        cmap = "diverging" if is_signed(all_rows) else "sequential"
    diverging = cmap == "diverging"
    return colors.get_colormap(cmap), diverging


# ---------------------------------------------------------------------------- drawing


def _draw_cells(svg, rows, x0, y0, cell, color_of, xl, yl, x_name, y_name, show_values, fmt):
    """The grid of coloured cells, each with its hover <title>, optionally with its value."""
    svg.group(class_="cells")
    vsize = _value_font(cell)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            rgb = color_of(v)
            fill = colors.hex_color(rgb) if rgb else MISSING
            title = (f"{y_name} {i}: {visible(yl[i])}\n{x_name} {j}: {visible(xl[j])}\n"
                     f"value: {v:.6g}")
            x, y = x0 + j * cell, y0 + i * cell
            # +0.3 px overlap hides the hairline seams renderers leave between abutting rects
            svg.rect(x, y, cell + 0.3, cell + 0.3, title=title, fill=fill)
            if show_values:
                ink = colors.text_color_on(rgb) if rgb else "#000000"
                svg.text(x + cell / 2, y + cell / 2, fmt(v), size=vsize, anchor="middle",
                         fill=ink, pointer_events="none")
    svg.end_group()
    svg.rect(x0, y0, len(rows[0]) * cell, len(rows) * cell, fill="none", stroke="#555555",
             stroke_width=0.6)


def _draw_x_labels(svg, axis, x0, y_edge, cell):
    svg.group(class_="x-labels")
    for j, s in axis.shown():
        x = x0 + (j + 0.5) * cell
        if axis.rotate:
            svg.text(x, y_edge + 4, s, size=axis.size, anchor="end", rotate=-90, mono=True)
        else:
            svg.text(x, y_edge + 3 + 0.6 * axis.size, s, size=axis.size, anchor="middle",
                     mono=True)
    svg.end_group()


def _draw_y_labels(svg, axis, x_edge, y0, cell):
    svg.group(class_="y-labels")
    for i, s in axis.shown():
        svg.text(x_edge - 4, y0 + (i + 0.5) * cell, s, size=axis.size, anchor="end", mono=True)
    svg.end_group()


def _draw_colorbar(svg, x, y, height, lo, hi, cmap):
    """A vertical bar from lo (bottom) to hi (top) with 1-2-5 ticks; returns its width in px."""
    bar = 14
    svg.group(id="colorbar")
    stops = [colors.hex_color(cmap(k / 32)) for k in range(33)]
    # an id that depends only on the colours: deterministic output, distinct when two SVGs with
    # different maps are inlined into one HTML page
    gid = "cbar-" + hashlib.sha1("".join(stops).encode()).hexdigest()[:8]
    svg.vertical_gradient(gid, stops)
    svg.rect(x, y, bar, height, fill=f"url(#{gid})", stroke="#555555", stroke_width=0.6)
    values = ticks.nice_ticks(lo, hi, max(2, min(6, int(height / 40))))
    labels = ticks.format_ticks(values)
    widest = 0.0
    for v, s in zip(values, labels):
        ty = y + height * (hi - v) / (hi - lo)
        svg.line(x + bar, ty, x + bar + 4, ty, stroke="#333333", stroke_width=0.8)
        svg.text(x + bar + 6, ty, s, size=11, fill="#333333")
        widest = max(widest, text_width(s, 11))
    svg.end_group()
    return bar + 6 + widest


def _colorbar_width(lo, hi, height):
    values = ticks.nice_ticks(lo, hi, max(2, min(6, int(height / 40))))
    return 14 + 6 + max(text_width(s, 11) for s in ticks.format_ticks(values))


def _color_function(cmap, lo, hi):
    def color_of(v):
        if not math.isfinite(v):
            return None
        return cmap((v - lo) / (hi - lo))
    return color_of


# ---------------------------------------------------------------------------- public API


def heatmap(weights, x_labels=None, y_labels=None, title=None, path=None, *, x_name=None,
            y_name=None, cmap="auto", vmin=None, vmax=None, show_values=None, fmt=None,
            cell=None, colorbar=True):
    """An SVG heatmap of a 2-D Tensor or list of rows; returns the SVG text (and writes `path`).

    x_labels / y_labels: one per column / row (a string gives one label per character); spaces are
        drawn as a visible '\u2423'. Default: the indices.
    x_name / y_name: axis names, e.g. "source" / "output"; also used in the hover titles.
    cmap: "sequential" (viridis-like), "diverging" (blue-white-red, centred on 0), a function
        t -> (r, g, b), or "auto": diverging when the data has both signs, sequential otherwise.
    vmin / vmax: the colour scale's ends (default: the data's range; symmetric when diverging).
    show_values: print values in cells (default: when they fit); fmt: a format spec such as ".2f".
    cell: the cell size in px (default: the map fits in 800 x 640 px, cells between 8 and 44 px)."""
    who = "heatmap"
    rows = as_matrix(who, weights)
    n_rows, n_cols = len(rows), len(rows[0])
    xl = as_labels(who, "x_labels", x_labels, n_cols)
    yl = as_labels(who, "y_labels", y_labels, n_rows)
    cmap, diverging = _pick_colormap(cmap, rows)
    lo, hi = value_range(who, rows, vmin, vmax, diverging)
    c = float(cell) if cell else _cell_size(n_rows, n_cols)
    fmt = _formatter(fmt, rows)
    if show_values is None:
        show_values = _auto_show_values(rows, c, fmt)

    xa, ya = _Axis(xl, c, along_x=True), _Axis(yl, c, along_x=False)
    grid_w, grid_h = n_cols * c, n_rows * c
    name_size = 12
    pad = 10
    top = pad + (26 if title else 4)
    left = pad + (name_size + 8 if y_name else 0) + ya.extent + 6
    bar_h = max(grid_h, 100.0) if colorbar else 0
    bar_w = _colorbar_width(lo, hi, bar_h) if colorbar else 0
    bar_x = left + grid_w + 16
    # a long title must fit too
    title_w = text_width(title, 15) if title else 0
    width = max(bar_x + bar_w + pad if colorbar else left + grid_w + pad, title_w + 2 * pad)
    x_bottom = top + grid_h + 6 + xa.extent
    height = max(x_bottom + (name_size + 10 if x_name else 0), top + bar_h) + pad

    svg = Svg(width, height)
    if title:
        svg.text(width / 2, pad + 9, title, size=15, anchor="middle", font_weight="bold",
                 id="title")
    color_of = _color_function(cmap, lo, hi)
    _draw_cells(svg, rows, left, top, c, color_of, xl, yl, x_name or "column", y_name or "row",
                show_values, fmt)
    _draw_x_labels(svg, xa, left, top + grid_h, c)
    _draw_y_labels(svg, ya, left, top, c)
    if x_name:
        svg.text(left + grid_w / 2, x_bottom + 4 + name_size / 2, x_name, size=name_size,
                 anchor="middle", fill="#333333", class_="axis-name")
    if y_name:
        svg.text(pad + name_size / 2, top + grid_h / 2, y_name, size=name_size, anchor="middle",
                 rotate=-90, fill="#333333", class_="axis-name")
    if colorbar:
        _draw_colorbar(svg, bar_x, top, bar_h, lo, hi, cmap)
    return write(str(svg), path)


def _as_grid(who, grid):
    """A 3-D (heads, T, S) or 4-D (layers, heads, T, S) tensor, or nested lists -> rows of maps."""
    if hasattr(grid, "shape") and hasattr(grid, "tolist"):
        shape = tuple(grid.shape)
        if len(shape) not in (3, 4):
            raise ValueError(f"{who}: expected a 3-D (heads, T, S) or 4-D (layers, heads, T, S) "
                             f"tensor, got shape {shape}")
        grid = grid.detach().tolist() if hasattr(grid, "detach") else grid.tolist()
        if len(shape) == 3:
            grid = [grid]
    if not isinstance(grid, (list, tuple)) or not grid:
        raise ValueError(f"{who}: expected a list of rows of 2-D maps, got {type(grid).__name__}")
    # a flat list of maps (one row): each element is a 2-D map, not a list of maps
    if _is_map(grid[0]):
        grid = [grid]
    out = []
    for r, row in enumerate(grid):
        if _is_map(row):
            row = [row]
        out.append([as_matrix(f"{who}: panel ({r}, {k})", m) for k, m in enumerate(row)])
    shapes = {(len(m), len(m[0])) for row in out for m in row}
    if len(shapes) != 1:
        raise ValueError(f"{who}: every map must have the same shape, got {sorted(shapes)}")
    return out


def _is_map(x):
    """True for a 2-D tensor or a list of rows of numbers."""
    if hasattr(x, "shape"):
        return len(x.shape) == 2
    if not (isinstance(x, (list, tuple)) and x and isinstance(x[0], (list, tuple)) and x[0]):
        return False
    first = x[0][0]
    return not isinstance(first, (list, tuple)) and not hasattr(first, "shape")


def heatmap_grid(grid, row_titles=None, col_titles=None, x_labels=None, y_labels=None, title=None,
                 path=None, *, x_name=None, y_name=None, cmap="auto", vmin=None, vmax=None,
                 cell=None, show_values=False, fmt=None):
    """Many maps of one shape in one SVG with one shared colour scale: layers x heads of attention.

    grid: a (layers, heads, T, S) or (heads, T, S) tensor, or a list of rows of 2-D maps.
    row_titles / col_titles: e.g. ["layer 0", "layer 1"] / ["head 0", ...] (default: the indices).
    y labels are written on the first column only, x labels on the bottom row only."""
    who = "heatmap_grid"
    panels = _as_grid(who, grid)
    n_grid_rows, n_grid_cols = len(panels), max(len(r) for r in panels)
    n_rows, n_cols = len(panels[0][0]), len(panels[0][0][0])
    xl = as_labels(who, "x_labels", x_labels, n_cols)
    yl = as_labels(who, "y_labels", y_labels, n_rows)
    rt = as_labels(who, "row_titles", row_titles, n_grid_rows) if row_titles is not None else \
        [f"{i}" for i in range(n_grid_rows)]
    ct = as_labels(who, "col_titles", col_titles, n_grid_cols) if col_titles is not None else \
        [f"{k}" for k in range(n_grid_cols)]
    all_rows = [r for prow in panels for m in prow for r in m]
    cmap, diverging = _pick_colormap(cmap, all_rows)
    lo, hi = value_range(who, all_rows, vmin, vmax, diverging)
    # each panel gets about 200 px, less when there are many columns of panels
    budget = min(200.0, 880.0 / n_grid_cols)
    c = float(cell) if cell else _cell_size(n_rows, n_cols, budget, budget, smallest=3.0,
                                            largest=30.0)
    fmt = _formatter(fmt, all_rows)

    xa, ya = _Axis(xl, c, along_x=True), _Axis(yl, c, along_x=False)
    pw, ph = n_cols * c, n_rows * c
    gap = 14
    pad = 10
    head_size = 12
    top = pad + (26 if title else 4) + head_size + 8
    left = pad + head_size + 10 + (head_size + 6 if y_name else 0) + ya.extent + 6
    grid_w = n_grid_cols * pw + (n_grid_cols - 1) * gap
    grid_h = n_grid_rows * ph + (n_grid_rows - 1) * gap
    bar_h = max(min(grid_h, 600.0), 120.0)
    bar_x = left + grid_w + 16
    bar_w = _colorbar_width(lo, hi, bar_h)
    title_w = text_width(title, 15) if title else 0
    width = max(bar_x + bar_w + pad, title_w + 2 * pad)
    x_bottom = top + grid_h + 6 + xa.extent
    height = max(x_bottom + (head_size + 10 if x_name else 0), top + bar_h) + pad

    svg = Svg(width, height)
    if title:
        svg.text(width / 2, pad + 9, title, size=15, anchor="middle", font_weight="bold",
                 id="title")
    color_of = _color_function(cmap, lo, hi)
    for r, prow in enumerate(panels):
        py = top + r * (ph + gap)
        svg.text(pad + head_size / 2, py + ph / 2, rt[r], size=head_size, anchor="middle",
                 rotate=-90, font_weight="bold", class_="row-title")
        for k, m in enumerate(prow):
            px = left + k * (pw + gap)
            if r == 0:
                svg.text(px + pw / 2, top - 10, ct[k], size=head_size, anchor="middle",
                         font_weight="bold", class_="col-title")
            svg.group(class_="panel")
            _draw_cells(svg, m, px, py, c, color_of, xl, yl, x_name or "column",
                        y_name or "row", show_values, fmt)
            svg.end_group()
            if k == 0:
                _draw_y_labels(svg, ya, px, py, c)
            if r == n_grid_rows - 1:
                _draw_x_labels(svg, xa, px, py + ph, c)
    if x_name:
        svg.text(left + grid_w / 2, x_bottom + 4 + head_size / 2, x_name, size=head_size,
                 anchor="middle", fill="#333333", class_="axis-name")
    if y_name:
        svg.text(pad + head_size + 10 + head_size / 2, top + grid_h / 2, y_name, size=head_size,
                 anchor="middle", rotate=-90, fill="#333333", class_="axis-name")
    _draw_colorbar(svg, bar_x, top, bar_h, lo, hi, cmap)
    return write(str(svg), path)
