"""Aliasing: the result of an op shares memory with its input exactly when PyTorch's does.

A view (view, reshape of a contiguous tensor, squeeze, slicing, `T`, narrow, split, diagonal, ...)
shares the input's memory: writing into it changes the input. Everything else (roll, cat, repeat,
flip, clone, a conversion to another dtype, a reshape that must copy, ...) is new memory, even when
it changes nothing: writing into it leaves the input alone. A few ops return the input object
itself, as PyTorch's do (`contiguous()` of a contiguous tensor, `to()` of the same dtype,
`float()` of a float tensor, `flatten(d, d)`); the others return a new tensor object even when it
is a view of the same shape.

The property test runs every (op, sample) pair in CASES x SAMPLES on PyTorch to learn what it
does (the result is the input object; the result shares the input's storage), and tinyattn must
do the same; then it writes into every result PyTorch lets it write into and compares the inputs
afterwards. A second test keeps CASES complete: every public function of ops/layout.py is in it.
The hand-worked tests at the end say the same without PyTorch."""
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import tinyattn as ta
from tinyattn.ops import layout as _layout

# The inputs: laid out packed, transposed, sliced with an offset, with size-1 dims, 0-d, integer.
SAMPLES = {
    "packed (2, 3)": lambda T: T.arange(6.0).reshape(2, 3),
    "transposed (3, 2)": lambda T: T.arange(6.0).reshape(2, 3).t(),
    "sliced (2, 2) with an offset": lambda T: T.arange(12.0).reshape(3, 4)[1:, ::2],
    "size-1 dim (1, 3)": lambda T: T.arange(3.0).reshape(1, 3),
    "3-d (2, 1, 3)": lambda T: T.arange(6.0).reshape(2, 1, 3),
    "1-d (4,)": lambda T: T.arange(4.0),
    "0-d": lambda T: T.tensor(2.0),
    "int64 (2, 3)": lambda T: T.arange(6).reshape(2, 3),
}


def _n(x, d=0):
    return x.shape[d] if x.ndim else 1


