"""The vectorisable exp against math.exp and its plain-Python twin, and the row-block (threaded)
softmax kernels against the general (O, R, I) kernel and plain-Python formulas.

Runs compiled and with NUMBA_DISABLE_JIT=1 (where the bit casts are the struct-based twins)."""
import math
import random
import re
import struct
from array import array

import numba
import pytest

import tinyattn as ta
from helpers import assert_close
from tinyattn.fast import exp as KX
from tinyattn.fast import softmax as KS
from tinyattn.fast import threads
from tinyattn.fast.jit import kernel

JIT = not numba.config.DISABLE_JIT


def _buf(tc, vals):
    return array(tc, vals)


# ---------------------------------------------------------------------------- exp


def _ulps(a, b):
    return abs(KX.float_bits(a) - KX.float_bits(b))


def test_bit_twins_round_trip():
    for v in (0.0, -0.0, 1.0, -2.5, 1e-310, math.inf, -math.inf, 1.7976931348623157e308):
        bits = struct.unpack("<q", struct.pack("<d", v))[0]
        assert KX.float_bits(v) == bits and KX.bits_float(bits) == v or v != v


@kernel
def _exp_all(x, out, n):
    for i in range(n):
        out[i] = KX.exp(x[i])


def test_exp_agrees_with_math_exp_everywhere():
    rng = random.Random(0)
    vals = ([rng.uniform(-750, 712) for _ in range(3000)] + [rng.uniform(-3, 3) for _ in range(3000)]
            + [0.0, -0.0, 1e-300, -1e-300, 0.5 * math.log(2), -745.13, -745.14, 709.78, 709.79,
               -708.5, -740.0, math.inf, -math.inf, math.nan])
    out = _buf("d", [0.0] * len(vals))
    _exp_all(_buf("d", vals), out, len(vals))  # compiled (or interpreted with NUMBA_DISABLE_JIT)
    twin = KX.exp.py_func if JIT else KX.exp  # the plain-Python twin, bit casts through struct
    for v, got in zip(vals, out):
        assert KX.float_bits(got) == KX.float_bits(twin(v)) or (v != v and got != got)
        if v != v:
            continue
        try:
            want = math.exp(v)
        except OverflowError:
            want = math.inf
        if want == 0.0 or math.isinf(want):
            assert got == want, v
        else:
            assert _ulps(got, want) <= 2, (v, got, want)


# ---------------------------------------------------------------------------- softmax


def _softmax_rows_reference(rows, log):
    out = []
    for row in rows:
        m = max(row)
        if m == -math.inf:
            out.append([-math.inf if log else 0.0] * len(row))
            continue
        z = sum(math.exp(v - m) for v in row)
        out.append([v - m - math.log(z) if log else math.exp(v - m) / z for v in row])
    return out


@pytest.mark.parametrize("log", [False, True])
def test_softmax_row_blocks_threaded_match_general_kernel(log):
    # Big enough for the two-thread row split; the general (O, R, I) kernel with I > 1 computes
    # the same numbers from the transposed buffer.
    N, R = 300, 128
    assert N * R >= KS.PARALLEL_MIN
    x = ta.randn(N, R, dtype=ta.float64, generator=ta.Generator(5), requires_grad=True) * 4
    x.retain_grad()
    g = ta.randn(N, R, dtype=ta.float64, generator=ta.Generator(6))
    y = x.log_softmax(-1) if log else x.softmax(-1)
    y.backward(g)
    xt = x.detach().T.contiguous()  # (R, N): softmax over dim 0 is the strided kernel
    y_t = ta.empty(R, N, dtype=ta.float64)
    KS.softmax_forward(xt._data, y_t._data, 1, R, N, log)
    assert_close(y, y_t.T, rtol=1e-12, atol=1e-14)
    dx_t = ta.empty(R, N, dtype=ta.float64)
    KS.softmax_backward(g.T.contiguous()._data, y_t._data, dx_t._data, 1, R, N, log)
    assert_close(x.grad, dx_t.T, rtol=1e-9, atol=1e-12)
    assert_close(y[:3], _softmax_rows_reference(x[:3].tolist(), log), rtol=1e-12, atol=1e-14)
    old = threads.num_threads()
    threads.set_num_threads(1)
    try:
        y1 = x.detach().log_softmax(-1) if log else x.detach().softmax(-1)
    finally:
        threads.set_num_threads(old)
    assert y1.tolist() == y.tolist()


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_masked_and_nan(log):
    inf, nan = math.inf, math.nan
    rows = [[-inf] * 4, [-inf, 1.0, -inf, 2.0], [nan, 1.0, 2.0, 3.0], [nan, -inf, -inf, -inf],
            [1e4, -1e4, 0.0, 1e4]]
    x = ta.tensor(rows, dtype=ta.float32)
    y = (x.log_softmax(-1) if log else x.softmax(-1)).tolist()
    want = _softmax_rows_reference([rows[0], rows[1], rows[4]], log)
    assert_close(y[0], want[0]) and assert_close(y[1], want[1], rtol=1e-6)
    assert all(v != v for v in y[2] + y[3])  # a NaN makes the row NaN, as in PyTorch
    assert_close(y[4], want[2], rtol=1e-6)


