"""Silent differences from PyTorch found by its op_db samples (issue 10), each pinned by a test that
failed before its fix. Every case states the value worked out by hand; where PyTorch is installed
the same expression runs on torch too and must agree (value, dtype, shape, or the error)."""
import math

import pytest

import tinyattn as ta

X = [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]
MEAN = sum(sum(r) for r in X) / 6
VAR_BIASED = sum((v - MEAN) ** 2 for r in X for v in r) / 6

# (name, expression over `lib` (tinyattn or torch), expected value, expected dtype name)
CASES = [
    ("std(x, False) is the unbiased flag, not dim", "lib.std(lib.tensor(X), False)",
     math.sqrt(VAR_BIASED), "float32"),
    ("x.var(False)", "lib.tensor(X).var(False)", VAR_BIASED, "float32"),
    ("int ** int tensor stays int64", "(-5) ** lib.tensor([1, 3, 2, 0])", [-5, -125, 25, 1],
     "int64"),
    ("2 ** int tensor", "2 ** lib.tensor([1, 3, 10])", [2, 8, 1024], "int64"),
    ("2.0 ** int tensor is float32", "2.0 ** lib.tensor([1, -1])", [2.0, 0.5], "float32"),
    ("to(other tensor) takes its dtype", "lib.ones(2).to(lib.zeros(1, dtype=lib.float64))",
     [1.0, 1.0], "float64"),
    ("int tensor == 0.5 compares as floats", "lib.tensor([1, 2, 3]) == 0.5",
     [False, False, False], "bool"),
    ("int tensor < 2.5", "lib.tensor([1, 2, 3]) < 2.5", [True, True, False], "bool"),
    ("int tensor >= 2.0", "lib.tensor([1, 2, 3]) >= 2.0", [False, True, True], "bool"),
    ("bool tensor == 0.5", "lib.tensor([True, False]) == 0.5", [False, False], "bool"),
    ("float % 0.0 is NaN", "lib.tensor([3.0, -2.0]) % 0.0", [math.nan, math.nan], "float32"),
    ("float // 0.0 is x / 0", "lib.tensor([3.0, -2.0]) // 0.0", [math.inf, -math.inf],
     "float32"),
    ("mean over dim 0 of a 0-d tensor", "lib.tensor(3.0).mean(dim=0)", 3.0, "float32"),
    ("argmax over dim 0 of a 0-d tensor", "lib.tensor(3.0).argmax(dim=0)", 0, "int64"),
    ("squeeze(0) of a 0-d tensor", "lib.tensor(3.0).squeeze(0)", 3.0, "float32"),
    ("all over dim 0 of a 0-d tensor", "(lib.tensor(3.0) > 1).all(0)", True, "bool"),
    ("gather of a 0-d tensor", "lib.gather(lib.tensor(3.0), 0, lib.tensor(0))", 3.0,
     "float32"),
    ("flip of an empty tensor", "lib.zeros(0, 3).flip(0)", [], "float32"),
    ("a bool tensor squares to int64", "lib.tensor([True, False]).square()", [1, 0], "int64"),
    ("logsumexp over an empty dim is -inf", "lib.logsumexp(lib.zeros(0, 3), 0)",
     [-math.inf] * 3, "float32"),
    ("logsumexp keeping an empty dim", "lib.logsumexp(lib.zeros(0, 3), 1)", [], "float32"),
    ("gather of a 0-d tensor by a 1-element index", "lib.gather(lib.tensor(3.0), 0, "
     "lib.tensor([0]))", [3.0], "float32"),
    ("gather of a vector by a 0-d index", "lib.gather(lib.tensor([3.0, 4.0]), 0, "
     "lib.tensor(1))", 4.0, "float32"),
    ("index_select of a 0-d tensor", "lib.index_select(lib.tensor(3.0), 0, lib.tensor([0]))",
     3.0, "float32"),
    ("batch_norm of an empty batch", "lib.nn.functional.batch_norm(lib.zeros(0, 3), "
     "lib.zeros(3), lib.ones(3), training=True)", [], "float32"),
    ("norm(p=0) counts the non-zeros", "lib.norm(lib.tensor([0.0, -2.0, 3.0]), 0)", 2.0,
     "float32"),
]


