"""Colour maps computed from a perceptual colour space, plus a palette for lines.

Why not just interpolate red -> green? Equal steps in RGB are not equal steps to the eye: a rainbow
map shows bands that are not in the data. OKLab (Ottosson, 2020) is a colour space in which
Euclidean distance approximates perceived difference; its polar form OKLCH has

    L  perceived lightness (0 black .. 1 white)    C  chroma (colourfulness)    h  hue angle

A map whose L rises linearly reads as an honest ramp, even in greyscale and to colour-blind eyes:

    sequential (t in [0, 1]):  L = 0.27 + 0.65 t,  h turns from violet through blue and green to
                               yellow, as in matplotlib's viridis (computed here, not its table)
    diverging  (t in [0, 1]):  L = 0.97 - 0.52 |2t - 1|, blue below the middle, red above, white at 0

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
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_color_on(rgb):
    """Black or white, whichever contrasts more with the background rgb."""
    # contrast ratios (Y1 + 0.05) / (Y2 + 0.05) against white and black are equal at Y ~ 0.18
    return "#000000" if luminance(rgb) > 0.18 else "#ffffff"


def ansi256(rgb):
    """The nearest of the xterm 256-colour palette's 6x6x6 cube and 24 greys: an index 16..255."""
    levels = (0, 95, 135, 175, 215, 255)

    def nearest_level(c):
        return min(range(6), key=lambda i: abs(levels[i] - c))

    r, g, b = (nearest_level(c) for c in rgb)
    cube = (levels[r], levels[g], levels[b])
    cube_index = 16 + 36 * r + 6 * g + b
    grey_i = min(23, max(0, round((sum(rgb) / 3 - 8) / 10)))
    grey = (8 + 10 * grey_i,) * 3

    def dist(c):
        return sum((x - y) ** 2 for x, y in zip(c, rgb))

    return cube_index if dist(cube) <= dist(grey) else 232 + grey_i


# Okabe & Ito's palette, chosen to stay distinct for the common kinds of colour blindness
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#f0e442")
