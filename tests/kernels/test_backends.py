"""The two kernel backends have one interface: the same families, names and arguments.

tinyattn/kernels/ (reference) and tinyattn/fast/ hold each kernel family in a file of the same
name; `__all__` names the functions the ops call. The fast file must offer every one of them with
the same parameters, and a family the fast backend does not write again has no fast file at all
(the reference loops run on both backends). Their results are held equal in test_backends_agree.py."""
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinyattn import backend

PACKAGE = Path(backend.__file__).resolve().parent
SPLIT = backend.FAMILIES


def _parameters(fn):
    fn = getattr(fn, "py_func", fn)          # a numba dispatcher: the Python function it compiles
    return list(inspect.signature(fn).parameters)


@pytest.mark.parametrize("family", SPLIT)
def test_every_family_is_a_reference_file_with_its_interface(family):
    module = importlib.import_module(f"tinyattn.kernels.{family}")
    assert module.__all__, f"kernels/{family}.py names no functions in __all__"
    for name in module.__all__:
        fn = getattr(module, name)
        assert callable(fn), f"kernels/{family}.py: {name} is not a function"
        assert getattr(fn, "py_func", fn).__name__ == name, (
            f"kernels/{family}.py: {name} is bound to {fn!r}: every name the ops call is a def")


@pytest.mark.parametrize("family", [f for f in SPLIT if f in backend.FAST])
def test_the_fast_file_offers_the_same_functions_with_the_same_arguments(family):
    reference = importlib.import_module(f"tinyattn.kernels.{family}")
    fast = importlib.import_module(f"tinyattn.fast.{family}")
    assert sorted(fast.__all__) == sorted(reference.__all__)
    for name in reference.__all__:
        assert _parameters(getattr(fast, name)) == _parameters(getattr(reference, name)), (
            f"{family}.{name}: the backends' parameters differ")


@pytest.mark.parametrize("family", [f for f in SPLIT if f not in backend.FAST])
def test_a_family_the_fast_backend_does_not_rewrite_has_no_fast_file(family):
    assert not (PACKAGE / "fast" / f"{family}.py").exists()
    with backend.use("fast"):
        assert backend.__dict__[family].__name__ == f"tinyattn.kernels.{family}"


def test_every_file_of_the_reference_backend_is_a_family_the_ops_can_reach():
    files = {p.stem for p in (PACKAGE / "kernels").glob("*.py")} - {"__init__"}
    assert files <= set(backend.FAMILIES), sorted(files - set(backend.FAMILIES))


def test_the_reference_backend_never_imports_the_fast_package():
    code = ("import sys, tinyattn as ta, tinyattn.nn as nn\n"
            "m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)\n"
            "x = ta.randn(2, 3, 8, requires_grad=True)\n"
            "m(x).sum().backward()\n"
            "print(sorted(n for n in sys.modules if n.startswith('tinyattn.fast')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, TINYATTN_KERNELS="reference"), timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_switch_is_reachable_from_the_kernels_package_too():
    import tinyattn as ta
    assert ta.kernels.use is backend.use and ta.kernels.active is backend.active
    with ta.kernels.use("reference"):
        assert backend.active() == "reference"
        assert backend.softmax.__name__ == "tinyattn.kernels.softmax"


def test_poisoned_buffers_answer_to_both_switch_names():
    code = "import tinyattn.storage as s; print(s.POISON)"
    base = {k: v for k, v in os.environ.items() if k not in ("TINYATTN_POISON", "TINYATTN_RECYCLE")}
    for env, expected in (({}, "False"), ({"TINYATTN_POISON": "1"}, "True"),
                          ({"TINYATTN_RECYCLE": "poison"}, "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(base, **env), timeout=600)
        assert out.stdout.strip() == expected, (env, out.stderr)
