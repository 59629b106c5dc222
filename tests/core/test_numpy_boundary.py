"""NumPy at the boundary (tinyattn/_numpy.py): NumPy arrays and scalars, `__array_interface__`
objects and buffers go into `tensor`, `as_tensor`, `from_numpy`, `asarray`, `frombuffer` and the
legacy constructors with PyTorch's dtype rule, and `Tensor.numpy()` / `__array__` hand out arrays
that share the tensor's memory.

No test imports NumPy (tests/docs/test_no_numpy.py): arrays come from `Tensor.numpy()` (numba
installs NumPy, so this runs without torch), other dtypes from `array.astype(...)`, and NumPy's
functions from `array.__array_namespace__()`. Each behaviour is checked against hand-computed
values; the `torch_*` tests hold tinyattn to PyTorch on the same arrays (skipped without torch).
"""
import array
import importlib.util
import sys

import pytest

import tinyattn as ta

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

SIX = [ta.bool, ta.uint8, ta.int32, ta.int64, ta.float32, ta.float64]
VALUES = {ta.bool: [[True, False, True], [False, False, True]]}


def nparray(values, dtype=ta.float64):
    """A NumPy array, made by tinyattn (no import of NumPy here)."""
    return ta.tensor(values, dtype=dtype).numpy()


def values_for(dt):
    return VALUES.get(dt, [[0, 1, 2], [3, 4, 5]])


class Interface:
    """The smallest `__array_interface__` exporter: a pointer into an array.array it keeps."""

    def __init__(self, buf, shape, typestr, strides=None, offset=0, as_buffer=False):
        self.buf = buf
        if as_buffer:
            data, extra = buf, {"offset": offset}
        else:
            data, extra = (buf.buffer_info()[0] + offset, False), {}
        self.__array_interface__ = dict(shape=shape, typestr=typestr, strides=strides, data=data,
                                        version=3, **extra)


# ------------------------------------------------------------------------------ NumPy arrays in


@pytest.mark.parametrize("dt", SIX, ids=str)
def test_tensor_of_a_numpy_array_keeps_its_dtype_and_values(dt):
    a = nparray(values_for(dt), dt)
    t = ta.tensor(a)
    assert t.dtype is dt and t.shape == (2, 3) and t.tolist() == values_for(dt)


def test_float64_stays_float64_in_tensor_and_float_tensor_converts():
    a = nparray([[0.5, 1.5]])
    assert ta.tensor(a).dtype is ta.float64
    assert ta.as_tensor(a).dtype is ta.float64 and ta.from_numpy(a).dtype is ta.float64
    for make, dt in [(ta.FloatTensor, ta.float32), (ta.Tensor, ta.float32),
                     (ta.DoubleTensor, ta.float64)]:
        t = make(a)
        assert t.dtype is dt and t.tolist() == [[0.5, 1.5]]
    assert ta.tensor(a, dtype=ta.float32).dtype is ta.float32


def test_legacy_constructors_cast_an_array_as_pytorch_does():
    assert ta.LongTensor(nparray([0.7, -1.7, 2.2])).tolist() == [0, -1, 2]     # truncated
    assert ta.ByteTensor(nparray([-1, 300], ta.int64)).tolist() == [255, 44]   # wrapped
    assert ta.IntTensor(nparray([2 ** 40 + 3], ta.int64)).tolist() == [3]
    assert ta.BoolTensor(nparray([0, 1, 2], ta.int64)).tolist() == [False, True, True]
    # an array is cast (uint8 wraps); a number, NumPy scalar or not, is range-checked
    assert ta.tensor(nparray([300], ta.int64), dtype=ta.uint8).tolist() == [44]
    with pytest.raises(RuntimeError, match="300"):
        ta.tensor(nparray([300.7])[0], dtype=ta.uint8)


def test_a_numpy_integer_is_a_size_to_the_legacy_constructors():
    n = nparray([3, 2], ta.int64)
    assert ta.LongTensor(n[0]).shape == (3,) and ta.FloatTensor(n[0], n[1]).shape == (3, 2)
    assert ta.Tensor(n[1]).shape == (2,) and ta.Tensor(n[1]).dtype is ta.float32


