"""Indexing (gather, index_select) and views (squeeze, flip, t) as PyTorch defines them.

What holds: a 0-d tensor indexes as a tensor of one element along dim 0, an empty tensor flips to
an empty tensor, and t() transposes a matrix and leaves a vector or a scalar alone. Every value is
worked out by hand; where PyTorch is installed the same expression runs on torch and must agree.
(Out-of-range and negative indices: tests/core/test_errors.py.)"""
import pytest

import tinyattn as ta

from helpers import check_value_and_dtype

# (name, expression over `lib` (tinyattn or torch), expected value, expected dtype name)
CASES = [
    ("squeeze(0) of a 0-d tensor", "lib.tensor(3.0).squeeze(0)", 3.0, "float32"),
    ("gather of a 0-d tensor", "lib.gather(lib.tensor(3.0), 0, lib.tensor(0))", 3.0,
     "float32"),
    ("flip of an empty tensor", "lib.zeros(0, 3).flip(0)", [], "float32"),
    ("gather of a 0-d tensor by a 1-element index", "lib.gather(lib.tensor(3.0), 0, "
     "lib.tensor([0]))", [3.0], "float32"),
    ("gather of a vector by a 0-d index", "lib.gather(lib.tensor([3.0, 4.0]), 0, "
     "lib.tensor(1))", 4.0, "float32"),
    ("index_select of a 0-d tensor", "lib.index_select(lib.tensor(3.0), 0, lib.tensor([0]))",
     3.0, "float32"),
]


@pytest.mark.parametrize("name, expr, expected, dtype", CASES, ids=[c[0] for c in CASES])
def test_indexing_values_and_dtypes_match_pytorch(name, expr, expected, dtype):
    check_value_and_dtype(expr, expected, dtype)


def test_t_transposes_matrices_and_leaves_vectors():
    # torch.t / Tensor.t: 2-D transposed (a view), 0-D and 1-D unchanged, more dims an error
    m = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert m.t().tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert ta.t(m).shape == (3, 2)
    (m.t() * ta.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert m.grad.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
    assert ta.tensor([1.0, 2.0]).t().tolist() == [1.0, 2.0]
    assert ta.tensor(3.0).t().item() == 3.0
    with pytest.raises(ValueError, match=r"t: expects a tensor with <= 2 dimensions, got a 3-d"):
        ta.zeros(2, 2, 2).t()
