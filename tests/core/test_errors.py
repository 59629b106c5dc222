"""Errors are part of the API: each names the operation and the offending shapes or values."""
import pytest

import tinyattn as ta


def test_matmul_shape_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) are not aligned "
                                         r"\(3 != 4\)"):
        ta.zeros(2, 3) @ ta.zeros(4, 5)
    with pytest.raises(ValueError, match=r"matmul.*\(2, 2, 3\) and \(3, 3, 1\)"):
        ta.zeros(2, 2, 3) @ ta.zeros(3, 3, 1)
    with pytest.raises(RuntimeError, match="at least 1 dimension"):
        ta.tensor(1.0) @ ta.zeros(2)
    with pytest.raises(TypeError, match="same dtype"):
        ta.zeros(2, 2) @ ta.zeros(2, 2, dtype=ta.float64)
    with pytest.raises(TypeError, match="floating-point or int64"):
        ta.zeros(2, 2, dtype=ta.bool) @ ta.zeros(2, 2, dtype=ta.bool)
    # integers multiply (in float64, exact below 2**53), as PyTorch's int64 matmul
    assert (ta.tensor([[1, 2]]) @ ta.tensor([[3], [4]])).tolist() == [[11]]


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        ta.zeros(2, 3) + ta.zeros(4)
    with pytest.raises(ValueError, match=r"mul: shapes"):
        ta.zeros(2, 3) * ta.zeros(3, 2)
    with pytest.raises(ValueError, match="where"):
        ta.where(ta.zeros(2, dtype=ta.bool), ta.zeros(3), ta.zeros(3))


def test_index_errors_name_index_and_size():
    x = ta.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 4"):
        x[:, ta.tensor([0, 5])]
    with pytest.raises(IndexError, match="index -9 is out of bounds"):
        x[ta.tensor([-9])]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="mask"):
        x[ta.zeros(2, dtype=ta.bool)]
    with pytest.raises(IndexError, match="int64 or bool"):
        x[ta.tensor([0.0])]
    with pytest.raises(IndexError, match="index_select: index 4 is out of bounds"):
        x.index_select(1, ta.tensor([4]))
    with pytest.raises(ValueError, match="step"):
        x[::-1]


def test_embedding_index_errors():
    w = ta.randn(5, 2)
    from tinyattn.nn import functional as F
    with pytest.raises(IndexError, match="embedding: index 5 is out of bounds.*size 5"):
        F.embedding(ta.tensor([1, 5]), w)
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(ta.tensor([-1]), w)
    with pytest.raises(TypeError, match="int64"):
        F.embedding(ta.tensor([1.0]), w)


def test_dim_errors():
    x = ta.zeros(2, 3)
    with pytest.raises(IndexError, match=r"sum: dim 2 is out of range .* 2 dimensions"):
        x.sum(2)
    with pytest.raises(IndexError, match="softmax: dim -3"):
        x.softmax(-3)
    with pytest.raises(ValueError, match="permute"):
        x.permute(0, 0)
    with pytest.raises(ValueError, match=r"reshape: shape \(4, 2\) is invalid for input of size 6"):
        x.reshape(4, 2)
    with pytest.raises(ValueError, match="expand: the expanded size 4 must match the existing "
                                         "size 3"):
        x.expand(2, 4)
    with pytest.raises(ValueError, match="cat: tensor 1 has shape"):
        ta.cat([x, ta.zeros(3, 3)], 1)
    with pytest.raises(ValueError, match="stack"):
        ta.stack([x, ta.zeros(3, 2)])


def test_dtype_errors():
    with pytest.raises(TypeError, match="mean: expected a floating-point tensor, got tinyattn.int64"):
        ta.tensor([1, 2]).mean()
    with pytest.raises(TypeError, match="where: condition must be a bool tensor"):
        ta.where(ta.tensor([1]), ta.zeros(1), ta.zeros(1))
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool tensor"):
        ta.zeros(2).masked_fill(ta.tensor([1, 0]), 0.0)
    with pytest.raises(TypeError, match="unknown dtype"):
        ta.zeros(2, dtype="float16")
    with pytest.raises(TypeError, match="neg"):
        -ta.tensor([True])
    with pytest.raises(TypeError, match="sub: subtracting two bool"):
        ta.tensor([True]) - ta.tensor([False])


def test_kernels_never_see_invalid_indices():
    """Large out-of-range values are caught before any kernel reads memory."""
    x = ta.zeros(10)
    for bad in (10, 2 ** 40, -11):
        with pytest.raises(IndexError):
            x[ta.tensor([0, bad])]
        with pytest.raises(IndexError):
            x.gather(0, ta.tensor([bad]))


@pytest.mark.parametrize("name,call", [
    ("transpose", lambda x: ta.transpose(x, 0, 1)), ("permute", lambda x: ta.permute(x, (0,))),
    ("squeeze", lambda x: ta.squeeze(x)), ("unsqueeze", lambda x: ta.unsqueeze(x, 0)),
    ("flatten", lambda x: ta.flatten(x)), ("narrow", lambda x: ta.narrow(x, 0, 0, 1)),
    ("clone", lambda x: ta.clone(x)), ("amax", lambda x: ta.amax(x)), ("amin", lambda x: ta.amin(x)),
    ("dropout", lambda x: ta.nn.functional.dropout(x, 0.5, training=False)),
    ("softmax", lambda x: ta.softmax(x, 0)), ("sum", lambda x: ta.sum(x)),
    ("t", lambda x: ta.t(x)), ("expand", lambda x: ta.broadcast_to(x, (2,))),
    ("split", lambda x: ta.split(x, 1)), ("chunk", lambda x: ta.chunk(x, 2)),
    ("unbind", lambda x: ta.unbind(x)), ("movedim", lambda x: ta.movedim(x, 0, 0)),
    ("tile", lambda x: ta.tile(x, (2,))), ("flip", lambda x: ta.flip(x, (0,))),
    ("tril", lambda x: ta.tril(x)), ("triu", lambda x: ta.triu(x)),
    ("cumprod", lambda x: ta.cumprod(x, 0)), ("logsumexp", lambda x: ta.logsumexp(x, 0)),
    ("diag", lambda x: ta.diag(x)), ("diagonal", lambda x: ta.diagonal(x)),
    ("trace", lambda x: ta.trace(x)), ("roll", lambda x: ta.roll(x, 1)),
    ("repeat_interleave", lambda x: ta.repeat_interleave(x, 2)),
    ("nonzero", lambda x: ta.nonzero(x)), ("masked_select", lambda x: ta.masked_select(x, x)),
    ("isnan", lambda x: ta.isnan(x)), ("isinf", lambda x: ta.isinf(x)),
    ("isfinite", lambda x: ta.isfinite(x)), ("outer", lambda x: ta.outer(x, x)),
    ("dot", lambda x: ta.dot(x, x)), ("mv", lambda x: ta.mv(x, x))])
def test_a_list_where_a_tensor_belongs_is_a_type_error_naming_the_op(name, call):
    # PyTorch raises TypeError here too ("must be Tensor, not list"); most of these ops used to
    # fail with an AttributeError from deep inside ('list' object has no attribute 'ndim')
    with pytest.raises(TypeError, match=f"{name}: expected a Tensor, got list"):
        call([1.0, 2.0])