def test_strided_arrays_are_read_in_row_major_order():
    a = nparray([[0, 1, 2], [3, 4, 5]])
    assert ta.tensor(a.T).tolist() == [[0, 3], [1, 4], [2, 5]]
    assert ta.tensor(a[:, ::2]).tolist() == [[0, 2], [3, 5]]
    fortran = a.copy(order="F")
    assert not fortran.flags["C_CONTIGUOUS"] and ta.tensor(fortran).tolist() == a.tolist()
    wide = ta.tensor([1.0, 2.0]).expand(3, 2).numpy()              # stride 0
    assert wide.strides == (0, 4) and ta.tensor(wide).tolist() == [[1, 2]] * 3


def test_zero_dim_and_empty_arrays():
    t = ta.tensor(ta.tensor(2.5, dtype=ta.float64).numpy())
    assert t.shape == () and t.dtype is ta.float64 and t.item() == 2.5
    e = ta.tensor(ta.zeros(0, 3).numpy())
    assert e.shape == (0, 3) and e.dtype is ta.float32 and e.tolist() == []


def test_unsupported_dtypes_raise_type_error_naming_the_dtype():
    a = nparray([1.0, 2.0])
    for typ, name in [("float16", "float16"), ("complex128", "complex128"), ("int16", "int16"),
                      (object, "object_"), ("uint64", "uint64")]:
        with pytest.raises(TypeError, match=f"numpy.{name}. The only supported types"):
            ta.tensor(a.astype(typ))
        with pytest.raises(TypeError, match=f"from_numpy: .*numpy.{name}"):
            ta.from_numpy(a.astype(typ))


