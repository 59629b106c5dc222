"""Elementwise ops: arithmetic (+ - * / ** // %), comparisons, relu, masked_fill.

What holds: a Python number meeting a tensor gives PyTorch's result dtype; float division by zero
gives PyTorch's inf or NaN; x ** 1 is a new tensor; relu keeps PyTorch's signed zeros; a backward
sends gradient to the inputs that need it and reduces a broadcast input only then. Every value is
worked out by hand; where PyTorch is installed the same expression runs on torch and must agree.
(The integer division-by-zero errors: tests/core/test_errors.py.)"""
import math

import pytest

import tinyattn as ta
from tinyattn.ops import arithmetic as functions  # Add.backward calls its sum_to

from helpers import check_value_and_dtype

# (name, expression over `lib` (tinyattn or torch), expected value, expected dtype name)
CASES = [
    ("int ** int tensor stays int64", "(-5) ** lib.tensor([1, 3, 2, 0])", [-5, -125, 25, 1],
     "int64"),
    ("2 ** int tensor", "2 ** lib.tensor([1, 3, 10])", [2, 8, 1024], "int64"),
    ("2.0 ** int tensor is float32", "2.0 ** lib.tensor([1, -1])", [2.0, 0.5], "float32"),
    ("int tensor == 0.5 compares as floats", "lib.tensor([1, 2, 3]) == 0.5",
     [False, False, False], "bool"),
    ("int tensor < 2.5", "lib.tensor([1, 2, 3]) < 2.5", [True, True, False], "bool"),
    ("int tensor >= 2.0", "lib.tensor([1, 2, 3]) >= 2.0", [False, True, True], "bool"),
    ("bool tensor == 0.5", "lib.tensor([True, False]) == 0.5", [False, False], "bool"),
    ("float % 0.0 is NaN", "lib.tensor([3.0, -2.0]) % 0.0", [math.nan, math.nan], "float32"),
    ("float // 0.0 is x / 0", "lib.tensor([3.0, -2.0]) // 0.0", [math.inf, -math.inf],
     "float32"),
    ("a bool tensor squares to int64", "lib.tensor([True, False]).square()", [1, 0], "int64"),
]


@pytest.mark.parametrize("name, expr, expected, dtype", CASES, ids=[c[0] for c in CASES])
def test_elementwise_values_and_dtypes_match_pytorch(name, expr, expected, dtype):
    check_value_and_dtype(expr, expected, dtype)


def test_pow_one_does_not_alias_its_input():
    # as in PyTorch, x ** 1 is a new tensor: an in-place update of the result leaves x alone
    x = ta.tensor([1.0, -2.0, 3.0])
    y = x ** 1
    y += 1
    assert x.tolist() == [1.0, -2.0, 3.0]
    assert y.tolist() == [2.0, -1.0, 4.0]


def test_pow_one_gradient_is_one():
    w = ta.tensor([0.0, -2.0, 3.0], requires_grad=True)
    y = w ** 1
    assert y is not w and y.grad_fn is not None
    (y * ta.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 2.0, 3.0]


def test_add_backward_reduces_only_for_inputs_that_need_grad(monkeypatch):
    # adding a broadcast attention mask to the scores must not cost a reduction over the whole
    # score tensor: Add's backward skips the input that needs no gradient
    scores = ta.randn(2, 3, 4, 4, requires_grad=True)
    mask = ta.zeros(4, 4)  # broadcast over (2, 3), needs no gradient
    out = scores + mask
    reduced = []
    real = functions.sum_to
    monkeypatch.setattr(functions, "sum_to", lambda g, shape: reduced.append(shape) or real(g, shape))
    out.backward(ta.ones(2, 3, 4, 4))
    assert reduced == [(2, 3, 4, 4)]
    assert scores.grad.tolist() == ta.ones(2, 3, 4, 4).tolist()
    mask.requires_grad_(True)
    scores.grad = None
    (scores + mask).backward(ta.ones(2, 3, 4, 4))
    assert mask.grad.tolist() == [[6.0] * 4] * 4


def _remainder_grads(lib):
    a = lib.tensor([5.0, -7.0], requires_grad=True)
    b = lib.tensor([3.0, 2.0], requires_grad=True)
    y = a % b
    (y * lib.tensor([1.0, 2.0])).sum().backward()
    return y.tolist(), a.grad.tolist(), b.grad.tolist()


def test_remainder_has_a_gradient():
    # d(a % b)/da = 1, d(a % b)/db = -floor(a / b): floor(5/3) = 1, floor(-7/2) = -4
    assert _remainder_grads(ta) == ([2.0, 1.0], [1.0, 2.0], [-1.0, 8.0])
    torch = pytest.importorskip("torch")
    assert _remainder_grads(torch) == _remainder_grads(ta)


def _sign_bits(values):
    return [math.copysign(1.0, v) for v in values]


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
def test_relu_gives_positive_zero_and_zero_for_minus_infinity(dtype):
    # relu is max(x, 0): x * (x > 0) would give -0.0 for negative x and NaN for -inf (-inf * 0);
    # -0.0 itself passes through, as in PyTorch (it is not below 0)
    y = ta.tensor([-1.0, float("-inf"), 0.0, -0.0, 2.5], dtype=dtype).relu().tolist()
    assert y == [0.0, 0.0, 0.0, 0.0, 2.5]
    assert _sign_bits(y) == [1.0, 1.0, 1.0, -1.0, 1.0]
    assert math.isnan(ta.tensor([float("nan")], dtype=dtype).relu().item())


def test_relu_signs_of_zero_match_pytorch():
    torch = pytest.importorskip("torch")
    x = [-1.0, -0.0, float("-inf"), 0.0, 2.5]
    assert _sign_bits(ta.tensor(x).relu().tolist()) == \
        _sign_bits(torch.relu(torch.tensor(x)).tolist())


def _masked_fill_grads(lib):
    v = lib.tensor(2.0, requires_grad=True)
    x = lib.zeros(3, requires_grad=True)
    y = x.masked_fill(lib.tensor([True, False, True]), v)
    (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
    return y.tolist(), v.grad.item(), x.grad.tolist()


def test_masked_fill_with_a_0d_tensor_keeps_its_gradient():
    # y = [v, x1, v]; dL/dv = 1 + 3, dL/dx = [0, 2, 0]
    assert _masked_fill_grads(ta) == ([2.0, 0.0, 2.0], 4.0, [0.0, 2.0, 0.0])
    torch = pytest.importorskip("torch")
    assert _masked_fill_grads(torch) == _masked_fill_grads(ta)
    with pytest.raises(ValueError, match="masked_fill: value must be a number or a 0-dim"):
        ta.zeros(3).masked_fill(ta.tensor([True, False, True]), ta.tensor([1.0]))