def _same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b if isinstance(a, bool) or isinstance(b, bool) else abs(a - b) <= 1e-6 * (
        1 + abs(b)) if math.isfinite(b) else a == b


@pytest.mark.parametrize("name, expr, expected, dtype", CASES, ids=[c[0] for c in CASES])
def test_value_and_dtype(name, expr, expected, dtype):
    out = eval(expr, {"lib": ta, "X": X})
    assert _same(out.tolist(), expected), out.tolist()
    assert out.dtype.name == dtype
    try:
        import torch
    except ImportError:
        return
    theirs = eval(expr, {"lib": torch, "X": X})
    assert _same(out.tolist(), theirs.tolist())
    assert str(theirs.dtype) == f"torch.{dtype}"


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


def _filled_buffer_grads(lib):
    # The seq2seq pattern: encoder states written into a buffer in a loop, then used.
    h = [lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) for _ in range(3)]  # (B, H)
    out = lib.zeros(2, 3, 2)                                                          # (B, T, H)
    for t in range(3):
        out[:, t] = h[t] * (t + 1)
    b = lib.tensor([5.0], requires_grad=True)
    out[0, 0, :] = b                        # broadcast into the region, and overwrite h[0][0]
    loss = (out * lib.tensor([[[0.5, -1.0]]])).sum()
    loss.backward()
    return [x.grad.tolist() for x in h], b.grad.tolist()


def test_setitem_of_a_value_that_requires_grad_puts_the_buffer_in_the_graph():
    # d loss / d h[t] = (t + 1) * [0.5, -1] per row, except where b overwrote h[0]'s row 0;
    # d loss / d b = 0.5 - 1 (b was broadcast to both elements of that row)
    expected = ([[[0.0, 0.0], [0.5, -1.0]], [[1.0, -2.0], [1.0, -2.0]],
                 [[1.5, -3.0], [1.5, -3.0]]], [-0.5])
    assert _filled_buffer_grads(ta) == expected
    torch = pytest.importorskip("torch")
    assert _filled_buffer_grads(torch) == expected


def test_setitem_still_refuses_a_leaf_that_requires_grad():
    w = ta.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem: a leaf tensor that requires grad"):
        w[0] = ta.tensor(1.0, requires_grad=True)
    x = ta.zeros(3)
    x[0] = ta.tensor(1.0)                      # nothing requires grad: no graph
    assert not x.requires_grad and x.grad_fn is None