def test_negative_strides_and_foreign_byte_order_raise_value_error_as_in_pytorch():
    a = nparray([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="negative"):
        ta.tensor(a[::-1])
    other = ">f8" if sys.byteorder == "little" else "<f8"
    with pytest.raises(ValueError, match="byte order"):
        ta.from_numpy(a.astype(other))


def test_from_numpy_takes_only_arrays():
    with pytest.raises(TypeError, match=r"from_numpy: expected np.ndarray \(got list\)"):
        ta.from_numpy([1.0])
    with pytest.raises(TypeError, match="got float64"):
        ta.from_numpy(nparray([1.0])[0])


def test_from_numpy_and_as_tensor_copy_the_array_a_documented_difference():
    a = nparray([1.0, 2.0])
    t, u = ta.from_numpy(a), ta.as_tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and u.tolist() == [1.0, 2.0]
    assert "copy" in ta.from_numpy.__doc__ and "copied" in ta.as_tensor.__doc__


def test_as_tensor_returns_a_tensor_of_the_same_dtype_itself():
    t = ta.tensor([1.0, 2.0])
    assert ta.as_tensor(t) is t and ta.as_tensor(t, dtype=ta.float32) is t
    d = ta.as_tensor(t, dtype=ta.float64)
    assert d.dtype is ta.float64 and d.tolist() == [1.0, 2.0]
    assert ta.as_tensor([1, 2], dtype=ta.float64).dtype is ta.float64


# ------------------------------------------------------------------------ NumPy scalars, lists


def test_numpy_scalars_keep_their_dtype():
    for dt, v in [(ta.float64, 1.5), (ta.float32, 1.5), (ta.int32, 7), (ta.int64, -3),
                  (ta.bool, True), (ta.uint8, 200)]:
        s = nparray([v], dt)[0]
        t = ta.tensor(s)
        assert t.shape == () and t.dtype is dt and t.item() == v


def test_lists_of_numpy_scalars_promote_as_in_pytorch():
    f64, f32 = nparray([1.0])[0], nparray([1.0], ta.float32)[0]
    i32, u8 = nparray([1], ta.int32)[0], nparray([1], ta.uint8)[0]
    assert ta.tensor([f64, f64]).dtype is ta.float64
    assert ta.tensor([f64, 2]).dtype is ta.float64
    assert ta.tensor([f32, 2.0]).dtype is ta.float32
    assert ta.tensor([i32, i32]).dtype is ta.int32
    assert ta.tensor([i32, 2]).dtype is ta.int64
    assert ta.tensor([u8, True]).dtype is ta.uint8
    assert ta.tensor([[f64, 2.5], [3, 4]]).tolist() == [[1.0, 2.5], [3.0, 4.0]]


def test_lists_of_arrays_stack_with_their_dtype():
    rows = [nparray([1.0, 2.0]), nparray([3.0, 4.0])]
    t = ta.tensor(rows)
    assert t.dtype is ta.float64 and t.tolist() == [[1, 2], [3, 4]]
    t = ta.tensor([nparray([1, 2], ta.int32), [3, 4]])
    assert t.dtype is ta.int64 and t.tolist() == [[1, 2], [3, 4]]
    assert ta.tensor([nparray([1, 2], ta.int32)] * 2).dtype is ta.int32
    with pytest.raises(ValueError, match="at dim 1"):
        ta.tensor([nparray([1.0, 2.0]), nparray([3.0])])


def test_lists_of_zero_dim_tensors_keep_their_dtype():
    one = ta.tensor(1.0, dtype=ta.float64)
    assert ta.tensor([one, one]).dtype is ta.float64
    assert ta.tensor([ta.tensor(1, dtype=ta.int32), 2.5]).dtype is ta.float32


# ------------------------------------------------------------------------------ buffers


def test_buffers_are_sequences_of_python_numbers_as_pytorch_reads_them():
    t = ta.tensor(array.array("d", [1.5, 2.0]))
    assert t.dtype is ta.float32 and t.tolist() == [1.5, 2.0]           # the default float dtype
    assert ta.tensor(array.array("B", [1, 2])).dtype is ta.int64
    assert ta.tensor(array.array("q", [2 ** 40])).tolist() == [2 ** 40]
    assert ta.tensor(bytearray(b"ab")).tolist() == [97, 98]
    m = memoryview(array.array("q", [1, 2, 3, 4, 5, 6])).cast("B").cast("q", (2, 3))
    assert ta.tensor(m).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert ta.tensor(memoryview(array.array("d", range(6)))[::-2]).tolist() == [5, 3, 1]
    assert ta.tensor(memoryview(bytes([0, 1, 2])).cast("?")).tolist() == [False, True, True]
    with pytest.raises(TypeError, match="bytes"):
        ta.tensor(b"ab")
    assert ta.FloatTensor(array.array("q", [1, 2])).dtype is ta.float32


def test_array_interface_objects_are_read_like_numpy_arrays():
    buf = array.array("d", range(6))
    t = ta.tensor(Interface(buf, (2, 3), "<f8"))
    assert t.dtype is ta.float64 and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    rev = Interface(buf, (2, 2), "<f8", strides=(-24, -16), offset=5 * 8)       # [::-1, ::-2]
    assert ta.tensor(rev).tolist() == [[5, 3], [2, 0]]
    assert ta.tensor(Interface(buf, (3,), "<f8", offset=8, as_buffer=True)).tolist() == [1, 2, 3]
    big = array.array("d", [1.0, 2.0])
    big.byteswap()
    assert ta.tensor(Interface(big, (2,), ">f8" if sys.byteorder == "little" else "<f8")
                     ).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="numpy.float16"):
        ta.tensor(Interface(array.array("H", [0]), (1,), "<f2"))
    assert ta.tensor(Interface(buf, (0, 3), "<f8")).shape == (0, 3)


def test_asarray_reads_a_buffer_as_raw_bytes_of_the_dtype():
    b = array.array("f", [1.0, 2.0])
    assert ta.asarray(b).tolist() == [1.0, 2.0]                   # default float32
    assert ta.asarray(array.array("d", [1.0, 2.0]), dtype=ta.float64).tolist() == [1.0, 2.0]
    assert ta.asarray(array.array("d", [2.0])).tolist() == [0.0, 2.0]   # 8 bytes, 2 float32s
    assert ta.asarray(nparray([1.0])).dtype is ta.float64
    assert ta.asarray([1, 2]).dtype is ta.int64 and ta.asarray(1.5).dtype is ta.float32
    assert ta.asarray([1.0], requires_grad=True).requires_grad


