"""PyTorch's rules at the edges, checked by hand (the op_db and module_db walks in tests/parity
check the same against PyTorch itself): integer ranges from float ends, empty products, zero-size
matmuls, broadcast cosines, reflected subtraction with alpha, and the recurrent layers' checks."""
import math

import pytest

import tinyattn as ta
from tinyattn import nn


def test_integer_arange_truncates_float_ends_first():
    # int(0.0), int(-8.000001), int(-4.0) = 0, -8, -4: the values 0, -4 (end excluded)
    assert ta.arange(0.0, -8.000001, -4.0, dtype=ta.int64).tolist() == [0, -4]
    assert ta.arange(3.1, dtype=ta.int64).tolist() == [0, 1, 2]
    assert ta.arange(1.5, 7.7, 1.1, dtype=ta.int64).tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="arange: step must be nonzero"):
        ta.arange(0, 3, 0.5, dtype=ta.int64)        # the step truncates to 0


def test_integer_linspace_truncates_its_ends_then_counts_in_doubles():
    # ends 4 and -3, step -7/49: 4, 4 - 1/7 = 3.857 -> 3, ...
    assert ta.linspace(4.3, -3, 50, dtype=ta.int64).tolist()[:3] == [4, 3, 3]


def test_linspace_takes_zero_dim_tensor_ends_by_value():
    got = ta.linspace(4.3, ta.tensor(-3), 5, dtype=ta.float64).tolist()
    assert got == pytest.approx([4.3, 2.475, 0.65, -1.175, -3.0], abs=1e-15)
    with pytest.raises(RuntimeError, match="must be a 0-D tensor"):
        ta.linspace(ta.tensor([0.0, 1.0]), 1.0, 3)


def test_the_empty_product_is_one_and_has_a_gradient():
    x = ta.zeros(0, dtype=ta.float64, requires_grad=True)
    y = ta.prod(x)
    assert y.item() == 1.0
    y.backward()
    assert x.grad.shape == (0,)
    assert ta.prod(ta.zeros(2, 0, 3), 1, keepdim=True).tolist() == [[[1.0] * 3]] * 2


def test_matmul_backward_with_a_zero_size_inner_dimension_gives_empty_gradients():
    a = ta.randn(5, 5, 0, dtype=ta.float64, requires_grad=True)
    b = ta.randn(0, 5, dtype=ta.float64, requires_grad=True)
    out = a @ b
    assert out.tolist() == [[[0.0] * 5] * 5] * 5
    out.sum().backward()
    assert a.grad.shape == (5, 5, 0) and b.grad.shape == (0, 5)


def test_cosine_similarity_over_a_broadcast_dimension_stays_within_one():
    x1 = ta.tensor([[[1.0, 0.0]]])                # (1, 1, 2): the reduced dim (-2) has size 1
    x2 = ta.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])  # (2, 1, 2)
    x2 = x2.expand(2, 3, 2)                       # dim -2 broadcasts x1's single row 3 times
    got = nn.functional.cosine_similarity(x1, x2, dim=-2)
    # column 0 of batch 0: (1, 1, 1) against (1, 1, 1); counting x1's row once would give 3/sqrt(3)
    assert got.flatten().tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])


def test_rsub_scales_the_tensor_by_alpha():
    x, y = ta.tensor([1.0, 2.0]), ta.tensor([10.0, 20.0])
    assert ta.rsub(x, y, alpha=3).tolist() == [7.0, 14.0]    # y - 3 x


@pytest.mark.parametrize("cls", [nn.RNN, nn.GRU, nn.LSTM])
def test_recurrent_layers_check_their_arguments_as_pytorch(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=f"{name}: hidden_size must be greater than zero"):
        cls(10, 0, 1)
    with pytest.raises(TypeError, match="bias should be of type bool, got: int"):
        cls(3, 5, bias=1)
    with pytest.raises(TypeError, match="batch_first should be of type bool, got: str"):
        cls(3, 5, batch_first="False")
    with pytest.raises(TypeError, match="input_size should be of type int, got: float"):
        cls(3.0, 5)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        cls(3, 5, dropout=1.5)


def test_recurrent_cells_refuse_a_state_of_the_wrong_rank_or_shape():
    x = ta.zeros(2, 3)
    with pytest.raises(ValueError, match="Expected hidden to be 1D or 2D, got 4D instead"):
        nn.RNNCell(3, 4)(x, ta.zeros(1, 1, 2, 4))
    with pytest.raises(ValueError, match=r"Expected hx\[0\] to be 1D or 2D, got 3D instead"):
        nn.LSTMCell(3, 4)(x, (ta.zeros(1, 2, 4), ta.zeros(2, 4)))
    with pytest.raises(RuntimeError, match=r"hidden must have shape \(2, 4\)"):
        nn.RNNCell(3, 4)(x, ta.zeros(3, 4))
    with pytest.raises(ValueError, match="Expected hidden to be 1D or 2D"):
        nn.GRUCell(3, 4)(x, ta.zeros(1, 1, 2, 4))


def test_loss_arguments_pytorch_refuses_are_refused():
    with pytest.raises(TypeError, match="delta must be a float or int"):
        nn.HuberLoss(delta=1 + 0j)
    probs = ta.tensor([[0.5, 0.5]])
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        nn.CrossEntropyLoss(ignore_index=1)(ta.zeros(1, 2), probs)
    assert math.isclose(nn.CrossEntropyLoss()(ta.zeros(1, 2), probs).item(), math.log(2),
                        rel_tol=1e-6)


def test_unary_plus_returns_the_tensor_itself_and_refuses_bool():
    x = ta.ones(2, requires_grad=True)
    assert (+x) is x and x.positive() is x and ta.positive(x) is x
    with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
        +ta.ones(2, dtype=ta.bool)
