"""The machinery of tests/parity/test_op_db.py: PyTorch's own operator samples (OpInfo, shipped in
the torch wheel as torch.testing._internal.common_methods_invocations.op_db) run through tinyattn.

For every OpInfo whose function tinyattn has (same name: tinyattn.X, tinyattn.nn.functional.X,
or the Tensor method), every sample input PyTorch generates for float32, float64, int64, int32,
uint8 and bool is converted to tinyattn (tensors element by element, contiguous and as strided
views), run in both libraries, and compared: values (NaN equals NaN), shapes and dtypes; then
the gradient of a weighted sum of the outputs, for float64; then the in-place variant (for the
ops in INPLACE); then each of PyTorch's `error_inputs` must raise in tinyattn too.
"""
import math

import torch

import tinyattn as ta

DTYPES = {torch.float32: ta.float32, torch.float64: ta.float64, torch.int64: ta.int64,
          torch.int32: ta.int32, torch.uint8: ta.uint8, torch.bool: ta.bool}


# OpInfos whose `op` takes its arguments in another order than the public function does
ADAPTERS = {
    "einsum": lambda tensors, equation, **kw: ta.einsum(equation, *tensors),
    "nn.functional.embedding": lambda weight, idx, **kw: ta.nn.functional.embedding(idx, weight,
                                                                                    **kw),
    "where": lambda x, condition, other: ta.where(condition, x, other),
    "zero_": lambda x: x.clone().zero_(),    # the OpInfo's op clones too: torch.zero_(x.clone())
}
# Ops whose results are random: only shapes and dtypes are compared.
RANDOM = {"empty", "empty_like", "new_empty", "multinomial", "rand_like", "randint", "randn",
          "randn_like", "nn.functional.dropout", "bernoulli", "normal"}
# Ops whose index outputs depend on how ties are broken (PyTorch leaves it unspecified): the
# values are compared, and the indices must pick those values from the input.
TIES = {"sort", "argsort", "topk", "msort"}





def new_differences(found, known):
    """The (name, kind) differences in `found` that `known` does not list, one message each."""
    new = {}
    for name, dtype, kind, msg in found:
        if (name, kind) not in known:
            new.setdefault((name, kind), f"{dtype}: {msg}")
    return "\n".join(f"  {n} [{k}] {m}" for (n, k), m in sorted(new.items()))


def stale_known(found, known):
    """The entries of `known` that no longer occur in `found`."""
    return sorted(set(known) - {(name, kind) for name, _, kind, _ in found})


def random_sample(op, sample):
    """Is this sample's result random (a random op, or attention with dropout)?"""
    return op.name in RANDOM or bool(sample.kwargs.get("dropout_p", 0.0))


def tinyattn_function(name):
    """tinyattn's function for an OpInfo name (the Tensor method for method-only ops such as
    `float`), or None."""
    if name in ADAPTERS:
        return ADAPTERS[name]
    if name.startswith("nn.functional."):
        return getattr(ta.nn.functional, name[len("nn.functional."):], None)
    if "." in name:
        return None
    fn = getattr(ta, name, None)
    if fn is None or isinstance(fn, ta.dtype) or not callable(fn):
        method = getattr(ta.Tensor, name, None)
        return (lambda x, *a, **k: method(x, *a, **k)) if callable(method) else None
    return fn


class Unconvertible(Exception):
    pass


def convert(x, strided=False):
    """A torch value -> tinyattn (tensors copied; strided=True gives a non-contiguous view)."""
    if isinstance(x, torch.Tensor):
        if x.dtype not in DTYPES:
            raise Unconvertible(f"dtype {x.dtype}")
        if x.layout != torch.strided or x.is_complex():
            raise Unconvertible("layout")
        dt = DTYPES[x.dtype]
        if x.numel() == 0:          # tolist() of an empty tensor loses its shape
            t = ta.zeros(*x.shape, dtype=dt)
        else:
            t = ta.tensor(x.detach().tolist(), dtype=dt)
        if strided and x.dim() >= 1 and x.numel() > 1:
            shape = tuple(x.shape)
            base = ta.zeros(*shape[:-1], 2 * shape[-1], dtype=dt)
            with ta.no_grad():
                base[..., ::2] = t
            t = base[..., ::2]
        if x.requires_grad:
            t = t.detach().clone().requires_grad_(True) if not strided else t.requires_grad_(True)
        return t
    if isinstance(x, torch.dtype):
        if x not in DTYPES:
            raise Unconvertible(f"dtype {x}")
        return DTYPES[x]
    if isinstance(x, torch.device):
        return ta.device(str(x))
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (list, tuple)):
        out = [convert(v, strided) for v in x]
        return type(x)(out) if isinstance(x, tuple) and not hasattr(x, "_fields") else out
    if isinstance(x, dict):
        return {k: convert(v, strided) for k, v in x.items()}
    if isinstance(x, (torch.memory_format, torch.layout, torch.Generator)) or callable(x):
        raise Unconvertible(type(x).__name__)
    return x