def test_asarray_shares_a_tensor_unless_asked_to_copy_or_convert():
    t = ta.tensor([1.0, 2.0])
    assert ta.asarray(t) is t
    c = ta.asarray(t, copy=True)
    assert c is not t and c.tolist() == t.tolist()
    with pytest.raises(ValueError, match="can't alias"):
        ta.asarray(t, dtype=ta.float64, copy=False)
    with pytest.raises(ValueError, match="can't alias"):     # PyTorch would share; tinyattn copies
        ta.asarray(nparray([1.0]), copy=False)


def test_frombuffer_reads_count_elements_from_offset():
    b = bytearray(range(10))
    assert ta.frombuffer(b, dtype=ta.uint8, count=3, offset=2).tolist() == [2, 3, 4]
    assert ta.frombuffer(b, dtype=ta.int32, count=1, offset=1).tolist() == [
        int.from_bytes(bytes([1, 2, 3, 4]), sys.byteorder)]
    assert ta.frombuffer(bytearray([0, 7]), dtype=ta.bool).tolist() == [False, True]
    for kwargs, msg in [(dict(dtype=ta.int32), "multiple of element size"),
                        (dict(dtype=ta.uint8, offset=11), "offset"),
                        (dict(dtype=ta.uint8, count=20), "must not be greater")]:
        with pytest.raises(ValueError, match=msg):
            ta.frombuffer(b, **kwargs)
    with pytest.raises(ValueError, match="must not be 0"):
        ta.frombuffer(bytearray(), dtype=ta.uint8)


# ------------------------------------------------------------------------------ NumPy arrays out


@pytest.mark.parametrize("dt", SIX, ids=str)
def test_numpy_gives_the_dtype_shape_and_values(dt):
    a = ta.tensor(values_for(dt), dtype=dt).numpy()
    assert a.dtype.name == dt.name and a.shape == (2, 3) and a.tolist() == values_for(dt)


def test_numpy_shares_memory_both_ways():
    t = ta.arange(6.0).reshape(2, 3)
    a = t.numpy()
    a[0, 0] = 10.0
    t[1, 2] = 50.0
    assert t.tolist() == [[10, 1, 2], [3, 4, 50]] and a.tolist() == t.tolist()


def test_numpy_of_a_view_has_its_strides():
    t = ta.arange(6.0).reshape(2, 3)
    assert t.t().numpy().strides == (4, 12) and t.t().numpy().tolist() == [[0, 3], [1, 4], [2, 5]]
    assert t[:, 1:].numpy().tolist() == [[1, 2], [4, 5]]
    assert ta.ones(3).expand(2, 3).numpy().strides == (0, 4)
    assert ta.zeros(0, 4).numpy().shape == (0, 4) and ta.tensor(3).numpy().shape == ()


def test_numpy_of_a_tensor_that_requires_grad_raises_as_in_pytorch():
    w = ta.ones(2, requires_grad=True)
    msg = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
           "instead.")
    for call in (w.numpy, w.__array__):
        with pytest.raises(RuntimeError) as err:
            call()
        assert str(err.value) == msg
    assert w.detach().numpy().tolist() == [1, 1] and w.numpy(force=True).tolist() == [1, 1]


def test_np_asarray_and_array_of_a_tensor():
    np = ta.zeros(1).numpy().__array_namespace__()     # NumPy's own functions, not imported
    t = ta.arange(4.0)
    a = np.asarray(t)
    a[0] = 7.0
    assert t[0].item() == 7.0                          # shared, as torch's np.asarray(t)
    c = np.array(t)
    c[1] = 8.0
    assert t[1].item() == 1.0                          # np.array copies
    d = np.asarray(t, dtype=np.float64)
    assert d.dtype.name == "float64" and d.tolist() == [7, 1, 2, 3]
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(ta.tensor([True, False])).dtype.name == "bool"


