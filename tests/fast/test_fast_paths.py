"""Every fast path against the general path (or the plain-Python twin) it stands in for.

Fast paths exist for speed only, so each is checked to compute what the slower, simpler code
computes on the same inputs: kernel entry points by typecode vs numba's normal dispatch, the fast
backend's packed and strided elementwise loops (one per op) vs the formulas they are compiled
from and the reference's loops, and matmul's direct layouts vs a plain triple loop (the
vectorisable exp and the row-block softmax: test_exp_softmax.py).
Runs compiled and with NUMBA_DISABLE_JIT=1 (where the entry points are the Python functions)."""
import math
import random
from array import array

import numba
import pytest

import tinyattn as ta
from helpers import assert_close
from tinyattn.fast import copy as fast_copy
from tinyattn.fast import elementwise as KE
from tinyattn.fast.jit import by_typecode, kernel
from tinyattn.kernels import copy as reference_copy
from tinyattn.kernels import elementwise as reference

JIT = not numba.config.DISABLE_JIT


def _buf(tc, vals):
    return array(tc, vals)


def _same(xs, ys):
    """Equal element by element, NaN equal to NaN."""
    return len(xs) == len(ys) and all(x == y or (x != x and y != y) for x, y in zip(xs, ys))


# ---------------------------------------------------------------------------- by_typecode


@kernel
def _axpy_sum(a, x, y, n):
    s = 0.0
    for i in range(n):
        y[i] = a * x[i] + y[i]
        s += y[i]
    return s


def test_by_typecode_entry_point_matches_dispatch():
    table = by_typecode(_axpy_sum, "f T T i")
    for tc in "fd":
        x, y1, y2 = _buf(tc, [1, 2, 3]), _buf(tc, [1, 1, 1]), _buf(tc, [1, 1, 1])
        assert table[tc](2.0, x, y1, 3) == _axpy_sum(2.0, x, y2, 3) == 15.0
        assert list(y1) == list(y2) == [3, 5, 7]
    if JIT:  # the entry point is numba's compiled code for exactly this signature
        assert table["f"] is not table["d"] and table["f"] is not _axpy_sum
    else:  # interpreted, every entry is the Python function itself
        assert table["f"] is _axpy_sum


def test_by_typecode_scalar_of_the_table_kind():
    table = KE._BINARY_SCALAR_PACKED
    out_q, out_d = _buf("q", [0, 0]), _buf("d", [0, 0])
    table["q", KE.MUL](KE.MUL, _buf("q", [3, -4]), 3, False, out_q, 2)
    table["d", KE.SUB](KE.SUB, _buf("d", [3, -4]), 0.5, True, out_d, 2)
    assert list(out_q) == [9, -12] and list(out_d) == [-2.5, 4.5]


# ---------------------------------------------------------------------------- packed kernels


def _near(u, w, tol):
    return u == w or (u != u and w != w) or abs(u - w) <= tol * (1 + abs(w))