def flatten(x):
    """Nested outputs -> a list of (shape, dtype name, values) or plain values."""
    if isinstance(x, (torch.Tensor, ta.Tensor)):
        return [(tuple(x.shape), str(x.dtype).split(".")[-1], x.detach().tolist())]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in flatten(item)]
    return [x]


def close(a, b, rtol, atol):
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            close(u, v, rtol, atol) for u, v in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(b):
            return math.isnan(a)
        if math.isinf(b):
            return a == b
        return abs(a - b) <= atol + rtol * abs(b)
    return a == b


def same_outputs(got, expected, dtype, shapes_only=False):
    rtol, atol = (1.3e-6, 1e-5) if dtype is torch.float32 else (1e-7, 1e-7)
    g, e = flatten(got), flatten(expected)
    if shapes_only:
        g = [u[:2] if isinstance(u, tuple) else u for u in g]
        e = [v[:2] if isinstance(v, tuple) else v for v in e]
        return None if g == e else f"shapes or dtypes {g} != PyTorch {e}"
    if len(g) != len(e):
        return f"{len(g)} outputs, PyTorch {len(e)}"
    for k, (u, v) in enumerate(zip(g, e)):
        if isinstance(v, tuple) and len(v) == 3:
            if not isinstance(u, tuple):
                return f"output {k}: {type(u).__name__}, PyTorch a tensor"
            if u[0] != v[0]:
                return f"output {k}: shape {u[0]}, PyTorch {v[0]}"
            if u[1] != v[1]:
                return f"output {k}: dtype {u[1]}, PyTorch {v[1]}"
            if not close(u[2], v[2], rtol, atol):
                return f"output {k}: values differ"
        elif not close(u, v, rtol, atol):
            return f"output {k}: {u!r} != {v!r}"
    return None


def _double(x):
    if isinstance(x, torch.Tensor) and x.dtype is torch.float32:
        return x.double()
    if isinstance(x, (list, tuple)):
        return type(x)(_double(v) for v in x)
    if isinstance(x, dict):
        return {k: _double(v) for k, v in x.items()}
    return x


def _max_error(values, exact):
    if isinstance(values, list):
        return max((_max_error(u, v) for u, v in zip(values, exact)), default=0.0)
    if isinstance(values, (int, float)) and isinstance(exact, (int, float)) \
            and math.isfinite(exact):
        return abs(values - exact)
    return 0.0 if values == exact or (values != values and exact != exact) else math.inf


def as_accurate_as_pytorch(op, sample, got, expected):
    """float32 results that differ from PyTorch's by more than the tolerance (a long dot product
    rounds differently in another summation order) pass if they are as close to the float64
    result as PyTorch's own float32 result is, within a factor of two."""
    try:
        exact = op(_double(sample.input), *_double(list(sample.args)), **_double(sample.kwargs))
    except Exception:            # noqa: BLE001 - no float64 twin: keep the plain comparison
        return False
    g, e, x = flatten(got), flatten(expected), flatten(exact)
    if not (len(g) == len(e) == len(x)):
        return False
    for u, v, w in zip(g, e, x):
        if not (isinstance(u, tuple) and isinstance(v, tuple) and isinstance(w, tuple)):
            return False
        if u[:2] != v[:2] or _max_error(u[2], w[2]) > 2 * _max_error(v[2], w[2]) + 1e-6:
            return False
    return True


def _call(fn, sample_input, args, kwargs):
    return fn(sample_input, *args, **kwargs)


def check_op(op, report, strided_too=True, grads=True):
    """Run op's samples through tinyattn; append (op, dtype, kind, message) to report."""
    fn = tinyattn_function(op.name)
    for dtype in DTYPES:
        if not op.supports_dtype(dtype, "cpu"):
            continue
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
        except Exception:           # a sample generator that needs something absent here
            continue
        for k, s in enumerate(samples):
            try:
                expected = op(s.input, *s.args, **s.kwargs)
            except Exception:
                continue
            for strided in ((False, True) if strided_too else (False,)):
                try:
                    x = convert(s.input, strided)
                    args, kwargs = convert(list(s.args), strided), convert(s.kwargs, strided)
                except Unconvertible:
                    break
                where = f"sample {k}{' strided' if strided else ''}"
                try:
                    got = _call(fn, x, args, kwargs)
                except Exception as e:   # noqa: BLE001 - every failure is reported
                    report.append((op.name, dtype, "error", f"{where}: {type(e).__name__}: "
                                                           f"{str(e)[:120]}"))
                    break
                want = expected
                if op.name in TIES:
                    try:
                        dim = s.kwargs.get("dim", s.args[0] if s.args and op.name == "argsort"
                                           else -1)
                        if op.name == "argsort":
                            want = s.input.gather(dim, expected) if s.input.dim() else expected
                            got = ta.gather(x, dim, got) if x.ndim else got
                        else:
                            want, got = expected[0], got[0]
                    except Exception as e:   # noqa: BLE001
                        report.append((op.name, dtype, "error", f"{where}: {e}"[:160]))
                        break
                diff = same_outputs(got, want, dtype, random_sample(op, s))
                if diff and dtype is torch.float32 and op.name not in TIES | RANDOM:
                    diff = diff if not as_accurate_as_pytorch(op, s, got, expected) else None
                if diff:
                    report.append((op.name, dtype, "mismatch", f"{where}: {diff}"))
                    break
    if grads and op.supports_autograd and op.supports_dtype(torch.float64, "cpu") \
            and op.name not in RANDOM:
        check_grads(op, fn, report)


