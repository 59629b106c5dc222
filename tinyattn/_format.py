"""PyTorch-like printing: tensor([[1.0000, 2.5000], ...], requires_grad=True)."""
import math

from .autograd import no_grad
from .ops.layout import cat

_EDGE = 3  # elements shown at each end of a summarised dimension
_THRESHOLD = 1000  # tensors with more elements are summarised with '...'
_LINE = 80


def _fmt_float(values):
    finite = [v for v in values if math.isfinite(v)]
    special = {math.inf: "inf", -math.inf: "-inf"}

    def s(v, f):
        if v != v:
            return "nan"
        return special[v] if v in special else f(v)

    if not finite or all(v == int(v) for v in finite) and max(map(abs, finite)) < 1e8:
        return [s(v, lambda v: f"{v:.0f}.") for v in values]
    nonzero = [abs(v) for v in finite if v != 0]
    big, small = max(map(abs, finite)), (min(nonzero) if nonzero else 1.0)
    if big >= 1e8 or small < 1e-4 or big / small > 1e5:
        return [s(v, lambda v: f"{v:.4e}") for v in values]
    return [s(v, lambda v: f"{v:.4f}") for v in values]


def _summarise(t):
    """Row-major values with '...' positions for big tensors: (values, shape of kept indices)."""
    if t.numel() <= _THRESHOLD:
        return t
    for d, n in enumerate(t.shape):
        if n > 2 * _EDGE:
            t = cat([t.narrow(d, 0, _EDGE), t.narrow(d, n - _EDGE, _EDGE)], d)
    return t


def format_tensor(t):
    with no_grad():
        summarised = t.numel() > _THRESHOLD
        shown = _summarise(t.detach())
        flat = shown.tolist_flat()
    if t.dtype.is_floating_point:
        strs = _fmt_float(flat)
    elif t.dtype.name == "bool":
        strs = ["True" if v else "False" for v in flat]
    else:
        strs = [str(v) for v in flat]
    width = max((len(s) for s in strs), default=0)
    strs = [s.rjust(width) for s in strs]
    prefix = "tensor("
    if not t.shape:
        body = strs[0]
    elif t.numel() == 0:
        body = "[]"
    else:
        body = _nest(strs, shown.shape, t.shape, len(prefix) + 1, summarised)
    suffix = []
    if t.numel() == 0 and t.ndim != 1:
        suffix.append(f"size={tuple(t.shape)}")
    if t.dtype.name not in ("float32", "int64", "bool"):
        suffix.append(f"dtype=tinyattn.{t.dtype.name}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"


def _nest(strs, shape, full_shape, indent, summarised):
    if len(shape) == 1:
        items = strs
        if summarised and full_shape[0] > 2 * _EDGE:
            items = strs[:_EDGE] + ["..."] + strs[_EDGE:]
        per_line = max(1, (_LINE - indent) // (len(strs[0]) + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * indent).join(lines) + "]"
    n = shape[0]
    step = len(strs) // n
    parts = [_nest(strs[i * step:(i + 1) * step], shape[1:], full_shape[1:], indent + 1, summarised)
             for i in range(n)]
    if summarised and full_shape[0] > 2 * _EDGE:
        parts = parts[:_EDGE] + ["..."] + parts[_EDGE:]
    sep = ",\n" + "\n" * (len(shape) - 2) + " " * indent
    return "[" + sep.join(parts) + "]"
