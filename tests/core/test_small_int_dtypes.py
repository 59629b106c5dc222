"""uint8 and int32 (tinyattn/dtypes.py): creation, conversion both ways, printing, views,
PyTorch's promotion rules and wraparound, the mask rules of PyTorch 2.x, int32 indices, reductions,
checkpoints, and unique(dim=).

Each behaviour is checked against hand-computed values (these tests run without torch), and the
`torch_*` tests hold tinyattn to PyTorch on the same inputs (skipped when torch is missing).
"""
import importlib.util
import itertools
import os
import subprocess
import sys
import warnings

import pytest

import tinyattn as ta

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

ALL = [ta.bool, ta.uint8, ta.int32, ta.int64, ta.float32, ta.float64]


def u8(v):
    return ta.tensor(v, dtype=ta.uint8)


def i32(v):
    return ta.tensor(v, dtype=ta.int32)


# ------------------------------------------------------------------------------ creation


def test_names_and_aliases():
    assert ta.int is ta.int32 and ta.dtypes.get("byte") is ta.uint8
    assert ta.dtypes.get("int") is ta.int32 and ta.dtypes.get("uint8") is ta.uint8
    assert (ta.uint8.itemsize, ta.int32.itemsize) == (1, 4)
    assert not ta.uint8.is_signed and ta.int32.is_signed
    assert repr(ta.uint8) == "tinyattn.uint8"


def test_creation_with_dtype():
    assert u8([1, 2]).dtype is ta.uint8 and i32([[1], [2]]).shape == (2, 1)
    for make in (lambda dt: ta.zeros(2, 3, dtype=dt), lambda dt: ta.ones(2, 3, dtype=dt),
                 lambda dt: ta.full((2, 3), 7, dtype=dt), lambda dt: ta.empty(2, 3, dtype=dt),
                 lambda dt: ta.arange(6, dtype=dt).reshape(2, 3),
                 lambda dt: ta.zeros_like(ta.zeros(2, 3), dtype=dt)):
        for dt in (ta.uint8, ta.int32):
            t = make(dt)
            assert t.dtype is dt and t.shape == (2, 3)
    assert ta.arange(2, 8, 2, dtype=ta.uint8).tolist() == [2, 4, 6]
    assert ta.full((2,), 255, dtype=ta.uint8).tolist() == [255, 255]
    assert ta.linspace(0, 10, 3, dtype=ta.int32).tolist() == [0, 5, 10]
    assert ta.ByteTensor([1, 2]).dtype is ta.uint8 and ta.IntTensor(2, 3).shape == (2, 3)
    assert ta.IntTensor(2).dtype is ta.int32
    assert ta.zeros(3).new_zeros(2, dtype=ta.uint8).dtype is ta.uint8


def test_creation_checks_the_range_as_pytorch():
    # PyTorch: -255..255 fits uint8 from an int (negatives wrap), 0..255 from a float
    assert u8([-1, -255, 255]).tolist() == [255, 1, 255]
    assert i32([-2 ** 31, 2 ** 31 - 1, 1.7]).tolist() == [-2 ** 31, 2 ** 31 - 1, 1]
    for bad in ([300], [-256], [-0.5], [255.5], [float("nan")]):
        with pytest.raises(RuntimeError, match="tensor: value .* cannot be converted to type "
                                               "uint8 without overflow"):
            u8(bad)
    with pytest.raises(RuntimeError, match="int32 without overflow"):
        i32([2 ** 31])
    with pytest.raises(RuntimeError, match="full: value 300"):
        ta.full((2,), 300, dtype=ta.uint8)
    with pytest.raises(RuntimeError, match="fill_: value 300"):
        ta.zeros(2, dtype=ta.uint8).fill_(300)
    assert ta.zeros(2, dtype=ta.uint8).fill_(-1).tolist() == [255, 255]
    assert ta.zeros(2, dtype=ta.uint8).fill_(1.7).tolist() == [1, 1]


def test_integers_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only floating-point tensors can require gradients, "
                                           "this one is tinyattn.uint8"):
        ta.zeros(2, dtype=ta.uint8).requires_grad_()


