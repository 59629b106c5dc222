"""Small cases where a different value, dtype or acceptance would pass unnoticed: add with a
bool alpha, a bool tensor times True, INT64_MIN // -1, kl_div of a negative target, a write
through an expanded view, to() and div_() arguments, softmax without dim, masked_fill with a
larger mask. Each is checked by hand and, where PyTorch is installed, against it."""
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
        ("bool tensor * True stays bool", lambda: b * True),
        ("bool tensor + False stays bool", lambda: b + False),
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
    "bool tensor * True stays bool": ([True, False], "bool"),
    "bool tensor + False stays bool": ([True, False], "bool"),
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
    assert [v if not isinstance(v, float) else pytest.approx(v, abs=1e-5)
            for v in want[0]] == got[0]


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


WRITES = ["add_(1)", "sub_(1)", "mul_(2)", "div_(2)", "clamp_(0, 1)", "exp_()", "relu_()",
          "copy_(lib.ones(2, 3))", "uniform_()", "normal_()", "__iadd__(1)",
          "scatter_(1, lib.zeros(2, 1, dtype=lib.int64), 1.0)", "unsqueeze(0).add_(1)",
          "t().mul_(2)"]
ALLOWED = ["fill_(1)", "zero_()", "__setitem__(0, 5.0)"]


def _expanded(lib):
    return lib.zeros(3).expand(2, 3)


@pytest.mark.parametrize("write", WRITES)
def test_a_write_through_an_expanded_view_raises(write):
    lib, e = ta, _expanded(ta)
    with pytest.raises(RuntimeError, match=r"more than one element of the written-to tensor "
                                           r"refers to a single memory location"):
        eval("e." + write, {"e": e, "lib": lib})
    assert e.tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("write", WRITES + ALLOWED)
def test_a_write_through_an_expanded_view_raises_as_in_pytorch(write):
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (ta, torch):
        try:
            eval("e." + write, {"e": _expanded(lib), "lib": lib})
            outcomes.append("ok")
        except RuntimeError:
            outcomes.append("raises")
    assert outcomes[0] == outcomes[1]


def test_fill_and_setitem_through_an_expanded_view_write_the_one_location():
    base = ta.zeros(3)
    e = base.expand(2, 3)
    e.fill_(1.0)
    assert base.tolist() == [1.0, 1.0, 1.0]
    e[0] = 5.0
    assert base.tolist() == [5.0, 5.0, 5.0]
    ta.zeros(1).expand(1).add_(1)          # a size-1 expanded dim is one element: allowed


def test_to_takes_non_blocking_and_copy_positionally():
    x = ta.ones(2)
    assert x.to(ta.float64, True).dtype is ta.float64
    assert x.to(ta.float32, False) is x
    y = x.to(ta.float32, False, True)       # copy=True: new memory
    assert y is not x and y._data is not x._data


def test_div_in_place_takes_rounding_mode():
    x = ta.tensor([3.0, -3.0])
    assert x.div_(2, rounding_mode="floor").tolist() == [1.0, -2.0]
    x = ta.tensor([3.0, -3.0])
    assert x.div_(2, rounding_mode="trunc").tolist() == [1.0, -1.0]
    x = ta.tensor([7, -7])
    assert x.div_(2, rounding_mode="floor").tolist() == [3, -4] and x.dtype is ta.int64


@pytest.mark.parametrize("shape, dim", [((), 0), ((4,), 0), ((2, 3), 1), ((2, 3, 4), 0),
                                        ((2, 3, 4, 5), 1)])
def test_softmax_without_dim_picks_pytorchs_dim_and_warns(shape, dim):
    n = 1
    for s in shape:
        n *= s
    x = ta.arange(float(n)).reshape(shape) * 0.1
    for fn, name, ref in ((F.softmax, "softmax", ta.softmax), (F.log_softmax, "log_softmax",
                                                                ta.log_softmax)):
        with pytest.warns(UserWarning, match=rf"Implicit dimension choice for {name} has been "
                                             rf"deprecated"):
            got = fn(x)
        assert got.tolist() == ref(x, dim).tolist()
    if len(shape) == 2:   # by hand: each row of [[0, .1, .2], [.3, .4, .5]] sums to one
        row = [math.exp(0.1 * i) for i in range(3)]
        with pytest.warns(UserWarning):
            assert F.softmax(x)[0].tolist() == pytest.approx([v / sum(row) for v in row])


def test_softmax_without_dim_matches_pytorch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF  # noqa: E402 (only with torch)
    for shape in [(4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = ta.randn(*shape)
        tx = torch.tensor(x.tolist())
        with pytest.warns(UserWarning):
            ours, theirs = F.softmax(x), tF.softmax(tx)
        assert ours.reshape(-1).tolist() == pytest.approx(theirs.reshape(-1).tolist(), abs=1e-6)
        with pytest.warns(UserWarning):
            ours, theirs = F.log_softmax(x, dim=None), tF.log_softmax(tx, dim=None)
        assert ours.reshape(-1).tolist() == pytest.approx(theirs.reshape(-1).tolist(), abs=1e-5)


def test_masked_fill_broadcasts_a_larger_mask_out_of_place_and_refuses_it_in_place():
    mask = ta.tensor([[True, False, True], [False, False, True]])
    assert ta.zeros(3).masked_fill(mask, 1.0).tolist() == [[1, 0, 1], [0, 0, 1]]
    assert ta.zeros(3).masked_fill(mask[:1], ta.tensor(2.0)).tolist() == [[2, 0, 2]]
    x = ta.zeros(3)
    with pytest.raises(RuntimeError, match=r"masked_fill_: output with shape \[3\] doesn't match "
                                           r"the broadcast shape \[2, 3\]"):
        x.masked_fill_(mask, 1.0)
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_masked_fill_with_a_larger_mask_matches_pytorch():
    torch = pytest.importorskip("torch")
    rows = [[True, False, True], [False, False, True]]
    for lib_rows in (rows, rows[:1]):
        ours = ta.zeros(3).masked_fill(ta.tensor(lib_rows), 1.0)
        theirs = torch.zeros(3).masked_fill(torch.tensor(lib_rows), 1.0)
        assert ours.tolist() == theirs.tolist()
        with pytest.raises(RuntimeError):
            torch.zeros(3).masked_fill_(torch.tensor(lib_rows), 1.0)
        with pytest.raises(RuntimeError):
            ta.zeros(3).masked_fill_(ta.tensor(lib_rows), 1.0)