@pytest.mark.parametrize("tc", ["f", "d", "q"])
def test_packed_binary_and_scalar_kernels_match_the_formula(tc):
    """binary_packed, binary_scalar_packed, and the strided kernels both with contiguous rows
    (slices) and with a stride of 2 (element by element) all give binary_value's result
    (BINARY_FORMULAS, read in Python), as does the reference's loop."""
    rng = random.Random(tc)
    n = 37
    if tc == "q":
        a = [rng.randint(-9, 9) for _ in range(n)]
        b = [rng.choice([-3, -2, -1, 1, 2, 3]) for _ in range(n)]
        ops, s = [KE.ADD, KE.SUB, KE.MUL, KE.MAXIMUM, KE.MINIMUM, KE.REMAINDER,
                  KE.FLOOR_DIVIDE], 3
    else:
        a = [rng.uniform(-3, 3) for _ in range(n)]
        b = [rng.uniform(0.5, 3) for _ in range(n)]
        ops, s = [KE.ADD, KE.SUB, KE.MUL, KE.DIV, KE.POW2, KE.MAXIMUM, KE.MINIMUM], 1.5
    A, B = _buf(tc, a), _buf(tc, b)
    A2 = _buf(tc, [v for x in a for v in (x, 0)])  # a with a stride of 2
    value = KE.binary_value

    a, b = list(A), list(B)  # the values as stored (rounded to float32 for 'f')

    def want(op, xs, ys):
        return list(_buf(tc, [value(op, x, y) for x, y in zip(xs, ys)]))  # rounded like tc

    def close(got, expect):  # float32 arithmetic (pow) may differ from float64's in the last bit
        if tc != "f":
            return _same(got, expect)
        return all(abs(u - w) <= 1e-6 * (1 + abs(w)) or (u != u and w != w)
                   for u, w in zip(got, expect))

    for op in ops:
        fast, rows, strided, plain = (_buf(tc, [0] * n) for _ in range(4))
        KE.binary_packed(op, A, B, fast, n)
        KE.binary(op, A, 0, 0, 0, 0, 1, B, 0, 0, 0, 0, 1, rows, 1, 1, 1, n)
        KE.binary(op, A2, 0, 0, 0, 0, 2, B, 0, 0, 0, 0, 1, strided, 1, 1, 1, n)
        reference.binary(op, A2, 0, 0, 0, 0, 2, B, 0, 0, 0, 0, 1, plain, 1, 1, 1, n)
        for got in (fast, rows, strided, plain):
            assert close(got, want(op, a, b)), op
        for rev in (False, True):
            if op == KE.POW2 and rev:
                continue
            KE.binary_scalar_packed(op, B, s, rev, fast, n)
            KE.binary_scalar(op, B, 0, 0, 0, 0, 1, s, rev, strided, 1, 1, 1, n)
            reference.binary_scalar_packed(op, B, s, rev, plain, n)
            expect = want(op, [s] * n, b) if rev else want(op, b, [s] * n)
            assert close(fast, expect) and close(strided, expect), (op, rev)
            assert close(plain, expect), (op, rev)


@pytest.mark.parametrize("tc", ["f", "d"])
def test_packed_unary_kernels_match_the_formula(tc):
    """unary_packed / unary_backward against UNARY_FORMULAS (unary_value / unary_derivative,
    read in Python), the strided kernel, and the reference's loops."""
    rng = random.Random(1)
    n = 41
    xs = [rng.uniform(-4, 4) for _ in range(n)] + [0.0, -0.0, 50.0, -50.0]
    n = len(xs)
    value, deriv = KE.unary_value, KE.unary_derivative
    g = _buf(tc, [rng.uniform(-1, 1) for _ in range(n)])
    for op in sorted(KE.UNARY_FORMULAS):
        p1, p2 = (-1.0, 2.0) if op == KE.CLAMP else (1.5, 0.0)
        vals = [abs(v) for v in xs] if op in (KE.LOG, KE.SQRT, KE.POW) else xs
        x = _buf(tc, vals)
        fast, strided, back, plain, plain_back = (_buf(tc, [0] * n) for _ in range(5))
        KE.unary_packed(op, p1, p2, x, fast, n)
        KE.unary(op, p1, p2, x, 0, 0, 0, 0, 1, strided, 1, 1, 1, n)
        reference.unary_packed(op, p1, p2, x, plain, n)
        want = _buf(tc, [value(op, v, p1, p2) for v in x])
        tol = 1e-6 if tc == "f" else 1e-14
        assert all(_near(u, w, tol) for u, w in zip(fast, want)), op
        assert all(_near(u, w, tol) for u, w in zip(plain, want)), op
        if op == KE.GELU and tc == "f":  # the fast backend's float32 erf: float32 precision
            assert all(_near(u, w, tol) for u, w in zip(fast, strided)), op
        else:
            assert _same(fast, strided), op
        KE.unary_backward(op, p1, p2, g, x, fast, back, n)
        reference.unary_backward(op, p1, p2, g, x, fast, plain_back, n)
        dwant = _buf(tc, [gi * deriv(op, v, y, p1, p2) for gi, v, y in zip(g, x, fast)])
        assert all(_near(u, w, tol) for u, w in zip(back, dwant)), op
        assert all(_near(u, w, tol) for u, w in zip(plain_back, dwant)), op


@pytest.mark.parametrize("tc", ["f", "d", "q", "B"])
def test_copy_by_rows_matches_the_reference_copy(tc):
    """The fast copy (rows as slices when contiguous) against the element-by-element copy."""
    src = _buf(tc, [i % 2 if tc == "B" else i for i in range(60)])
    # (3, 4, 5) view of a (3, 4, 5) buffer: contiguous rows; then its (5, 4, 3) transpose
    for strides, shape in (((20, 5, 1), (3, 4, 5)), ((1, 5, 20), (5, 4, 3))):
        a, b = _buf(tc, [0] * 80), _buf(tc, [0] * 80)
        args = (src, 0, 0, *strides, None, 7, 0, shape[1] * shape[2], shape[2], 1, 1, *shape)
        fast_copy.copy(*args[:6], a, *args[7:])
        reference_copy.copy(*args[:6], b, *args[7:])
        assert list(a) == list(b) and list(a[:7]) == [0] * 7


