"""The matmul kernels of both backends: tinyattn/fast/matmul.py and tinyattn/kernels/matmul.py.

Oracles: a pure-Python triple loop written here (exact enough: Python floats are float64) and the
reference backend's ``bmm``; never numbers produced by the fast ``bmm`` itself. Runs compiled and,
with ``NUMBA_DISABLE_JIT=1``, interpreted; the interpreted run uses smaller sizes.
"""

import array
import math
import random
import threading

import numba
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyattn.fast import jobs, matmul, simd, threads
from tinyattn.fast.buffers import as_array, load
from tinyattn.kernels import matmul as reference

JIT = not numba.config.DISABLE_JIT
# Interpreted, every multiply-add is a few Python bytecodes: keep the shapes small there.
MAX_DIM = 40 if JIT else 20
MAX_BATCH = 3 if JIT else 2
EXAMPLES = 60 if JIT else 25
UNIT_ROUNDOFF = {"f": 2.0 ** -24, "d": 2.0 ** -53}


# ---------------------------------------------------------------------------------------------
# Helpers: strided operands in flat buffers, and the oracle
# ---------------------------------------------------------------------------------------------

class Operand:
    """A (nb0, nb1, rows, cols) strided view into a fresh flat buffer filled with random values."""

    def __init__(self, typecode, nb0, nb1, rows, cols, rng, transposed=False, pad=0,
                 bcast0=False, bcast1=False, bcast_rows=False, offset=0):
        if transposed:      # column-major matrices: element (r, c) at c*(rows+pad) + r
            self.s_r, self.s_c = 1, rows + pad
        else:
            self.s_r, self.s_c = cols + pad, 1
        if bcast_rows:      # every row is the same row
            self.s_r = 0
        span = 1 + (rows - 1) * self.s_r + (cols - 1) * self.s_c if rows and cols else 0
        self.s_b1 = 0 if bcast1 else span
        self.s_b0 = 0 if bcast0 else span * (1 if bcast1 else nb1)
        self.off = offset
        size = offset + 1
        if nb0 and nb1 and span:
            size = offset + (nb0 - 1) * self.s_b0 + (nb1 - 1) * self.s_b1 + span
        self.buf = array.array(typecode, [rng.uniform(-1.0, 1.0) for _ in range(size)])

    def strides(self):
        return self.s_b0, self.s_b1, self.s_r, self.s_c

    def at(self, i0, i1, r, c):
        return self.buf[self.off + i0 * self.s_b0 + i1 * self.s_b1 + r * self.s_r + c * self.s_c]


def naive_bmm(A, B, nb0, nb1, M, N, K):
    """The definition, in Python floats. Returns the products and, per element, sum |a*b|
    (the scale of the rounding error any summation order can make)."""
    out, scale = [], []
    for i0 in range(nb0):
        for i1 in range(nb1):
            for i in range(M):
                for j in range(N):
                    s = s_abs = 0.0
                    for p in range(K):
                        x = A.at(i0, i1, i, p) * B.at(i0, i1, p, j)
                        s += x
                        s_abs += abs(x)
                    out.append(s)
                    scale.append(s_abs)
    return out, scale


SENTINEL = 12345.0
EXTRA = 5   # sentinel elements after the output, to catch writes past its end


def fresh_out(typecode, n):
    """An output buffer full of garbage (NaN: a kernel that accumulates into it fails loudly)."""
    return array.array(typecode, [math.nan] * n + [SENTINEL] * EXTRA)


def run(kernel, A, B, out, nb0, nb1, M, N, K):
    a_sb0, a_sb1, a_sm, a_sk = A.strides()
    b_sb0, b_sb1, b_sk, b_sn = B.strides()
    kernel(A.buf, A.off, a_sb0, a_sb1, a_sm, a_sk, B.buf, B.off, b_sb0, b_sb1, b_sk, b_sn,
           out, nb0, nb1, M, N, K)


def assert_close(got, want, scale, typecode, K, what):
    # Any order of summing K products errs by at most about K * u * sum|a*b| (u: unit roundoff);
    # the output's own rounding adds u * |result|.
    u = UNIT_ROUNDOFF[typecode]
    assert len(got) >= len(want)
    for idx, (g, w, s) in enumerate(zip(got, want, scale)):
        tol = (K + 2) * u * s + 2 * u * abs(w) + 1e-30
        assert abs(g - w) <= tol, f"{what}: element {idx}: {g} != {w} (tol {tol:g})"