# ------------------------------------------------------------------------------ conversion


def test_to_wraps_like_pytorch():
    # hand-computed: the low 8 bits (uint8), the low 32 bits as a signed number (int32)
    assert ta.tensor([300, -1, 256, -256, 2 ** 40 + 7]).to(ta.uint8).tolist() == [44, 255, 0, 0, 7]
    assert ta.tensor([2 ** 31, -2 ** 31 - 1, 2 ** 40 + 3]).int().tolist() == \
        [-2 ** 31, 2 ** 31 - 1, 3]
    # floats truncate toward zero, then wrap (uint8); out of int32's range gives -2**31 (as x86)
    assert ta.tensor([300.0, -1.0, 255.9, -0.5, 1000.0]).byte().tolist() == [44, 255, 255, 0, 232]
    assert ta.tensor([3e9, -3.7, 2.5, float("nan")]).int().tolist() == [-2 ** 31, -3, 2, -2 ** 31]
    assert u8([0, 1, 200]).bool().tolist() == [False, True, True]       # != 0, not the byte
    assert ta.tensor([True, False]).byte().tolist() == [1, 0]
    assert u8([200, 3]).to(ta.float64).tolist() == [200.0, 3.0]
    assert i32([-5]).long().dtype is ta.int64 and i32([-5]).long().item() == -5
    assert u8([7]).type(ta.IntTensor).dtype is ta.int32
    assert u8([7]).type("int32").dtype is ta.int32
    assert u8([7]).to(ta.zeros(1, dtype=ta.int32)).dtype is ta.int32


def test_bool_and_uint8_share_bytes_but_not_meaning():
    m = u8([0, 2, 255])
    b = m.bool()
    assert b._data.typecode == m._data.typecode == "B"
    assert b.tolist() == [False, True, True] and list(b._data) == [0, 1, 1]
    assert (b == ta.tensor([False, True, True])).all().item()
    assert m.sum().item() == 257 and b.sum().item() == 2


@needs_torch
def test_torch_conversions():
    import torch
    src = [300.0, -1.0, 255.9, -0.5, 1e10, -129.5, 0.0]
    for dt_t, dt in ((torch.uint8, ta.uint8), (torch.int32, ta.int32)):
        assert ta.tensor(src).to(dt).tolist() == torch.tensor(src).to(dt_t).tolist()
        ints = [300, -1, 256, -256, 2 ** 40 + 3, -2 ** 31 - 1, 2 ** 31]
        assert ta.tensor(ints).to(dt).tolist() == torch.tensor(ints).to(dt_t).tolist()


# ------------------------------------------------------------------------------ printing, views


def test_printing_tolist_item():
    assert repr(u8([200, 3])) == "tensor([200,   3], dtype=tinyattn.uint8)"
    assert repr(i32([1, 2])) == "tensor([1, 2], dtype=tinyattn.int32)"
    assert u8([[1, 2]]).tolist() == [[1, 2]] and type(u8([5])[0].item()) is int
    assert i32(7).item() == 7 and int(u8(9)) == 9 and f"{u8(9)}" == "9"


def test_views_reshape_cat_stack_indexing():
    x = ta.arange(12, dtype=ta.uint8).reshape(3, 4)
    assert x.t().contiguous().tolist() == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
    assert x[1].tolist() == [4, 5, 6, 7] and x[:, 1:3].tolist() == [[1, 2], [5, 6], [9, 10]]
    assert x[1:, ::2].flatten().tolist() == [4, 6, 8, 10]
    assert x.view(4, 3)[3].tolist() == [9, 10, 11] and x.unsqueeze(0).shape == (1, 3, 4)
    assert ta.cat([x[:1], x[2:]]).tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert ta.stack([x[0], x[1]], 1).shape == (4, 2)
    # cat promotes: uint8 with int32 is int32, with float32 is float32
    assert ta.cat([u8([200]), i32([-5])]).dtype is ta.int32
    assert ta.cat([u8([200]), ta.tensor([0.5])]).tolist() == [200.0, 0.5]
    y = i32([[1, 2], [3, 4]])
    assert y.flip(0).tolist() == [[3, 4], [1, 2]] and y.roll(1, 1).tolist() == [[2, 1], [4, 3]]
    assert ta.tril(y).tolist() == [[1, 0], [3, 4]]
    assert y.tile(2).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]] and y.tile(2, 1).shape == (4, 2)
    assert ta.where(ta.tensor([True, False]), u8([1, 2]), u8([7, 8])).tolist() == [1, 8]


