"""The grader's tools: loading a student's file, comparing results, reporting a failure.

A check is a function of the student's functions (a namespace) that returns nothing or raises
`Failed(what, input=, expected=, got=, hint=)`; the grader prints every check's verdict and, for
a failure, the input, expected against got, and a hint that points at the mistake without
giving the answer. Random inputs come from hypothesis (a seeded random.Random per example, a few
examples each: the grader runs in seconds); without hypothesis installed, from fixed seeds.
"""
import importlib.util
import math
import random
import sys
import traceback
import types
from array import array
from pathlib import Path

from numba import njit

from .. import backend
from .. import dtypes as _dt
from ..creation import tensor
from ..autograd_functional import gradcheck, gradgradcheck
from ..grad_mode import no_grad
from ..storage import TensorBase

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ImportError:     # hypothesis is a test dependency: fall back to fixed seeds
    given = None


_LIBRARY = str(Path(__file__).resolve().parent.parent)


class Failed(Exception):
    """One check's failure: what went wrong, on which input, expected against got, a hint."""

    def __init__(self, what, *, input=None, expected=None, got=None, hint=None):  # noqa: A002
        super().__init__(what)
        self.what, self.input, self.expected, self.got, self.hint = what, input, expected, got, hint

    def report(self):
        lines = [f"  {self.what}"]
        for label, value in (("input", self.input), ("expected", self.expected),
                             ("got", self.got), ("hint", self.hint)):
            if value is not None:
                lines.append(f"    {label + ':':9} {_short(value)}")
        return "\n".join(lines)


def _short(value, limit=400):
    text = value if isinstance(value, str) else show(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def show(value):
    """A compact text of a tensor, buffer, list or number, for reports."""
    if isinstance(value, TensorBase):
        return f"tensor{tuple(value.shape)} {value.dtype} {_round(value.tolist())}"
    if isinstance(value, array):
        return f"array('{value.typecode}') {_round(list(value))}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={show(v)}" for k, v in value.items())
    if isinstance(value, (tuple, list)) and any(isinstance(v, TensorBase) for v in value):
        return "(" + ", ".join(show(v) for v in value) + ")"
    return repr(_round(value))


def _round(x):
    if isinstance(x, float):
        return x if not math.isfinite(x) else float(f"{x:.5g}")
    if isinstance(x, (list, tuple)):
        return [_round(v) for v in x]
    return x


# ---------------------------------------------------------------------------- the student's file

def load_file(path, name):
    """The student's file as a module (run once, fresh)."""
    spec = importlib.util.spec_from_file_location(f"exercise_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_text(text, name):
    """A module from source text (the untouched skeleton, or a test's mutant)."""
    module = types.ModuleType(f"exercise_{name}")
    exec(compile(text, f"<{name} code>", "exec"), module.__dict__)
    return module


def functions(module, names):
    """The namespace of the functions an exercise asks for; a missing one is a failure."""
    missing = [n for n in names if not callable(getattr(module, n, None))]
    if missing:
        raise Failed(f"the file defines no function {', '.join(missing)}",
                     hint=f"keep the names the starting file gives: {', '.join(names)}")
    return types.SimpleNamespace(**{n: getattr(module, n) for n in names})


def call(fn, *args, what=None, hint=None, **kwargs):
    """fn(*args): a NotImplementedError or any other exception becomes a failure (with `hint`,
    the check's pointer to the likely mistake, if given)."""
    try:
        return fn(*args, **kwargs)
    except Failed:
        raise
    except Exception as e:  # noqa: BLE001 - any error in the student's code is a failure
        raise raised(e, getattr(fn, "__name__", "your function"), what, hint) from None


def raised(e, name, what=None, hint=None):
    """The Failed that reports exception e, raised by the student's code."""
    where = traceback.extract_tb(e.__traceback__)[-1]
    if isinstance(e, NotImplementedError) and not where.filename.startswith(_LIBRARY):
        return Failed(f"{name} is not written yet" + (f" ({e})" if str(e) else ""),
                      hint="replace the TODOs in the starting file")
    return Failed(f"{name} raised {type(e).__name__}: {e} (line {where.lineno} of "
                  f"{where.filename})", input=what,
                  hint=hint or "run your function on this input by hand")


# ---------------------------------------------------------------------------- random inputs

def forall(body, examples=8):
    """body(rng) for `examples` random.Random generators whose seeds hypothesis draws (itself
    seeded, so a run is repeatable); the first Failed is raised as it is."""
    if given is None:
        for seed in range(examples):
            body(random.Random(seed))
        return

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck),
              print_blob=False)
    @given(st.integers(0, 2 ** 32 - 1))
    def run(seed):
        body(random.Random(seed))

    try:
        run()
    except Failed as f:
        f.__notes__ = []    # hypothesis's "Falsifying example" note: our report says it
        raise


