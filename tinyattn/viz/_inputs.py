"""Checking what users pass to the pictures: matrices, labels, value ranges."""
import math


def as_matrix(who, data):
    """A 2-D Tensor or nested lists -> a list of rows of Python floats (a copy)."""
    if hasattr(data, "tolist") and hasattr(data, "shape"):  # a tinyattn (or torch) tensor
        shape = tuple(data.shape)
        if len(shape) != 2:
            hint = " (use heatmap_grid for layers x heads)" if len(shape) in (3, 4) else ""
            raise ValueError(f"{who}: expected a 2-D tensor, got shape {shape}{hint}")
        data = data.detach().tolist() if hasattr(data, "detach") else data.tolist()
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError(f"{who}: expected a 2-D tensor or a non-empty list of rows, "
                         f"got {type(data).__name__}")
    rows = []
    for i, row in enumerate(data):
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"{who}: row {i} is {type(row).__name__}, not a list; expected a 2-D "
                             f"list of numbers")
        try:
            rows.append([float(v) for v in row])
        except (TypeError, ValueError):
            raise ValueError(f"{who}: row {i} holds something that is not a number: {row!r}") \
                from None
    widths = {len(r) for r in rows}
    if len(widths) != 1 or 0 in widths:
        raise ValueError(f"{who}: rows must have the same, non-zero length; got lengths "
                         f"{sorted(widths)}")
    return rows


def as_labels(who, axis, labels, n):
    """None -> 0..n-1; a string -> its characters; a list -> str of each item. Must have n items."""
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [str(x) for x in labels]  # a str gives its characters, which is what we want
    if len(labels) != n:
        raise ValueError(f"{who}: {axis} has {len(labels)} labels but the data has {n} "
                         f"{'columns' if axis == 'x_labels' else 'rows'}")
    return labels


def value_range(who, rows, vmin=None, vmax=None, diverging=False):
    """(lo, hi) of the finite values, symmetric about 0 for a diverging map, never empty."""
    finite = [v for row in rows for v in row if math.isfinite(v)]
    lo = vmin if vmin is not None else (min(finite) if finite else 0.0)
    hi = vmax if vmax is not None else (max(finite) if finite else 1.0)
    if diverging and vmin is None and vmax is None:
        m = max(abs(lo), abs(hi))
        lo, hi = -m, m
    if hi < lo:
        raise ValueError(f"{who}: vmin {vmin} is larger than vmax {vmax}")
    if hi == lo:  # a constant map: give it a range so the colour bar still means something
        pad = abs(lo) * 0.5 or 1.0
        lo, hi = (lo - pad, hi + pad) if diverging or lo != 0 else (0.0, 1.0)
    return lo, hi


def is_signed(rows):
    """True when the finite values have both signs: such data wants the diverging map."""
    finite = [v for row in rows for v in row if math.isfinite(v)]
    return bool(finite) and min(finite) < 0 < max(finite)
