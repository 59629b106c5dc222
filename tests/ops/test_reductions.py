"""Reductions (ops/reduce.py): sum_to_size, std / var, mean, argmax, all, logsumexp, norm.

What holds: PyTorch's positional arguments (std(x, False) is the unbiased flag), reductions of a
0-d tensor over dim 0 and of an empty dim, norm(p=0) counting the non-zeros, and sum_to_size's
gradient. Every value is worked out by hand; where PyTorch is installed the same expression runs
on torch and must agree."""
import math

import pytest

import tinyattn as ta
from tinyattn.testing import gradcheck

from helpers import check_value_and_dtype

X = [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]
MEAN = sum(sum(r) for r in X) / 6
VAR_BIASED = sum((v - MEAN) ** 2 for r in X for v in r) / 6

# (name, expression over `lib` (tinyattn or torch), expected value, expected dtype name)
CASES = [
    ("std(x, False) is the unbiased flag, not dim", "lib.std(lib.tensor(X), False)",
     math.sqrt(VAR_BIASED), "float32"),
    ("x.var(False)", "lib.tensor(X).var(False)", VAR_BIASED, "float32"),
    ("mean over dim 0 of a 0-d tensor", "lib.tensor(3.0).mean(dim=0)", 3.0, "float32"),
    ("argmax over dim 0 of a 0-d tensor", "lib.tensor(3.0).argmax(dim=0)", 0, "int64"),
    ("all over dim 0 of a 0-d tensor", "(lib.tensor(3.0) > 1).all(0)", True, "bool"),
    ("logsumexp over an empty dim is -inf", "lib.logsumexp(lib.zeros(0, 3), 0)",
     [-math.inf] * 3, "float32"),
    ("logsumexp keeping an empty dim", "lib.logsumexp(lib.zeros(0, 3), 1)", [], "float32"),
    ("norm(p=0) counts the non-zeros", "lib.norm(lib.tensor([0.0, -2.0, 3.0]), 0)", 2.0,
     "float32"),
]


@pytest.mark.parametrize("name, expr, expected, dtype", CASES, ids=[c[0] for c in CASES])
def test_reduction_values_and_dtypes_match_pytorch(name, expr, expected, dtype):
    check_value_and_dtype(expr, expected, dtype, X=X)


def test_sum_to_size_has_a_gradient():
    x = ta.ones(2, 3, dtype=ta.float64, requires_grad=True)
    y = x.sum_to_size(1, 3)
    assert y.tolist() == [[2.0, 2.0, 2.0]] and y.grad_fn is not None
    (y * ta.tensor([[1.0, 2.0, 3.0]], dtype=ta.float64)).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    assert gradcheck(lambda t: t.sum_to_size(2, 1), (ta.randn(2, 3, 4, dtype=ta.float64)
                                                     [:, :, 0].requires_grad_(),))
    with pytest.raises(ValueError, match=r"sum_to_size: size \(2, 2\)"):
        x.sum_to_size(2, 2)
