"""Matrix products, fast: kernels/matmul.py's three functions, blocked, vectorised, threaded.

``bmm`` computes ``out[i0, i1] = a[i0, i1] @ b[i0, i1]`` for strided views ``a`` (nb0, nb1, M, K) and
``b`` (nb0, nb1, K, N), laid out as kernels/matmul.py says: transposed views (``K^T``) and
broadcast operands (stride 0) need no copy.

How it is fast, from the inside out (the same plan as GotoBLAS/BLIS, in numba):

1. Register tile (``micro_kernel``, 8 x 16). The naive loop ``c[i, j] += a[i, p] * b[p, j]`` does
   two loads and a store per multiply-add and runs at memory speed. The micro-kernel keeps an
   8 x 16 block of C in registers for a whole run over p: each step loads one 16-wide row of B
   and broadcasts 8 scalars of A, and does 8 x 16 multiply-adds as 8 vector FMAs. Then
   arithmetic, not memory, is the limit. Why 8 rows: an FMA takes 4 cycles and a core starts 2
   per cycle, so >= 8 independent accumulators keep it busy; why 16 columns: one 512-bit vector,
   and attention's head sizes (16, 32, 64) are multiples of it. The vectors are explicit
   (``simd.py``'s 16-lane type, ``_microkernel.py``), so the code is vector code on every CPU,
   whatever LLVM's vectoriser would have made of scalar code; on one with fewer registers (AVX2:
   16 of 256 bits) the tile runs as 2 passes of 4 rows, so that the accumulators never spill.
   Where 16 accumulators fit (float32 on AVX-512), a tile takes two strips of B, 8 x 32, so that
   each broadcast of A feeds two FMAs (``simd.strips_per_tile``).
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
   which the cores share through ``threads.parallel_for``; each thread has its own scratch
   buffer. A worker runs its units from numbers, without the GIL (jobs.py; the runners at the
   end of this file). ``mm_pair`` runs a backward's two products one on each core.
5. Fewer rows than a tile (M < 8, e.g. attention's context (B, 1, S) @ (B, S, C)): the tile would
   be mostly padding, so ``_bmm_few_rows`` computes each row on its own, reading B in whichever
   order is contiguous.

Numerics: fp32 products are accumulated in fp32 in k order (with fused multiply-adds), as BLAS does;
the error grows with K (roughly K * 2^-24 relative to sum |a||b|); the reference ``bmm`` accumulates
in fp64. Speed: ``benchmarks/run.py --only matmul``; figures per CPU: benchmarks/RESULTS.md.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""

import array
import math
import threading

import numba
from numba import njit

from . import jobs, threads
from .buffers import address, as_array, buffer_at, load, store
from .jit import by_typecode, cached, inline, kernel, vector_kernel
from .simd import (l2_cache_bytes, strips_per_tile, transpose16, vector_isa, vload, vload_rows,
                   vstore, vstore_rows)
from ._microkernel import MR, NR, micro_kernel, tile_strips

__all__ = ["bmm", "mm", "mm_pair"]


# ---------------------------------------------------------------------------------------------
# The micro-kernel: one MR x NR tile of C
# ---------------------------------------------------------------------------------------------

# The tile: micro_kernel is vector code for compiled callers (an overload) and plain loops when
# interpreted, as fast there and far easier to step through. _micro_loops: its loops, compiled.
_micro = micro_kernel
_micro_loops = njit(nogil=True)(micro_kernel)


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
        # vectorise: LLVM cannot know that b_sn is 1. Measured: benchmarks/RESULTS.md,
        # fast/matmul.py: _pack_b_strip.)
        for p in range(kc):
            vstore(dst, d_pos + p * NR, vload(b, b_pos + p * b_sk))
        return
    start = 0
    if b_sk == 1 and cols == NR:
        # A full strip of a transposed B (K^T): its 16 columns are 16 contiguous runs of b.
        # Blocks of 16 x 16 are loaded as rows and stored as their columns (simd.transpose16),
        # a third of the time per element of the strided loads below.
        start = kc - kc % 16
        for p0 in range(0, start, 16):
            vstore_rows(dst, d_pos + p0 * NR, NR, transpose16(vload_rows(b, b_pos + p0, b_sn)))
    # One output row (16 elements) at a time; for a transposed B the 16 loads are strided, which
    # measured faster than walking down B's contiguous columns and scattering stores.
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
# panel fills a quarter of it in fp32 (at most 512 columns): NC = 256 with 1 MiB of L2, 128 with
# 512 KiB. A panel of all of L2 is evicted by A and C; a quarter of it was faster than half
# (benchmarks/RESULTS.md, fast/matmul.py: NC). MC only bounds how many rows share one pass over
# that panel before we move to the next piece of K. MC is a multiple of MR, NC of a wide tile's
# 2 * NR columns.
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

# _bmm_blocked's machine code per typecode, called without numba's argument dispatch (for its
# 21 arguments that costs as much as a small matmul): see jit.by_typecode.
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
# Scratch buffers, and when to use the threads
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


# Below this many multiply-adds (nb0*nb1*M*N*K) a float32 product on 512-bit vectors runs on
# one thread: handing work to the spinning worker and collecting it costs a few microseconds
# (threads.py), which a smaller product does not win back (benchmarks/RESULTS.md,
# fast/matmul.py: PARALLEL_MIN_WORK).
PARALLEL_MIN_WORK = 1 << 20

# What makes a split pay is the time a product takes, and a core does one multiply-add per
# vector lane per FMA: with half the lanes (float64, or 256-bit AVX2 vectors) the same time is
# half the work. So the threshold is PARALLEL_MIN_WORK * _LANES[typecode] >> 4: 1M float32 and
# 512K float64 multiply-adds on AVX-512, 512K and 256K on AVX2 (benchmarks/RESULTS.md,
# fast/matmul.py: _LANES).
_LANES = {tc: vector_isa()[1] // (8 * array.array(tc).itemsize) for tc in "fd"}


def parallel_min_work(typecode):
    """The multiply-adds from which a product of this typecode is split over the threads."""
    return PARALLEL_MIN_WORK * _LANES[typecode] >> 4


# A matrix shared by threads may be split by columns when each thread gets at least this many
# of them (see _bmm_threaded).
SPLIT_COLUMNS_MIN = 64


# ---------------------------------------------------------------------------------------------
# The interface: bmm, mm and mm_pair of kernels/matmul.py
# ---------------------------------------------------------------------------------------------

def bmm(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
        out, nb0, nb1, M, N, K):
    """out[i0, i1] = a[i0, i1] @ b[i0, i1], with the layout and contract of kernels/matmul.py's
    bmm (out overwritten, K == 0 gives zeros; nothing is checked: numba does not bounds-check).
    On one core, or cut into units that the cores share (_bmm_threaded)."""
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


def mm(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K):
    """out (M, N) = a (M, K) @ b (K, N): ``bmm`` of one matrix, with the same contract
    (a[a_off + i*a_sm + p*a_sk], b[b_off + p*b_sk + j*b_sn], out contiguous).

    The product of x @ W and of Linear, made hundreds of times per training step. A small one
    (one thread) goes straight to its compiled kernel, without bmm's batch arguments: for a
    4 x 4 product, call overhead is nearly all the time (benchmarks/RESULTS.md, fast/matmul.py:
    mm)."""
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
    bmm(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn, out, 1, 1, M, N, K)


def mm_pair(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K,
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
        mm(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K)
        mm(c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2)
        return

    def first(u0, u1):
        kern(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn,
             out, 1, M, N, K, M, N, 0, 1, _scratch(typecode))

    def second(u0, u1):
        kern(c, c_off, 0, 0, c_sm, c_sk, d, d_off, 0, 0, d_sk, d_sn,
             out2, 1, M2, N2, K2, M2, N2, 0, 1, _scratch(typecode))

    job = (_KIND[typecode], _post[typecode],
           (c, c_off, 0, 0, c_sm, c_sk, d, d_off, 0, 0, d_sk, d_sn,
            out2, 1, M2, N2, K2, M2, N2, _worker_scratch(typecode)))
    threads.run_two(first, second, job)


def _few_rows_threaded(kern, args, nbatch):
    # A function of its own: a lambda inside bmm would turn all of bmm's arguments into closure
    # cells, which costs every call, threaded or not.
    threads.parallel_for(lambda t0, t1: kern(*args, t0, t1), nbatch)


def _bmm_threaded(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
                  out, nbatch, nb1, M, N, K):
    # Cut each matrix into as few blocks as give every thread the same share: with 2 threads an
    # even batch is split by whole matrices, an odd one (a single matrix too) by halves. In a
    # long batch one matrix more or less per thread hardly matters: whole matrices.
    # Halves by rows or by columns: each block packs its own copy of the part of B it uses, so
    # halves by rows pack all of B twice, halves by columns each half of it once. Columns, then,
    # where each half would pack (a transposed B, or enough rows) and C has enough columns
    # (benchmarks/RESULTS.md, fast/matmul.py: SPLIT_COLUMNS_MIN).
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

    # The workers' blocks as numbers (jobs.py): a spinning worker runs them without taking the
    # GIL.
    job = (_KIND[typecode], _post[typecode],
           (a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
            out, nb1, M, N, K, rows_per_unit, cols_per_unit, _worker_scratch(typecode)))
    threads.parallel_for(run, units, job=job)


# ---------------------------------------------------------------------------------------------
# A worker's blocks as numbers: threads.py hands them to a spinning worker, whose compiled spin
# loop (jobs.py) runs them, through the runners registered below, without the GIL.
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


_WORDS = 27     # a job's words: jobs.py's runner word, then the 26 that _post_blocks writes


@inline
def _run_from_words(w, dtype):
    _bmm_blocked(buffer_at(w[1], w[2], dtype), w[3], w[4], w[5], w[6], w[7],
                 buffer_at(w[8], w[9], dtype), w[10], w[11], w[12], w[13], w[14],
                 buffer_at(w[15], w[16], dtype), w[17], w[18], w[19], w[20], w[21], w[22],
                 w[23], w[24], buffer_at(w[25], w[26], dtype))


@kernel
def _run_blocks_f(words):
    """Run the float32 blocks whose arguments _post_blocks wrote at the address `words`."""
    _run_from_words(buffer_at(words, _WORDS, numba.int64), numba.float32)


@kernel
def _run_blocks_d(words):
    """Run the float64 blocks whose arguments _post_blocks wrote at the address `words`."""
    _run_from_words(buffer_at(words, _WORDS, numba.int64), numba.float64)


# The kinds of job a worker runs from numbers (threads.parallel_for's `job`), by typecode
_KIND = {"f": jobs.register(_run_blocks_f), "d": jobs.register(_run_blocks_d)}
# _post_blocks' machine code per typecode, without numba's dispatch (jit.by_typecode): paid
# per hand-off
_post = by_typecode(_post_blocks, "@q i i i i T i i i i i T i i i i i T i i i i i i T")
