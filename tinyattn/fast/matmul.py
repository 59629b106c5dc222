"""Batched matrix multiply over flat ``array.array`` buffers.

``bmm`` computes ``out[i0, i1] = a[i0, i1] @ b[i0, i1]`` for strided views ``a`` (nb0, nb1, M, K) and
``b`` (nb0, nb1, K, N). Two batch dimensions cover attention's (B, H, T, d) head-split views, and
because every operand is described by an offset and element strides, transposed views
(``K^T`` in ``Q @ K^T``) and broadcast operands (stride 0) need no copy by the caller.

How it is fast, from the inside out (the same plan as GotoBLAS/BLIS, in numba):

1. Register tile (``micro_kernel``, 8 x 16). The naive loop ``c[i, j] += a[i, p] * b[p, j]`` does
   two loads and a store per multiply-add and runs at memory speed. The micro-kernel keeps an
   8 x 16 block of C in registers for a whole run over p: each step loads one 16-wide row of B
   and broadcasts 8 scalars of A, and does 8 x 16 multiply-adds as 8 vector FMAs. Then
   arithmetic, not memory, is the limit. Why 8 rows: an FMA takes 4 cycles and a core starts 2
   per cycle, so >= 8 independent accumulators keep it busy; why 16 columns: one 512-bit vector,
   and attention's head sizes (16, 32, 64) are multiples of it. The vectors are explicit
   (``simd.py``'s 16-lane type, ``_microkernel.py``), so the code is vector code on every CPU; on
   one with fewer registers (AVX2: 16 of 256 bits) the tile runs as 2 passes of 4 rows, so that
   the accumulators never spill. Where 16 accumulators fit (float32 on AVX-512), a tile takes
   two strips of B, 8 x 32, so that each broadcast of A feeds two FMAs (``simd.strips_per_tile``).
   ``_micro_loops`` is the same computation as a readable loop.
2. Cache blocks (``KC``, ``MC``, ``NC``). A 16-column strip of B, ``kc`` rows deep, is reused by every
   8-row strip of A, so it should sit in L1 while they stream past; all the strips of a ``KC x NC``
   panel should sit in L2. Splitting K into ``KC``-long pieces keeps those sizes bounded; the
   pieces' partial sums are added into C.
3. Packing. A panel of B is copied ("packed") into contiguous 16-wide rows before use, when it is
   reused by many rows (>= ``PACK_B_MIN_ROWS``) or when B is transposed (``b_sn != 1``, like ``K^T``):
   the copy reads B in its own order once, and the micro-kernel always sees contiguous rows.
   The copy is vector code too: a row-major strip row by row, a transposed one in 16 x 16
   blocks that ``simd.transpose16`` turns around in registers.
   A needs no packing: the micro-kernel reads just 8 scalars of A per step, through any strides.
   Only edge strips (fewer than 8 rows or 16 columns) are packed, zero-padded, so that the
   micro-kernel always computes whole tiles; the valid part of an edge tile is copied out.
4. Threads. Work is cut into units (a batch entry, or a block of its rows or of its columns)
   which the cores share through ``threads.parallel_for``; each thread has its own scratch buffer.
5. Fewer rows than a tile (M < 8, e.g. attention's context (B, 1, S) @ (B, S, C)): the tile would
   be mostly padding, so ``_bmm_few_rows`` computes each row on its own, reading B in whichever
   order is contiguous.

Numerics: fp32 products are accumulated in fp32 in k order (with fused multiply-adds), as BLAS does;
the error grows with K (roughly K * 2^-24 relative to sum |a||b|). ``bmm_reference`` accumulates in
fp64 and is the oracle the tests use.

Measured on a 2-core AMD EPYC Zen 5 with AVX-512 (fp32, GFLOP/s, 2026-11-26; PyTorch with 2
threads alongside), with the wide tile: 512^3 474 vs 216, 256^3 408 vs 206, 128 x (32x16)@(16x32)
230 vs 142; with 8 x 16 tiles 370, 328 and 153. Run ``benchmarks/run.py --only matmul``.
Until the vectors were explicit, LLVM's SLP vectoriser was asked to find them in 128 scalar
variables: it did for this AMD CPU with AVX-512 (~115 GFLOP/s for one core in the micro-kernel)
and did not when compiling for Haswell (AVX2: 39 GFLOP/s, mostly scalar code). The explicit
kernel measures ~115 and ~110 on the same core (float64: 58 and 39).

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import array
import math
import threading

import numba
from numba import njit

from . import threads
from .buffers import address, as_array, buffer_at, load, store
from .jit import by_typecode, cached, inline, kernel, vector_kernel
from .simd import (l2_cache_bytes, strips_per_tile, transpose16, vector_isa, vload, vload_rows,
                   vstore, vstore_rows)
from ._microkernel import MR, NR
from ._microkernel import micro_kernel as _micro_vector
from ._microkernel import tile_strips
from .tiers import register

__all__ = ["bmm", "bmm_fast", "bmm_reference", "mm", "mm_fast", "mm_reference", "mm_pair",
           "mm_pair_fast", "mm_pair_reference",
           "ensure_compiled"]


# ---------------------------------------------------------------------------------------------
# The reference kernel: the definition, used as the test oracle
# ---------------------------------------------------------------------------------------------

@cached(nogil=True)
def bmm_reference(a, a_off, a_sb0, a_sb1, a_sm, a_sk,
                  b, b_off, b_sb0, b_sb1, b_sk, b_sn,
                  out, nb0, nb1, M, N, K):
    """Same contract as :func:`bmm`, as the plain triple loop over strided buffers.

    Element ``(i, p)`` of matrix ``(i0, i1)`` of ``a`` is ``a[a_off + i0*a_sb0 + i1*a_sb1 + i*a_sm +
    p*a_sk]``, likewise for ``b``; ``out`` is contiguous. Sums are accumulated in float64 (also for
    float32 buffers) and rounded once when stored, so this is the more accurate of the two kernels.
    """
    for i0 in range(nb0):
        for i1 in range(nb1):
            a_base = a_off + i0 * a_sb0 + i1 * a_sb1
            b_base = b_off + i0 * b_sb0 + i1 * b_sb1
            o_base = (i0 * nb1 + i1) * M * N
            for i in range(M):
                for j in range(N):
                    s = 0.0
                    for p in range(K):
                        s += float(a[a_base + i * a_sm + p * a_sk]) * float(b[b_base + p * b_sk + j * b_sn])
                    out[o_base + i * N + j] = s


def mm_reference(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K):
    """Same contract as :func:`mm`: ``bmm_reference`` of one matrix."""
    bmm_reference(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn, out, 1, 1, M, N, K)


# ---------------------------------------------------------------------------------------------
# The micro-kernel: one MR x NR tile of C
# ---------------------------------------------------------------------------------------------

@njit(nogil=True)
def _micro_loops(a, a_pos, a_rs, a_ps, b, b_pos, b_ss, b_ps, kc, c, c_pos, c_rs, wide, accumulate):
    """Plain-loop twin of the vector ``micro_kernel`` (same arguments, same result).

    ``c[i, j] (+)= sum_p a[i, p] * b[p, j]`` for the MR x NR tile (MR x 2NR when ``wide``), where
    ``a[i, p] = a[a_pos + i*a_rs + p*a_ps]``, ``c[i, j] = c[c_pos + i*c_rs + j]`` and B comes in
    16-wide strips ``b_ss`` apart: ``b[p, s*NR + t] = b[b_pos + s*b_ss + p*b_ps + t]``.
    Used when JIT is disabled; the vector version computes exactly this with the tile in registers.
    """
    for i in range(MR):
        for j in range(2 * NR if wide else NR):
            s = 0.0
            for p in range(kc):
                s += a[a_pos + i * a_rs + p * a_ps] * b[b_pos + j // NR * b_ss + p * b_ps + j % NR]
            if accumulate:          # added last, as the vector version does (see _microkernel.py)
                s += c[c_pos + i * c_rs + j]
            c[c_pos + i * c_rs + j] = s


# Interpreted, the loop twin is as fast as the vector code and far easier to step through.
_micro = _micro_loops if numba.config.DISABLE_JIT else _micro_vector


# ---------------------------------------------------------------------------------------------
# Packing
# ---------------------------------------------------------------------------------------------

@njit(nogil=True)
def _pack_a_strip(a, a_pos, a_sm, a_sk, rows, kc, dst, d_pos):
    """dst[d_pos + p*MR + i] = A[i, p] for i < rows, 0 for rows <= i < MR (one zero-padded strip),
    where A[i, p] = a[a_pos + i*a_sm + p*a_sk]. The micro-kernel then reads it with a_rs=1, a_ps=MR."""
    for p in range(kc):
        src = a_pos + p * a_sk
        for i in range(rows):
            store(dst, d_pos + p * MR + i, load(a, src + i * a_sm))
        for i in range(rows, MR):
            store(dst, d_pos + p * MR + i, 0.0)


@njit(nogil=True)
def _pack_b_strip(b, b_pos, b_sk, b_sn, kc, cols, dst, d_pos):
    """dst[d_pos + p*NR + j] = B[p, j] for j < cols, 0 for cols <= j < NR (one zero-padded strip),
    where B[p, j] = b[b_pos + p*b_sk + j*b_sn]. The micro-kernel then reads it with b_ps=NR."""
    if b_sn == 1 and cols == NR:
        # A full strip of a row-major B: one vector copy per row. (The loop below does not
        # vectorise: LLVM cannot know that b_sn is 1. Packing 256 x 256 on the Zen 3: 36 -> 13 us.)
        for p in range(kc):
            vstore(dst, d_pos + p * NR, vload(b, b_pos + p * b_sk))
        return
    start = 0
    if b_sk == 1 and cols == NR:
        # A full strip of a transposed B (K^T): its 16 columns are 16 contiguous runs of b.
        # Blocks of 16 x 16 are loaded as rows and stored as their columns (simd.transpose16),
        # 0.7 cycles per element on the Zen 3 instead of 2 for the strided loads below.
        start = kc - kc % 16
        for p0 in range(0, start, 16):
            vstore_rows(dst, d_pos + p0 * NR, NR, transpose16(vload_rows(b, b_pos + p0, b_sn)))
    # One output row (16 elements) at a time; for a transposed B the 16 loads are strided, which
    # measured faster (43 vs 50 us for 128 x (32x16)@(16x32)) than walking down B's contiguous
    # columns and scattering stores.
    for p in range(start, kc):
        src = b_pos + p * b_sk
        for j in range(cols):
            store(dst, d_pos + p * NR + j, load(b, src + j * b_sn))
    for p in range(kc):
        for j in range(cols, NR):
            store(dst, d_pos + p * NR + j, 0.0)


# ---------------------------------------------------------------------------------------------
# The blocked kernel
# ---------------------------------------------------------------------------------------------

# Block sizes, in elements. KC x NR of B (16 KiB in fp32 for KC=256) stays in L1 while the micro-
# kernel runs down all the row strips of a block; the packed KC x NC panel of B stays in L2 beside
# the MC x KC block of A and the tiles of C it meets, so NC is chosen from this machine's L2: the
# panel fills a quarter of it in fp32 (at most 512 columns): NC = 256 with 1 MiB of L2 (the
# AVX-512 EPYC), 128 with 512 KiB (the Zen 3). Measured on the Zen 3 (fp32, one process,
# alternating): a panel of all of L2 was evicted by A and C (1024^3 12-21% slower than half of
# it); a quarter of it is another 2-5% faster than half at 1024^3, the same at 256-512.
# MC only bounds how many rows share one pass over that panel before we move to the next piece
# of K. MC is a multiple of MR, NC of a wide tile's 2 * NR columns.
KC = 256
MC = 128
NC = max(4 * NR, min(512, l2_cache_bytes() // 4 // (KC * 4)) // (2 * NR) * (2 * NR))

# Columns of C per tile, by typecode: 16, or 32 where the micro-kernel takes two strips of B at
# once (simd.strips_per_tile: float32 on AVX-512).
TILE_COLS = {"f": NR * strips_per_tile(4), "d": NR * strips_per_tile(8)}

# Packing the panel of B costs about a copy of it; it pays once enough rows reuse it. Below this
# many rows a row-major B is read in place (it is small and stays in cache anyway).
PACK_B_MIN_ROWS = 64

# Scratch layout, per thread: [packed B panel | packed A edge strip | C tile (8 x 16 or 8 x 32)]
_S_BPANEL = 0
_S_AEDGE = _S_BPANEL + KC * NC
_S_TILE = _S_AEDGE + MR * KC
SCRATCH_SIZE = _S_TILE + MR * 2 * NR


# The loop nest of one unit, outside in (C, A and B are the unit's matrices):
#   jc: NC columns of C and B
#     pc: KC of the K dimension                    pack B[pc:pc+KC, jc:jc+NC] (to L2)
#       ic: MC rows of C and A                     A[ic:ic+MC, pc:pc+KC] stays in L2
#         jr: 16 or 32 columns (a tile's)          one or two strips of packed B (in L1)
#           ir: MR (8) rows                        micro-kernel: an 8 x 16 (or 8 x 32) tile of C,
#                                                  C[ir:ir+8, jr:jr+16] (+)= A[ir:ir+8, pc:pc+KC] @ strip
@cached(nogil=True)
def _bmm_blocked(a_buf, a_off, a_sb0, a_sb1, a_sm, a_sk,
                 b_buf, b_off, b_sb0, b_sb1, b_sk, b_sn,
                 out_buf, nb1, M, N, K, rows_per_unit, cols_per_unit, u0, u1, scratch_buf):
    """Work units u0 <= u < u1 of ``bmm``. Each matrix of C (a batch entry, flattened over
    (nb0, nb1)) is cut into blocks of rows_per_unit x cols_per_unit, numbered row block by row
    block; unit u is block u % units_per_batch of batch entry t = u // units_per_batch. Units
    write disjoint blocks of ``out``, so threads may run different units at the same time, each
    with its own ``scratch_buf`` (SCRATCH_SIZE elements)."""
    A = as_array(a_buf)
    B = as_array(b_buf)
    C = as_array(out_buf)
    S = as_array(scratch_buf)
    tw = NR * tile_strips(C)                    # a tile's columns: 16, or 32 (a constant)
    col_blocks = (N + cols_per_unit - 1) // cols_per_unit
    units_per_batch = (M + rows_per_unit - 1) // rows_per_unit * col_blocks
    for u in range(u0, u1):
        t = u // units_per_batch
        r0 = (u % units_per_batch) // col_blocks * rows_per_unit
        c0 = (u % units_per_batch) % col_blocks * cols_per_unit
        m = min(M, r0 + rows_per_unit) - r0
        c1 = min(N, c0 + cols_per_unit)
        i0 = t // nb1
        i1 = t - i0 * nb1
        a_base = a_off + i0 * a_sb0 + i1 * a_sb1 + r0 * a_sm
        b_base = b_off + i0 * b_sb0 + i1 * b_sb1
        c_base = (t * M + r0) * N

        if K == 0:  # an empty sum: out is zero (it may hold garbage on entry)
            for i in range(m):
                row = C[c_base + i * N + c0:c_base + i * N + c1]
                for q in range(c1 - c0):
                    row[q] = 0.0
            continue

        pack_b = b_sn != 1 or m >= PACK_B_MIN_ROWS
        for jc in range(c0, c1, NC):            # a panel of NC columns of B and C
            nc = min(NC, c1 - jc)
            for pc in range(0, K, KC):          # a KC-deep slice of that panel
                kc = min(KC, K - pc)
                accumulate = pc > 0             # later slices add to the partial sums in C
                b_panel = b_base + pc * b_sk + jc * b_sn
                if pack_b:
                    # Strip s (columns jc + s*NR ...) goes to S[s*NR*kc:]: contiguous 16-wide rows.
                    for jr in range(0, nc, NR):
                        _pack_b_strip(B, b_panel + jr * b_sn, b_sk, b_sn, kc, min(NR, nc - jr),
                                      S, _S_BPANEL + jr * kc)
                for ic in range(0, m, MC):      # MC rows: their slice of A stays in L2 across jr
                    mc = min(MC, m - ic)
                    # tw columns of B: one 16-wide strip, or two (a wide tile: tw = 32)
                    for jr in range(0, nc, tw):  # as (buffer, start, strip step, row step)
                        nr = min(tw, nc - jr)
                        wide = nr > NR
                        if pack_b:
                            b_src, b_pos, b_ss, b_ps = S, _S_BPANEL + jr * kc, NR * kc, NR
                        elif nr % NR == 0:      # row-major B, full strips: read them in place
                            b_src, b_pos, b_ss, b_ps = B, b_panel + jr, NR, b_sk
                        else:                   # last, narrow strip: padded with zeros, packed
                            # where the panel would hold it, with the full strip before it.
                            # (The same argument types as the call above: a constant here,
                            # such as b_sn's 1, made numba compile _pack_b_strip a second time,
                            # 1.2 s of a cold start.)
                            for s in range(jr, jr + nr, NR):
                                _pack_b_strip(B, b_panel + s * b_sn, b_sk, b_sn, kc,
                                              min(NR, jr + nr - s), S, _S_BPANEL + s * kc)
                            b_src, b_pos, b_ss, b_ps = S, _S_BPANEL + jr * kc, NR * kc, NR
                        for ir in range(ic, ic + mc, MR):  # MR rows of A: one micro-kernel call
                            mr = min(MR, ic + mc - ir)
                            a_pos = a_base + ir * a_sm + pc * a_sk
                            if mr == MR:        # read A in place through its strides
                                a_src, a_rs, a_ps = A, a_sm, a_sk
                            else:               # short strip: pack it, zero-padded
                                _pack_a_strip(A, a_pos, a_sm, a_sk, mr, kc, S, _S_AEDGE)
                                a_src, a_pos, a_rs, a_ps = S, _S_AEDGE, 1, MR
                            c_pos = c_base + ir * N + jc + jr
                            full = mr == MR and nr % NR == 0
                            if full:            # write the tile straight into C
                                d_buf, d_pos, d_rs, d_acc = C, c_pos, N, accumulate
                            else:               # edge tile: compute all of it into scratch ...
                                d_buf, d_pos, d_rs, d_acc = S, _S_TILE, tw, False
                            # One call site only: the micro-kernel is inlined, and a second copy
                            # would double the compile time.
                            _micro(a_src, a_pos, a_rs, a_ps, b_src, b_pos, b_ss, b_ps, kc,
                                   d_buf, d_pos, d_rs, wide, d_acc)
                            if not full:        # ... and keep its valid part
                                for i in range(mr):
                                    c_row = C[c_pos + i * N:c_pos + i * N + nr]
                                    t_row = S[_S_TILE + i * tw:_S_TILE + i * tw + nr]
                                    if accumulate:
                                        for j in range(nr):
                                            c_row[j] += t_row[j]
                                    else:
                                        for j in range(nr):
                                            c_row[j] = t_row[j]


# ---------------------------------------------------------------------------------------------
# Fewer rows than a tile: vector-matrix products
# ---------------------------------------------------------------------------------------------

@vector_kernel
def _bmm_few_rows(a_buf, a_off, a_sb0, a_sb1, a_sm, a_sk,
                  b_buf, b_off, b_sb0, b_sb1, b_sk, b_sn,
                  out_buf, nb1, M, N, K, t0, t1):
    """Batch entries t0 <= t < t1 of ``bmm`` (flattened over (nb0, nb1)) when M < MR.

    With fewer than 8 rows the register tile would be mostly padding (attention's context
    (B, 1, S) @ (B, S, C) has one row per entry), so each row of C is computed on its own, with
    the loop order that reads B contiguously:

    - rows of B contiguous (b_sn == 1):  C[i, :] = sum_p A[i, p] * B[p, :]    (axpy per p)
    - columns of B contiguous (b_sk == 1, a transposed B like K^T) and A's rows contiguous:
                                          C[i, j] = dot(A[i, :], B[:, j])      (one dot per j)
    - anything else: the plain triple loop.
    """
    A = as_array(a_buf)
    B = as_array(b_buf)
    C = as_array(out_buf)
    for t in range(t0, t1):
        i0 = t // nb1
        i1 = t - i0 * nb1
        a_base = a_off + i0 * a_sb0 + i1 * a_sb1
        b_base = b_off + i0 * b_sb0 + i1 * b_sb1
        for i in range(M):
            c_row = C[(t * M + i) * N:(t * M + i + 1) * N]
            if b_sn == 1:
                for j in range(N):
                    c_row[j] = 0.0
                for p in range(K):
                    a_ip = A[a_base + i * a_sm + p * a_sk]
                    b_row = B[b_base + p * b_sk:b_base + p * b_sk + N]
                    for j in range(N):
                        c_row[j] += a_ip * b_row[j]
            elif b_sk == 1 and a_sk == 1:
                a_row = A[a_base + i * a_sm:a_base + i * a_sm + K]
                for j in range(N):
                    b_col = B[b_base + j * b_sn:b_base + j * b_sn + K]
                    s = 0.0
                    for p in range(K):
                        s += a_row[p] * b_col[p]
                    c_row[j] = s
            else:
                for j in range(N):
                    s = 0.0
                    for p in range(K):
                        s += A[a_base + i * a_sm + p * a_sk] * B[b_base + p * b_sk + j * b_sn]
                    c_row[j] = s


_few_rows = by_typecode(_bmm_few_rows, "T i i i i i T i i i i i T i i i i i i")


# ---------------------------------------------------------------------------------------------
# Compiled entry points
# ---------------------------------------------------------------------------------------------

_compiled = {}          # typecode -> _bmm_blocked's machine code, once compiled (or loaded)
_compile_lock = threading.Lock()

# _bmm_blocked's machine code per typecode, called without numba's argument dispatch (its 21
# arguments cost ~1 us to dispatch, as much as a small matmul): see jit.by_typecode.
_blocked = by_typecode(_bmm_blocked, "T i i i i i T i i i i i T i i i i i i i i T")


def ensure_compiled(typecode):
    """Compile (or load from cache) the kernels for typecode ``'f'`` or ``'d'``. ``bmm`` calls it on
    first use; call it earlier to move the compile time out of a timed region."""
    if typecode in _compiled:
        return
    with _compile_lock:
        if typecode in _compiled:
            return
        _compiled[typecode] = _blocked[typecode]  # compiles, or loads from the disk cache


# ---------------------------------------------------------------------------------------------
# Scratch buffers and the public entry point
# ---------------------------------------------------------------------------------------------

_local = threading.local()


def _scratch(typecode):
    """This thread's scratch buffer for ``typecode`` (allocated once per thread and dtype: a small
    matmul allocates nothing)."""
    try:
        return _local.f if typecode == "f" else _local.d
    except AttributeError:
        buf = array.array(typecode, bytes(SCRATCH_SIZE * array.array(typecode).itemsize))
        setattr(_local, typecode, buf)
        return buf


# For ops whose kernels call the blocked product from compiled code (kernels/rnn.py's sequences)
scratch = _scratch


# Below this many multiply-adds (nb0*nb1*M*N*K) a float32 product on 512-bit vectors runs on
# one thread: handing work to the spinning worker and collecting it costs a few us (threads.py).
# Measured, one thread vs two (fp32, 2-core AMD EPYC Zen 3): 96^3 (0.9M) 20 vs 18 us, 128^3
# (2.1M) 42 vs 32 us, 160^3 (4.1M) 79 vs 51 us, 128 x (32x16)@(16x32) (2.1M) 58 vs 44 us.
PARALLEL_MIN_WORK = 1 << 20

# What makes a split pay is the time a product takes, and a core does one multiply-add per
# vector lane per FMA: with half the lanes (float64, or 256-bit AVX2 vectors) the same time is
# half the work. So the threshold is PARALLEL_MIN_WORK * _LANES[typecode] >> 4: 1M float32 and
# 512K float64 multiply-adds on AVX-512, 512K and 256K on AVX2. Measured on the Zen 5 compiled for
# Haswell (AVX2): the GRU seq2seq step of benchmarks/run.py with its products split from 512K
# multiply-adds instead of 1M, 8.04 instead of 8.29 ms (medians of ten alternating rounds); its
# (64x64) @ (64x192) (786K) took 13.0 us on two threads, 15.3 on one.
_LANES = {tc: vector_isa()[1] // (8 * array.array(tc).itemsize) for tc in "fd"}


def parallel_min_work(typecode):
    """The multiply-adds from which a product of this typecode is split over the threads."""
    return PARALLEL_MIN_WORK * _LANES[typecode] >> 4

# A matrix shared by threads may be split by columns when each thread gets at least this many
# of them (see _bmm_threaded).
SPLIT_COLUMNS_MIN = 64


def bmm_fast(a, a_off, a_sb0, a_sb1, a_sm, a_sk,
             b, b_off, b_sb0, b_sb1, b_sk, b_sn,
             out, nb0, nb1, M, N, K):
    """out[i0, i1] = a[i0, i1] @ b[i0, i1] for a (nb0, nb1, M, K) and b (nb0, nb1, K, N) strided
    views into flat buffers (element strides, any of them may be 0 for broadcast, a or b may be
    transposed views, i.e. a_sk != 1 or b_sn != 1), out a fresh contiguous (nb0, nb1, M, N) buffer.

    Element (i, p) of matrix (i0, i1) of ``a`` is ``a[a_off + i0*a_sb0 + i1*a_sb1 + i*a_sm + p*a_sk]``;
    likewise ``b[b_off + i0*b_sb0 + i1*b_sb1 + p*b_sk + j*b_sn]``; ``out[((i0*nb1 + i1)*M + i)*N + j]``.

    The caller has validated everything: ``a``, ``b``, ``out`` are ``array.array`` of one typecode
    (``'f'`` or ``'d'``), offsets and strides are non-negative and every addressed element is inside
    its buffer, ``len(out) >= nb0*nb1*M*N``, and ``out`` shares no memory with ``a`` or ``b``. Nothing
    is checked here (numba does not bounds-check: a wrong stride reads or writes out of bounds).
    ``out`` is overwritten (its old contents are ignored); K == 0 gives zeros. Returns nothing.
    """
    typecode = a.typecode
    nbatch = nb0 * nb1
    if nbatch == 0 or M == 0 or N == 0:
        return
    if M < MR:  # vector-matrix products: no tiles (see _bmm_few_rows)
        kern = _few_rows[typecode]
        if nbatch * M * N * K < PARALLEL_MIN_WORK * _LANES[typecode] >> 4:
            kern(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
                 out, nb1, M, N, K, 0, nbatch)
        else:
            _few_rows_threaded(kern, (a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0,
                                      b_sb1, b_sk, b_sn, out, nb1, M, N, K), nbatch)
        return
    kern = _compiled.get(typecode)
    if kern is None:
        ensure_compiled(typecode)
        kern = _compiled[typecode]
    if (nbatch * M * N * K < PARALLEL_MIN_WORK * _LANES[typecode] >> 4
            or threads.num_threads() == 1):
        kern(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
             out, nb1, M, N, K, M, N, 0, nbatch, _scratch(typecode))
        return
    _bmm_threaded(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
                  out, nbatch, nb1, M, N, K)


def mm_fast(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K):
    """out (M, N) = a (M, K) @ b (K, N): ``bmm_fast`` of one matrix, with the same contract
    (a[a_off + i*a_sm + p*a_sk], b[b_off + p*b_sk + j*b_sn], out contiguous).

    The product of x @ W and of Linear, made hundreds of times per training step. A small one
    (one thread) goes straight to its compiled kernel, without bmm_fast's batch arguments: a
    4 x 4 product 1.19 instead of 1.41 us, all of it call overhead (Zen 5)."""
    typecode = a.typecode
    if M * N * K < PARALLEL_MIN_WORK * _LANES[typecode] >> 4 and M and N:
        if M < MR:
            _few_rows[typecode](a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn,
                                out, 1, M, N, K, 0, 1)
            return
        kern = _compiled.get(typecode)
        if kern is not None:
            kern(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn,
                 out, 1, M, N, K, M, N, 0, 1, _scratch(typecode))
            return
    bmm_fast(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn, out, 1, 1, M, N, K)


def mm_pair_reference(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K,
                      c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2):
    """out (M, N) = a @ b and out2 (M2, N2) = c @ d: ``mm`` twice, one after the other."""
    mm_reference(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K)
    mm_reference(c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2)


def mm_pair_fast(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K,
                 c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2):
    """out = a @ b and out2 = c @ d, two independent products with ``mm``'s contract, each
    whole on its own core, with one hand-off: the gradients of a layer's input and weights
    (g W and g^T x: the same number of multiply-adds). Where that does not pay (one thread,
    little work, a vector-matrix product, or one product more than twice the other) they run
    one after the other, each split on its own if it is big enough."""
    typecode = a.typecode
    w1, w2 = M * N * K, M2 * N2 * K2
    kern = _compiled.get(typecode)
    if (kern is None or w1 + w2 < PARALLEL_MIN_WORK * _LANES[typecode] >> 4
            or min(M, M2) < MR or 2 * min(w1, w2) < max(w1, w2) or threads.num_threads() == 1):
        mm_fast(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K)
        mm_fast(c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2)
        return

    def first(u0, u1):
        kern(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn,
             out, 1, M, N, K, M, N, 0, 1, _scratch(typecode))

    def second(u0, u1):
        kern(c, c_off, 0, 0, c_sm, c_sk, d, d_off, 0, 0, d_sk, d_sn,
             out2, 1, M2, N2, K2, M2, N2, 0, 1, _scratch(typecode))

    job = (_RUN_BLOCKS[typecode], _post[typecode],
           (c, c_off, 0, 0, c_sm, c_sk, d, d_off, 0, 0, d_sk, d_sn,
            out2, 1, M2, N2, K2, M2, N2, _worker_scratch(typecode)))
    threads.run_two(first, second, job)


def _few_rows_threaded(kern, args, nbatch):
    # A function of its own: a lambda inside bmm would turn all of bmm's arguments into closure
    # cells, which costs every call (~1 us), threaded or not.
    threads.parallel_for(lambda t0, t1: kern(*args, t0, t1), nbatch)


def _bmm_threaded(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
                  out, nbatch, nb1, M, N, K):
    # Cut each matrix into as few blocks as give every thread the same share: with 2 threads an
    # even batch is split by whole matrices, an odd one (a single matrix too) by halves. In a
    # long batch one matrix more or less per thread hardly matters: whole matrices.
    # Halves by rows or by columns: each block packs its own copy of the part of B it uses, so
    # halves by rows pack all of B twice, halves by columns each half of it once. Columns, then,
    # where each half would pack (a transposed B, or enough rows) and C has enough columns.
    # Measured on the Zen 3 in one process, alternating (fp32, 2 threads): square 256 / 512 /
    # 1024 8 / 5 / 12% faster than halves by rows, (64 x 160) @ (160 x 192)^T 17%.
    n_threads = threads.num_threads()
    if nbatch >= 8 * n_threads:
        blocks_per_matrix = 1
    else:
        blocks_per_matrix = n_threads // math.gcd(nbatch, n_threads)
    rows_per_unit, cols_per_unit = M, N
    if blocks_per_matrix > 1:
        rows = -(-M // blocks_per_matrix)           # a block's rows, if split by rows
        packs_b = b_sn != 1 or rows >= PACK_B_MIN_ROWS
        if packs_b and N >= SPLIT_COLUMNS_MIN * blocks_per_matrix:
            # multiples of a tile's columns, so that only the last block of a row has a
            # narrow tile
            cols = -(-N // blocks_per_matrix)
            tw = TILE_COLS[a.typecode]
            cols_per_unit = -(-cols // tw) * tw
        else:
            # multiples of MR, so that only the last block of a matrix has a short strip
            rows_per_unit = -(-rows // MR) * MR
    units = nbatch * (-(-M // rows_per_unit)) * (-(-N // cols_per_unit))
    typecode = a.typecode

    kern = _compiled[typecode]

    def run(u0, u1):
        kern(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
             out, nb1, M, N, K, rows_per_unit, cols_per_unit, u0, u1, _scratch(typecode))

    # The workers' blocks as numbers (kernels/jobs.py): a spinning worker runs them without
    # taking the GIL.
    job = (_RUN_BLOCKS[typecode], _post[typecode],
           (a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
            out, nb1, M, N, K, rows_per_unit, cols_per_unit, _worker_scratch(typecode)))
    threads.parallel_for(run, units, job=job)


# ---------------------------------------------------------------------------------------------
# A worker's blocks as numbers: threads.py hands them to a spinning worker, which runs them in
# its compiled spin loop (kernels/jobs.py) without the GIL.
# ---------------------------------------------------------------------------------------------

_pool_scratch = {}      # typecode -> one scratch buffer per worker, side by side


def _worker_scratch(typecode):
    """SCRATCH_SIZE elements per worker thread (the caller's block uses its own _scratch)."""
    need = SCRATCH_SIZE * max(1, threads.num_threads() - 1)
    buf = _pool_scratch.get(typecode)
    if buf is None or len(buf) < need:
        buf = _pool_scratch[typecode] = array.array(
            typecode, bytes(need * array.array(typecode).itemsize))
    return buf


@inline
def _put_operand(jobs, i, buf, off, s0, s1, s2, s3):
    """jobs[i:i + 7] = an operand of _bmm_blocked: its buffer (address, length), offset, strides."""
    jobs[i] = address(buf, 0)
    jobs[i + 1] = len(buf)
    jobs[i + 2] = off
    jobs[i + 3] = s0
    jobs[i + 4] = s1
    jobs[i + 5] = s2
    jobs[i + 6] = s3


@cached()
def _post_blocks(jobs, at, worker, u0, u1, a_buf, a_off, a_sb0, a_sb1, a_sm, a_sk,
                 b_buf, b_off, b_sb0, b_sb1, b_sk, b_sn, out_buf, nb1, M, N, K,
                 rows_per_unit, cols_per_unit, scratch_buf):
    """Write the arguments of _bmm_blocked(..., u0, u1) for worker ``worker`` into jobs[at + 1:
    at + 27]: a buffer as its address and length, the worker's scratch as its part of
    scratch_buf. Holds the GIL (no nogil): it takes less time than releasing it would."""
    _put_operand(jobs, at + 1, a_buf, a_off, a_sb0, a_sb1, a_sm, a_sk)
    _put_operand(jobs, at + 8, b_buf, b_off, b_sb0, b_sb1, b_sk, b_sn)
    jobs[at + 15] = address(out_buf, 0)
    jobs[at + 16] = len(out_buf)
    jobs[at + 17] = nb1
    jobs[at + 18] = M
    jobs[at + 19] = N
    jobs[at + 20] = K
    jobs[at + 21] = rows_per_unit
    jobs[at + 22] = cols_per_unit
    jobs[at + 23] = u0
    jobs[at + 24] = u1
    jobs[at + 25] = address(scratch_buf, worker * SCRATCH_SIZE)
    jobs[at + 26] = SCRATCH_SIZE


@inline
def _run_from_words(jobs, at, dtype):
    _bmm_blocked(buffer_at(jobs[at + 1], jobs[at + 2], dtype), jobs[at + 3], jobs[at + 4],
                 jobs[at + 5], jobs[at + 6], jobs[at + 7],
                 buffer_at(jobs[at + 8], jobs[at + 9], dtype), jobs[at + 10], jobs[at + 11],
                 jobs[at + 12], jobs[at + 13], jobs[at + 14],
                 buffer_at(jobs[at + 15], jobs[at + 16], dtype), jobs[at + 17], jobs[at + 18],
                 jobs[at + 19], jobs[at + 20], jobs[at + 21], jobs[at + 22], jobs[at + 23],
                 jobs[at + 24], buffer_at(jobs[at + 25], jobs[at + 26], dtype))


@kernel
def _run_blocks_f(jobs, at):
    """Run the float32 blocks that _post_blocks wrote at jobs[at + 1:]."""
    _run_from_words(jobs, at, numba.float32)


@kernel
def _run_blocks_d(jobs, at):
    """Run the float64 blocks that _post_blocks wrote at jobs[at + 1:]."""
    _run_from_words(jobs, at, numba.float64)


_RUN_BLOCKS = {"f": _run_blocks_f, "d": _run_blocks_d}
# _post_blocks' machine code per typecode, without numba's dispatch: 0.34 instead of 0.90 us
_post = by_typecode(_post_blocks, "@q i i i i T i i i i i T i i i i i T i i i i i i T")


# The interface (kernels/tiers.py): ops call `bmm` (and `mm` for one matrix), bound to the plain
# triple loop or the blocked kernel above.
register(globals(), reference={"bmm": bmm_reference, "mm": mm_reference,
                               "mm_pair": mm_pair_reference},
         fast={"bmm": bmm_fast, "mm": mm_fast, "mm_pair": mm_pair_fast})