def randn(rng, shape, dtype=_dt.float64, scale=1.0, layout="contiguous"):
    """A tensor of N(0, scale^2) numbers; layout 'transposed' gives a non-contiguous view of the
    same shape (the last two dims swapped in memory)."""
    if layout == "transposed" and len(shape) >= 2:
        swapped = tuple(shape[:-2]) + (shape[-1], shape[-2])
        return randn(rng, swapped, dtype, scale).transpose(-2, -1)
    n = math.prod(shape)
    return tensor([rng.gauss(0.0, scale) for _ in range(n)], dtype=dtype).reshape(tuple(shape))


def shape(rng, ndim, low=1, high=4):
    return tuple(rng.randint(low, high) for _ in range(ndim))


def on_reference(fn, *args, **kwargs):
    """fn(*args) on the reference backend, the expected answer the student's is compared with."""
    with backend.use("reference"):
        return fn(*args, **kwargs)


# ---------------------------------------------------------------------------- comparing

def tolerance(dtype):
    return (1e-4, 1e-4) if dtype is _dt.float32 else (1e-9, 1e-9)


def close(got, expected, what, *, input=None, hint=None, dtype=None, atol=None, rtol=None):  # noqa: A002
    """got must be a tensor with expected's shape and values (NaN where expected has NaN)."""
    if not isinstance(got, TensorBase):
        raise Failed(f"{what}: expected a Tensor, got {type(got).__name__}", input=input,
                     expected=expected, got=got, hint=hint)
    if tuple(got.shape) != tuple(expected.shape):
        raise Failed(f"{what}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}",
                     input=input, expected=expected, got=got, hint=hint)
    a, r = tolerance(dtype or expected.dtype)
    a, r = atol if atol is not None else a, rtol if rtol is not None else r
    with no_grad():
        g = got.detach().reshape(-1).tolist()
        e = expected.detach().reshape(-1).tolist()
    for i, (x, y) in enumerate(zip(g, e)):
        if not _near(x, y, a, r):
            bad = "inf or NaN" if not math.isfinite(x) and math.isfinite(y) else "wrong"
            raise Failed(f"{what}: element {_index(i, expected.shape)} is {bad} ({_round(x)} "
                         f"where {_round(y)} is right)", input=input, expected=expected,
                         got=got, hint=hint)


def close_lists(got, expected, what, *, input=None, hint=None, atol=1e-9, rtol=1e-9):
    """The same for flat buffers or lists of numbers."""
    if len(got) != len(expected):
        raise Failed(f"{what}: {len(got)} numbers, expected {len(expected)}", input=input,
                     hint=hint)
    for i, (x, y) in enumerate(zip(got, expected)):
        if not _near(x, y, atol, rtol):
            bad = "inf or NaN" if not math.isfinite(x) and math.isfinite(y) else "wrong"
            raise Failed(f"{what}: element [{i}] is {bad} ({_round(x)} where {_round(y)} is "
                         f"right)", input=input, expected=list(expected), got=list(got),
                         hint=hint)


def _near(x, y, atol, rtol):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    if math.isnan(y):
        return math.isnan(x)
    if math.isinf(y):
        return x == y
    return math.isfinite(x) and abs(x - y) <= atol + rtol * abs(y)


def _index(i, shape):
    idx = []
    for n in reversed(tuple(shape)):
        idx.append(i % n if n else 0)
        i //= n if n else 1
    return tuple(reversed(idx))


# ---------------------------------------------------------------------------- running checks

def run_checks(checks, ns, out=sys.stdout):
    """Every (label, check) on the student's namespace; prints each verdict; True when all pass."""
    ok = True
    for label, check in checks:
        try:
            check(ns)
        except Failed as f:
            ok = False
            print(f"FAIL  {label}\n{f.report()}", file=out)
        else:
            print(f"ok    {label}", file=out)
    return ok


def grads(fn, inputs, what, *, hint, second=False):
    """gradcheck (and gradgradcheck when `second`) of fn at inputs (float64 tensors)."""
    try:
        gradcheck(fn, inputs)
        if second:
            gradgradcheck(fn, inputs)
    except AssertionError as e:
        raise Failed(f"{what}: derivatives disagree with finite differences: "
                     f"{str(e).splitlines()[0]}", input=list(inputs), hint=hint) from None
    except Failed:
        raise
    except Exception as e:  # noqa: BLE001 - an error in the student's code, run by the library
        raise raised(e, what, list(inputs), hint) from None


def compiled(fn):
    """fn compiled by numba (as the library's kernels are, but not cached on disk: the student's
    module is not one numba can import again), for the demo's speed. If its first call fails to
    compile, fn runs as Python from then on (slower, the same result), with a note."""
    try:
        jitted = njit(error_model="numpy")(fn)
    except Exception:  # noqa: BLE001 - a function numba refuses outright
        return fn
    state = {"fn": jitted, "first": True}

    def run(*args):
        if not state["first"]:
            return state["fn"](*args)
        state["first"] = False
        try:
            return jitted(*args)
        except Exception as e:  # noqa: BLE001 - numba's typing errors, and any failure to build
            print(f"(numba cannot compile {fn.__name__}: {type(e).__name__}: "
                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}; running it as "
                  f"Python, which is slower)", flush=True)
            state["fn"] = fn
            return fn(*args)
    return run