@pytest.mark.parametrize("typecode", "fd")
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("R", [3, 64, KS.SHORT_ROW, KS.SHORT_ROW + 1])
def test_softmax_rows_four_at_a_time(typecode, log, R):
    """Short rows go four at a time: row blocks n0..n1 that are not multiples of four, and a fully
    masked row inside a group of four (which sends the group to the one-row loop) give what the
    formulas give, row by row; the rows outside n0..n1 are untouched."""
    inf = math.inf
    rng = random.Random(R)
    N = 11
    rows = [[rng.uniform(-5, 5) for _ in range(R)] for _ in range(N)]
    rows[6] = [-inf] * R                      # rows 5-8 are a group of four from n0 = 1
    rows[2][R // 2] = -inf                    # a masked key: exp 0, log -inf
    x = _buf(typecode, [v for row in rows for v in row])
    y = _buf(typecode, [7.0] * (N * R))
    n0, n1 = 1, 10                            # nine rows: groups 1-4 and 5-8, then row 9
    KS._rows_forward(x, y, R, n0, n1, log, typecode == "f")
    want = _softmax_rows_reference([list(x[n * R:(n + 1) * R]) for n in range(N)], log)
    for n in range(N):
        got = list(y[n * R:(n + 1) * R])
        if not n0 <= n < n1:
            assert got == [7.0] * R, f"row {n} outside the block was written"
        else:
            assert_close(got, want[n], rtol=2e-6 if typecode == "f" else 1e-12)


@kernel
def _exp_float32_all(x, out, n):
    for i in range(n):
        out[i] = KX.exp_float32(x[i])


def test_exp_float32_is_float32_accurate_and_matches_its_twin():
    rng = random.Random(1)
    vals = ([rng.uniform(-90, 90) for _ in range(3000)] + [rng.uniform(-2, 2) for _ in range(2000)]
            + [0.0, -0.0, -86.5, -86.7, 88.7, 88.8, math.inf, -math.inf, math.nan])
    x = _buf("f", vals)
    out = _buf("f", [0.0] * len(vals))
    _exp_float32_all(x, out, len(vals))  # float32 arithmetic when compiled
    twin = KX.exp_float32.py_func if JIT else KX.exp_float32  # float64 arithmetic, struct bits
    for v, got in zip(x, out):
        if v != v:
            assert got != got
            continue
        if v < -86.6:  # below float32's normal range: flushed to 0
            assert got == 0.0 == twin(v)
            continue
        want = math.exp(v) if v <= 88.72 else math.inf
        if want > 3.4028234e38:
            assert got == math.inf
            continue
        assert abs(got - want) <= 3e-7 * want, v
        assert abs(twin(v) - want) <= 3e-7 * want, v


@kernel
def _tanh_sigmoid_float32_all(x, t, s, n):
    for i in range(n):
        t[i] = KX.tanh_float32(x[i])
        s[i] = KX.sigmoid_float32(x[i])


def test_tanh_and_sigmoid_float32_are_float32_accurate():
    """The GRU's and Bahdanau attention's float32 tanh and sigmoid (kernels/rnn.py), against
    math.tanh and the float64 logistic: within 2 float32 ulp, relative, also near 0 where
    1 - 2 / (e^2x + 1) alone would lose the digits (the polynomial's range, |x| < 0.625)."""
    rng = random.Random(2)
    vals = ([rng.uniform(-1, 1) * 10 ** rng.uniform(-8, 1.7) for _ in range(20000)]
            + [0.0, 0.6249, 0.625, 0.6251, -0.625, 9.0, 44.0, 45.0, 88.0, 89.0, -89.0, 1e-30,
               math.inf, -math.inf, math.nan])
    x = _buf("f", vals)
    t = _buf("f", [0.0] * len(vals))
    s = _buf("f", [0.0] * len(vals))
    _tanh_sigmoid_float32_all(x, t, s, len(vals))
    for v, got_t, got_s in zip(x, t, s):
        if v != v:
            assert got_t != got_t and got_s != got_s
            continue
        want_t = math.tanh(v)
        want_s = 1.0 / (1.0 + math.exp(-v)) if v > -700 else 0.0
        # 2 ulp of float32 at the size of the result (2^-23 relative), and 1e-38 absolute where
        # the sigmoid underflows float32's normal range
        assert abs(got_t - want_t) <= 2 * 2.0 ** -23 * abs(want_t), (v, got_t, want_t)
        assert abs(got_s - want_s) <= 2 * 2.0 ** -23 * abs(want_s) + 1e-38, (v, got_s, want_s)


def test_order_key_orders_like_the_floats():
    twin_key = KX.order_key.py_func if JIT else KX.order_key
    twin_back = KX.from_order_key.py_func if JIT else KX.from_order_key
    vals = sorted([-math.inf, -1e300, -2.5, -1e-310, -0.0, 0.0, 1e-310, 3.0, 1e300, math.inf])
    keys = [twin_key(v) for v in vals]
    assert keys == sorted(keys)
    assert [twin_back(k) for k in keys] == vals
    x = _buf("f", [3.0, -1.0, 7.5, -math.inf, 2.0])
    assert KS._row_max(x, len(x), False) == 7.5 == KS._row_max(x, len(x), True)


def test_order_key32_orders_like_the_float32s():
    # the int32 keys of the float32 row maxima (softmax, kernels/flash.py): order and round trip,
    # in Python and compiled (LLVM int32 ops there, fast/exp.py's order_key32)
    vals = sorted([-math.inf, -3.0e38, -2.5, -1e-40, -0.0, 0.0, 1e-40, 3.0, 3.0e38, math.inf])
    vals = [KX.bits_float32(KX.float32_bits(v)) for v in vals]     # exactly float32
    keys = [KX.order_key32(v) for v in vals]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(-2 ** 31 <= k < 2 ** 31 for k in keys)
    assert [KX.from_order_key32(k) for k in keys] == vals
    assert KX.order_key32(math.nan) > KX.order_key32(math.inf)  # NaN (sign bit clear) wins a max
    if JIT:
        x = _buf("f", vals)
        got_keys, back = _buf("q", [0] * len(vals)), _buf("f", [0.0] * len(vals))
        _keys_and_back(x, got_keys, back, len(vals))
        assert list(got_keys) == keys and list(back) == vals


@numba.njit
def _keys_and_back(x, keys, back, n):
    for i in range(n):
        k = KX.order_key32(x[i])
        keys[i] = k
        back[i] = KX.from_order_key32(k)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_float32_rows_threaded(log):
    """float32 rows (exp_float32), split between two threads, against the float64 formula."""
    x = ta.randn(300, 128, generator=ta.Generator(8)) * 6
    y = x.log_softmax(-1) if log else x.softmax(-1)
    rows = x.tolist()
    want = _softmax_rows_reference(rows[:5] + rows[-5:], log)
    got = y.tolist()
    assert_close(got[:5] + got[-5:], want, rtol=2e-6, atol=1e-6 if log else 1e-9)


def test_float32_gelu_without_math_erf_is_float32_accurate():
    # The fast backend computes float32 GELU with a vectorisable erfc (fast/elementwise.py,
    # normal_cdf); against math.erf in float64, over the whole useful range and the extremes.
    import tinyattn.nn.functional as F
    xs = ta.linspace(-12.0, 12.0, 24001)
    xd = xs.tolist()
    exact = [0.5 * a * math.erfc(-a / math.sqrt(2.0)) for a in xd]
    got = F.gelu(xs).tolist()
    assert max(abs(u - v) for u, v in zip(got, exact)) < 5e-7
    assert max(abs(u - v) / abs(v) for u, v, a in zip(got, exact, xd) if abs(a) > 1e-3
               and a > -8) < 2e-5
    g = xs.clone().requires_grad_()
    F.gelu(g).sum().backward()
    dexact = [0.5 * math.erfc(-a / math.sqrt(2.0)) + a * math.exp(-a * a / 2)
              / math.sqrt(2 * math.pi) for a in xd]
    assert max(abs(u - v) for u, v in zip(g.grad.tolist(), dexact)) < 5e-7
    edge = F.gelu(ta.tensor([float("inf"), float("nan"), -30.0, 0.0])).tolist()
    assert edge[0] == float("inf") and edge[1] != edge[1] and edge[2] == 0.0 and edge[3] == 0.0


@kernel
def _exp_float32_nonpositive_all(x, out, n):
    for i in range(n):
        out[i] = KX.exp_float32_nonpositive(x[i])


def test_exp_float32_nonpositive_matches_exp_float32_below_88():
    # softmax's and attention's exp (fast/softmax.py, fast/flash.py): x - max <= 0
    rng = random.Random(2)
    vals = ([rng.uniform(-100, 0) for _ in range(3000)] + [rng.uniform(-1, 1e-3) for _ in range(500)]
            + [0.0, -0.0, -86.5, -86.7, -math.inf, math.nan, 5.0, 80.0])
    x = _buf("f", vals)
    out = _buf("f", [0.0] * len(vals))
    _exp_float32_nonpositive_all(x, out, len(vals))
    twin = KX.exp_float32_nonpositive.py_func if JIT else KX.exp_float32_nonpositive
    for v, got in zip(x, out):
        if v != v:
            assert got != got and twin(v) != twin(v)
            continue
        if v < -86.6:
            assert got == 0.0 == twin(v)
            continue
        want = math.exp(v)
        assert abs(got - want) <= 3e-7 * want, v
        assert abs(twin(v) - want) <= 3e-7 * want, v


@pytest.mark.jit_only
def test_float32_row_loops_use_no_int64_vector_ops():
    """The float32 exp and row maximum stay in 32-bit lanes: AVX2 has neither a vector int64 ->
    float conversion nor a 64-bit integer maximum, and either made these loops scalar (or 4 lanes
    of compare-and-blend) on AVX2-only CPUs, while AVX-512 machines hid it. Checked in the LLVM IR,
    which names the types whatever CPU the suite runs on."""

    @numba.njit(fastmath={"reassoc", "contract"}, error_model="numpy")
    def exp_and_max(x, out, n):
        k = KX.order_key32(x[0])
        for i in range(n):
            k = max(k, KX.order_key32(x[i]))
        for i in range(n):
            out[i] = KX.exp_float32_nonpositive(x[i])
        return KX.from_order_key32(k)

    x = _buf("f", [-3.0, -0.5, -1e-3, 0.0, -20.0, -90.0, -2.0, -7.0, -1.0])
    out = _buf("f", [0.0] * len(x))
    assert exp_and_max(x, out, len(x)) == 0.0
    assert all(abs(o - math.exp(v)) <= 1e-6 * math.exp(v) for o, v in zip(out, x) if v > -86)
    ir = exp_and_max.inspect_llvm(exp_and_max.signatures[0])
    assert "sitofp" not in ir                              # no integer -> float conversion at all
    assert not re.search(r"(icmp s[gl][te]|smax|smin)[^\n]*i64>", ir)    # no int64 vector maximum
    assert re.search(r"(icmp sgt|smax)[^\n]*<\d+ x i32>", ir)             # a vectorised int32 one