# (name, op over (library, input)); an op that PyTorch refuses for a sample is skipped for it.
CASES = [
    # views, and view ops that change nothing
    ("view same shape", lambda T, x: x.view(x.shape)),
    ("view(-1)", lambda T, x: x.view(-1)),
    ("view_as", lambda T, x: x.view_as(x)),
    ("reshape same shape", lambda T, x: x.reshape(x.shape)),
    ("reshape(-1)", lambda T, x: x.reshape(-1)),
    ("torch.reshape", lambda T, x: T.reshape(x, (-1,))),
    ("reshape_as", lambda T, x: x.reshape_as(x)),
    ("flatten", lambda T, x: x.flatten()),
    ("torch.flatten", lambda T, x: T.flatten(x)),
    ("flatten(0, 0)", lambda T, x: x.flatten(0, 0)),
    ("unflatten", lambda T, x: x.unflatten(0, (_n(x),))),
    ("squeeze()", lambda T, x: x.squeeze()),
    ("squeeze(0)", lambda T, x: x.squeeze(0)),
    ("torch.squeeze", lambda T, x: T.squeeze(x)),
    ("unsqueeze(0)", lambda T, x: x.unsqueeze(0)),
    ("torch.unsqueeze(-1)", lambda T, x: T.unsqueeze(x, -1)),
    ("permute reversed", lambda T, x: x.permute(*range(x.ndim - 1, -1, -1))),
    ("torch.permute identity", lambda T, x: T.permute(x, tuple(range(x.ndim)))),
    ("transpose(0, -1)", lambda T, x: x.transpose(0, -1)),
    ("transpose(0, 0)", lambda T, x: T.transpose(x, 0, 0)),
    ("t()", lambda T, x: x.t()),
    ("torch.t", lambda T, x: T.t(x)),
    (".T", lambda T, x: x.T),
    (".mT", lambda T, x: x.mT),
    ("expand same shape", lambda T, x: x.expand(*x.shape)),
    ("expand(-1, ...)", lambda T, x: x.expand(*([-1] * x.ndim))),
    ("expand to a new leading dim", lambda T, x: x.expand(2, *x.shape)),
    ("torch.expand_copy is not a view", lambda T, x: x.expand(2, *x.shape).contiguous()),
    ("expand_as", lambda T, x: x.expand_as(x)),
    ("broadcast_to", lambda T, x: T.broadcast_to(x, x.shape)),
    ("narrow everything", lambda T, x: x.narrow(0, 0, _n(x))),
    ("narrow a part", lambda T, x: T.narrow(x, 0, 1, _n(x) - 1)),
    ("split in one", lambda T, x: x.split(_n(x))),
    ("split in ones", lambda T, x: T.split(x, 1)),
    ("split by sections", lambda T, x: x.split([1, _n(x) - 1])),
    ("chunk(1)", lambda T, x: x.chunk(1)),
    ("chunk(2)", lambda T, x: T.chunk(x, 2)),
    ("unbind", lambda T, x: x.unbind()),
    ("torch.unbind(-1)", lambda T, x: T.unbind(x, -1)),
    ("select", lambda T, x: x.select(0, 0)),
    ("movedim(0, -1)", lambda T, x: x.movedim(0, -1)),
    ("torch.movedim(0, 0)", lambda T, x: T.movedim(x, 0, 0)),
    ("x[:]", lambda T, x: x[:]),
    ("x[...]", lambda T, x: x[...]),
    ("x[0]", lambda T, x: x[0]),
    ("x[None]", lambda T, x: x[None]),
    ("x[..., ::2]", lambda T, x: x[..., ::2]),
    ("x[[0]] (advanced: a copy)", lambda T, x: x[[0]]),
    ("x[x > 0] (a mask: a copy)", lambda T, x: x[x > 0]),
    ("diagonal", lambda T, x: x.diagonal()),
    ("torch.diagonal(offset=1)", lambda T, x: T.diagonal(x, 1)),
    ("diag", lambda T, x: T.diag(x)),
    ("detach", lambda T, x: x.detach()),
    (".data", lambda T, x: x.data),
    ("einsum identity", lambda T, x: T.einsum("...->...", x)),
    ("einsum transpose", lambda T, x: T.einsum("ij->ji", x)),
    # new memory, even when nothing changes
    ("roll(0)", lambda T, x: x.roll(0)),
    ("roll by the size", lambda T, x: x.roll(_n(x), 0)),
    ("roll(1, 0)", lambda T, x: T.roll(x, 1, 0)),
    ("roll(1, -1)", lambda T, x: x.roll(1, -1)),
    ("roll over two dims", lambda T, x: x.roll((1, 1), (0, 1))),
    ("roll over the flattened tensor", lambda T, x: T.roll(x, 2)),
    ("cat of one", lambda T, x: T.cat([x])),
    ("cat of two", lambda T, x: T.cat([x, x])),
    ("stack of one", lambda T, x: T.stack([x])),
    ("repeat(1, ...)", lambda T, x: x.repeat(*([1] * x.ndim))),
    ("repeat(2, ...)", lambda T, x: x.repeat(2, *([1] * x.ndim))),
    ("tile((1,))", lambda T, x: x.tile((1,))),
    ("torch.tile", lambda T, x: T.tile(x, (2,))),
    ("flip(0)", lambda T, x: x.flip(0)),
    ("flip([])", lambda T, x: T.flip(x, [])),
    ("clone", lambda T, x: x.clone()),
    ("torch.clone", lambda T, x: T.clone(x)),
    ("contiguous", lambda T, x: x.contiguous()),
    ("to(copy=True)", lambda T, x: x.to(x.dtype, copy=True)),
    ("masked_fill of nothing", lambda T, x: x.masked_fill(x != x, 0)),
    ("where", lambda T, x: T.where(x == x, x, x)),
    ("x + 0", lambda T, x: x + 0),
    ("x * 1", lambda T, x: x * 1),
    ("abs", lambda T, x: x.abs()),
    ("clamp", lambda T, x: x.clamp(min=-100)),
    ("index_select everything", lambda T, x: x.index_select(0, T.arange(_n(x)))),
    ("tril", lambda T, x: x.tril(5)),
    ("sum over a size-1 dim", lambda T, x: x.sum(0, keepdim=True)),
    ("mean(0)", lambda T, x: x.mean(0)),
    ("amax(0)", lambda T, x: x.amax(0)),
    ("max(0).values", lambda T, x: x.max(0)[0]),
    ("min(0).values", lambda T, x: T.min(x, 0)[0]),
    ("prod(0)", lambda T, x: x.prod(0)),
    ("cumsum(0)", lambda T, x: x.cumsum(0)),
    ("cumprod(0)", lambda T, x: T.cumprod(x, 0)),
    ("sort(0).values", lambda T, x: x.sort(0)[0]),
    ("topk(1).values", lambda T, x: x.topk(1, 0)[0]),
    ("logsumexp(0)", lambda T, x: x.logsumexp(0)),
    ("softmax(0)", lambda T, x: x.softmax(0)),
    ("log_softmax(-1)", lambda T, x: T.log_softmax(x, -1)),
    ("std(0)", lambda T, x: x.std(0)),
    ("norm", lambda T, x: x.norm()),
    ("relu", lambda T, x: T.relu(x)),
    ("F.gelu", lambda T, x: T.nn.functional.gelu(x)),
    ("F.normalize", lambda T, x: T.nn.functional.normalize(x, dim=0)),
    ("gather everything", lambda T, x: x.gather(0, T.zeros(x.shape, dtype=T.int64))),
    ("take_along_dim", lambda T, x: T.take_along_dim(x, T.zeros(x.shape, dtype=T.int64), 0)),
    ("scatter of nothing", lambda T, x: x.scatter(0, T.zeros((0,) * x.ndim, dtype=T.int64), x)),
    ("index_fill of nothing", lambda T, x: x.index_fill(0, T.tensor([], dtype=T.int64), 0)),
    ("lerp with weight 0", lambda T, x: T.lerp(x, x, 0.0)),
    ("pow(1)", lambda T, x: x.pow(1)),
    ("round", lambda T, x: x.round()),
    ("sign", lambda T, x: x.sign()),
    ("nonzero", lambda T, x: x.nonzero()),
    ("unique", lambda T, x: x.unique()),
    ("F.pad by nothing", lambda T, x: T.nn.functional.pad(x, (0, 0))),
    ("repeat_interleave(1)", lambda T, x: x.repeat_interleave(1)),
    # conversions: the same dtype is the input itself, another dtype is new memory
    ("to(same dtype)", lambda T, x: x.to(x.dtype)),
    ("to(float64)", lambda T, x: x.to(T.float64)),
    ("type(same dtype)", lambda T, x: x.type(x.dtype)),
    ("type_as itself", lambda T, x: x.type_as(x)),
    ("type_as an int64 tensor", lambda T, x: x.type_as(T.tensor([1]))),
    ("float()", lambda T, x: x.float()),
    ("double()", lambda T, x: x.double()),
    ("long()", lambda T, x: x.long()),
    ("cpu()", lambda T, x: x.cpu()),
    ("sum_to_size(same)", lambda T, x: x.sum_to_size(x.shape)),
    ("F.dropout when not training", lambda T, x: T.nn.functional.dropout(x, 0.5, False)),
    ("nn.Identity", lambda T, x: T.nn.Identity()(x)),
    ("nn.Flatten", lambda T, x: T.nn.Flatten()(x)),
]