def test_a_numpy_array_keeps_its_buffer_from_the_pool():
    # the fast backend hands a dead tensor's buffer to the next output of its size
    # (tinyattn/fast/recycle.py); an array over the buffer keeps it alive
    n = 1 << 16
    t = ta.ones(n) * 2.0
    a = t.numpy()
    del t
    for _ in range(4):
        x = ta.ones(n) * 3.0
    assert a[0] == 2.0 and a[n - 1] == 2.0 and x[0].item() == 3.0


# ------------------------------------------------------------------------------ PyTorch


@needs_torch
@pytest.mark.parametrize("make", ["tensor", "as_tensor", "from_numpy", "asarray", "FloatTensor",
                                  "LongTensor", "IntTensor", "ByteTensor", "BoolTensor",
                                  "DoubleTensor", "Tensor"])
@pytest.mark.parametrize("dt", ["float64", "float32", "int64", "int32", "uint8", "bool"])
def test_torch_constructors_give_the_same_dtype_and_values(make, dt):
    torch = pytest.importorskip("torch")
    src = torch.tensor([[0.0, 1.5, -2.7], [3.0, 300.0, 5.0]]).to(getattr(torch, dt)).numpy()
    for a in (src, src.T, src[:, ::2]):
        want, got = getattr(torch, make)(a), getattr(ta, make)(a)
        assert got.dtype.name == str(want.dtype).split(".")[1]
        assert got.tolist() == want.tolist()


@needs_torch
@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
def test_torch_numpy_scalars_and_lists_give_the_same_dtype():
    torch = pytest.importorskip("torch")
    f64 = torch.tensor([1.0], dtype=torch.float64).numpy()
    i32 = torch.tensor([2], dtype=torch.int32).numpy()
    u8 = torch.tensor([3], dtype=torch.uint8).numpy()
    b = torch.tensor([True]).numpy()
    for data in ([f64[0], 2], [i32[0], i32[0]], [i32[0], 2], [u8[0], True], [b[0], b[0]],
                 f64[0], i32[0], [f64, f64], [i32, [3]], [[f64[0], 2.5]], [u8[0], 2.5]):
        want, got = torch.tensor(data), ta.tensor(data)
        assert got.dtype.name == str(want.dtype).split(".")[1], data
        assert got.tolist() == want.tolist()


@needs_torch
def test_torch_buffers_give_the_same_dtype():
    torch = pytest.importorskip("torch")
    for data in (array.array("d", [1.5]), array.array("f", [1.5]), array.array("B", [1]),
                 array.array("q", [5]), bytearray(b"ab"), memoryview(array.array("i", [4, 5]))):
        want, got = torch.tensor(data), ta.tensor(data)
        assert got.dtype.name == str(want.dtype).split(".")[1] and got.tolist() == want.tolist()
    for data, dt in [(array.array("d", [1.0, 2.0]), None), (bytearray(range(8)), torch.int32)]:
        want = torch.asarray(data, dtype=dt)
        got = ta.asarray(data, dtype=None if dt is None else str(dt).split(".")[1])
        assert got.tolist() == want.tolist()


@needs_torch
def test_torch_raises_the_same_errors():
    torch = pytest.importorskip("torch")
    a = torch.arange(3.0, dtype=torch.float64).numpy()
    other = ">f8" if sys.byteorder == "little" else "<f8"
    for bad, exc in [(a[::-1], ValueError), (a.astype(other), ValueError),
                     (a.astype(object), TypeError), (a.astype(str), TypeError)]:
        for make in ("tensor", "from_numpy", "as_tensor"):
            with pytest.raises(exc):
                getattr(torch, make)(bad)
            with pytest.raises(exc):
                getattr(ta, make)(bad)
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(1, requires_grad=True).numpy()