def test_elementwise_ops_same_on_packed_and_strided_tensors():
    base = ta.randn(6, 5, dtype=ta.float64, generator=ta.Generator(3))
    view = base.T[1:4]            # (3, 6), strided: the general kernels
    packed = view.contiguous()      # the same values, packed: the fast kernels
    other = ta.randn(3, 6, dtype=ta.float64, generator=ta.Generator(4))
    for fn in (lambda x: x + other, lambda x: other - x, lambda x: x * other,
               lambda x: x / (other.abs() + 1), lambda x: x * 2.5, lambda x: 1.0 - x,
               lambda x: x.exp(), lambda x: x.tanh(), lambda x: x.sigmoid(), lambda x: x.relu(),
               lambda x: x.clamp(-0.5, 0.5)):
        assert _same(fn(view).tolist_flat(), fn(packed).tolist_flat())


# ---------------------------------------------------------------------------- matmul layouts


def _matmul_reference(a, b):
    """Plain triple loop on nested lists, batch dims broadcast."""
    A, B = a.tolist(), b.tolist()

    def mm(x, y):
        return [[sum(x[i][p] * y[p][j] for p in range(len(y))) for j in range(len(y[0]))]
                for i in range(len(x))]

    def rec(x, y, dx, dy):
        if dx == 2 and dy == 2:
            return mm(x, y)
        if dx > dy:
            return [rec(xi, y, dx - 1, dy) for xi in x]
        if dy > dx:
            return [rec(x, yi, dx, dy - 1) for yi in y]
        n = max(len(x), len(y))
        return [rec(x[i if len(x) > 1 else 0], y[i if len(y) > 1 else 0], dx - 1, dy - 1)
                for i in range(n)]
    return rec(A, B, a.ndim, b.ndim)


def _r(*shape, seed):
    return ta.randn(*shape, dtype=ta.float64, generator=ta.Generator(seed))


MATMUL_CASES = {
    "2d": lambda: (_r(5, 3, seed=1), _r(3, 4, seed=2)),
    "2d, both transposed": lambda: (_r(3, 5, seed=1).T, _r(4, 3, seed=2).T),
    "packed batch @ 2d (rows folded)": lambda: (_r(2, 3, 5, 4, seed=1), _r(4, 6, seed=2)),
    "packed batch @ W^T": lambda: (_r(2, 5, 4, seed=1), _r(6, 4, seed=2).T),
    "strided batch @ 2d (general)": lambda: (_r(5, 2, 4, seed=1).transpose(0, 1), _r(4, 3, seed=2)),
    "3d same batch, K^T": lambda: (_r(3, 5, 4, seed=1), _r(3, 6, 4, seed=2).transpose(1, 2)),
    "4d heads split": lambda: (_r(2, 5, 3, 4, seed=1).transpose(1, 2),
                               _r(2, 6, 3, 4, seed=2).permute(0, 2, 3, 1)),
    "broadcast batch (general)": lambda: (_r(1, 3, 5, 4, seed=1), _r(2, 1, 4, 2, seed=2)),
    "2d @ batch (general)": lambda: (_r(5, 4, seed=1), _r(3, 4, 2, seed=2)),
}


