"""Small differences from PyTorch that gave a value instead of PyTorch's (issue 32's list): each
is checked by hand and, where PyTorch is installed, against it."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn.functional as F

INT64_MIN = -2**63


def _lib_cases(lib, F_):
    """(name, thunk) pairs; each thunk returns a tensor to compare as (values, dtype name)."""
    b = lib.tensor([True, False])
    x = lib.tensor([INT64_MIN, 7, -7])
    logp = lib.tensor([0.1, 0.2]).log()
    return [
        ("add(bool, bool, alpha=False) stays bool", lambda: lib.add(b, b, alpha=False)),
        ("add(bool, bool, alpha=True)", lambda: lib.add(b, b, alpha=True)),
        ("add(bool, bool, alpha=2) is a logical or", lambda: lib.add(b, b, alpha=2)),
        ("INT64_MIN // -1 wraps to INT64_MIN", lambda: x // -1),
        ("INT64_MIN // tensor(-1)", lambda: x // lib.tensor([-1, -1, -1])),
        ("div(INT64_MIN, -1, rounding_mode='floor')",
         lambda: lib.div(x, -1, rounding_mode="floor")),
        ("kl_div with a negative target is NaN there",
         lambda: F_.kl_div(logp, lib.tensor([-0.5, 0.5]), reduction="none")),
        ("kl_div with a zero target is 0 there",
         lambda: F_.kl_div(logp, lib.tensor([0.0, 0.5]), reduction="none")),
        ("kl_div sum with a negative target",
         lambda: F_.kl_div(logp, lib.tensor([-0.5, 0.5]), reduction="sum")),
    ]


def _seen(t):
    vals = t.tolist()
    vals = [vals] if not isinstance(vals, list) else vals
    return ["nan" if isinstance(v, float) and math.isnan(v) else round(v, 6) if isinstance(v, float)
            else v for v in vals], str(t.dtype).split(".")[-1]


EXPECTED = {   # by hand
    "add(bool, bool, alpha=False) stays bool": ([True, False], "bool"),
    "add(bool, bool, alpha=True)": ([True, False], "bool"),
    "add(bool, bool, alpha=2) is a logical or": ([True, False], "bool"),
    "INT64_MIN // -1 wraps to INT64_MIN": ([INT64_MIN, -7, 7], "int64"),
    "INT64_MIN // tensor(-1)": ([INT64_MIN, -7, 7], "int64"),
    "div(INT64_MIN, -1, rounding_mode='floor')": ([INT64_MIN, -7, 7], "int64"),
    # 0.5 * (log 0.5 - log 0.2) = 0.5 * log 2.5
    "kl_div with a negative target is NaN there": (["nan", round(0.5 * math.log(2.5), 6)],
                                                   "float32"),
    "kl_div with a zero target is 0 there": ([0.0, round(0.5 * math.log(2.5), 6)], "float32"),
    "kl_div sum with a negative target": (["nan"], "float32"),
}

NAMES = [n for n, _ in _lib_cases(ta, F)]


@pytest.mark.parametrize("name", NAMES)
def test_value_and_dtype_by_hand(name):
    got = _seen(dict(_lib_cases(ta, F))[name]())
    want = EXPECTED[name]
    assert got[1] == want[1]
    assert [v if not isinstance(v, float) else pytest.approx(v, abs=1e-5) for v in want[0]] == got[0]


@pytest.mark.parametrize("name", NAMES)
def test_value_and_dtype_match_pytorch(name):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF  # noqa: E402 (only with torch)
    ours = _seen(dict(_lib_cases(ta, F))[name]())
    theirs = _seen(dict(_lib_cases(torch, tF))[name]())
    assert ours[1] == theirs[1]
    assert ours[0] == [v if not isinstance(v, float) else pytest.approx(v, abs=1e-5)
                       for v in theirs[0]]


@pytest.mark.parametrize("alpha, need", [(True, "bool"), (0.5, "floating-point")])
def test_alpha_that_does_not_fit_the_operands_raises(alpha, need):
    a = ta.tensor([1, 2])
    with pytest.raises(RuntimeError, match=rf"add: alpha={alpha!r} needs {need} operands"):
        ta.add(a, a, alpha=alpha)
    with pytest.raises(RuntimeError, match=rf"sub: alpha={alpha!r} needs {need} operands"):
        ta.sub(a, a, alpha=alpha)
    assert ta.add(a, a, alpha=3).tolist() == [4, 8]
    assert ta.add(ta.tensor([1.0]), ta.tensor([2.0]), alpha=0.5).tolist() == [2.0]
