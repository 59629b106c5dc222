"""Shared test helpers: comparisons, PyTorch conversion, hand values checked against PyTorch,
hypothesis strategies for tensors.

The strategies build tensors in several memory layouts (contiguous, transposed, strided slices,
offset views), because a kernel that is right for contiguous buffers can still be wrong for views.
"""
import math

from hypothesis import strategies as st

import tinyattn as ta


def flat(x):
    if isinstance(x, (list, tuple)):
        return [z for y in x for z in flat(y)]
    return [x]


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=""):
    """Compare tensors / nested lists / numbers elementwise (NaN equals NaN, inf equals inf)."""
    a = actual.tolist() if hasattr(actual, "tolist") else actual
    e = expected.tolist() if hasattr(expected, "tolist") else expected
    if hasattr(actual, "shape") and hasattr(expected, "shape"):
        assert tuple(actual.shape) == tuple(expected.shape), \
            f"{msg} shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    fa, fe = flat(a), flat(e)
    assert len(fa) == len(fe), f"{msg} {len(fa)} elements vs {len(fe)}"
    for i, (u, v) in enumerate(zip(fa, fe)):
        if isinstance(v, bool) or isinstance(u, bool):
            assert bool(u) == bool(v), f"{msg} element {i}: {u} != {v}"
            continue
        if math.isnan(v):
            assert math.isnan(u), f"{msg} element {i}: {u} != nan"
            continue
        if math.isinf(v):
            assert u == v, f"{msg} element {i}: {u} != {v}"
            continue
        assert abs(u - v) <= atol + rtol * abs(v), f"{msg} element {i}: {u} != {v}"


def to_torch(t, requires_grad=False):
    import torch
    dtypes = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
              "bool": torch.bool}
    out = torch.tensor(t.tolist(), dtype=dtypes[t.dtype.name]).reshape(tuple(t.shape))
    return out.requires_grad_(requires_grad) if requires_grad else out



def _same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b if isinstance(a, bool) or isinstance(b, bool) else abs(a - b) <= 1e-6 * (
        1 + abs(b)) if math.isfinite(b) else a == b


def check_value_and_dtype(expr, expected, dtype, **names):
    """`expr` evaluated with `lib` = tinyattn (and `names`) gives `expected` (worked out by hand;
    NaN equals NaN, floats to 1e-6) with dtype `dtype`; where PyTorch is installed, the same
    expression with `lib` = torch gives the same value and dtype."""
    out = eval(expr, {"lib": ta, **names})
    assert _same(out.tolist(), expected), out.tolist()
    assert out.dtype.name == dtype
    try:
        import torch
    except ImportError:
        return
    theirs = eval(expr, {"lib": torch, **names})
    assert _same(out.tolist(), theirs.tolist())
    assert str(theirs.dtype) == f"torch.{dtype}"

# ---------------------------------------------------------------------------- strategies

def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


@st.composite
def broadcastable_pair(draw, max_dims=3, max_side=4):
    """Two shapes that broadcast together (some dims 1 on either side, different ranks)."""
    out = draw(shapes(1, max_dims, 1, max_side))
    a, b = list(out), list(out)
    for i in range(len(out)):
        r = draw(st.integers(0, 3))
        if r == 1:
            a[i] = 1
        elif r == 2:
            b[i] = 1
    a = a[draw(st.integers(0, len(a) - 1)):] if draw(st.booleans()) else a
    b = b[draw(st.integers(0, len(b) - 1)):] if draw(st.booleans()) else b
    return tuple(a), tuple(b)


def make_tensor(shape, layout, seed, dtype=ta.float64, positive=False, requires_grad=False):
    """A tensor of `shape` whose memory layout is `layout`:
    'contiguous', 'transposed' (a permuted view), 'strided' (every other element), 'offset'."""
    gen = ta.Generator(seed)
    base_shape = shape
    if layout == "transposed" and len(shape) >= 2:
        perm = list(range(len(shape)))[::-1]
        base = ta.randn(tuple(shape[p] for p in perm), dtype=dtype, generator=gen)
        t = base.permute(*perm)
    elif layout == "strided" and len(shape) >= 1:
        base = ta.randn((shape[0] * 2,) + tuple(shape[1:]), dtype=dtype, generator=gen)
        t = base[::2]
    elif layout == "offset" and len(shape) >= 1:
        base = ta.randn((shape[0] + 1,) + tuple(shape[1:]), dtype=dtype, generator=gen)
        t = base[1:]
    else:
        t = ta.randn(base_shape, dtype=dtype, generator=gen)
    if positive:
        t = t.abs() + 0.5
    t = t.detach()
    assert tuple(t.shape) == tuple(shape)
    if requires_grad:
        t.requires_grad_(True)
    return t


layouts = st.sampled_from(["contiguous", "transposed", "strided", "offset"])
seeds = st.integers(0, 2 ** 31 - 1)


@st.composite
def matmul_shapes(draw):
    """Operand shapes for every case of torch.matmul: 1-D, 2-D, batched with broadcasting."""
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(shapes(0, 2, 1, 3))
    ba = tuple(1 if draw(st.booleans()) else s for s in batch)
    bb = tuple(1 if draw(st.booleans()) else s for s in batch)
    ba = ba[draw(st.integers(0, len(ba))):]
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm"]))
    a = (k,) if kind in ("vv", "vm") else ba + (m, k)
    b = (k,) if kind in ("vv", "mv") else bb + (k, n)
    return a, b
