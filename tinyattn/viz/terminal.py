"""Heatmaps printed in a terminal, for demos that train in a console.

    print_heatmap(weights, x_labels="the cat", y_labels="le chat")

With colour each cell is two spaces on a coloured background (two, because a character cell is about
twice as tall as it is wide). Colour is used only when the output is a terminal and the NO_COLOR
environment variable (https://no-color.org) is unset or empty; otherwise, and with color=False,
cells are characters of increasing ink, ' .:-=+*#%@' from the smallest value to the largest, so a
log file or a copy-paste still shows the pattern.
"""
import math
import os
import shutil
import sys

from . import colors
from ._inputs import as_labels, as_matrix, is_signed, value_range
from .svg import visible
from .ticks import format_value

RAMP = " .:-=+*#%@"
MISSING = "?"
_RESET = "\x1b[0m"
_MAX_ROW_LABEL = 10
_MAX_COL_LABEL = 6


def color_mode(stream=None):
    """'truecolor', '256' or None (no colour) for output to `stream` (default sys.stdout)."""
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return None
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return None
    return "truecolor" if os.environ.get("COLORTERM") in ("truecolor", "24bit") else "256"


def _resolve_mode(color, stream):
    if color is None:
        return color_mode(stream)
    if color is False:
        return None
    if color is True:
        return "truecolor" if os.environ.get("COLORTERM") in ("truecolor", "24bit") else "256"
    if color in ("256", "truecolor"):
        return color
    raise ValueError(f"terminal_heatmap: color must be None (auto), True, False, '256' or "
                     f"'truecolor', got {color!r}")


def _background(rgb, mode):
    if mode == "truecolor":
        return "\x1b[48;2;%d;%d;%dm" % tuple(rgb)
    return f"\x1b[48;5;{colors.ansi256(rgb)}m"


def _short(label, limit):
    label = visible(label)
    return label if len(label) <= limit else label[:limit - 1] + "\u2026"


def _column_header(labels, cell_w, indent):
    """One line when labels are single characters with room to spare, else labels written
    downwards, one character a line (side by side, '10' '11' would read as '1011')."""
    if all(len(s) < cell_w or len(s) == 1 for s in labels):
        return [" " * indent + "".join(s.ljust(cell_w) for s in labels)]
    depth = max(len(s) for s in labels)
    lines = []
    for k in range(depth):
        chars = [(s[k] if k < len(s) else " ").ljust(cell_w) for s in labels]
        lines.append(" " * indent + "".join(chars))
    return lines


def terminal_heatmap(weights, x_labels=None, y_labels=None, title=None, *, color=None, width=None,
                     cmap="auto", vmin=None, vmax=None, stream=None):
    """The heatmap as a string of lines (see print_heatmap for the arguments)."""
    who = "terminal_heatmap"
    rows = as_matrix(who, weights)
    n_rows, n_cols = len(rows), len(rows[0])
    xl = [_short(s, _MAX_COL_LABEL) for s in as_labels(who, "x_labels", x_labels, n_cols)]
    yl = [_short(s, _MAX_ROW_LABEL) for s in as_labels(who, "y_labels", y_labels, n_rows)]
    mode = _resolve_mode(color, stream)
    if cmap == "auto":
        cmap = "diverging" if is_signed(rows) else "sequential"
    diverging = cmap == "diverging"
    cmap = colors.get_colormap(cmap)
    lo, hi = value_range(who, rows, vmin, vmax, diverging)
    if width is None:
        width = shutil.get_terminal_size((80, 24)).columns
    if width < 20:
        raise ValueError(f"{who}: width {width} is too narrow (at least 20 columns)")

    indent = max(len(s) for s in yl) + 1
    room = width - indent
    cell_w = 2 if 2 * n_cols <= room else 1
    shown = min(n_cols, room // cell_w)  # columns that fit; the rest are reported, not wrapped

    def plain_cell(v):
        if not math.isfinite(v):
            return MISSING * cell_w
        t = min(1.0, max(0.0, (v - lo) / (hi - lo)))
        return RAMP[min(len(RAMP) - 1, int(t * len(RAMP)))] * cell_w

    def color_row(row):
        out, current = [], None
        for v in row:
            if math.isfinite(v):
                code, text = _background(cmap((v - lo) / (hi - lo)), mode), " " * cell_w
            else:
                code, text = "\x1b[48;5;244m", MISSING * cell_w
            if code != current:  # a run of equal colours needs its escape code only once
                out.append(code)
                current = code
            out.append(text)
        return "".join(out) + _RESET

    lines = [title] if title else []
    lines += _column_header(xl[:shown], cell_w, indent)
    for label, row in zip(yl, rows):
        body = "".join(map(plain_cell, row[:shown])) if mode is None else color_row(row[:shown])
        lines.append(label.rjust(indent - 1) + " " + body)
    # the scale: what the lightest and darkest cell mean
    if mode is None:
        scale, scale_len = f"'{RAMP}'", len(RAMP) + 2
    else:
        scale = "".join(_background(cmap(k / 15), mode) + " " for k in range(16)) + _RESET
        scale_len = 16
    ends = f"{format_value(lo)} ", f" {format_value(hi)}"
    fits = indent + len(ends[0]) + scale_len + len(ends[1]) <= width
    lines.append((" " * indent if fits else "") + ends[0] + scale + ends[1])
    if shown < n_cols:
        note = f"({n_cols - shown} of {n_cols} columns cut to fit {width} characters)"
        lines.append(note[:width])
    return "\n".join(lines)


def print_heatmap(weights, x_labels=None, y_labels=None, title=None, *, color=None, width=None,
                  cmap="auto", vmin=None, vmax=None, file=None):
    """Print a 2-D Tensor or list of rows as a heatmap to `file` (default sys.stdout).

    x_labels / y_labels: one per column / row (a string gives one per character); long column
        labels are written downwards, long labels are shortened with '\u2026'.
    color: None picks colour when `file` is a terminal and NO_COLOR is unset; True, False, '256'
        or 'truecolor' force it. width: the line limit (default: the terminal's width); columns
        that do not fit are cut, and a last line says so.
    cmap, vmin, vmax: as in `heatmap` (auto: a diverging map for data with both signs)."""
    file = sys.stdout if file is None else file
    print(terminal_heatmap(weights, x_labels, y_labels, title, color=color, width=width,
                           cmap=cmap, vmin=vmin, vmax=vmax, stream=file), file=file)
