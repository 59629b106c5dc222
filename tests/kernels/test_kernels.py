"""The numba kernels on raw buffers, against plain-Python formulas.

CI runs this file twice: compiled, and with NUMBA_DISABLE_JIT=1 (the kernels then run as the plain
Python they are written in). Both runs must agree with the same independent formulas."""
import importlib
import math
import os
import subprocess
import sys
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn as ta
from tinyattn import random as generator
from tinyattn.fast import softmax as KS
from tinyattn.kernels import compare as KC
from tinyattn.kernels import copy as KCopy
from tinyattn.kernels import elementwise as KE
from tinyattn.kernels import index as KI
from tinyattn.kernels import random as KRand
from tinyattn.kernels import reduce as KR

SETTINGS = settings(max_examples=25, deadline=None)
floats = st.floats(-5, 5, allow_nan=False, width=64)

# The elementwise functions of both backends take the same arguments: both run these checks.
BACKENDS = ["kernels", "fast"]


def _ew(backend):
    return importlib.import_module(f"tinyattn.{backend}.elementwise")


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


UNARY = {  # op: (f(x), f'(x), p1, p2)
    KE.NEG: (lambda x: -x, lambda x: -1.0, 0.0, 0.0),
    KE.ABS: (abs, lambda x: math.copysign(1.0, x) if x else 0.0, 0.0, 0.0),
    KE.EXP: (math.exp, math.exp, 0.0, 0.0),
    KE.TANH: (math.tanh, lambda x: 1 - math.tanh(x) ** 2, 0.0, 0.0),
    KE.SIGMOID: (lambda x: 1 / (1 + math.exp(-x)),
                 lambda x: math.exp(-x) / (1 + math.exp(-x)) ** 2, 0.0, 0.0),
    KE.RELU: (lambda x: max(x, 0.0), lambda x: float(x > 0), 0.0, 0.0),
    KE.GELU: (lambda x: x * _phi(x),
              lambda x: _phi(x) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi), 0.0, 0.0),
    KE.CLAMP: (lambda x: min(max(x, -1.0), 2.0), lambda x: float(-1 <= x <= 2), -1.0, 2.0),
    KE.SIN: (math.sin, math.cos, 0.0, 0.0),
    KE.COS: (math.cos, lambda x: -math.sin(x), 0.0, 0.0),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(UNARY))