def _order_after_reassigning(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(2, 3)
            self.decoder = nn.Linear(3, 2)
            self.head = nn.Linear(2, 2)
    net = Net()
    net.encoder = nn.Linear(2, 3)                 # replace a submodule
    net.decoder.weight = nn.Parameter(net.decoder.weight.detach())   # replace a parameter
    return list(net.state_dict().keys()), [n for n, _ in net.named_parameters()]


def test_reassigning_a_parameter_or_submodule_keeps_its_place():
    from tinyattn import nn
    keys, names = _order_after_reassigning(nn)
    order = ["encoder.weight", "encoder.bias", "decoder.weight", "decoder.bias", "head.weight",
             "head.bias"]
    assert keys == order and names == order
    torch = pytest.importorskip("torch")
    assert _order_after_reassigning(torch.nn) == (order, order)


@pytest.mark.parametrize("expr, expected, dtype", [
    ("x.new_zeros(2, 3)", [[0, 0, 0], [0, 0, 0]], "int64"),
    ("x.new_ones((2,), dtype=lib.float32)", [1.0, 1.0], "float32"),
    ("x.new_full((2,), 7)", [7, 7], "int64"),
    ("x.new_tensor([1.9, 2.0])", [1, 2], "int64"),
    ("x.new_empty(0, 2)", [], "int64"),
    ("lib.ones(2).type_as(x)", [1, 1], "int64"),
])
def test_new_tensors_take_this_tensors_dtype(expr, expected, dtype):
    # new_* are what real programs use to make a buffer "like" a tensor (nanoGPT, seq2seq code)
    out = eval(expr, {"lib": ta, "x": ta.tensor([5, 6])})
    assert out.tolist() == expected and out.dtype.name == dtype
    torch = pytest.importorskip("torch")
    theirs = eval(expr, {"lib": torch, "x": torch.tensor([5, 6])})
    assert theirs.tolist() == expected and str(theirs.dtype) == f"torch.{dtype}"


def test_new_tensors_on_another_device_fail_loudly():
    with pytest.raises(NotImplementedError, match="new_zeros: device 'cuda'"):
        ta.ones(2).new_zeros(3, device="cuda")


@pytest.mark.parametrize("amounts", [(1, 2), (0, 0, 1, 0), (-1, 1), (2, -2, 1, 1)])
def test_pad_values_and_gradient(amounts):
    import tinyattn.nn.functional as F
    from tinyattn.testing import gradcheck
    x = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = F.pad(x, amounts, value=-1.0)
    if amounts == (1, 2):   # by hand: -1 | row | -1 -1
        assert y.tolist() == [[-1.0, 1.0, 2.0, 3.0, -1.0, -1.0], [-1.0, 4.0, 5.0, 6.0, -1.0, -1.0]]
    assert gradcheck(lambda t: F.pad(t, amounts), (x.detach().double().requires_grad_(),))
    torch = pytest.importorskip("torch")
    t = torch.tensor(x.tolist(), requires_grad=True)
    z = torch.nn.functional.pad(t, amounts, value=-1.0)
    assert y.tolist() == z.tolist()
    w = [[float(i * 7 + j) for j in range(z.shape[1])] for i in range(z.shape[0])]
    (y * ta.tensor(w)).sum().backward()
    (z * torch.tensor(w)).sum().backward()
    assert x.grad.tolist() == t.grad.tolist()


def test_pad_and_one_hot_errors_and_one_hot_values():
    import tinyattn.nn.functional as F
    with pytest.raises(ValueError, match="pad: pad must be a tuple of an even number of ints"):
        F.pad(ta.ones(2, 3), (1,))
    assert F.pad(ta.tensor([[1.0, 2.0, 3.0]]), (1, 1), mode="reflect").tolist() == [[2, 1, 2, 3, 2]]
    with pytest.raises(NotImplementedError, match="pad: mode 'reflect' pads the last 1, 2 or 3"):
        F.pad(ta.ones(3), (1, 1), mode="reflect")
    assert F.one_hot(ta.tensor([0, 2, 1])).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(ta.tensor([[3]]), 5).tolist() == [[[0, 0, 0, 1, 0]]]
    with pytest.raises(ValueError, match="one_hot: class value 5 is out of range"):
        F.one_hot(ta.tensor([5]), 3)
    with pytest.raises(ValueError, match="one_hot: class values must be non-negative"):
        F.one_hot(ta.tensor([-1]))


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


@pytest.mark.parametrize("expr", ["lib.sign(x)", "lib.norm(x, 0)"])
def test_piecewise_constant_ops_record_a_zero_gradient(expr):
    """sign and norm(p=0) stay in the graph with gradient 0 (they used to cut it: backward raised)."""
    x = ta.tensor([-2.0, 0.0, 3.0], dtype=ta.float64, requires_grad=True)
    y = eval(expr, {"lib": ta, "x": x})
    assert y.requires_grad
    (y * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def _embedding(lib, **kw):
    w = lib.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], dtype=lib.float64, requires_grad=True)
    idx = lib.tensor([[0, 1], [0, 0]])
    out = lib.nn.functional.embedding(idx, w, **kw)
    (out * lib.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                      dtype=lib.float64)).sum().backward()
    return out.tolist(), w.detach().tolist(), w.grad.tolist()