@pytest.mark.parametrize("case", sorted(MATMUL_CASES))
def test_matmul_layouts_match_triple_loop(case):
    a, b = MATMUL_CASES[case]()
    assert_close(a @ b, _matmul_reference(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["packed batch @ W^T", "4d heads split", "2d, both transposed"])
def test_matmul_fast_layouts_gradcheck(case):
    a, b = MATMUL_CASES[case]()
    a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
    assert ta.testing.gradcheck(lambda x, y: x @ y, (a, b))


@pytest.mark.parametrize("tc", ["f", "d"])
def test_few_rows_matmul_kernel_matches_blocked(tc):
    """M < 8 goes to _bmm_few_rows; the blocked kernel (still used for M >= 8) must agree."""
    from tinyattn.fast import matmul
    matmul.ensure_compiled(tc)
    rng = random.Random(7)
    nb, K, N = 3, 19, 21
    for M in (1, 3, 7):
        for b_t in (False, True):
            a = _buf(tc, [rng.uniform(-1, 1) for _ in range(nb * M * K)])
            b = _buf(tc, [rng.uniform(-1, 1) for _ in range(nb * K * N)])
            b_sk, b_sn = (1, K) if b_t else (N, 1)
            outs = []
            for kern in (matmul._few_rows[tc], matmul._blocked[tc]):
                out = _buf(tc, [7.0] * (nb * M * N))
                extra = (0, nb) if kern is matmul._few_rows[tc] else (M, N, 0, nb, matmul._scratch(tc))
                kern(a, 0, 0, M * K, K, 1, b, 0, 0, K * N, b_sk, b_sn, out, nb, M, N, K, *extra)
                outs.append(list(out))
            tol = 1e-5 if tc == "f" else 1e-12
            assert all(abs(x - y) <= tol for x, y in zip(*outs)), (M, b_t)


# ---------------------------------------------------------------------------- gradient sums


def test_engine_sums_in_place_only_what_it_owns():
    """A tensor used many times gets its gradient summed in place from the third contribution
    on; a sum handed on by an Add to two inputs must not be changed through either of them."""
    def f(x):
        p = x * 2.0
        n = p + x.exp()                 # Add: backward gives its (summed) gradient to p and exp
        out = n * 1.0 + n * 2.0 + n * 3.0 + n.sin()        # four contributions to n
        return out + p * 5.0 + p * 7.0 + p.tanh()          # p: more after n's sum reaches it
    x = ta.randn(3, 4, dtype=ta.float64, generator=ta.Generator(9), requires_grad=True)
    assert ta.testing.gradcheck(f, (x,))


def test_leaf_grad_from_an_earlier_backward_is_not_changed():
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    sum(x * float(k) for k in range(1, 6)).sum().backward()      # five contributions: 15 each
    first = x.grad
    assert first.tolist() == [15.0, 15.0]
    sum(x * float(k) for k in range(1, 6)).sum().backward()
    assert x.grad.tolist() == [30.0, 30.0] and first.tolist() == [15.0, 15.0]


def test_binary_function_apply_records_like_function_apply():
    """BinaryFunction.apply (add, mul, matmul, ...) skips Function.apply's argument loop; it must
    record a node exactly when Function.apply would."""
    a = ta.randn(2, 2, requires_grad=True)
    b = ta.randn(2, 2)
    for op, name in ((lambda x, y: x + y, "AddBackward"), (lambda x, y: x * y, "MulBackward"),
                     (lambda x, y: x @ y, "MatMulBackward"), (lambda x, y: x / y, "DivBackward")):
        for x, y in ((a, b), (b, a)):
            out = op(x, y)
            assert out.requires_grad and out.grad_fn.name() == name
            assert out.grad_fn.needs_input_grad == (x is a, y is a)
        assert op(b, b).grad_fn is None and not op(b, b).requires_grad
        with ta.no_grad():
            assert op(a, a).grad_fn is None


# ---------------------------------------------------------------------------- fused linear


def _linear_composed(x, w, b):
    out = x @ w.transpose(0, 1)
    return out if b is None else out + b


LINEAR_CASES = {
    "3d input with bias": lambda: (_r(2, 3, 4, seed=1), _r(5, 4, seed=2), _r(5, seed=3)),
    "2d input, no bias": lambda: (_r(3, 4, seed=1), _r(5, 4, seed=2), None),
    "1d input": lambda: (_r(4, seed=1), _r(5, 4, seed=2), _r(5, seed=3)),
    "transposed input": lambda: (_r(4, 3, seed=1).T, _r(5, 4, seed=2), _r(5, seed=3)),
    "weight and bias are slices (MHA's in_proj)": lambda: (
        _r(2, 3, 4, seed=1), _r(12, 4, seed=2)[4:8], _r(12, seed=3)[4:8]),
}


@pytest.mark.parametrize("case", sorted(LINEAR_CASES))
def test_fused_linear_matches_composed_ops(case):
    x, w, b = (t if t is None else t.detach().requires_grad_() for t in LINEAR_CASES[case]())
    fused = ta.nn.functional.linear(x, w, b)
    assert fused.grad_fn.name() == "LinearBackward"
    composed = _linear_composed(x, w, b)
    assert_close(fused, composed, rtol=1e-12, atol=1e-12)
    g = ta.randn(*fused.shape, dtype=ta.float64, generator=ta.Generator(4))
    grads = []
    for out in (fused, composed):
        for t in (x, w, b):
            if t is not None:
                t.grad = None
        out.backward(g)
        grads.append([t.grad for t in (x, w, b) if t is not None])
    for got, want in zip(*grads):
        assert got.shape == want.shape and got._packed
        assert_close(got, want, rtol=1e-12, atol=1e-12)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    assert ta.testing.gradcheck(lambda *ts: ta.nn.functional.linear(*ts), inputs)


def test_fused_linear_keeps_the_composed_errors():
    x = ta.randn(2, 4)
    with pytest.raises(TypeError, match="matmul: both operands must have the same dtype"):
        ta.nn.functional.linear(x, ta.randn(3, 4, dtype=ta.float64))
    with pytest.raises(ValueError, match="linear: input has 4 features"):
        ta.nn.functional.linear(x, ta.randn(3, 5))


# ---------------------------------------------------------------------------- attention context


@pytest.mark.parametrize("transposed_keys", [False, True])
def test_attention_context_matches_the_batched_product(transposed_keys):
    """ops.attention.Context (one node, kernels/attention.py) against (B, 1, S) @ (B, S, C)."""
    from tinyattn.ops.attention import Context as _Context
    B, S, C = 3, 5, 4
    keys = _r(S, B, C, seed=1).transpose(0, 1) if transposed_keys else _r(B, S, C, seed=1)
    keys = keys.detach().requires_grad_()
    scores = _r(B, S, seed=2)
    scores[1] = -math.inf  # a fully masked row: zero weights, zero context
    w = scores.softmax(-1).detach().requires_grad_()
    fused = _Context.apply(w, keys)
    product = (w.unsqueeze(1) @ keys).squeeze(1)
    assert_close(fused, product, rtol=1e-12, atol=1e-12)
    assert fused.tolist()[1] == [0.0] * C
    g = _r(B, C, seed=3)
    grads = []
    for out in (fused, product):
        w.grad = keys.grad = None
        out.backward(g)
        grads.append((w.grad, keys.grad))
    for got, want in zip(*grads):
        assert_close(got, want, rtol=1e-12, atol=1e-12)
    w2 = _r(B, S, seed=4).softmax(-1).requires_grad_()
    assert ta.testing.gradcheck(lambda a, k: _Context.apply(a, k), (w2, keys))


# ---------------------------------------------------------------------------- fused dropout


@pytest.mark.parametrize("dtype", [ta.float32, ta.float64])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
def test_fused_dropout_is_x_times_the_bernoulli_mask(dtype, p):
    """nn.functional.dropout (one node, mask redrawn in backward) against x * bernoulli_mask with
    the generator in the same state: the same numbers, bit for bit, and the same gradient."""
    from tinyattn.creation import bernoulli_mask
    x = (ta.randn(6, 7, dtype=dtype, generator=ta.Generator(1)) * 3).T  # a strided view
    x.requires_grad_()
    ta.manual_seed(123)
    y = ta.nn.functional.dropout(x, p)
    ta.manual_seed(123)
    mask = bernoulli_mask(x.shape, p, dtype)
    assert y.tolist() == (x.detach() * mask).tolist()
    assert y.grad_fn.name() == "DropoutBackward"
    g = ta.randn(*y.shape, dtype=dtype, generator=ta.Generator(2))
    y.backward(g)
    assert x.grad.tolist() == (g * mask).tolist()


def test_kernel_layout_of_two_is_the_general_merge():
    """_shapes.kernel_layout writes out the case of two operands; the general loop (three
    operands, the third a copy of the first, so the same merges) must agree on every layout."""
    from tinyattn import _shapes
    rng = random.Random(5)
    for _ in range(3000):
        nd = rng.randint(0, 7)
        shape = tuple(rng.choice([1, 1, 2, 3, 4]) for _ in range(nd))
        sa = tuple(rng.choice([0, 1, 2, 3, 4, 6, 12, 24]) for _ in range(nd))
        sb = tuple(rng.choice([0, 1, 2, 3, 4, 6, 12, 24]) for _ in range(nd))
        if rng.random() < 0.5:      # contiguous strides, which merge
            sa = tuple(math.prod(shape[i + 1:]) for i in range(nd))
        shape4, (la, lb) = _shapes.kernel_layout(shape, sa, sb)
        shape4_3, (ga, gb, _) = _shapes.kernel_layout(shape, sa, sb, sa)
        assert (shape4, la, lb) == (shape4_3, ga, gb), (shape, sa, sb)