def check_grads(op, fn, report):
    try:
        samples = list(op.sample_inputs("cpu", torch.float64, requires_grad=True))
    except Exception:
        return
    for k, s in enumerate(samples):
        leaves_t = [t for t in [s.input, *s.args] if isinstance(t, torch.Tensor)
                    and t.requires_grad]
        if not leaves_t or random_sample(op, s):
            continue
        try:
            out_t = op(s.input, *s.args, **s.kwargs)
            outs_t = [o for o in (out_t if isinstance(out_t, (list, tuple)) else [out_t])
                      if isinstance(o, torch.Tensor) and o.dtype.is_floating_point]
            if not outs_t:
                continue
            weights = [torch.linspace(-1, 1, o.numel(), dtype=torch.float64).reshape(o.shape)
                       for o in outs_t]
            grads_t = torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs_t, weights)),
                                          leaves_t, allow_unused=True)
        except Exception:
            continue
        try:
            x = convert(s.input)
            args, kwargs = convert(list(s.args)), convert(s.kwargs)
        except Unconvertible:
            continue
        leaves = [t for t in [x, *args] if isinstance(t, ta.Tensor) and t.requires_grad]
        try:
            out = fn(x, *args, **kwargs)
            outs = [o for o in (out if isinstance(out, (list, tuple)) else [out])
                    if isinstance(o, ta.Tensor) and o.dtype.is_floating_point]
            total = None
            for o, w in zip(outs, weights):
                term = (o * convert(w)).sum()
                total = term if total is None else total + term
            total.backward()
        except Exception as e:   # noqa: BLE001
            report.append((op.name, torch.float64, "grad error", f"sample {k}: "
                                                                   f"{type(e).__name__}: {e}"[:160]))
            continue
        for j, (a, b) in enumerate(zip(leaves, grads_t)):
            if b is None:
                continue
            ga = a.grad.tolist() if a.grad is not None else None
            if ga is None or not close(ga, b.tolist(), 1e-6, 1e-7):
                report.append((op.name, torch.float64, "grad mismatch",
                               f"sample {k}: gradient of input {j} differs"))
                break


# Ops whose in-place form (Tensor.X_) is run on the same samples too: the tensor itself must be
# changed to PyTorch's result, and returned.
INPLACE = {"scatter", "scatter_add", "scatter_reduce", "index_add", "index_fill"}


def check_inplace(op, report):
    if op.name not in INPLACE or op.inplace_variant is None:
        return
    method = getattr(ta.Tensor, op.name + "_")
    for dtype in DTYPES:
        if not op.supports_dtype(dtype, "cpu"):
            continue
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
        except Exception:
            continue
        for k, s in enumerate(samples):
            expected = s.input.clone()
            try:
                op.inplace_variant(expected, *s.args, **s.kwargs)
            except Exception:
                continue
            for strided in (False, True):
                try:
                    x = convert(s.input, strided)
                    args, kwargs = convert(list(s.args), strided), convert(s.kwargs, strided)
                except Unconvertible:
                    break
                where = f"sample {k}{' strided' if strided else ''} (in place)"
                try:
                    got = method(x, *args, **kwargs)
                except Exception as e:   # noqa: BLE001
                    report.append((op.name, dtype, "error", f"{where}: {type(e).__name__}: "
                                                           f"{str(e)[:120]}"))
                    break
                diff = ("the result is not self" if got is not x
                        else same_outputs(x, expected, dtype))
                if diff:
                    report.append((op.name, dtype, "mismatch", f"{where}: {diff}"))
                    break


def check_error_inputs(op, report):
    """PyTorch's bad inputs for op must raise in tinyattn too (not give silent garbage)."""
    fn = tinyattn_function(op.name)
    try:
        errors = list(op.error_inputs("cpu"))
    except Exception:
        return
    for k, e in enumerate(errors):
        s = e.sample_input
        try:
            x = convert(s.input)
            args, kwargs = convert(list(s.args)), convert(s.kwargs)
        except Unconvertible:
            continue
        try:
            fn(x, *args, **kwargs)
        except Exception:   # noqa: BLE001 - any error is the right answer here
            continue
        report.append((op.name, None, "accepted bad input",
                       f"error input {k}: PyTorch raises {e.error_type.__name__} "
                       f"({str(e.error_regex)[:60]!r})"))