# Public functions of ops/layout.py and the cases that cover them (by the names in CASES).
COVERED = {"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "unsqueeze",
           "squeeze", "permute", "transpose", "t", "expand", "expand_as", "repeat", "narrow",
           "split", "chunk", "unbind", "select", "contiguous", "clone", "detach", "cat", "stack",
           "tile", "roll", "movedim"}
# Accepted by PyTorch, refused by tinyattn (an error, never a silent difference): the reason.
REFUSED = {
    (".mT", "0-d"): "PyTorch takes x.mT of a 0-d tensor (and refuses it for 1-d); tinyattn "
                    "asks for 2 dims",
    ("x[x > 0] (a mask: a copy)", "0-d"): "a 0-d bool index is not supported",
}
NOT_PUBLIC = {"alias"}  # the helper the view ops use for "a view of all of x"


def _results(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(T, op, sample):
    x = SAMPLES[sample](T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # x.T of a tensor that is not 2-d: deprecated in PyTorch
        return x, _results(op(T, x))


def _shares(a, b, torch):
    if torch is not None:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    return a._data is b._data


def _write(results, value):
    """Write `value` into every result that takes a write; say which ones did."""
    wrote = []
    for r in results:
        try:
            r.fill_(value)
            wrote.append(True)
        except RuntimeError:  # PyTorch: a write through an expanded view, or an integer result
            wrote.append(False)
    return wrote


@pytest.mark.parametrize("sample", list(SAMPLES))
@pytest.mark.parametrize("name, op", CASES, ids=[c[0] for c in CASES])
def test_result_shares_memory_with_the_input_exactly_when_pytorch_does(name, op, sample):
    torch = pytest.importorskip("torch")
    try:
        tx, tres = _run(torch, op, sample)
    except (RuntimeError, IndexError, ValueError, TypeError):
        pytest.skip("PyTorch refuses this op for this sample")
    if (name, sample) in REFUSED:
        with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)):
            _run(ta, op, sample)
        return
    x, res = _run(ta, op, sample)
    assert len(res) == len(tres)
    for i, (r, tr) in enumerate(zip(res, tres)):
        assert (r is x) == (tr is tx), \
            f"{name}: result {i} is the input object: {r is x}; in PyTorch: {tr is tx}"
        assert _shares(r, x, None) == _shares(tr, tx, torch), \
            f"{name}: result {i} shares the input's memory: {_shares(r, x, None)}; in PyTorch: " \
            f"{_shares(tr, tx, torch)}"
    # writing into the results changes the input exactly as in PyTorch
    before = tx.tolist()
    wrote = _write(tres, 7)
    _write([r for r, w in zip(res, wrote) if w], 7)
    assert x.tolist() == tx.tolist(), f"{name}: after writing into the result"
    if not any(_shares(tr, tx, torch) for tr in tres):
        assert x.tolist() == before