def check_bmm(typecode, nb0, nb1, M, N, K, A, B):
    want, scale = naive_bmm(A, B, nb0, nb1, M, N, K)
    size = nb0 * nb1 * M * N
    for name, kernel in (("fast bmm", matmul.bmm), ("reference bmm", reference.bmm)):
        out = fresh_out(typecode, size)
        run(kernel, A, B, out, nb0, nb1, M, N, K)
        assert list(out[size:]) == [SENTINEL] * EXTRA, f"{name} wrote past the end of out"
        assert_close(out[:size], want, scale, typecode, K, name)


# ---------------------------------------------------------------------------------------------
# Property test over shapes and layouts
# ---------------------------------------------------------------------------------------------

@st.composite
def layouts(draw):
    return dict(
        transposed=draw(st.booleans()),
        pad=draw(st.integers(0, 2)),
        bcast0=draw(st.booleans()),
        bcast1=draw(st.booleans()),
        bcast_rows=draw(st.integers(0, 9)) == 0,
        offset=draw(st.integers(0, 4)),
    )


dims = st.one_of(st.integers(0, 2), st.integers(0, MAX_DIM))


@settings(deadline=None, max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(typecode=st.sampled_from("fd"), nb0=st.integers(1, MAX_BATCH), nb1=st.integers(1, MAX_BATCH),
       M=dims, N=dims, K=dims, la=layouts(), lb=layouts(), seed=st.integers(0, 2 ** 32 - 1))
def test_bmm_matches_triple_loop(typecode, nb0, nb1, M, N, K, la, lb, seed):
    rng = random.Random(seed)
    A = Operand(typecode, nb0, nb1, M, K, rng, **la)
    B = Operand(typecode, nb0, nb1, K, N, rng, **lb)
    check_bmm(typecode, nb0, nb1, M, N, K, A, B)


# ---------------------------------------------------------------------------------------------
# Shapes chosen to reach every path of the blocked kernel
# ---------------------------------------------------------------------------------------------

KC, NC, MR, NR = matmul.KC, matmul.NC, matmul.MR, matmul.NR

PATHS = [
    # (nb0, nb1, M, N, K, B transposed)
    (1, 1, 1, 1, 1, False),                   # a single product
    (2, 3, 4, 4, 4, False),                   # tiny: all edge tiles
    (1, 1, MR, NR, 5, False),                 # exactly one full tile
    (1, 1, 2 * MR + 3, 2 * NR + 5, 7, True),  # full and edge tiles, packed (transposed) B
    (1, 1, 9, 3, KC + 9, False),              # K split into two blocks: the second accumulates
    (1, 1, 3, NC + 21, 2, False),             # N split into two panels
    (1, 1, matmul.PACK_B_MIN_ROWS + 3, 2 * NR + 1, 4, False),  # enough rows to pack a row-major B
    (2, 2, 5, 7, 0, False),                   # K == 0: zeros
    (1, 2, 0, 5, 3, False),                   # M == 0: nothing to write
    (1, 1, 1, 37, 19, True),                  # a row vector times a transposed matrix
    (1, 1, 37, 1, 19, False),                 # a matrix times a column vector
    (1, 1, MR + 1, 2 * NR + 3, 37, True),     # transposed B: 16 x 16 blocks, 5 rows left over
    (2, 1, 9, NR, KC + 20, True),             # ... in both pieces of a split K
    (1, 1, MR, 3 * NR, KC + 5, False),        # in place: a pair of strips (a wide tile where
                                              # there are), then one full strip; K split
    (1, 1, MR + 2, 3 * NR + 7, 9, False),     # in place, then a full and a narrow strip packed
    (1, 1, 2 * MR, 2 * NR, 6, True),          # packed: exactly two strips
]


@pytest.mark.parametrize("typecode", "fd")
@pytest.mark.parametrize("nb0,nb1,M,N,K,b_t", PATHS)
def test_bmm_paths(typecode, nb0, nb1, M, N, K, b_t):
    rng = random.Random(1234)
    A = Operand(typecode, nb0, nb1, M, K, rng, offset=3)
    B = Operand(typecode, nb0, nb1, K, N, rng, transposed=b_t, offset=1)
    check_bmm(typecode, nb0, nb1, M, N, K, A, B)


@pytest.mark.parametrize("typecode", "fd")
@pytest.mark.parametrize("M,N,K,b_t", [
    (4, 4, 4, False), (1, 37, 19, True), (MR, NR, 5, False), (2 * MR + 3, 2 * NR + 5, 7, True),
    (3, 5, 0, False), (0, 5, 3, False), (5, 0, 3, False), (9, 3, KC + 9, False),
    (130, 2 * NR + 7, 260, True)])   # the last: enough work for the fast bmm's threads
def test_mm_one_matrix(typecode, M, N, K, b_t):
    """mm, bmm of one matrix with six arguments fewer, on both backends: small products go
    straight to the compiled kernels, large ones through the fast bmm."""
    if not JIT and M * N * K > 10 ** 4:
        pytest.skip("large: compiled mode only")
    rng = random.Random(M * 1000 + N)
    A = Operand(typecode, 1, 1, M, K, rng, offset=2)
    B = Operand(typecode, 1, 1, K, N, rng, transposed=b_t, offset=1)
    want, scale = naive_bmm(A, B, 1, 1, M, N, K)
    for name, kernel in (("fast mm", matmul.mm), ("reference mm", reference.mm)):
        out = fresh_out(typecode, M * N)
        kernel(A.buf, A.off, A.s_r, A.s_c, B.buf, B.off, B.s_r, B.s_c, out, M, N, K)
        assert list(out[M * N:]) == [SENTINEL] * EXTRA, f"{name} wrote past the end of out"
        assert_close(out[:M * N], want, scale, typecode, K, name)


@pytest.mark.parametrize("typecode", "fd")
@pytest.mark.parametrize("threads_n", [1, 2])
@pytest.mark.parametrize("first,second", [
    ((64, 48, 40, False), (48, 40, 64, True)),          # equal work: one product per core
    ((2 * MR + 3, NR + 5, 33, True), (NR + 5, 33, 2 * MR + 3, False)),   # edge tiles
    ((64, 48, 40, False), (16, 20, 24, False)),         # one more than twice the other
    ((3, 50, 60, False), (50, 60, 3, True)),            # a vector-matrix product
    ((0, 4, 3, False), (4, 3, 5, False))])              # an empty one
def test_mm_pair(monkeypatch, typecode, threads_n, first, second):
    """mm_pair: two independent products, each whole on its own core where they are about as
    big (the worker's as a compiled job), else one after the other; both backends, against the
    triple loop in Python, with a sentinel after each output."""
    monkeypatch.setattr(matmul, "PARALLEL_MIN_WORK", 0)
    old = threads.num_threads()
    threads.set_num_threads(threads_n)
    try:
        if threads_n > 1:
            _keep_the_worker_spinning(monkeypatch)
        matmul.ensure_compiled(typecode)
        pairs = []
        run_two = threads.run_two
        monkeypatch.setattr(threads, "run_two", lambda *a: (pairs.append(1), run_two(*a)))
        rng = random.Random(sum(first) + sum(second))
        products = []
        for M, N, K, b_t in (first, second):
            A = Operand(typecode, 1, 1, M, K, rng, offset=2, transposed=not b_t)
            B = Operand(typecode, 1, 1, K, N, rng, transposed=b_t, offset=1)
            products.append((A, B, M, N, K) + naive_bmm(A, B, 1, 1, M, N, K))
        for name, kernel in (("fast mm_pair", matmul.mm_pair),
                             ("reference mm_pair", reference.mm_pair)):
            outs, args = [], []
            for A, B, M, N, K, _, _ in products:
                outs.append(fresh_out(typecode, M * N))
                args += [A.buf, A.off, A.s_r, A.s_c, B.buf, B.off, B.s_r, B.s_c, outs[-1], M, N, K]
            kernel(*args)
            for out, (A, B, M, N, K, want, scale) in zip(outs, products):
                assert list(out[M * N:]) == [SENTINEL] * EXTRA, f"{name} wrote past the end"
                assert_close(out[:M * N], want, scale, typecode, K, name)
        # one hand-off for both: the two products of equal work, not vector-matrix ones
        equal = first[0] * first[1] * first[2] == second[0] * second[1] * second[2] > 0
        assert len(pairs) == (1 if equal and min(first[0], second[0]) >= MR and threads_n == 2
                              else 0)
    finally:
        threads.set_num_threads(old)


def test_k_zero_overwrites_garbage():
    A = Operand("f", 1, 1, 3, 0, random.Random(0))
    B = Operand("f", 1, 1, 0, 4, random.Random(0))
    out = fresh_out("f", 12)
    run(matmul.bmm, A, B, out, 1, 1, 3, 4, 0)
    assert list(out) == [0.0] * 12 + [SENTINEL] * EXTRA


def _keep_the_worker_spinning(monkeypatch):
    """A worker that spins SPIN_US without a job goes to sleep, and a sleeping worker runs its
    next block as a Python call: the reference products of a test take longer than that. Spin
    (almost) for ever, from the job below on."""
    threads._get_workers()
    monkeypatch.setattr(threads, "_spins", 1 << 60)
    monkeypatch.setattr(threads, "_adaptive", False)    # and the caller leaves it its block
    threads.parallel_for(lambda start, stop: None, 2)


@pytest.mark.parametrize("nbatch", [1, 2, 9, 17])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("by", ["rows", "columns"])
@pytest.mark.parametrize("K", [6, 0])
@pytest.mark.parametrize("typecode", ["d", "f"])
def test_threaded_split(monkeypatch, nbatch, b_t, by, K, typecode):
    """Force the threaded path on small shapes: split by half matrices (odd batches; halves by
    rows or by columns, the second of which ends in a narrow strip here), by whole matrices (even
    or long batches). Compiled, the worker's block runs from its job words (fast/jobs.py): the
    worker thread never calls the kernel through Python."""
    monkeypatch.setattr(matmul, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(matmul, "SPLIT_COLUMNS_MIN", 1 if by == "columns" else 10 ** 9)
    if by == "columns":     # Python's choice only: the compiled kernel keeps its own constant
        monkeypatch.setattr(matmul, "PACK_B_MIN_ROWS", 1)
    old = threads.num_threads()
    threads.set_num_threads(2)
    try:
        _keep_the_worker_spinning(monkeypatch)
        matmul.ensure_compiled(typecode)
        kern, callers = matmul._compiled[typecode], set()

        def recorded(*args):
            callers.add(threading.get_ident())
            return kern(*args)
        monkeypatch.setitem(matmul._compiled, typecode, recorded)
        rng = random.Random(nbatch)
        M, N = 2 * MR + 5, matmul.TILE_COLS[typecode] + 3
        A = Operand(typecode, nbatch, 1, M, K, rng, transposed=True)
        B = Operand(typecode, nbatch, 1, K, N, rng, transposed=b_t, bcast0=nbatch in (2, 17))
        check_bmm(typecode, nbatch, 1, M, N, K, A, B)
        if threads._SPINNING:   # (interpreted, workers call their blocks: nothing spins)
            assert callers == {threading.get_ident()}
            w = threads._workers[0]
            assert threads._jobs[w._at] == jobs.entry(matmul._KIND[typecode])
    finally:
        threads.set_num_threads(old)


@pytest.mark.skipif(not JIT, reason="compiled jobs: compiled mode only")
def test_worker_wakes_a_caller_that_sleeps_through_its_compiled_job(monkeypatch):
    """The caller gives up spinning at once and sleeps; the worker, in its compiled loop, sees
    that after the job (jobs.serve returns -2) and wakes it. The result is whole, nothing hangs,
    and the sleeping flag is cleared."""
    monkeypatch.setattr(matmul, "PARALLEL_MIN_WORK", 0)
    old = threads.num_threads()
    threads.set_num_threads(2)
    try:
        _keep_the_worker_spinning(monkeypatch)
        spin = threads._spin_entry
        monkeypatch.setattr(threads, "_spin_entry", lambda f, i, seen, turns: spin(f, i, seen, 1))
        rng = random.Random(3)
        M, N, K = 4 * MR, 4 * NR, 300
        for _ in range(3):
            A = Operand("f", 1, 1, M, K, rng)
            B = Operand("f", 1, 1, K, N, rng)
            check_bmm("f", 1, 1, M, N, K, A, B)
        w = threads._workers[0]
        assert threads._flags[w._w + jobs.DONE] == w._seq and threads._flags[w._w + jobs.SLEEPING] == 0
    finally:
        threads.set_num_threads(old)


@pytest.mark.skipif(not JIT, reason="large: compiled mode only")
@pytest.mark.parametrize("b_t", [False, True])
def test_large_against_reference(b_t):
    """Big enough for packed panels, several K blocks and N panels, and both threads."""
    rng = random.Random(7)
    M, N, K = 130, NC + 40, KC + 70
    A = Operand("f", 1, 1, M, K, rng)
    B = Operand("f", 1, 1, K, N, rng, transposed=b_t)
    assert M * N * K >= matmul.PARALLEL_MIN_WORK
    got = fresh_out("f", M * N)
    ref = fresh_out("f", M * N)
    run(matmul.bmm, A, B, got, 1, 1, M, N, K)
    run(reference.bmm, A, B, ref, 1, 1, M, N, K)
    assert list(got[M * N:]) == [SENTINEL] * EXTRA
    u = UNIT_ROUNDOFF["f"]
    worst = max(abs(g - r) for g, r in zip(got[:M * N], ref[:M * N]))
    assert worst <= (K + 2) * u * K   # |a|, |b| <= 1, so sum|a*b| <= K
    # and a sample of elements against the Python loop, which shares nothing with either kernel
    for _ in range(20):
        i, j = rng.randrange(M), rng.randrange(N)
        want = sum(A.at(0, 0, i, p) * B.at(0, 0, p, j) for p in range(K))
        assert abs(got[i * N + j] - want) <= (K + 2) * u * K


# ---------------------------------------------------------------------------------------------
# Twins: the code that only exists compiled against its plain-Python version
# ---------------------------------------------------------------------------------------------

@numba.njit
def _call_micro_vector(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, acc):
    matmul.micro_kernel(as_array(a), a_pos, a_rs, a_ps, as_array(b), b_pos, b_ss, b_ps, kc,
                         as_array(c), c_pos, c_rs, wide, acc)


@numba.njit
def _call_micro_loops(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, acc):
    matmul._micro_loops(as_array(a), a_pos, a_rs, a_ps, as_array(b), b_pos, b_ss, b_ps, kc,
                        as_array(c), c_pos, c_rs, wide, acc)


@pytest.mark.parametrize("typecode", "fd")
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("kc,a_rs,a_ps,b_ss,b_ps,c_rs", [
    (0, 1, MR, NR, 2 * NR, 2 * NR), (1, 1, MR, 5 * NR, NR, 2 * NR),
    (7, 9, 1, NR + 3, 2 * NR + 2, 2 * NR + 1), (33, 0, 2, 33 * NR, NR, 40)])
def test_micro_kernel_twins(typecode, accumulate, wide, kc, a_rs, a_ps, b_ss, b_ps, c_rs):
    """The vector micro-kernel computes what the loop version computes: an 8 x 16 tile, or
    8 x 32 from two strips of B b_ss apart (wide: where the registers hold it, e.g. float32 on
    AVX-512; the loop version everywhere)."""
    rng = random.Random(kc)
    a = array.array(typecode, [rng.uniform(-1, 1) for _ in range(3 + MR * max(a_rs, 1) + kc * a_ps)])
    b = array.array(typecode, [rng.uniform(-1, 1) for _ in range(2 + b_ss + kc * b_ps + NR)])
    c0 = array.array(typecode, [rng.uniform(-1, 1) for _ in range(1 + MR * c_rs + 2 * NR)])
    args = (a, 3, a_rs, a_ps, b, 2, b_ss, b_ps, kc)
    results = []
    vector = JIT and (not wide or simd.strips_per_tile(a.itemsize) == 2)
    callers = [_call_micro_loops] + ([_call_micro_vector] if vector else [])
    for call in callers:
        c = array.array(typecode, c0)
        call(*args, c, 1, c_rs, wide, accumulate)
        results.append(c)
    # and the Python definition
    want = array.array(typecode, c0)
    for i in range(MR):
        for j in range(2 * NR if wide else NR):
            s = c0[1 + i * c_rs + j] if accumulate else 0.0
            s += sum(a[3 + i * a_rs + p * a_ps] * b[2 + (j // NR) * b_ss + p * b_ps + j % NR]
                     for p in range(kc))
            want[1 + i * c_rs + j] = s
    for got in results:
        for g, w in zip(got, want):
            assert abs(g - w) <= (kc + 2) * UNIT_ROUNDOFF[typecode] * (kc + 1)


def test_strips_per_tile_fits_the_registers():
    # two strips where 8 rows of both (16 accumulators, or 32 registers in all when a row is two),
    # two rows of B and one broadcast fit: float32 on AVX-512 only
    isas = (("avx512", 512, 32), ("avx2", 256, 16), ("neon", 128, 32), ("sse", 128, 16))
    assert [simd.strips_per_tile(4, isa) for isa in isas] == [2, 1, 1, 1]
    assert [simd.strips_per_tile(8, isa) for isa in isas] == [1, 1, 1, 1]
    assert matmul.TILE_COLS == {"f": NR * simd.strips_per_tile(4), "d": NR * simd.strips_per_tile(8)}
    assert matmul.NC % (2 * NR) == 0


def test_rows_per_pass_fits_the_registers():
    # (isa, vector bits, registers): rows r with r*v + v + 1 <= registers, v = vectors per row
    assert [simd.rows_per_pass(4, isa) for isa in
            (("avx512", 512, 32), ("avx2", 256, 16), ("neon", 128, 32), ("sse", 128, 16))] \
        == [8, 4, 4, 2]
    assert [simd.rows_per_pass(8, isa) for isa in
            (("avx512", 512, 32), ("avx2", 256, 16), ("neon", 128, 32), ("sse", 128, 16))] \
        == [8, 2, 2, 1]


@numba.njit
def _transpose_compiled(buf, out, step):
    simd.vstore_rows(as_array(out), 0, 16, simd.transpose16(simd.vload_rows(as_array(buf), 0, step)))


@pytest.mark.parametrize("typecode", "fd")
def test_transpose16(typecode):
    """out[p][j] = rows[j][p], compiled (64 shuffles) and interpreted (the twins on lists)."""
    step = 19                                   # rows 19 apart: the loads are not to aligned rows
    buf = array.array(typecode, [float(i) for i in range(16 * step)])
    want = [float(j * step + p) for p in range(16) for j in range(16)]
    out = array.array(typecode, [0.0] * 256)
    _transpose_compiled(buf, out, step)        # interpreted as well when JIT is off
    assert list(out) == want
    rows = tuple(simd.vload(list(buf), j * step) for j in range(16))
    twin = getattr(simd.transpose16, "py_func", simd.transpose16)   # its plain-Python body
    assert [x for row in twin(rows) for x in row] == want
    assert simd.vshuffle(list(range(16)), list(range(16, 32)), simd.ZIP32_LO)[:4] == [0, 16, 1, 17]


def test_panel_width_follows_the_l2_cache():
    """NC: the fp32 KC x NC panel of B fills a quarter of one core's L2, in whole strips,
    64..512."""
    l2 = simd.l2_cache_bytes()
    assert l2 >= 64 * 1024
    assert NC % NR == 0 and 4 * NR <= NC <= 512
    assert KC * NC * 4 <= max(l2 // 4, KC * 4 * NR * 4)


def test_vector_operations_interpreted():
    # The plain-Python twins that run under NUMBA_DISABLE_JIT=1
    buf = [float(i) for i in range(40)]
    v = simd.vload(buf, 3)
    assert v == [float(i) for i in range(3, 19)]
    w = simd.vfma(simd.vsplat(buf, 2), v, simd.vzeros(buf))
    assert w == [2.0 * x for x in v]
    simd.vstore(buf, 20, w)
    assert buf[20:36] == w
    assert simd.vadd(v, w) == [3.0 * x for x in v]
    assert simd.prefetch(buf, 5) is None and buf[20:36] == w     # a hint: changes nothing


@pytest.mark.skipif(not JIT, reason="machine code exists only compiled")
@pytest.mark.parametrize("typecode", "fd")
def test_blocked_kernel_is_vector_code(typecode):
    """The micro-kernel compiles to vector FMAs on x86 with FMA (the check that the code is
    vector code by construction, not by the luck of LLVM's tuning for one CPU)."""
    import platform
    name, bits, _ = simd.vector_isa()
    if platform.machine().lower() not in ("x86_64", "amd64") or name not in ("avx2", "avx512"):
        pytest.skip(f"checks x86 FMA code; this target is {name}")
    # A fresh, uncached compile: numba cannot show the machine code of a kernel from its cache.
    fresh = numba.njit(nogil=True)(matmul._bmm_blocked.py_func)
    buf = numba.typeof(array.array(typecode))
    sig = (buf,) + (numba.int64,) * 5 + (buf,) + (numba.int64,) * 5 + (buf,) \
        + (numba.int64,) * 8 + (buf,)
    fresh.compile(sig)
    asm = fresh.inspect_asm(fresh.signatures[0])
    reg = "zmm" if bits == 512 else "ymm"
    suffix = "ps" if typecode == "f" else "pd"
    import re
    fmas = re.findall(rf"vfmadd\w*{suffix}\s[^\n]*%{reg}", asm)
    assert len(fmas) >= 8, f"expected vector FMAs on {reg} registers, found {len(fmas)}"
    # the tile's rows of C asked for before the run over k (prefetchw, or prefetcht0 without it)
    assert re.search(r"\bprefetch(w|t0)\s", asm), "expected the tile's prefetch of C"
    # and its loop over k starts at a 64-byte boundary (jit.aligned_loop)
    assert re.search(r"\.p2align\s+6\b", asm), "expected the micro-kernel's loop aligned to 64"


@numba.njit
def _views(buf, i, j):
    v = as_array(buf)
    row = v[i:j]
    row[0] = row[0] + 1.0
    return load(v, i) + load(row, 1), len(row)


@pytest.mark.parametrize("typecode", "fd")
def test_buffer_views_twins(typecode):
    buf = array.array(typecode, [1.0, 2.0, 3.0, 4.0])
    compiled = _views(buf, 1, 3)                  # compiled (or interpreted when JIT is off)
    assert list(buf) == [1.0, 3.0, 3.0, 4.0]      # the slice wrote through to the buffer
    buf2 = array.array(typecode, [1.0, 2.0, 3.0, 4.0])
    interpreted = getattr(_views, "py_func", _views)(buf2, 1, 3)   # the Python twins
    assert list(buf2) == list(buf)
    assert compiled == interpreted == (6.0, 2)


# ---------------------------------------------------------------------------------------------
# PyTorch parity (optional)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("typecode", "fd")
def test_matches_torch_attention_views(typecode):
    """Q @ K^T on head-split views: (B, T, H*d) buffers read as (B, H, T, d), K transposed."""
    torch = pytest.importorskip("torch")
    rng = random.Random(3)
    Bn, H, T, d = 2, 3, 11 if not JIT else 37, 8
    q = [rng.uniform(-1, 1) for _ in range(Bn * T * H * d)]
    k = [rng.uniform(-1, 1) for _ in range(Bn * T * H * d)]
    qb, kb = array.array(typecode, q), array.array(typecode, k)
    out = fresh_out(typecode, Bn * H * T * T)
    # element (b, h, t, e) of the (B, H, T, d) view of a (B, T, H, d) buffer
    sb0, sb1, st_, se = T * H * d, d, H * d, 1
    matmul.bmm(qb, 0, sb0, sb1, st_, se,               # Q: (B, H, T, d)
               kb, 0, sb0, sb1, se, st_,          # K^T: (B, H, d, T), a transposed view
               out, Bn, H, T, T, d)
    dtype = torch.float32 if typecode == "f" else torch.float64
    tq = torch.tensor(list(qb), dtype=dtype).reshape(Bn, T, H, d).transpose(1, 2)
    tk = torch.tensor(list(kb), dtype=dtype).reshape(Bn, T, H, d).transpose(1, 2)
    want = (tq @ tk.transpose(-2, -1)).reshape(-1).tolist()
    assert_close(out[:Bn * H * T * T], want, [float(d)] * len(want), typecode, 2 * d, "torch")


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (5, 33, 17), (64, 48, 300)] if JIT else [(1, 1, 1), (5, 9, 7)])
def test_matches_torch_matmul(M, N, K):
    torch = pytest.importorskip("torch")
    rng = random.Random(M * N * K)
    A = Operand("f", 1, 1, M, K, rng)
    B = Operand("f", 1, 1, K, N, rng)
    out = fresh_out("f", M * N)
    run(matmul.bmm, A, B, out, 1, 1, M, N, K)
    ta = torch.tensor(list(A.buf), dtype=torch.float32).reshape(M, K)
    tb = torch.tensor(list(B.buf), dtype=torch.float32).reshape(K, N)
    want = (ta @ tb).reshape(-1).tolist()
    assert_close(out[:M * N], want, [float(K)] * len(want), "f", 2 * K, "torch")