def test_setitem_and_inplace_wrap_or_check():
    x = ta.zeros(3, dtype=ta.uint8)
    x[0] = 255
    x[1:] = ta.tensor([256 + 5, -1]).byte()
    assert x.tolist() == [255, 5, 255]
    with pytest.raises(RuntimeError, match="setitem: value 300"):
        x[0] = 300
    x += 100                     # wraps, as PyTorch: (255 + 100) % 256
    assert x.tolist() == [99, 105, 99]
    x.add_(i32([2 ** 31 - 1, 0, 0]))   # an int32 result written into uint8: its low byte
    assert x.tolist() == [98, 105, 99]
    with pytest.raises(RuntimeError, match="add_: result type tinyattn.float32 can't be cast "
                                           "to the desired output type tinyattn.uint8"):
        x.add_(1.5)


# ------------------------------------------------------------------------------ promotion


def test_promotion_table_by_hand():
    order = [ta.bool, ta.uint8, ta.int32, ta.int64, ta.float32, ta.float64]
    for a, b in itertools.product(order, order):
        want = order[max(order.index(a), order.index(b))]
        assert ta.dtypes.promote_types(a, b) is want
    # a Python number does not widen a tensor of its kind
    st = ta.dtypes.scalar_result_type
    assert st(ta.uint8, 1) is ta.uint8 and st(ta.int32, 10 ** 12) is ta.int32
    assert st(ta.uint8, 2.5) is ta.float32 and st(ta.bool, 1) is ta.int64
    assert st(ta.uint8, True) is ta.uint8


def test_arithmetic_results_by_hand():
    u, i = u8([200, 3]), i32([2 ** 31 - 1, -5])
    assert (u + 100).tolist() == [44, 103] and (u + 100).dtype is ta.uint8    # 300 % 256 = 44
    assert (u + u).tolist() == [144, 6]
    assert (u8([1]) - u8([2])).tolist() == [255]
    assert (-u).tolist() == [56, 253]
    assert (u * 2.5).dtype is ta.float32 and (u * 2.5).tolist() == [500.0, 7.5]
    assert (u / 2).tolist() == [100.0, 1.5]
    assert (u // 7).tolist() == [28, 0] and (u % 7).tolist() == [4, 3]
    assert (u % -3).tolist() == [200, 3]                       # -3 wraps to 253 first
    assert (u + i).dtype is ta.int32 and (u + i).tolist() == [-2 ** 31 + 199, -2]
    assert (i + 1).tolist() == [-2 ** 31, -4]                    # int32 overflow wraps
    assert (i * i).tolist() == [1, 25]                           # (2**31-1)**2 mod 2**32
    assert (u + ta.tensor([1, 2])).dtype is ta.int64
    assert (u + True).tolist() == [201, 4]
    assert (u + ta.tensor(300)).tolist() == [244, 47]          # a 0-d int64 does not widen
    assert (u ** 2).tolist() == [64, 9] and (2 ** u).tolist() == [0, 8]
    assert (~u).tolist() == [55, 252] and (u & 3).tolist() == [0, 3]
    assert (u | i).dtype is ta.int32
    assert i.abs().tolist() == [2 ** 31 - 1, 5] and i32([-2 ** 31]).abs().tolist() == [-2 ** 31]
    assert ta.maximum(u, i).tolist() == [2 ** 31 - 1, 3]
    assert u.clamp(0, 100).tolist() == [100, 3] and u.clamp(0.5, 100).dtype is ta.float32
    assert ta.relu(i).tolist() == [2 ** 31 - 1, 0] and u.sign().dtype is ta.uint8
    assert u.exp().dtype is ta.float32 and u.square().tolist() == [64, 9]
    assert i.div(2, rounding_mode="trunc").tolist() == [1073741823, -2]
    with pytest.raises(ZeroDivisionError, match="floor_divide: integer division by zero"):
        u // 0


def test_comparisons_give_bool_and_wrap_the_number():
    u = u8([200, 3])
    assert (u == 200).dtype is ta.bool and (u == 200).tolist() == [True, False]
    assert (u == 456).tolist() == [True, False]     # 456 wraps to 200, as in PyTorch
    assert (u < -1).tolist() == [True, True]        # -1 wraps to 255
    assert (u > 2.5).tolist() == [True, True]       # a float compares as a float
    assert (u == i32([200, 4])).tolist() == [True, False]
    assert ta.logical_not(u).tolist() == [False, False] and u.isnan().tolist() == [False, False]


@needs_torch
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "floor_divide", "remainder",
                                "maximum", "minimum", "eq", "lt", "ge", "bitwise_and",
                                "bitwise_or", "bitwise_xor", "pow"])
