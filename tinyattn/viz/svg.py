"""A tiny SVG writer: shapes are appended as text, `str(svg)` is the document.

SVG is XML, so a picture is just text: `<rect x="0" y="0" width="10" height="10" fill="#440154"/>`.
Coordinates start at the top-left corner and y grows downwards. Anything that came from the user
(labels, titles) goes through `escape`, because `<`, `&` and quotes would otherwise break the XML.

    svg = Svg(200, 100)
    svg.rect(10, 10, 50, 30, fill="#3d2c6f", title="hover text")
    svg.text(100, 60, "a < b", size=14, anchor="middle")
    svg.save("box.svg")
"""
import unicodedata

SANS = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"


def escape(text):
    """Text made safe for XML content and attribute values."""
    text = str(text)
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"),
                        ("'", "&#39;")):
        text = text.replace(raw, entity)
    # XML 1.0 forbids most control characters even as entities: show their Unicode pictures
    return "".join(chr(0x2400 + ord(c)) if ord(c) < 32 and c not in "\t\n\r" else c for c in text)


def visible(label):
    """A token as a reader should see it: spaces, tabs and newlines shown as symbols.

    Attention labels are often single characters, and an invisible ' ' column would be baffling."""
    label = str(label)
    shown = label.replace(" ", "\u2423").replace("\t", "\u21e5").replace("\n", "\u21b5")
    shown = "".join(chr(0x2400 + ord(c)) if ord(c) < 32 else c for c in shown)
    return shown if shown else "\u2205"  # the empty token


def text_width(text, size, mono=False):
    """Estimated width in px of `text` at font size `size` (no font metrics without a renderer).

    Monospaced glyphs are 0.6 em wide (two cells for East Asian wide characters); the sans-serif
    estimate of 0.58 em per character is the average of DejaVu Sans over Latin text."""
    per_char = 0.6 if mono else 0.58
    cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in str(text))
    return cells * per_char * size


def _num(v):
    """Coordinates with at most two decimals keep the files small."""
    v = round(float(v), 2)
    return str(int(v)) if v == int(v) else str(v)


def _attrs(attrs):
    parts = []
    for key, value in attrs.items():
        if value is None:
            continue
        name = key.rstrip("_").replace("_", "-")  # font_size -> font-size, class_ -> class
        value = _num(value) if isinstance(value, (int, float)) else escape(value)
        parts.append(f' {name}="{value}"')
    return "".join(parts)


class Svg:
    def __init__(self, width, height, background="#ffffff"):
        self.width = width
        self.height = height
        self.parts = []
        self.defs = []
        if background:
            self.rect(0, 0, width, height, fill=background)

    def add(self, tag, title=None, content=None, **attrs):
        """Append `<tag attrs/>`; `title` becomes a <title> child (a browser shows it on hover)."""
        inner = ""
        if title is not None:
            inner += f"<title>{escape(title)}</title>"
        if content is not None:
            inner += escape(content)
        if inner:
            self.parts.append(f"<{tag}{_attrs(attrs)}>{inner}</{tag}>")
        else:
            self.parts.append(f"<{tag}{_attrs(attrs)}/>")

    def rect(self, x, y, width, height, title=None, **attrs):
        self.add("rect", title, x=x, y=y, width=width, height=height, **attrs)

    def line(self, x1, y1, x2, y2, stroke="#000000", **attrs):
        self.add("line", x1=x1, y1=y1, x2=x2, y2=y2, stroke=stroke, **attrs)

    def polyline(self, points, stroke, title=None, **attrs):
        pts = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self.add("polyline", title, points=pts, stroke=stroke, fill="none", **attrs)

    def circle(self, cx, cy, r, title=None, **attrs):
        self.add("circle", title, cx=cx, cy=cy, r=r, **attrs)

    def text(self, x, y, text, size=12, anchor="start", rotate=None, mono=False, **attrs):
        """Text whose anchor point (start, middle or end) is at (x, y), vertically centred.

        rotate=-90 turns it about that point to read bottom-to-top."""
        transform = f"rotate({_num(rotate)} {_num(x)} {_num(y)})" if rotate else None
        # dy = 0.35em moves the baseline down so the text's middle sits at y, in every renderer
        # (dominant-baseline is ignored or interpreted differently by several of them)
        self.add("text", None, text, x=x, y=y, dy="0.35em", font_size=size, text_anchor=anchor,
                 font_family=MONO if mono else SANS, transform=transform, **attrs)

    def vertical_gradient(self, gradient_id, colors):
        """A <linearGradient> from colors[0] at the bottom to colors[-1] at the top."""
        n = len(colors) - 1
        stops = "".join(f'<stop offset="{_num(100 * i / n)}%" stop-color="{c}"/>'
                        for i, c in enumerate(colors))
        self.defs.append(f'<linearGradient id="{gradient_id}" x1="0" y1="1" x2="0" y2="0">'
                         f'{stops}</linearGradient>')

    def group(self, **attrs):
        """Open a <g> (close it with end_group): shared attributes, and an id tests can find."""
        self.parts.append(f"<g{_attrs(attrs)}>")

    def end_group(self):
        self.parts.append("</g>")

    def __str__(self):
        w, h = _num(self.width), _num(self.height)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}">')
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        return "\n".join([head, defs, *self.parts, "</svg>\n"])

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(self))


class Picture(str):
    """SVG text: a plain str (save it, print it, compare it) that Jupyter shows as the picture."""

    def _repr_svg_(self):
        return str(self)


def write(text, path):
    """Write `text` to `path` when a path is given; return it either way, as a Picture."""
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return Picture(text)
