"""The matmul micro-kernel in explicit vector code (simd.py): an MR x NR = 8 x 16 tile of C,
or 8 x 32 (two strips of B, ``wide``) where the registers hold it.

    c[i, :] (+)= sum over p < kc of a[i, p] * b[p, :]        i < 8, each row one 16-lane vector

Per step p: one vector load of B's row p, and for each row i of the tile a broadcast of a[i, p]
and one fused multiply-add into that row's accumulator. The accumulators stay in registers for
the whole run over p. How many rows run at once depends on the registers (simd.rows_per_pass):
8 rows on AVX-512 (8 of its 32 registers), 4 rows twice on AVX2 (a row is 2 of its 16 registers),
2 rows four times for float64 on AVX2. The body of ``micro_kernel`` below is the same computation
as plain loops (what runs with NUMBA_DISABLE_JIT=1; ``matmul._micro_loops`` compiles it).

A wide tile (float32 on AVX-512, simd.strips_per_tile) takes the row p of two strips of B
(16 accumulators) and uses each broadcast of a[i, p] for both: 10 loads per 16 FMAs instead of 9
per 8. With 8 x 16 the loads, not the FMAs, are the limit there; with 8 x 32 the tile comes close
to the FMA peak (benchmarks/RESULTS.md, fast/simd.py: strips_per_tile). Float64 and AVX2
already use each broadcast twice, since a 16-lane row is two registers there.

When the tile adds to C (``accumulate``: the second and later KC-slices of K), C's rows are added
after the run over p, not loaded before it, and the tile asks for them first of all
(``simd.prefetch``). By then C's block was last touched a whole slice of K ago and is out of
L2: loaded first, every accumulator chain would wait for it; added last, the wait overlaps the
run (benchmarks/RESULTS.md, fast/_microkernel.py: accumulate).
"""
from numba import njit
from numba.extending import overload

from .jit import aligned_loop
from .simd import (prefetch, rows_per_pass, strips_per_tile, vadd, vfma, vload, vsplat, vstore,
                   vzeros)

MR = 8
NR = 16


