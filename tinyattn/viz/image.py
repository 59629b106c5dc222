"""Images, and attention over an image's grid of cells, as SVG and in a terminal.

    viz.image(img, overlay=weights, title="where it looked", path="look.svg")
    viz.image_attention(img, [("soft", words, weights), ("hard", words2, weights2)], path=...)
    viz.print_image(img, overlay=weights)           # in a console

img: a (3, H, W) RGB or (H, W) grey Tensor or nested list, values in [0, 1] (clipped).
overlay / weights: a (h, w) grid of attention weights over the image (h, w need not be H, W: each
weight covers an (H/h) x (W/w) block of pixels, as a CNN's feature grid does). The picture keeps
the image bright where the weight is high and veils it in dark where the weight is low, relative
to the largest weight (the look of Figure 15 in "Show, Attend and Tell"); hover a cell in a
browser to read its weight.

The pixels travel as a PNG inside the SVG (a data: URI), written here with zlib: no image library.

Chapter 8 of the tour (docs/08-visual-attention.md) shows these pictures.
"""
import base64
import struct
import zlib

from ._inputs import as_matrix
from .colors import ansi256
from .svg import Svg, escape, text_width, write
from .terminal import _resolve_mode

_VEIL = 0.82      # opacity of the dark veil over a cell of weight 0


def _as_rgb(who, img):
    """img -> rows of (r, g, b) tuples of floats in [0, 1]."""
    data = img.tolist() if hasattr(img, "tolist") else img
    if not isinstance(data, list) or not data:
        raise ValueError(f"{who}: expected a (3, H, W) or (H, W) image, got {data!r:.60}")
    if isinstance(data[0], list) and data[0] and isinstance(data[0][0], list):
        if len(data) != 3:
            raise ValueError(f"{who}: a 3-d image must be (3, H, W) RGB, got {len(data)} "
                             f"channels")
        H, W = len(data[0]), len(data[0][0])
        if any(len(ch) != H or any(len(r) != W for r in ch) for ch in data):
            raise ValueError(f"{who}: the three channels must have the same (H, W)")
        rows = [[(data[0][y][x], data[1][y][x], data[2][y][x]) for x in range(W)]
                for y in range(H)]
    else:
        grey = as_matrix(who, data)
        rows = [[(v, v, v) for v in r] for r in grey]
    return [[tuple(min(1.0, max(0.0, float(c))) for c in p) for p in r] for r in rows]


def _as_grid(who, overlay):
    if overlay is None:
        return None
    return as_matrix(who, overlay.tolist() if hasattr(overlay, "tolist") else overlay)


def png_bytes(rows):
    """A PNG file (8-bit RGB) of rows of (r, g, b) floats in [0, 1]."""
    H, W = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(int(round(c * 255)) for p in r for c in p) for r in rows)

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _data_uri(rows):
    return "data:image/png;base64," + base64.b64encode(png_bytes(rows)).decode("ascii")


def _define(svg, rows, scale, image_id="pixels"):
    """Put the image in the SVG's <defs> once; every panel then <use>s it (one copy of the PNG)."""
    H, W = len(rows), len(rows[0])
    svg.defs.append(f'<image id="{image_id}" href="{_data_uri(rows)}" width="{W * scale}" '
                    f'height="{H * scale}" preserveAspectRatio="none" '
                    f'style="image-rendering:pixelated"/>')
    return image_id


def _draw(svg, rows, grid, x, y, scale, label=None, image_id="pixels"):
    """The image (defined by `_define`) at (x, y), `scale` px per pixel, veiled by `grid`."""
    H, W = len(rows), len(rows[0])
    svg.add("use", href=f"#{image_id}", x=x, y=y)
    if grid is not None:
        gh, gw = len(grid), len(grid[0])
        top = max(max(r) for r in grid)
        ch, cw = H * scale / gh, W * scale / gw
        for i, r in enumerate(grid):
            for j, v in enumerate(r):
                rel = v / top if top > 0 else 0.0
                svg.rect(x + j * cw, y + i * ch, cw, ch, title=f"cell ({i}, {j}): {v:.3f}",
                         fill="#000000", fill_opacity=round(_VEIL * (1 - rel), 3))
    svg.rect(x, y, W * scale, H * scale, fill="none", stroke="#999999", stroke_width=0.5)
    if label:
        svg.text(x + W * scale / 2, y + H * scale + 11, label, size=11, anchor="middle")


