"""Errors are part of the API: each names the operation and the offending shapes or values.

What holds: an error is raised where PyTorch raises one (and of a type PyTorch's callers catch),
before any kernel reads memory, and its message says which op failed and why."""
import pytest

import tinyattn as ta
import tinyattn.nn.functional as F


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



@pytest.mark.parametrize("op", ["gather", "index_select"])
def test_gather_and_index_select_reject_negative_indices(op):
    # as PyTorch does: a negative index does not wrap around as in a Python list
    x, idx = ta.tensor([1.0, 2.0, 3.0]), ta.tensor([-1])
    with pytest.raises(IndexError, match=rf"{op}: index -1 is out of bounds"):
        ta.gather(x, 0, idx) if op == "gather" else ta.index_select(x, 0, idx)

def test_embedding_index_errors():
    w = ta.randn(5, 2)
    with pytest.raises(IndexError, match="embedding: index 5 is out of bounds.*size 5"):
        F.embedding(ta.tensor([1, 5]), w)
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(ta.tensor([-1]), w)
    with pytest.raises(TypeError, match="int64"):
        F.embedding(ta.tensor([1.0]), w)



@pytest.mark.parametrize("padding_idx", [4, 7, -5])
def test_embedding_padding_idx_must_be_within_the_table(padding_idx):
    # checked up front: the backward zeroes row padding_idx of the gradient, which must exist
    with pytest.raises(ValueError, match=f"embedding: padding_idx {padding_idx} must be within"):
        F.embedding(ta.tensor([1]), ta.ones(4, 2), padding_idx=padding_idx)


def test_embedding_weight_must_be_two_dimensional():
    with pytest.raises(ValueError, match=r"embedding: weight must be a 2-D.*\(4, 2, 2\)"):
        F.embedding(ta.tensor([1]), ta.ones(4, 2, 2))


def test_pytorch_rejects_the_same_padding_idx_and_negative_index():
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception):
        torch.nn.functional.embedding(torch.tensor([1]), torch.ones(4, 2), padding_idx=7)
    with pytest.raises(Exception):
        torch.gather(torch.ones(3), 0, torch.tensor([-1]))

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
    # PyTorch raises TypeError here too ("must be Tensor, not list"); the op checks its argument
    # first, so the error is not an AttributeError from deep inside ('list' has no 'ndim')
    with pytest.raises(TypeError, match=f"{name}: expected a Tensor, got list"):
        call([1.0, 2.0])


ERRORS = [
    ("floor_divide by an integer 0", "lib.floor_divide(lib.tensor([3]), lib.tensor([0]))",
     "floor_divide: integer division by zero"),
    ("remainder by an integer 0", "lib.tensor([3, 4]) % 0", "remainder: integer division by zero"),
    ("arange with a step of the wrong sign", "lib.arange(0, 5, -1)",
     "arange: upper bound and lower bound inconsistent with step sign"),
    ("Tensor.__radd__ called unbound with a number as self",
     "lib.Tensor.__radd__(2, lib.tensor([1, 2]))", "__radd__"),
    ("Tensor.__rmul__ called unbound with a number as self",
     "lib.Tensor.__rmul__(2, lib.tensor([1, 2]))", "__rmul__"),
    ("Tensor.__rxor__ called unbound with a number as self",
     "lib.Tensor.__rxor__(2, lib.tensor([1, 2]))", "__rxor__"),
    ("a reduction of a tensor of more than 64 dims", "lib.zeros(*[1] * 65).amax(-1)",
     "64 dims"),
    ("index_select of a 0-d tensor by 2 indices",
     "lib.index_select(lib.tensor(3.0), 0, lib.tensor([0, 0]))", "index"),
]


@pytest.mark.parametrize("name, expr, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_where_pytorch_raises(name, expr, message):
    with pytest.raises(Exception, match=message) as err:
        eval(expr, {"lib": ta})
    if "division" in message:  # both: PyTorch raises RuntimeError, Python ZeroDivisionError
        assert isinstance(err.value, RuntimeError) and isinstance(err.value, ZeroDivisionError)
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception):
        eval(expr, {"lib": torch})