@SETTINGS
@given(xs=st.lists(floats, min_size=1, max_size=9))
def test_unary_value_and_derivative(backend, op, xs):
    K = _ew(backend)
    f, df, p1, p2 = UNARY[op]
    x = array("d", xs)
    y = array("d", [0.0]) * len(xs)
    K.unary(op, p1, p2, x, 0, 0, 0, 0, 1, y, 1, 1, 1, len(xs))
    g = array("d", [1.5]) * len(xs)
    dx = array("d", [0.0]) * len(xs)
    K.unary_backward(op, p1, p2, g, x, y, dx, len(xs))
    for i, v in enumerate(xs):
        assert y[i] == pytest.approx(f(v), rel=1e-12, abs=1e-12)
        assert dx[i] == pytest.approx(1.5 * df(v), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unary_edge_values_match_compiled_semantics(backend):
    K = _ew(backend)
    x = array("d", [1000.0, 0.0, -1.0, -1000.0])
    out = array("d", [0.0]) * 4
    K.unary(KE.EXP, 0.0, 0.0, x, 0, 0, 0, 0, 1, out, 1, 1, 1, 4)
    assert out[0] == math.inf and out[1] == 1.0 and out[3] == 0.0
    K.unary(KE.LOG, 0.0, 0.0, x, 0, 0, 0, 0, 1, out, 1, 1, 1, 4)
    assert out[1] == -math.inf and math.isnan(out[2])
    K.unary(KE.SIGMOID, 0.0, 0.0, x, 0, 0, 0, 0, 1, out, 1, 1, 1, 4)
    assert out[0] == 1.0 and out[3] == 0.0
    K.unary(KE.POW, -0.5, 0.0, x, 0, 0, 0, 0, 1, out, 1, 1, 1, 4)
    assert out[1] == math.inf and math.isnan(out[2])


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(n0=st.integers(1, 3), n1=st.integers(1, 4), data=st.data())
def test_binary_broadcast_strides(backend, n0, n1, data):
    K = _ew(backend)
    a = array("d", data.draw(st.lists(floats, min_size=n0 * n1, max_size=n0 * n1)))
    b = array("d", data.draw(st.lists(floats.filter(lambda v: abs(v) > 0.1), min_size=n1,
                                      max_size=n1)))
    for op, f in ((KE.ADD, lambda u, v: u + v), (KE.SUB, lambda u, v: u - v),
                  (KE.MUL, lambda u, v: u * v), (KE.DIV, lambda u, v: u / v),
                  (KE.MAXIMUM, max), (KE.MINIMUM, min)):
        out = array("d", [0.0]) * (n0 * n1)
        # a is (n0, n1) contiguous; b is (n1,) broadcast over rows with stride 0
        K.binary(op, a, 0, 0, 0, n1, 1, b, 0, 0, 0, 0, 1, out, 1, 1, n0, n1)
        for i in range(n0):
            for j in range(n1):
                assert out[i * n1 + j] == pytest.approx(f(a[i * n1 + j], b[j]))
    out = array("B", [0]) * (n0 * n1)
    KC.compare(KC.LT, a, 0, 0, 0, n1, 1, b, 0, 0, 0, 0, 1, out, 1, 1, n0, n1)
    assert list(out) == [int(a[i * n1 + j] < b[j]) for i in range(n0) for j in range(n1)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_division_by_zero_is_ieee_in_both_modes(backend):
    K = _ew(backend)
    a, b = array("d", [1.0, -1.0, 0.0]), array("d", [0.0, 0.0, 0.0])
    out = array("d", [0.0]) * 3
    K.binary(KE.DIV, a, 0, 0, 0, 0, 1, b, 0, 0, 0, 0, 1, out, 1, 1, 1, 3)
    assert out[0] == math.inf and out[1] == -math.inf and math.isnan(out[2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_arithmetic_wraps_as_int64_in_both_modes(backend):
    K = _ew(backend)
    a, b = array("q", [2 ** 62, -2 ** 63, 3]), array("q", [4, 1, 41])
    out = array("q", [0]) * 3
    K.binary_packed(KE.MUL, a, b, out, 3)
    assert list(out) == [0, -2 ** 63, 123]
    K.binary_packed(KE.SUB, a, b, out, 3)
    assert list(out) == [2 ** 62 - 4, 2 ** 63 - 1, -38]
    K.binary_packed(KE.POW2, array("q", [3, -2, 7]), array("q", [41, 63, 0]), out, 3)
    assert list(out) == [(3 ** 41 + 2 ** 63) % 2 ** 64 - 2 ** 63, -2 ** 63, 1]
    K.unary_packed(KE.NEG, 0.0, 0.0, a, out, 3)
    assert list(out) == [-2 ** 62, -2 ** 63, -3]


def test_where_copy_fill_convert_axpy():
    c = array("B", [1, 0, 1])
    a, b = array("d", [1.0, 2.0, 3.0]), array("d", [-1.0])
    out = array("d", [0.0]) * 3
    KC.where(c, 0, 0, 0, 0, 1, a, 0, 0, 0, 0, 1, b, 0, 0, 0, 0, 0, out, 1, 1, 1, 3)
    assert list(out) == [1.0, -1.0, 3.0]
    # transpose a 2x3 into 3x2 with a strided copy
    src = array("f", [0, 1, 2, 3, 4, 5])
    dst = array("f", [0.0]) * 6
    KCopy.copy(src, 0, 0, 0, 1, 3, dst, 0, 0, 0, 2, 1, 1, 1, 3, 2)
    assert list(dst) == [0, 3, 1, 4, 2, 5]
    KCopy.fill(dst, 1, 0, 0, 0, 2, 9.0, 1, 1, 1, 3)
    assert list(dst) == [0, 9, 1, 9, 2, 9]
    ints = array("q", [0]) * 3
    KCopy.to_int(array("d", [1.9, -1.9, 0.2]), 0, 0, 0, 0, 1, ints, 0, 0, 0, 0, 1, 1, 1, 1, 3)
    assert list(ints) == [1, -1, 0]
    small = array("i", [0]) * 3
    KCopy.convert_int(array("q", [2 ** 31, -1, 5]), 0, 0, 0, 0, 1, small, 0, 0, 0, 0, 1,
                      1, 1, 1, 3, KCopy.TO_INT32)
    assert list(small) == [-2 ** 31, -1, 5]
    acc = array("d", [1.0, 1.0])
    KE.axpy(0.5, array("d", [2.0, 4.0]), acc, 2)
    assert list(acc) == [2.0, 3.0]


@SETTINGS
@given(O=st.integers(1, 3), R=st.integers(1, 4), I=st.integers(1, 3), data=st.data())
def test_reductions_over_middle_axis(O, R, I, data):
    vals = data.draw(st.lists(floats, min_size=O * R * I, max_size=O * R * I))
    x = array("d", vals)
    s = array("d", [0.0]) * (O * I)
    KR.sum_dim(x, s, O, R, I)
    mx, arg = array("d", [0.0]) * (O * I), array("q", [0]) * (O * I)
    KR.max_dim_forward(x, mx, arg, O, R, I, False)
    for o in range(O):
        for i in range(I):
            col = [vals[(o * R + r) * I + i] for r in range(R)]
            assert s[o * I + i] == pytest.approx(sum(col))
            assert mx[o * I + i] == max(col) and arg[o * I + i] == col.index(max(col))
    g = array("d", [1.0]) * (O * I)
    back = array("d", [0.0]) * (O * R * I)
    KR.max_dim_backward(g, arg, back, O, R, I)
    assert sum(back) == O * I
    assert KR.sum_of_squares(x, len(vals)) == pytest.approx(sum(v * v for v in vals))


def test_max_propagates_nan():
    x = array("d", [1.0, math.nan, 3.0])
    v, i = array("d", [0.0]), array("q", [0])
    KR.max_dim_forward(x, v, i, 1, 3, 1, False)
    assert math.isnan(v[0]) and i[0] == 1


def test_sum_of_squares_squares_float32_values_in_float64():
    # numba's float(x) keeps a float32 a float32: the squares must not be rounded to float32
    x = 1.0 + 2.0 ** -12  # exact in float32; its square needs 24 bits after the point
    assert KR.sum_of_squares(array("f", [x, x]), 2) == 2 * (1.0 + 2.0 ** -11 + 2.0 ** -24)


_INT_SUMS = ("import tinyattn as ta; "
             "print(ta.tensor([[True, False, True], [False, False, True]]).sum(1).tolist(), "
             "ta.tensor([[3, -4], [5, 6]]).sum(1).tolist(), "
             "ta.tensor([[3, -4], [5, 6]]).sum(0).tolist())")


def test_integer_and_bool_sums_compiled_and_interpreted():
    # sum_dim adds in float64; interpreted, Python cannot store that float in an int64 buffer
    assert ta.tensor([[True, False, True], [False, False, True]]).sum(1).tolist() == [2, 1]
    assert ta.tensor([[3, -4], [5, 6]]).sum(1).dtype is ta.int64
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_DISABLE_JIT="1",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _INT_SUMS], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2, 1] [-1, 11] [8, 2]"


@pytest.mark.parametrize("log", [False, True])
@SETTINGS
@given(O=st.integers(1, 3), R=st.integers(1, 5), I=st.integers(1, 2), data=st.data())
def test_softmax_forward_backward(log, O, R, I, data):
    vals = data.draw(st.lists(st.floats(-30, 30, width=64), min_size=O * R * I,
                              max_size=O * R * I))
    gvals = data.draw(st.lists(floats, min_size=O * R * I, max_size=O * R * I))
    x, g = array("d", vals), array("d", gvals)
    y = array("d", [0.0]) * len(vals)
    dx = array("d", [0.0]) * len(vals)
    KS.softmax_forward(x, y, O, R, I, log)
    KS.softmax_backward(g, y, dx, O, R, I, log)
    for o in range(O):
        for i in range(I):
            pos = [(o * R + r) * I + i for r in range(R)]
            m = max(vals[p] for p in pos)
            z = sum(math.exp(vals[p] - m) for p in pos)
            p_ = [math.exp(vals[p] - m) / z for p in pos]
            for k, p in enumerate(pos):
                want = math.log(p_[k]) if log else p_[k]
                assert y[p] == pytest.approx(want, rel=1e-9, abs=1e-12)
                # d/dx_k of sum_j g_j y_j
                if log:
                    dwant = gvals[p] - p_[k] * sum(gvals[q] for q in pos)
                else:
                    dwant = p_[k] * (gvals[p] - sum(gvals[q] * p_[j] for j, q in enumerate(pos)))
                assert dx[p] == pytest.approx(dwant, rel=1e-7, abs=1e-9)


def test_softmax_masked_row():
    x = array("d", [-math.inf, -math.inf, 5e4, -5e4])
    y = array("d", [0.0]) * 4
    KS.softmax_forward(x, y, 2, 2, 1, False)
    assert list(y) == [0.0, 0.0, 1.0, 0.0]


def test_index_kernels():
    idx = array("q", [0, -1, 2])
    out = array("q", [0]) * 3
    assert KI.wrap_indices(idx, 0, 1, 3, 3, out, True) == -1 and list(out) == [0, 2, 2]
    assert KI.wrap_indices(idx, 0, 1, 3, 3, out, False) == 1
    assert KI.wrap_indices(array("q", [0, 3]), 0, 1, 2, 3, out, True) == 1
    src = array("d", [0, 1, 10, 11, 20, 21])  # (3, 2)
    rows = array("q", [2, 0, 2])
    got = array("d", [0.0]) * 6
    KI.gather_rows(src, rows, got, 3, 2)
    assert list(got) == [20, 21, 0, 1, 20, 21]
    acc = array("d", [0.0]) * 6
    KI.scatter_add_rows(array("d", [1.0]) * 6, rows, acc, 3, 2)
    assert list(acc) == [1, 1, 0, 0, 2, 2]
    nz = array("q", [0]) * 4
    assert KI.nonzero_flat(array("B", [0, 1, 1, 0]), 4, nz) == 2 and list(nz[:2]) == [1, 2]
    dst = array("d", [0.0]) * 3
    KI.put(array("q", [2, 0]), array("d", [5.0, 6.0]), dst, 2)
    assert list(dst) == [6.0, 0.0, 5.0]


@SETTINGS
@given(xs=st.lists(st.integers(0, 2 ** 32 - 1), min_size=1, max_size=50))
def test_the_generators_hash_is_the_kernels_hash_bit_for_bit(xs):
    for x in xs + [0, 1, 2 ** 31, 2 ** 32 - 1]:
        assert generator._hash32(x) == KRand._hash32(x)


def test_random_kernels_follow_the_documented_hash():
    k1, k2 = 12345, 678
    out = array("f", [0.0]) * 5
    KRand.uniform(out, 5, k1, k2, 0.0, 1.0, True)
    for i in range(5):
        bits = generator._hash32((generator._hash32(i ^ k1) + k2) & 0xFFFFFFFF)
        assert out[i] == (bits >> 8) / 16777216.0
    n = array("d", [0.0]) * 2000
    KRand.normal(n, 2000, k1, k2, 0.0, 1.0)
    mean = sum(n) / 2000
    assert abs(mean) < 0.1 and abs(sum((v - mean) ** 2 for v in n) / 2000 - 1) < 0.15
    perm = array("q", [0]) * 20
    KRand.randperm(perm, 20, k1, k2)
    assert sorted(perm) == list(range(20)) and list(perm) != list(range(20))
    ints = array("q", [0]) * 500
    KRand.randint(ints, 500, k1, k2, -2, 3)
    assert set(ints) == {-2, -1, 0, 1, 2}
    mask = array("d", [0.0]) * 4000
    KRand.bernoulli_scale(mask, 4000, k1, k2, 0.25, 4 / 3)
    kept = sum(1 for v in mask if v)
    assert set(mask) == {0.0, 4 / 3} and 2800 < kept < 3200