def _flat(rows):
    return [v for r in rows for v in (_flat(r) if isinstance(r[0], list) else r)]


def test_embedding_max_norm_renormalises_the_rows_it_uses():
    """Rows 0 (norm 5) and 1 (norm 0.5) are used; with max_norm=1 row 0 becomes (3, 4) / (5 + 1e-7),
    row 1 is left alone, and row 2 (norm 10, unused) too (it used to raise NotImplementedError)."""
    out, w, grad = _embedding(ta, max_norm=1.0)
    s = 1.0 / (5.0 + 1e-7)
    assert _flat(w) == pytest.approx([3 * s, 4 * s, 0.3, 0.4, 6.0, 8.0], rel=1e-12)
    assert _flat(out) == pytest.approx([3 * s, 4 * s, 0.3, 0.4, 3 * s, 4 * s, 3 * s, 4 * s],
                                       rel=1e-12)
    assert grad == [[13.0, 16.0], [3.0, 4.0], [0.0, 0.0]]
    torch = pytest.importorskip("torch")
    theirs = _embedding(torch, max_norm=1.0)
    assert _flat(w) == pytest.approx(_flat(theirs[1]), rel=1e-12) and grad == theirs[2]


def test_embedding_scale_grad_by_freq_divides_by_the_count():
    """Index 0 occurs 3 times in the batch, index 1 once: row 0's gradient (1+5+7, 2+6+8) / 3."""
    _, _, grad = _embedding(ta, scale_grad_by_freq=True)
    assert _flat(grad) == pytest.approx([13 / 3, 16 / 3, 3.0, 4.0, 0.0, 0.0], rel=1e-12)
    torch = pytest.importorskip("torch")
    assert _flat(grad) == pytest.approx(_flat(_embedding(torch, scale_grad_by_freq=True)[2]),
                                        rel=1e-12)


def test_modules_take_device_before_dtype_as_pytorch():
    """PyTorch's factory arguments come in the order device, dtype: Linear(3, 4, True, 'cpu')."""
    assert ta.nn.Linear(3, 4, True, "cpu", ta.float64).weight.dtype is ta.float64
    assert ta.nn.GRUCell(3, 4, True, "cpu", ta.float64).weight_ih.dtype is ta.float64
    assert ta.nn.LayerNorm(4, 1e-5, True, True, "cpu", ta.float64).weight.dtype is ta.float64
    assert ta.nn.Embedding(5, 3, None, None, 2.0, False, False, None, False, "cpu",
                           ta.float64).weight.dtype is ta.float64
    for make in (lambda: ta.nn.Linear(3, 4, device="cuda"),
                 lambda: ta.nn.Conv2d(1, 2, 3, device="cuda"),
                 lambda: ta.nn.Embedding(5, 3, device="cuda")):
        with pytest.raises(RuntimeError, match="CPU only"):
            make()


@pytest.mark.parametrize("change", ["y.zero_()", "y.fill_(5.0)", "y.copy_(lib.tensor([1.0, 2.0]))"])
def test_writing_a_constant_into_a_tensor_in_the_graph_keeps_it_there(change):
    """PyTorch records y.zero_() (ZeroBackward) with gradient 0; tinyattn used to drop y from the
    graph, so y.sum().backward() raised."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        eval(change, {"lib": lib, "y": y})
        assert y.requires_grad
        (y * 3 + x).sum().backward()
        return y.tolist(), x.grad.tolist()
    values, grad = run(ta)
    assert grad == [1.0, 1.0]       # only the "+ x" term reaches x
    torch = pytest.importorskip("torch")
    assert (values, grad) == run(torch)
