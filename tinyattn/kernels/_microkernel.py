"""The matmul micro-kernel in explicit vector code (simd.py): an MR x NR = 8 x 16 tile of C.

    c[i, :] (+)= sum over p < kc of a[i, p] * b[p, :]        i < 8, each row one 16-lane vector

Per step p: one vector load of B's row p, and for each row i of the tile a broadcast of a[i, p]
and one fused multiply-add into that row's accumulator. The accumulators stay in registers for
the whole run over p. How many rows run at once depends on the registers (simd.rows_per_pass):
8 rows on AVX-512 (8 of its 32 registers), 4 rows twice on AVX2 (a row is 2 of its 16 registers),
2 rows four times for float64 on AVX2. ``matmul._micro_loops`` is the same computation as plain
loops (what runs with NUMBA_DISABLE_JIT=1).

When the tile adds to C (``accumulate``: the second and later KC-slices of K), C's rows are added
after the run over p, not loaded before it, and the tile asks for them first of all
(``simd.prefetch``). By then C's block was last touched a whole slice of K ago and is out of
L2; loaded first, every accumulator chain waited for it; now the wait overlaps the run.
(With matmul.py's narrower panel NC: fp32 1024^3 5-9% faster on the Zen 3, one and two
threads, in both builds; 256^3 the same.)
"""
from numba import njit
from numba.extending import overload

from .jit import aligned_loop
from .simd import prefetch, rows_per_pass, vadd, vfma, vload, vsplat, vstore, vzeros

MR = 8
NR = 16


def micro_kernel(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    """c[i, j] (+)= sum_p a[a_pos + i*a_rs + p*a_ps] * b[b_pos + p*b_ps + j] for i < 8, j < 16,
    c[i, j] at c[c_pos + i*c_rs + j]; adds to c when accumulate is true, else overwrites.
    (This body runs only interpreted; compiled, the overload below is used.)"""
    for i in range(MR):
        for j in range(NR):
            s = 0.0
            for p in range(kc):
                s += a[a_pos + i * a_rs + p * a_ps] * b[b_pos + p * b_ps + j]
            if accumulate:          # C added last, as the vector code below does
                s += c[c_pos + i * c_rs + j]
            c[c_pos + i * c_rs + j] = s


# _rows8, _rows4 and _rows2 are written out rather than looped over an array of accumulators:
# each accumulator must be a variable of its own for LLVM to keep it in a register.
@njit(inline="always")
def _rows8(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = vzeros(c)
    for _ in range(kc):
        aligned_loop()                             # (jit.py: the loop starts a 64-byte line)
        row = vload(b, b_pos)                      # B[p, 0:16]
        c0 = vfma(vsplat(a, a_pos), row, c0)       # C[0, :] += A[0, p] * B[p, :]
        c1 = vfma(vsplat(a, a_pos + a_rs), row, c1)
        c2 = vfma(vsplat(a, a_pos + 2 * a_rs), row, c2)
        c3 = vfma(vsplat(a, a_pos + 3 * a_rs), row, c3)
        c4 = vfma(vsplat(a, a_pos + 4 * a_rs), row, c4)
        c5 = vfma(vsplat(a, a_pos + 5 * a_rs), row, c5)
        c6 = vfma(vsplat(a, a_pos + 6 * a_rs), row, c6)
        c7 = vfma(vsplat(a, a_pos + 7 * a_rs), row, c7)
        a_pos += a_ps
        b_pos += b_ps
    if accumulate:                                 # C[i, :] += the sums (its rows have arrived)
        c0 = vadd(c0, vload(c, c_pos))
        c1 = vadd(c1, vload(c, c_pos + c_rs))
        c2 = vadd(c2, vload(c, c_pos + 2 * c_rs))
        c3 = vadd(c3, vload(c, c_pos + 3 * c_rs))
        c4 = vadd(c4, vload(c, c_pos + 4 * c_rs))
        c5 = vadd(c5, vload(c, c_pos + 5 * c_rs))
        c6 = vadd(c6, vload(c, c_pos + 6 * c_rs))
        c7 = vadd(c7, vload(c, c_pos + 7 * c_rs))
    vstore(c, c_pos, c0)
    vstore(c, c_pos + c_rs, c1)
    vstore(c, c_pos + 2 * c_rs, c2)
    vstore(c, c_pos + 3 * c_rs, c3)
    vstore(c, c_pos + 4 * c_rs, c4)
    vstore(c, c_pos + 5 * c_rs, c5)
    vstore(c, c_pos + 6 * c_rs, c6)
    vstore(c, c_pos + 7 * c_rs, c7)


@njit(inline="always")
def _rows4(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    c0 = c1 = c2 = c3 = vzeros(c)
    for _ in range(kc):
        aligned_loop()
        row = vload(b, b_pos)
        c0 = vfma(vsplat(a, a_pos), row, c0)
        c1 = vfma(vsplat(a, a_pos + a_rs), row, c1)
        c2 = vfma(vsplat(a, a_pos + 2 * a_rs), row, c2)
        c3 = vfma(vsplat(a, a_pos + 3 * a_rs), row, c3)
        a_pos += a_ps
        b_pos += b_ps
    if accumulate:
        c0 = vadd(c0, vload(c, c_pos))
        c1 = vadd(c1, vload(c, c_pos + c_rs))
        c2 = vadd(c2, vload(c, c_pos + 2 * c_rs))
        c3 = vadd(c3, vload(c, c_pos + 3 * c_rs))
    vstore(c, c_pos, c0)
    vstore(c, c_pos + c_rs, c1)
    vstore(c, c_pos + 2 * c_rs, c2)
    vstore(c, c_pos + 3 * c_rs, c3)


@njit(inline="always")
def _rows2(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    c0 = c1 = vzeros(c)
    for _ in range(kc):
        aligned_loop()
        row = vload(b, b_pos)
        c0 = vfma(vsplat(a, a_pos), row, c0)
        c1 = vfma(vsplat(a, a_pos + a_rs), row, c1)
        a_pos += a_ps
        b_pos += b_ps
    if accumulate:
        c0 = vadd(c0, vload(c, c_pos))
        c1 = vadd(c1, vload(c, c_pos + c_rs))
    vstore(c, c_pos, c0)
    vstore(c, c_pos + c_rs, c1)


@njit(inline="always")
def _prefetch_tile(c, c_pos, c_rs):
    for i in range(MR):
        prefetch(c, c_pos + i * c_rs)              # a row's first, middle and last element: its
        prefetch(c, c_pos + i * c_rs + NR // 2)    # 1 or 2 cache lines in float32, 2 or 3 in
        prefetch(c, c_pos + i * c_rs + NR - 1)     # float64


def _by8(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs)
    _rows8(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate)


def _by4(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs)
    for h in range(2):
        _rows4(a, a_pos + 4 * h * a_rs, a_rs, a_ps, b, b_pos, b_ps, kc,
               c, c_pos + 4 * h * c_rs, c_rs, accumulate)


def _by2(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs)
    for h in range(4):
        _rows2(a, a_pos + 2 * h * a_rs, a_rs, a_ps, b, b_pos, b_ps, kc,
               c, c_pos + 2 * h * c_rs, c_rs, accumulate)


@overload(micro_kernel, inline="always")
def _micro_kernel_jit(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate):
    rows = rows_per_pass(c.dtype.bitwidth // 8)
    return {8: _by8, 4: _by4}.get(rows, _by2)