def test_torch_binary_ops_every_dtype_pair(op):
    import torch
    vals = {ta.bool: [True, False, True, True], ta.uint8: [200, 3, 255, 7],
            ta.int32: [2 ** 31 - 1, -5, 100000, 7], ta.int64: [2 ** 40, -3, 9, 7],
            ta.float32: [1.5, -2.25, 255.0, 7.0], ta.float64: [0.5, 3.0, -1.0, 7.0]}
    names = {ta.bool: torch.bool, ta.uint8: torch.uint8, ta.int32: torch.int32,
             ta.int64: torch.int64, ta.float32: torch.float32, ta.float64: torch.float64}
    for a, b in itertools.product(ALL, ALL):
        xa, xb = ta.tensor(vals[a], dtype=a), ta.tensor(vals[b], dtype=b)
        ta_, tb = torch.tensor(vals[a], dtype=names[a]), torch.tensor(vals[b], dtype=names[b])
        if op == "pow":                 # small exponents: the same numbers, no overflow guesswork
            xb, tb = xb.remainder(3) if b is not ta.bool else xb, \
                tb.remainder(3) if b is not ta.bool else tb
        try:
            want = getattr(torch, op)(ta_, tb)
        except (RuntimeError, NotImplementedError):
            with pytest.raises(Exception):  # noqa: B017 - PyTorch raises: so must tinyattn
                getattr(ta, op)(xa, xb)
            continue
        got = getattr(ta, op)(xa, xb)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], (op, a, b)
        assert got.tolist() == pytest.approx(want.tolist(), rel=1e-6, nan_ok=True), (op, a, b)


@needs_torch
@pytest.mark.parametrize("number", [100, 300, -1, -1000, 2 ** 40, 256, 2.5, True])
def test_torch_tensor_with_a_number(number):
    """A Python number, and the same number as a 0-d tensor, against uint8 / int32 tensors."""
    import torch
    for dt, dt_t, vals in ((ta.uint8, torch.uint8, [200, 3, 0]),
                           (ta.int32, torch.int32, [2 ** 31 - 1, -5, 0])):
        x, t = ta.tensor(vals, dtype=dt), torch.tensor(vals, dtype=dt_t)
        for as_tensor in (False, True):
            n_ta = ta.tensor(number) if as_tensor else number
            n_t = torch.tensor(number) if as_tensor else number
            for f in (lambda a, n: a + n, lambda a, n: a * n, lambda a, n: a - n,
                      lambda a, n: n - a, lambda a, n: a == n, lambda a, n: a < n,
                      lambda a, n: a // n, lambda a, n: a.remainder(n),
                      lambda a, n: (ta if isinstance(a, ta.Tensor) else torch).maximum(a, n)):
                try:
                    want = f(t, n_t)
                except (RuntimeError, TypeError):
                    with pytest.raises((RuntimeError, TypeError)):  # ZeroDivisionError too
                        f(x, n_ta)
                    continue
                got = f(x, n_ta)
                assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
                assert got.tolist() == pytest.approx(want.tolist())