@needs_torch
def test_torch_numpy_gives_the_same_arrays():
    torch = pytest.importorskip("torch")
    for dt in ("float64", "float32", "int64", "int32", "uint8", "bool"):
        want = torch.arange(6).reshape(2, 3).to(getattr(torch, dt))
        got = ta.arange(6).reshape(2, 3).to(getattr(ta, dt))
        for w, g in [(want, got), (want.t(), got.t()), (want[:, 1:], got[:, 1:])]:
            wa, ga = w.numpy(), g.numpy()
            assert (ga.dtype, ga.shape, ga.strides) == (wa.dtype, wa.shape, wa.strides)
            assert ga.tolist() == wa.tolist()


# ------------------------------------------------------------------------------ NumPy indices


def test_numpy_arrays_and_integers_index_a_tensor():
    t = ta.arange(6.0).reshape(2, 3)
    idx = nparray([0, 2], ta.int64)
    assert t[idx[1] - 1].tolist() == [3, 4, 5] and t[1, idx[1]].item() == 5
    assert t[:, idx].tolist() == [[0, 2], [3, 5]]
    assert t[nparray([True, False], ta.bool)].tolist() == [[0, 1, 2]]
    assert t[nparray([1, 0], ta.int32)].tolist() == [[3, 4, 5], [0, 1, 2]]
    t[idx[1] - 1] = 9.0
    t[:, idx] = 7.0
    assert t.tolist() == [[7, 1, 7], [7, 9, 7]]
    with pytest.raises(IndexError):          # PyTorch refuses a NumPy bool scalar and floats
        t[nparray([True], ta.bool)[0]]
    with pytest.raises(IndexError):
        t[nparray([1.0])[0]]
    with pytest.raises(IndexError):
        t[idx]                                 # 2 is out of range for 2 rows


@needs_torch
def test_torch_numpy_indices_select_the_same_elements():
    torch = pytest.importorskip("torch")
    idx = torch.tensor([1, 0, 1]).numpy()
    mask = torch.tensor([[True, False, True], [False, True, True]]).numpy()
    want, got = torch.arange(6.0).reshape(2, 3), ta.arange(6.0).reshape(2, 3)
    for index in (idx, (slice(None), idx[:2]), mask, idx[0], (idx[0], idx[:2])):
        assert got[index].tolist() == want[index].tolist()


def test_numpy_scalars_and_arrays_in_arithmetic():
    t = ta.arange(3.0)
    f64 = nparray([1.0, 2.0, 3.0])
    two32, two64 = nparray([2.0], ta.float32)[0], nparray([2], ta.int64)[0]
    assert (t * two32).dtype is ta.float32 and (t * two32).tolist() == [0, 2, 4]   # a number
    assert (ta.arange(3) * two32).dtype is ta.float32
    assert (t ** two64).tolist() == [0, 1, 4] and (two32 - t).tolist() == [2, 1, 0]
    s = t + f64                                        # an array is a tensor of its dtype
    assert s.dtype is ta.float64 and s.tolist() == [1, 3, 5]
    r = f64 + t                                        # NumPy asks the tensor first
    assert type(r) is type(t) and r.tolist() == [1, 3, 5]


@needs_torch
@pytest.mark.filterwarnings("ignore:__array_wrap__ must accept")   # torch's, not tinyattn's
def test_torch_arithmetic_with_numpy_operands_gives_the_same_dtype():
    torch = pytest.importorskip("torch")
    f64 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64).numpy()
    s32, s64 = torch.tensor([2.0]).numpy()[0], torch.tensor([2]).numpy()[0]
    for lib_ops in (lambda lib: lib.arange(3.0) + f64, lambda lib: lib.arange(3.0) * s32,
                    lambda lib: lib.arange(3) * s32, lambda lib: lib.arange(3) * s64,
                    lambda lib: s32 - lib.arange(3.0), lambda lib: lib.arange(3.0) / f64):
        want, got = lib_ops(torch), lib_ops(ta)
        assert got.dtype.name == str(want.dtype).split(".")[1] and got.tolist() == want.tolist()