def test_every_layout_op_is_in_the_cases():
    public = {n for n, f in vars(_layout).items()
              if callable(f) and not isinstance(f, type) and not n.startswith("_")
              and getattr(f, "__module__", None) == _layout.__name__}
    assert public - NOT_PUBLIC <= COVERED, f"not covered by CASES: {public - NOT_PUBLIC - COVERED}"
    names = " ".join(c[0] for c in CASES)
    assert all(n in names for n in COVERED), [n for n in COVERED if n not in names]


# ----------------------------------------------------------------- by hand, without PyTorch

def test_roll_that_moves_nothing_is_a_copy():
    # makemore's sampler: a context rolled by one along a size-1 dim, then written into
    for shift, dim, shape in [(1, 0, (1, 3)), (0, 1, (1, 3)), (3, 1, (1, 3)), (0, None, (2, 2))]:
        x = ta.arange(float(shape[0] * shape[1])).reshape(shape)
        before = x.tolist()
        y = x.roll(shift) if dim is None else x.roll(shift, dim)
        assert y is not x and y._data is not x._data
        assert y.tolist() == before
        y[0, -1] = 99.0
        assert x.tolist() == before


def test_roll_values_by_hand():
    x = ta.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.roll(1, 1).tolist() == [[3, 1, 2], [6, 4, 5]]
    assert x.roll(-1, 0).tolist() == [[4, 5, 6], [1, 2, 3]]
    assert x.roll(1).tolist() == [[6, 1, 2], [3, 4, 5]]
    assert x.roll((1, 1), (0, 1)).tolist() == [[6, 4, 5], [3, 1, 2]]


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 3), cols=st.integers(1, 4), shift=st.integers(-9, 9),
       dim=st.sampled_from([None, 0, 1, -1]))
def test_roll_never_shares_memory_and_moves_each_element_by_the_shift(rows, cols, shift, dim):
    x = ta.arange(float(rows * cols)).reshape(rows, cols)
    y = x.roll(shift, dim) if dim is not None else x.roll(shift)
    assert y._data is not x._data
    flat, n = x.reshape(-1).tolist(), rows * cols
    out = y.reshape(-1).tolist()
    for i in range(rows):
        for j in range(cols):
            if dim is None:
                k = i * cols + j
                assert out[(k + shift) % n] == flat[k]
            elif dim == 0:
                assert out[((i + shift) % rows) * cols + j] == flat[i * cols + j]
            else:
                assert out[i * cols + (j + shift) % cols] == flat[i * cols + j]


def test_diagonal_is_a_view_written_through():
    x = ta.ones(3, 3)
    x.diagonal().fill_(0.0)
    assert x.tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    x.diagonal(1)[:] = 5.0
    assert x.tolist() == [[0, 5, 1], [1, 0, 5], [1, 1, 0]]


def test_diagonal_gradient_lands_on_the_diagonal():
    x = ta.zeros(2, 3, dtype=ta.float64, requires_grad=True)
    (x.diagonal(1) * ta.tensor([2.0, 3.0], dtype=ta.float64)).sum().backward()
    assert x.grad.tolist() == [[0, 2, 0], [0, 0, 3]]
    assert ta.testing.gradcheck(lambda t: t.diagonal(-1, 1, 0), (ta.randn(3, 4, dtype=ta.float64,
                                                                           requires_grad=True),))


def test_repeat_cat_and_flip_are_new_memory():
    x = ta.tensor([[1.0, 2.0]])
    r = x.repeat(2, 1)              # rows must not share memory with each other or with x
    r[0, 0] = 9.0
    assert r.tolist() == [[9.0, 2.0], [1.0, 2.0]] and x.tolist() == [[1.0, 2.0]]
    for y in (x.repeat(1, 1), ta.cat([x]), ta.stack([x])[0], x.flip([]), x.tile((1,))):
        y.fill_(0.0)
        assert x.tolist() == [[1.0, 2.0]]


def test_views_that_change_nothing_are_new_tensors_sharing_memory():
    x = ta.tensor([[1.0, 2.0]])
    for y in (x.view(1, 2), x.reshape(1, 2), x.squeeze(1), x.permute(0, 1), x.transpose(1, 1),
              x.expand(1, 2), x.narrow(1, 0, 2), x[:], x[...], x.split(2, 1)[0]):
        assert y is not x and y._data is x._data
    # the input itself, as PyTorch returns it
    for y in (x.contiguous(), x.to(ta.float32), x.float(), x.type_as(x), x.flatten(0, 0)):
        assert y is x
