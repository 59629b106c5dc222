"""Line charts as SVG: loss curves, accuracy against sequence length.

    line_chart({"train": train_losses, "valid": [(epoch, loss), ...]}, title="loss",
               x_label="step", y_label="cross-entropy", log_y=True, path="loss.svg")
"""
import math

from . import colors, ticks
from .svg import Svg, text_width, write


def _as_series(series):
    """{name: points} or [(name, points), ...]; points are y values or (x, y) pairs."""
    items = list(series.items()) if isinstance(series, dict) else list(series)
    if not items:
        raise ValueError("line_chart: no series given")
    out = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"line_chart: expected (name, points) pairs or a dict, got {item!r}")
        name, points = item
        if hasattr(points, "tolist"):
            points = points.tolist()
        pts = []
        for k, p in enumerate(points):
            if isinstance(p, (tuple, list)):
                if len(p) != 2:
                    raise ValueError(f"line_chart: series {name!r} point {k} is {p!r}, not (x, y)")
                pts.append((float(p[0]), float(p[1])))
            else:
                pts.append((float(k), float(p)))
        out.append((str(name), pts))
    return out


def _segments(points):
    """Runs of finite points: a NaN (a diverged loss) breaks the line instead of hiding in it."""
    run = []
    for x, y in points:
        if math.isfinite(x) and math.isfinite(y):
            run.append((x, y))
        elif run:
            yield run
            run = []
    if run:
        yield run


def line_chart(series, title=None, x_label=None, y_label=None, path=None, *, log_y=False,
               markers=None, y_min=None, y_max=None, width=640, height=400):
    """An SVG line chart of named series; returns the SVG text (and writes `path` when given).

    series: {name: points} or [(name, points)], points a list of y values (x = 0, 1, ...) or of
        (x, y) pairs; NaN / inf points leave a gap.
    log_y: a logarithmic y axis (loss curves); needs positive y values.
    markers: a dot per point, its (x, y) shown on hover (default: series of <= 40 points).
    y_min / y_max: fix the y range (e.g. 0 and 1 for accuracy)."""
    data = _as_series(series)
    xs = [x for _, pts in data for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    ys = [y for _, pts in data for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    if not xs:
        raise ValueError("line_chart: no finite points to draw")
    if log_y:
        bad = [(name, x, y) for name, pts in data for x, y in pts if y <= 0]
        if bad:
            name, x, y = bad[0]
            raise ValueError(f"line_chart: log_y needs positive values, series {name!r} has "
                             f"y = {y} at x = {x:g}")
    if markers is None:
        markers = max(len(pts) for _, pts in data) <= 40

    # ---- scales: data -> pixels
    x_lo, x_hi = ticks.nice_range(min(xs), max(xs), 6)
    x_ticks = ticks.nice_ticks(x_lo, x_hi, 6)
    if all(x == int(x) for x in xs):  # epochs, lengths: no tick at 2.5
        x_ticks = [t for t in x_ticks if t == int(t)]
    y_lo = y_min if y_min is not None else min(ys)
    y_hi = y_max if y_max is not None else max(ys)
    if log_y:
        if y_lo == y_hi:
            y_lo, y_hi = y_lo / 2, y_hi * 2
        # 4% of the decades as margin, so the curve does not run along the frame
        margin = 0.04 * math.log10(y_hi / y_lo)
        y_lo = y_lo if y_min is not None else y_lo / 10 ** margin
        y_hi = y_hi if y_max is not None else y_hi * 10 ** margin
        y_ticks = ticks.log_ticks(y_lo, y_hi)

        def ty(v):
            return math.log10(v)
    else:
        if y_min is None or y_max is None:  # widen to whole steps only at the free ends
            lo, hi = ticks.nice_range(y_lo, y_hi, 5)
            y_lo = y_lo if y_min is not None else lo
            y_hi = y_hi if y_max is not None else hi
        y_ticks = ticks.nice_ticks(y_lo, y_hi, 5)

        def ty(v):
            return v
    x_tick_labels = ticks.format_ticks(x_ticks)
    y_tick_labels = ticks.format_ticks(y_ticks, trim=log_y)

    # ---- layout: plot area in the middle, legend on the right
    pad, font = 12, 11
    legend_w = 28 + max(text_width(name, font) for name, _ in data)
    left = pad + (18 if y_label else 0) + max(text_width(s, font) for s in y_tick_labels) + 8
    top = pad + (28 if title else 6)
    bottom = pad + 20 + (18 if x_label else 0)
    plot_w = width - left - legend_w - 2 * pad
    plot_h = height - top - bottom
    if plot_w < 80 or plot_h < 60:
        raise ValueError(f"line_chart: {width}x{height} px leaves no room for the plot; "
                         f"make it larger")

    def px(x):
        return left + plot_w * (x - x_lo) / (x_hi - x_lo)

    def py(y):
        return top + plot_h * (ty(y_hi) - ty(y)) / (ty(y_hi) - ty(y_lo))

    svg = Svg(width, height)
    if title:
        svg.text(left + plot_w / 2, pad + 9, title, size=15, anchor="middle", font_weight="bold",
                 id="title")

    # ---- grid and ticks
    svg.group(class_="axes", stroke_width=1)
    for v, s in zip(y_ticks, y_tick_labels):
        y = py(v)
        svg.line(left, y, left + plot_w, y, stroke="#e4e4e4")
        svg.text(left - 6, y, s, size=font, anchor="end", fill="#333333", class_="y-tick")
    for v, s in zip(x_ticks, x_tick_labels):
        x = px(v)
        svg.line(x, top, x, top + plot_h, stroke="#e4e4e4")
        svg.text(x, top + plot_h + 12, s, size=font, anchor="middle", fill="#333333",
                 class_="x-tick")
    svg.rect(left, top, plot_w, plot_h, fill="none", stroke="#555555")
    svg.end_group()
    if x_label:
        svg.text(left + plot_w / 2, height - pad - 6, x_label, size=12, anchor="middle",
                 class_="axis-name")
    if y_label:
        svg.text(pad + 6, top + plot_h / 2, y_label, size=12, anchor="middle", rotate=-90,
                 class_="axis-name")

    # ---- the series, clipped to the plot area (a fixed y range may cut a spike)
    # the clip box reaches 4 px past the frame so that markers on the edge stay whole
    box = [round(v) for v in (left - 4, top - 4, plot_w + 8, plot_h + 8)]
    clip = "clip-" + "-".join(map(str, box))  # ids must be unique when SVGs share an HTML page
    svg.defs.append('<clipPath id="{}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>'
                    .format(clip, *box))
    for k, (name, pts) in enumerate(data):
        color = colors.PALETTE[k % len(colors.PALETTE)]
        svg.group(class_="series", clip_path=f"url(#{clip})")
        for run in _segments(pts):
            svg.polyline([(px(x), py(y)) for x, y in run], stroke=color, title=name,
                         stroke_width=2, stroke_linejoin="round")
            if markers:
                for x, y in run:
                    svg.circle(px(x), py(y), 3, title=f"{name}\nx: {x:g}\ny: {y:.6g}",
                               fill=color)
        svg.end_group()
        # legend entry
        ly = top + 8 + 18 * k
        lx = left + plot_w + 14
        svg.line(lx, ly, lx + 18, ly, stroke=color, stroke_width=2.5)
        svg.text(lx + 24, ly, name, size=font, class_="legend")
    return write(str(svg), path)