def image(img, overlay=None, title=None, path=None, *, scale=8):
    """One image (with an attention overlay) as SVG; returns the text and writes `path`."""
    rows = _as_rgb("image", img)
    grid = _as_grid("image", overlay)
    H, W = len(rows), len(rows[0])
    pad, top = 10, 10 + (24 if title else 0)
    width = max(W * scale + 2 * pad, text_width(title, 14) + 2 * pad if title else 0)
    svg = Svg(width, top + H * scale + pad)
    if title:
        svg.text(width / 2, pad + 8, title, size=14, anchor="middle", font_weight="bold")
    _define(svg, rows, scale)
    _draw(svg, rows, grid, (width - W * scale) / 2, top, scale)
    return write(str(svg), path)


def image_attention(img, rows, title=None, path=None, *, scale=3):
    """Figure-15 style: for each model (a row), the image, then one panel per generated word
    with that word's attention over the image.

    rows: [(label, words, weights)], weights (len(words), h, w) per row (a Tensor or lists);
    returns the SVG text and writes `path`."""
    who = "image_attention"
    pixels = _as_rgb(who, img)
    H, W = len(pixels), len(pixels[0])
    grids = []
    for label, words, weights in rows:
        data = weights.tolist() if hasattr(weights, "tolist") else weights
        if len(data) != len(words):
            raise ValueError(f"{who}: row {label!r} has {len(words)} words but "
                             f"{len(data)} attention maps")
        grids.append([_as_grid(who, g) for g in data])
    pw, ph = W * scale, H * scale
    gap, pad, label_w = 8, 10, 14 + max((text_width(r[0], 12) for r in rows), default=0)
    top = pad + (24 if title else 0)
    n_cols = 1 + max((len(r[1]) for r in rows), default=0)
    width = pad + label_w + n_cols * (pw + gap) + pad
    width = max(width, text_width(title, 14) + 2 * pad if title else 0)
    row_h = ph + 22
    svg = Svg(width, top + len(rows) * row_h + pad)
    if title:
        svg.text(width / 2, pad + 8, title, size=14, anchor="middle", font_weight="bold")
    _define(svg, pixels, scale)
    for k, ((label, words, _), maps) in enumerate(zip(rows, grids)):
        y = top + k * row_h
        svg.group(class_="model", id=f"row-{escape(str(label))}")
        svg.text(pad, y + ph / 2, label, size=12, font_weight="bold")
        x = pad + label_w
        _draw(svg, pixels, None, x, y, scale, "image")
        for word, grid in zip(words, maps):
            x += pw + gap
            _draw(svg, pixels, grid, x, y, scale, word)
        svg.end_group()
    return write(str(svg), path)


# ---------------------------------------------------------------------------- terminal

_RAMP = " .:-=+*#%@"


def terminal_image(img, overlay=None, title=None, *, color=None, stream=None):
    """The image in a terminal, two pixels per character (the upper half block coloured as the
    upper pixel, its background as the lower one), veiled by `overlay` like the SVG. Without
    colour (a file, a pipe, NO_COLOR) each pixel's brightness becomes one of ' .:-=+*#%@'."""
    rows = _as_rgb("terminal_image", img)
    grid = _as_grid("terminal_image", overlay)
    H, W = len(rows), len(rows[0])
    if grid is not None:
        top = max(max(r) for r in grid) or 1.0
        gh, gw = len(grid), len(grid[0])
        rows = [[tuple(c * (1 - _VEIL * (1 - grid[y * gh // H][x * gw // W] / top)) for c in p)
                 for x, p in enumerate(r)] for y, r in enumerate(rows)]
    mode = _resolve_mode(color, stream)
    lines = [title] if title else []
    if mode is None:
        for r in rows[::2]:
            lines.append("".join(
                _RAMP[min(9, int((0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]) * 10))] * 2
                for p in r))
        return "\n".join(lines)

    def fg(p):
        rgb = tuple(int(round(c * 255)) for c in p)
        return ("\x1b[38;2;%d;%d;%dm" % rgb if mode == "truecolor"
                else f"\x1b[38;5;{ansi256(rgb)}m")

    def bg(p):
        rgb = tuple(int(round(c * 255)) for c in p)
        return ("\x1b[48;2;%d;%d;%dm" % rgb if mode == "truecolor"
                else f"\x1b[48;5;{ansi256(rgb)}m")
    for y in range(0, H, 2):
        upper, lower = rows[y], rows[y + 1] if y + 1 < H else [(0.0, 0.0, 0.0)] * W
        lines.append("".join(fg(u) + bg(d) + "\u2580" for u, d in zip(upper, lower)) + "\x1b[0m")
    return "\n".join(lines)


def print_image(img, overlay=None, title=None, *, color=None, stream=None):
    """Print `terminal_image(...)` to `stream` (default sys.stdout)."""
    import sys
    stream = sys.stdout if stream is None else stream
    print(terminal_image(img, overlay, title, color=color, stream=stream), file=stream)