# ------------------------------------------------------------------------------ masks


def test_uint8_masks_as_older_pytorch_code_builds_them():
    x = ta.tensor([[5, 0, 7], [0, 0, 2]])
    pad_mask = (x != 0).to(ta.uint8)                       # older PyTorch code's padding mask
    assert pad_mask.dtype is ta.uint8 and pad_mask.tolist() == [[1, 0, 1], [0, 0, 1]]
    triu = ta.tensor([[0, 1, 1], [0, 0, 1], [0, 0, 0]]).to(ta.uint8)   # np.triu(...).astype
    allowed = triu == 0                                   # the comparison gives a bool mask
    assert allowed.dtype is ta.bool
    scores = ta.zeros(3, 3).masked_fill(~allowed, float("-inf"))
    assert scores.softmax(-1)[0].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool tensor, got "
                                        "tinyattn.uint8"):
        ta.zeros(3, 3).masked_fill(triu, 0.0)
    with pytest.raises(TypeError, match="masked_fill: mask must be a bool tensor"):
        ta.zeros(3, 3).masked_fill_(triu, 0.0)
    assert ta.zeros(3, 3).masked_fill(triu.bool(), 1.0).sum().item() == 3.0


def test_where_and_indexing_with_uint8_as_pytorch():
    x = ta.tensor([0.5, -1.0, 2.0])
    m = u8([1, 0, 1])
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        assert ta.where(m, x, 0.0).tolist() == [0.5, 0.0, 2.0]
    with pytest.raises(TypeError, match="where: condition must be a bool tensor, got "
                                        "tinyattn.int32"):
        ta.where(i32([1, 0, 1]), x, 0.0)
    with pytest.warns(UserWarning, match="indexing with dtype tinyattn.uint8 is now deprecated"):
        assert x[m].tolist() == [0.5, 2.0]
    with pytest.raises(TypeError, match="setitem: a uint8 tensor as a mask is refused"):
        x[m] = 1.0
    assert x[i32([2, 0])].tolist() == [2.0, 0.5]              # int32: indices, not a mask
    y = x.clone()
    y[i32([2])] = 9.0
    assert y.tolist() == [0.5, -1.0, 9.0]