def micro_kernel(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    """c[i, j] (+)= sum_p A[i, p] * B[p, j] for i < 8, j < 16 (j < 32 when wide), where
    A[i, p] = a[a_pos + i*a_rs + p*a_ps], B is given in 16-wide strips b_ss apart,
    B[p, s*16 + t] = b[b_pos + s*b_ss + p*b_ps + t], and c[i, j] is c[c_pos + i*c_rs + j]; adds to c
    when accumulate is true, else overwrites. ``wide`` only where tile_strips(c) is 2.
    (This body runs only interpreted; compiled, the overload below is used.)"""
    for i in range(MR):
        for j in range(2 * NR if wide else NR):
            s = 0.0
            for p in range(kc):
                s += a[a_pos + i * a_rs + p * a_ps] * b[b_pos + j // NR * b_ss + p * b_ps + j % NR]
            if accumulate:          # C added last, as the vector code below does
                s += c[c_pos + i * c_rs + j]
            c[c_pos + i * c_rs + j] = s


def tile_strips(c):
    """How many 16-wide strips of B one tile covers for c's dtype (simd.strips_per_tile): 1 or
    2. A constant in compiled code."""
    return strips_per_tile(c.itemsize)


@overload(tile_strips, inline="always")
def _tile_strips_jit(c):
    n = strips_per_tile(c.dtype.bitwidth // 8)
    return lambda c: n


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
def _rows8w(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, accumulate):
    """_rows8 over two strips of B: C[i, 0:16] in c_i, C[i, 16:32] in d_i."""
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = vzeros(c)
    d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = vzeros(c)
    for _ in range(kc):
        aligned_loop()
        row = vload(b, b_pos)                      # B[p, 0:16]
        row2 = vload(b, b_pos + b_ss)              # B[p, 16:32]
        e = vsplat(a, a_pos)                       # A[0, p], for both strips
        c0 = vfma(e, row, c0)
        d0 = vfma(e, row2, d0)
        e = vsplat(a, a_pos + a_rs)
        c1 = vfma(e, row, c1)
        d1 = vfma(e, row2, d1)
        e = vsplat(a, a_pos + 2 * a_rs)
        c2 = vfma(e, row, c2)
        d2 = vfma(e, row2, d2)
        e = vsplat(a, a_pos + 3 * a_rs)
        c3 = vfma(e, row, c3)
        d3 = vfma(e, row2, d3)
        e = vsplat(a, a_pos + 4 * a_rs)
        c4 = vfma(e, row, c4)
        d4 = vfma(e, row2, d4)
        e = vsplat(a, a_pos + 5 * a_rs)
        c5 = vfma(e, row, c5)
        d5 = vfma(e, row2, d5)
        e = vsplat(a, a_pos + 6 * a_rs)
        c6 = vfma(e, row, c6)
        d6 = vfma(e, row2, d6)
        e = vsplat(a, a_pos + 7 * a_rs)
        c7 = vfma(e, row, c7)
        d7 = vfma(e, row2, d7)
        a_pos += a_ps
        b_pos += b_ps
    if accumulate:
        c0 = vadd(c0, vload(c, c_pos))
        d0 = vadd(d0, vload(c, c_pos + NR))
        c1 = vadd(c1, vload(c, c_pos + c_rs))
        d1 = vadd(d1, vload(c, c_pos + c_rs + NR))
        c2 = vadd(c2, vload(c, c_pos + 2 * c_rs))
        d2 = vadd(d2, vload(c, c_pos + 2 * c_rs + NR))
        c3 = vadd(c3, vload(c, c_pos + 3 * c_rs))
        d3 = vadd(d3, vload(c, c_pos + 3 * c_rs + NR))
        c4 = vadd(c4, vload(c, c_pos + 4 * c_rs))
        d4 = vadd(d4, vload(c, c_pos + 4 * c_rs + NR))
        c5 = vadd(c5, vload(c, c_pos + 5 * c_rs))
        d5 = vadd(d5, vload(c, c_pos + 5 * c_rs + NR))
        c6 = vadd(c6, vload(c, c_pos + 6 * c_rs))
        d6 = vadd(d6, vload(c, c_pos + 6 * c_rs + NR))
        c7 = vadd(c7, vload(c, c_pos + 7 * c_rs))
        d7 = vadd(d7, vload(c, c_pos + 7 * c_rs + NR))
    vstore(c, c_pos, c0)
    vstore(c, c_pos + NR, d0)
    vstore(c, c_pos + c_rs, c1)
    vstore(c, c_pos + c_rs + NR, d1)
    vstore(c, c_pos + 2 * c_rs, c2)
    vstore(c, c_pos + 2 * c_rs + NR, d2)
    vstore(c, c_pos + 3 * c_rs, c3)
    vstore(c, c_pos + 3 * c_rs + NR, d3)
    vstore(c, c_pos + 4 * c_rs, c4)
    vstore(c, c_pos + 4 * c_rs + NR, d4)
    vstore(c, c_pos + 5 * c_rs, c5)
    vstore(c, c_pos + 5 * c_rs + NR, d5)
    vstore(c, c_pos + 6 * c_rs, c6)
    vstore(c, c_pos + 6 * c_rs + NR, d6)
    vstore(c, c_pos + 7 * c_rs, c7)
    vstore(c, c_pos + 7 * c_rs + NR, d7)


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
def _prefetch_tile(c, c_pos, c_rs, width):
    for i in range(MR):
        prefetch(c, c_pos + i * c_rs)                  # a row's first, middle and last element:
        prefetch(c, c_pos + i * c_rs + width // 2)     # its 1 to 3 cache lines
        prefetch(c, c_pos + i * c_rs + width - 1)


def _by8(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs, NR)
    _rows8(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate)


def _by8_wide(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    if wide:
        if accumulate:
            _prefetch_tile(c, c_pos, c_rs, 2 * NR)
        _rows8w(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, accumulate)
    else:
        if accumulate:
            _prefetch_tile(c, c_pos, c_rs, NR)
        _rows8(a, a_pos, a_rs, a_ps, b, b_pos, b_ps, kc, c, c_pos, c_rs, accumulate)


def _by4(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs, NR)
    for h in range(2):
        _rows4(a, a_pos + 4 * h * a_rs, a_rs, a_ps, b, b_pos, b_ps, kc,
               c, c_pos + 4 * h * c_rs, c_rs, accumulate)


def _by2(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    if accumulate:
        _prefetch_tile(c, c_pos, c_rs, NR)
    for h in range(4):
        _rows2(a, a_pos + 2 * h * a_rs, a_rs, a_ps, b, b_pos, b_ps, kc,
               c, c_pos + 2 * h * c_rs, c_rs, accumulate)


@overload(micro_kernel, inline="always")
def _micro_kernel_jit(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide,
                      accumulate):
    itemsize = c.dtype.bitwidth // 8
    if strips_per_tile(itemsize) == 2:
        return _by8_wide
    rows = rows_per_pass(itemsize)
    return {8: _by8, 4: _by4}.get(rows, _by2)
