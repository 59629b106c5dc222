"""Colour maps computed from a perceptual colour space, plus a palette for lines.

Why not just interpolate red -> green? Equal steps in RGB are not equal steps to the eye: a rainbow
map shows bands that are not in the data. OKLab (Ottosson, 2020) is a colour space in which
Euclidean distance approximates perceived difference; its polar form OKLCH has

    L  perceived lightness (0 black .. 1 white)    C  chroma (colourfulness)    h  hue angle

A map whose L rises linearly reads as an honest ramp, even in greyscale and to colour-blind eyes:

    sequential (t in [0, 1]):  L = 0.27 + 0.65 t,  h turns from violet through blue and green to
                               yellow, as in matplotlib's viridis (computed here, not its table)
    diverging  (t in [0, 1]):  L = 0.97 - 0.52 |2t - 1|, blue below the middle, red above,
                               white at the middle (the value 0)

Colours a screen cannot show are brought inside sRGB by lowering C until they fit.
"""
import math

# ---------------------------------------------------------------------------- OKLab -> sRGB


def _oklab_to_linear_rgb(L, a, b):
    # OKLab -> cone responses (cubed) -> linear sRGB; the matrices define the colour space
    l_ = L + 0.3963377774 * a + 0.2158037573 * b
    m_ = L - 0.1055613458 * a - 0.0638541728 * b
    s_ = L - 0.0894841775 * a - 1.2914855480 * b
    l, m, s = l_ ** 3, m_ ** 3, s_ ** 3
    return (4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
            -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
            -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s)


def _encode(c):
    """Linear light -> the sRGB value a screen expects (the standard 'gamma' curve), 0..255."""
    c = min(1.0, max(0.0, c))
    c = 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055
    return round(255 * c)


def oklch(L, C, h):
    """An sRGB colour (r, g, b) in 0..255 from OKLCH, reducing chroma until it is displayable."""
    cos_h, sin_h = math.cos(math.radians(h)), math.sin(math.radians(h))

    def rgb_at(c):
        return _oklab_to_linear_rgb(L, c * cos_h, c * sin_h)

    def fits(c):
        return all(-1e-4 <= x <= 1 + 1e-4 for x in rgb_at(c))

    if not fits(C):  # bisection for the largest displayable chroma (grey, C = 0, always fits)
        lo, hi = 0.0, C
        for _ in range(20):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        C = lo
    return tuple(_encode(x) for x in rgb_at(C))


# ---------------------------------------------------------------------------- the two maps


def _sequential(t):
    L = 0.27 + 0.65 * t
    C = 0.137 - 0.241 * t + 0.294 * t * t  # muted in the middle, vivid at both ends
    h = 318 - 216 * t         # violet (318 deg) -> blue -> teal -> green -> yellow (102 deg)
    return oklch(L, C, h)


def _diverging(t):
    u = abs(2 * t - 1)        # distance from the middle (value 0)
    L = 0.97 - 0.52 * u
    C = 0.17 * u
    h = 255 if t < 0.5 else 25  # blue for negative, red for positive
    return oklch(L, C, h)


_STEPS = 256


class Colormap:
    """t in [0, 1] -> (r, g, b); a 256-entry table so that large heatmaps stay cheap."""

    def __init__(self, name, fn):
        self.name = name
        self.table = [fn(i / (_STEPS - 1)) for i in range(_STEPS)]

    def __call__(self, t):
        if t != t:  # NaN: callers colour missing values themselves
            raise ValueError(f"colormap {self.name}: cannot colour NaN")
        t = min(1.0, max(0.0, t))
        return self.table[round(t * (_STEPS - 1))]


_MAPS = {}


def get_colormap(cmap):
    """'sequential' (viridis-like), 'diverging' (blue-white-red), or a function t -> (r, g, b)."""
    if callable(cmap):
        return cmap
    builders = {"sequential": _sequential, "viridis": _sequential, "diverging": _diverging}
    if cmap not in builders:
        raise ValueError(f"colormap: unknown name {cmap!r}; use 'sequential', 'diverging' or a "
                         f"function t -> (r, g, b)")
    if cmap not in _MAPS:
        _MAPS[cmap] = Colormap(cmap, builders[cmap])
    return _MAPS[cmap]


# ---------------------------------------------------------------------------- helpers


def hex_color(rgb):
    return "#%02x%02x%02x" % tuple(rgb)


def luminance(rgb):
    """Relative luminance Y (0 black .. 1 white) of an sRGB colour."""
    r, g, b = (_linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_color_on(rgb):
    """Black or white, whichever contrasts more with the background rgb."""
    # contrast ratios (Y1 + 0.05) / (Y2 + 0.05) against white and black are equal at Y ~ 0.18
    return "#000000" if luminance(rgb) > 0.18 else "#ffffff"


def _linear(c):
    c /= 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def to_oklab(rgb):
    """sRGB (0..255) -> OKLab (L, a, b): the inverse of the conversion above."""
    r, g, b = (_linear(c) for c in rgb)
    l = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    m = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    s = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    return (0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
            1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
            0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s)


def _xterm_palette():
    """Indices 16..255 of the xterm palette: a 6x6x6 colour cube, then 24 greys."""
    levels = (0, 95, 135, 175, 215, 255)
    cube = [(levels[i // 36], levels[i // 6 % 6], levels[i % 6]) for i in range(216)]
    greys = [(8 + 10 * i,) * 3 for i in range(24)]
    return [(16 + k, to_oklab(rgb)) for k, rgb in enumerate(cube + greys)]


_XTERM = []


def ansi256(rgb):
    """The xterm 256-colour index (16..255) that looks closest to rgb (nearest in OKLab)."""
    if not _XTERM:
        _XTERM.extend(_xterm_palette())
    target = to_oklab(rgb)
    return min(_XTERM, key=lambda item: sum((x - y) ** 2 for x, y in zip(item[1], target)))[0]


# Okabe & Ito's palette, chosen to stay distinct for the common kinds of colour blindness
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#f0e442")