@needs_torch
def test_torch_agrees_on_mask_rules():
    import torch
    x = torch.tensor([0.5, -1.0, 2.0])
    m = torch.tensor([1, 0, 1], dtype=torch.uint8)
    with pytest.raises(RuntimeError):
        x.masked_fill(m, 0.0)
    with pytest.raises(RuntimeError):
        x.clone()[m] = 1.0
    with pytest.raises(RuntimeError):
        torch.where(m.int(), x, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.where(m, x, 0.0).tolist() == [0.5, 0.0, 2.0]
        assert x[m].tolist() == [0.5, 2.0]


# ------------------------------------------------------------------------------ int32 indices


def test_int32_indices_where_pytorch_takes_them():
    x = ta.arange(12.0).reshape(3, 4)
    idx = i32([2, 0])
    assert x.index_select(0, idx).tolist() == [[8, 9, 10, 11], [0, 1, 2, 3]]
    assert x.gather(1, i32([[1], [0], [3]])).tolist() == [[1.0], [4.0], [11.0]]
    assert x[idx, 1].tolist() == [9.0, 1.0]
    assert ta.take_along_dim(x, i32([[0], [1], [2]]), 1).tolist() == [[0.0], [5.0], [10.0]]
    w = ta.arange(6.0).reshape(3, 2)
    assert ta.nn.functional.embedding(i32([2, 2, 0]), w).tolist() == [[4, 5], [4, 5], [0, 1]]
    assert ta.nn.Embedding(3, 2)(i32([[1, 2]])).shape == (1, 2, 2)
    z = ta.zeros(3)
    assert z.scatter(0, i32([2]), ta.tensor([5.0])).tolist() == [0, 0, 5]
    assert z.scatter_add(0, i32([1, 1]), ta.tensor([1.0, 2.0])).tolist() == [0, 3, 0]
    assert z.index_add(0, i32([0, 0]), ta.tensor([1.0, 1.0])).tolist() == [2, 0, 0]
    with pytest.raises(IndexError, match="index_fill: expected dtype int64 for index, got "
                                         "tinyattn.int32"):
        z.index_fill(0, i32([0]), 1.0)
    with pytest.raises(TypeError, match="index_select: indices must be int64 or int32 tensors, "
                                        "got tinyattn.uint8"):
        x.index_select(0, u8([0]))
    with pytest.raises(TypeError, match="embedding: indices must be an int64 or int32 tensor, "
                                        "got tinyattn.uint8"):
        ta.nn.functional.embedding(u8([0]), w)
    with pytest.raises(IndexError, match="index_select: index 3 is out of bounds"):
        x.index_select(0, i32([3]))
    assert ta.tensor([1, 2]).repeat_interleave(i32([1, 2])).tolist() == [1, 2, 2]
    with pytest.raises(TypeError, match="repeat_interleave: repeats must be an int64 or int32 "
                                        "tensor, got tinyattn.uint8"):
        ta.tensor([1, 2]).repeat_interleave(u8([1, 2]))


def test_int32_index_gradients():
    w = ta.arange(6.0).reshape(3, 2).requires_grad_()
    ta.nn.functional.embedding(i32([2, 2, 0]), w).sum().backward()
    assert w.grad.tolist() == [[1, 1], [0, 0], [2, 2]]
    x = ta.ones(4, requires_grad=True)
    x[i32([1, 1, 3])].sum().backward()
    assert x.grad.tolist() == [0, 2, 0, 1]


def test_max_pool_of_uint8_and_int32_images():
    x = ta.tensor([[[[1, 200, 5, 6], [3, 4, 7, 255]]]], dtype=ta.uint8)    # (1, 1, 2, 4)
    out, where = ta.nn.functional.max_pool2d(x, 2, return_indices=True)
    assert out.dtype is ta.uint8 and out.tolist() == [[[[200, 255]]]]
    assert where.tolist() == [[[[1, 7]]]]
    assert ta.nn.MaxPool2d(2)(x.int() - 300).tolist() == [[[[-100, -45]]]]


def test_losses_take_uint8_targets_as_pytorch():
    logits = ta.tensor([[2.0, 0.0], [0.0, 3.0]])
    a = ta.nn.functional.cross_entropy(logits, u8([0, 1])).item()
    assert a == pytest.approx(ta.nn.functional.cross_entropy(logits, ta.tensor([0, 1])).item())
    with pytest.raises(TypeError, match="class-index targets must be int64"):
        ta.nn.functional.cross_entropy(logits, i32([0, 1]))


# ------------------------------------------------------------------------------ reductions


def test_reductions_by_hand():
    u = u8([[200, 100], [3, 255]])
    assert u.sum().dtype is ta.int64 and u.sum().item() == 558          # no wrap: int64
    assert u.sum(0).tolist() == [203, 355] and i32([2 ** 31 - 1, 1]).sum().item() == 2 ** 31
    assert u.sum(dtype=ta.uint8).item() == 558 % 256
    assert u.prod().dtype is ta.int64 and u.cumsum(1).tolist() == [[200, 300], [3, 258]]
    assert i32([3, 4]).cumprod(0).dtype is ta.int64
    assert u.max().dtype is ta.uint8 and u.max().item() == 255 and u.min(1).values.tolist() == [100, 3]
    assert u.argmax().item() == 3 and u.amax(0).tolist() == [200, 255]
    assert u.all().dtype is ta.uint8 and u.any(1).tolist() == [1, 1]
    assert u8([0, 1]).all().item() == 0
    assert ta.dot(u8([1, 2]), u8([200, 100])).tolist() == 144            # wraps, as PyTorch
    assert (u8([[1, 2]]) @ u8([[200], [100]])).tolist() == [[144]]
    assert i32([3, 1, 2]).sort().values.tolist() == [1, 2, 3]
    assert u.flatten().topk(2).values.tolist() == [255, 200]
    with pytest.raises(TypeError, match="mean: expected a floating-point tensor, got "
                                        "tinyattn.uint8"):
        u.mean()


# ------------------------------------------------------------------------------ checkpoints


def test_state_dict_save_load(tmp_path):
    m = ta.nn.Linear(2, 2)
    m.register_buffer("mask", u8([[1, 0], [0, 1]]))
    m.register_buffer("lengths", i32([3, -7]))
    path = tmp_path / "m.safetensors"
    ta.save(m.state_dict(), path)
    back = ta.load(path)
    assert back["mask"].dtype is ta.uint8 and back["mask"].tolist() == [[1, 0], [0, 1]]
    assert back["lengths"].dtype is ta.int32 and back["lengths"].tolist() == [3, -7]
    m2 = ta.nn.Linear(2, 2)
    m2.register_buffer("mask", ta.zeros(2, 2, dtype=ta.uint8))
    m2.register_buffer("lengths", ta.zeros(2, dtype=ta.int32))
    m2.load_state_dict(back)
    assert m2.mask.tolist() == [[1, 0], [0, 1]] and m2.lengths.dtype is ta.int32


@needs_torch
def test_torch_reads_our_checkpoint(tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.torch import load_file
    path = tmp_path / "t.safetensors"
    ta.save({"u": u8([255, 1]), "i": i32([-2 ** 31, 5])}, path)
    got = load_file(str(path))
    assert str(got["u"].dtype) == "torch.uint8" and got["u"].tolist() == [255, 1]
    assert str(got["i"].dtype) == "torch.int32" and got["i"].tolist() == [-2 ** 31, 5]


# ------------------------------------------------------------------------------ kernels


def test_both_backends_wrap_small_integers_around():
    for which in ta.backend.BACKENDS:
        with ta.backend.use(which):
            u = u8([200, 3, 255])
            assert (u + u).tolist() == [144, 6, 254]
            assert (u * 3 - 1).tolist() == [87, 8, 252]
            assert (i32([2 ** 31 - 1]) * 2).tolist() == [-2]
            m = ta.tensor([[300, -1], [256, 7]])
            assert m.t().byte().tolist() == [[44, 0], [255, 7]]            # a strided source
            assert (m.t().byte() + m.byte()).tolist() == [[88, 255], [255, 14]]


def test_conversions_of_views_with_many_dims():
    """More than 4 dims that do not merge: copy_into loops over the leading ones in Python."""
    x = ta.arange(2 * 3 * 2 * 3 * 2).reshape(2, 3, 2, 3, 2).permute(4, 2, 0, 3, 1) * 50 - 100
    want = [[v % 256 for v in row] for row in x.reshape(-1, 3).tolist()]
    assert x.byte().reshape(-1, 3).tolist() == want
    assert x.float().int().reshape(-1, 3).tolist() == x.reshape(-1, 3).tolist()
    assert x.byte().bool().reshape(-1).tolist() == [v % 256 != 0 for v in x.reshape(-1).tolist()]


def test_import_compiles_no_narrow_kernels():
    """Cold start must not grow: importing tinyattn and training on floats leaves every kernel
    table free of 'i' (int32) entries; they compile the first time an int32 tensor needs one."""
    code = ("import tinyattn as ta\n"
            "from tinyattn.fast import jit\n"
            "import gc\n"
            "x = ta.randn(4, 3, requires_grad=True)\n"
            "(x @ ta.randn(3, 2)).softmax(-1).sum().backward()\n"
            "tables = [o for o in gc.get_objects() if isinstance(o, jit.by_typecode)]\n"
            "keys = [k for t in tables for k in t]\n"
            "assert tables and not any((k[0] if isinstance(k, tuple) else k) == 'i' "
            "for k in keys), keys\n"
            "print(len(tables))\n")
    # the fast backend's tables (the reference backend has none)
    env = dict(os.environ, TINYATTN_QUIET_COMPILE="1", TINYATTN_KERNELS="fast")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr[-2000:]


# ------------------------------------------------------------------------------ unique(dim=)


def test_unique_dim_by_hand():
    x = ta.tensor([[1, 2, 1, 2], [3, 0, 3, 1], [1, 2, 1, 2]])
    values, inverse, counts = ta.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert values.tolist() == [[1, 2, 1, 2], [3, 0, 3, 1]]
    assert inverse.tolist() == [0, 1, 0] and counts.tolist() == [2, 1]
    values, inverse, counts = x.unique(dim=1, return_inverse=True, return_counts=True)
    # columns (1,3,1) (2,0,2) (1,3,1) (2,1,2), sorted: (1,3,1) < (2,0,2) < (2,1,2)
    assert values.tolist() == [[1, 2, 2], [3, 0, 1], [1, 2, 2]]
    assert inverse.tolist() == [0, 1, 0, 2] and counts.tolist() == [2, 1, 1]
    assert ta.unique(x, dim=-1).tolist() == values.tolist()
    values, inverse, counts = ta.unique_consecutive(
        ta.tensor([[1, 1], [1, 1], [0, 2], [1, 1]]), dim=0, return_inverse=True,
        return_counts=True)
    assert values.tolist() == [[1, 1], [0, 2], [1, 1]]
    assert inverse.tolist() == [0, 0, 1, 2] and counts.tolist() == [2, 1, 1]
    # ties in the first element are decided by the next ones (lexicographic order)
    assert ta.unique(ta.tensor([[1, 9], [1, 2], [0, 5]]), dim=0).tolist() == \
        [[0, 5], [1, 2], [1, 9]]
    assert ta.unique(u8([[3, 1], [3, 1]]), dim=1).dtype is ta.uint8


def test_unique_dim_empty_and_errors():
    values, inverse, counts = ta.unique(ta.zeros(0, 3), dim=0, return_inverse=True,
                                        return_counts=True)
    assert values.shape == (0, 3) and inverse.shape == (0,) and counts.shape == (0,)
    assert ta.unique_consecutive(ta.zeros(3, 0), dim=1).shape == (3, 0)
    with pytest.raises(RuntimeError, match="unique: a tensor of shape \\(3, 0\\) has 0-sized "
                                           "dims other than dim 0"):
        ta.unique(ta.zeros(3, 0), dim=0)
    with pytest.raises(IndexError, match="unique: dim 0 is out of range for a 0-d tensor"):
        ta.unique(ta.tensor(5), dim=0)


@needs_torch
@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
def test_torch_unique_dim(fn):
    import torch
    g = torch.Generator().manual_seed(0)
    cases = [torch.randint(0, 2, (6, 3), generator=g), torch.randint(0, 3, (4, 2, 5), generator=g),
             torch.randint(0, 2, (5, 3), generator=g).to(torch.uint8),
             torch.randint(-1, 2, (3, 6), generator=g).int(),
             torch.tensor([[1.0, float("nan")], [1.0, float("nan")], [0.5, 2.0]]),
             torch.tensor([[True, False], [True, False], [False, False]]),
             torch.zeros(0, 3), torch.zeros(3, 0)]
    dts = {torch.int64: ta.int64, torch.uint8: ta.uint8, torch.int32: ta.int32,
           torch.float32: ta.float32, torch.bool: ta.bool}
    for t in cases:
        x = ta.tensor(t.tolist(), dtype=dts[t.dtype]) if t.numel() else ta.zeros(*t.shape)
        for d in range(-t.dim(), t.dim()):
            for inv, cnt in itertools.product((False, True), repeat=2):
                try:
                    want = getattr(torch, fn)(t, dim=d, return_inverse=inv, return_counts=cnt)
                except RuntimeError:
                    with pytest.raises(RuntimeError):
                        getattr(ta, fn)(x, dim=d, return_inverse=inv, return_counts=cnt)
                    continue
                got = getattr(ta, fn)(x, dim=d, return_inverse=inv, return_counts=cnt)
                want = want if isinstance(want, tuple) else (want,)
                got = got if isinstance(got, tuple) else (got,)
                for a, b in zip(got, want):
                    assert a.shape == tuple(b.shape)
                    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
                    assert str(a.tolist()) == str(b.tolist()), (fn, tuple(t.shape), d)
