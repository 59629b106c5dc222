"""Explicit vector code: a 16-lane vector type for numba, and the few operations the matmul
micro-kernel needs, each one LLVM instruction.

Why: a tile written as 128 scalar variables leaves it to LLVM's SLP vectoriser to pack them into
vector registers, and whether it does depends on the CPU LLVM tunes for: on some it does, on
others most of the tile stays scalar and the same kernel runs at a fraction of the speed
(benchmarks/RESULTS.md, fast/simd.py: Vec16). Here the vector is a type of its own, ``Vec16``
(LLVM's ``<16 x float>`` or ``<16 x double>``), so the code is vector code on every CPU:

    vload(arr, i)        arr[i:i+16] as one vector              (one load)
    vstore(arr, i, v)    arr[i:i+16] = v                        (one store)
    vsplat(arr, i)       (arr[i], arr[i], ..., arr[i])          (one broadcast load)
    vzeros(arr)          the zero vector of arr's dtype
    vfma(a, b, c)        a * b + c, lane by lane                (``llvm.fmuladd``: one FMA where
                                                                 the CPU has it)
    vadd(a, b)           a + b, lane by lane                    (one add)
    vshuffle(x, y, k)    16 of the 32 lanes of x and y, picked by the constant pattern
                         SHUFFLES[k]                            (one ``shufflevector``)

and one that moves no data into registers:

    prefetch(arr, i)     ask the cache for arr[i]'s line, to be written soon
                         (``llvm.prefetch``: ``prefetchw`` where the CPU has it, else
                         ``prefetcht0``; a no-op interpreted)

``transpose16`` turns 16 such vectors (rows) into their 16 columns with 64 shuffles; packing a
transposed matrix (``K^T`` in ``Q @ K^T``) uses it, with ``vload_rows`` / ``vstore_rows`` (16
rows at a stride).

LLVM splits a 16-lane vector into what the CPU has: one 512-bit register (AVX-512, float32), two
256-bit ones (AVX2), four 128-bit ones (SSE, NEON on arm64). ``rows_per_pass`` turns that into
how many rows of the tile fit in the registers at once, and ``strips_per_tile`` whether a tile
can take two 16-wide strips of B (``vector_isa`` names what numba targets).

Interpreted (``NUMBA_DISABLE_JIT=1``) these are plain Python on lists, so the kernels that use them
still run and can be stepped through.
"""
import glob
import platform
import subprocess

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

LANES = 16

__all__ = ["LANES", "vload", "vstore", "vsplat", "vzeros", "vfma", "vadd", "prefetch", "vshuffle",
           "transpose16", "vload_rows", "vstore_rows",
           "vector_isa", "rows_per_pass", "strips_per_tile", "l2_cache_bytes"]


# --------------------------------------------------------------------------- the target


def _features():
    """The CPU features numba compiles for: NUMBA_CPU_FEATURES when set (benchmarks/run.py
    --isa avx2 sets it), else the host's."""
    if numba.config.CPU_FEATURES:
        return {f[1:] for f in numba.config.CPU_FEATURES.split(",") if f.startswith("+")}
    return {name for name, on in llvm.get_host_cpu_features().items() if on}


def vector_isa():
    """(name, vector bits, vector registers) of the target: ('avx512', 512, 32), ('avx2', 256,
    16), ('neon', 128, 32) or ('sse', 128, 16)."""
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "neon", 128, 32
    feats = _features()
    if "avx512f" in feats:
        return "avx512", 512, 32
    if "avx2" in feats or "avx" in feats:
        return "avx2" if "avx2" in feats else "avx", 256, 16
    return "sse", 128, 16


def l2_cache_bytes(default=512 * 1024):
    """The size of one core's L2 cache, from Linux's /sys (or macOS's sysctl); `default` where
    neither says. The matmul sizes its panel of B from it."""
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(d + "/level") as f:
                level = f.read().strip()
            with open(d + "/type") as f:
                kind = f.read().strip()
            with open(d + "/size") as f:
                size = f.read().strip().upper()
        except OSError:
            continue
        if level == "2" and kind in ("Unified", "Data") and size:
            scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
            try:
                return int(size.rstrip("KM")) * scale
            except ValueError:
                break
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.l2cachesize"], capture_output=True,
                                 text=True, timeout=5).stdout.strip()
            return int(out) if out else default
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return default


def rows_per_pass(itemsize, isa=None):
    """How many 16-wide rows of C stay in registers during one pass over k: r rows need r
    accumulators of `per_row` registers, plus one row of B and one broadcast element of A."""
    _, bits, regs = isa or vector_isa()
    per_row = max(1, LANES * itemsize * 8 // bits)
    for r in (8, 4, 2, 1):
        if r * per_row + per_row + 1 <= regs:
            return r
    return 1


def strips_per_tile(itemsize, isa=None):
    """How many 16-wide strips of B one tile of the micro-kernel covers: 2 where 8 rows of both
    fit in the registers (16 accumulators, two rows of B, one broadcast element of A: float32 on
    AVX-512), else 1. With two, each broadcast element of A feeds two FMAs: per step 10 loads
    for 16 FMAs instead of 9 for 8, and the loads were the limit (benchmarks/RESULTS.md,
    fast/simd.py: strips_per_tile)."""
    _, bits, regs = isa or vector_isa()
    per_row = max(1, LANES * itemsize * 8 // bits)
    return 2 if 2 * (8 * per_row + per_row) + 1 <= regs else 1


# --------------------------------------------------------------------------- the type


class Vec16(types.Type):
    """16 lanes of a float dtype, held in vector registers."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"Vec16({dtype})")


@register_model(Vec16)
class _Vec16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elem = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elem, LANES))


def _float_array(arr):
    return isinstance(arr, types.Array) and isinstance(arr.dtype, types.Float)


def _vec_pointer(context, builder, arr_type, arr, index):
    ary = context.make_array(arr_type)(context, builder, arr)
    i = context.cast(builder, index[1], index[0], types.intp)
    elem_ptr = builder.gep(ary.data, [i], inbounds=True)
    vec_type = context.get_value_type(Vec16(arr_type.dtype))
    return builder.bitcast(elem_ptr, vec_type.as_pointer()), elem_ptr


# --------------------------------------------------------------------------- the operations
# Each public name is a plain-Python function (what runs interpreted) with a compiled overload.


def vload(arr, i):
    return [arr[i + t] for t in range(LANES)]


def vstore(arr, i, v):
    for t in range(LANES):
        arr[i + t] = v[t]


def vsplat(arr, i):
    return [arr[i]] * LANES


def vzeros(arr):
    return [0.0] * LANES


def vfma(a, b, c):
    return [x * y + z for x, y, z in zip(a, b, c)]


def vadd(a, b):
    return [x + y for x, y in zip(a, b)]


def prefetch(arr, i):
    pass


def vshuffle(x, y, k):
    return [(list(x) + list(y))[i] for i in SHUFFLES[k]]


@intrinsic
def _vload(typingctx, arr, i):
    if not _float_array(arr) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr, _ = _vec_pointer(context, builder, sig.args[0], args[0], (sig.args[1], args[1]))
        return builder.load(ptr, align=sig.args[0].dtype.bitwidth // 8)   # unaligned rows

    return Vec16(arr.dtype)(arr, i), codegen


@intrinsic
def _vstore(typingctx, arr, i, v):
    if not _float_array(arr) or not isinstance(v, Vec16) or v.dtype != arr.dtype:
        return None

    def codegen(context, builder, sig, args):
        ptr, _ = _vec_pointer(context, builder, sig.args[0], args[0], (sig.args[1], args[1]))
        builder.store(args[2], ptr, align=sig.args[0].dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.none(arr, i, v), codegen


@intrinsic
def _vsplat(typingctx, arr, i):
    if not _float_array(arr) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        _, elem_ptr = _vec_pointer(context, builder, sig.args[0], args[0],
                                   (sig.args[1], args[1]))
        x = builder.load(elem_ptr)
        vec_type = context.get_value_type(Vec16(sig.args[0].dtype))
        one = builder.insert_element(ir.Constant(vec_type, ir.Undefined), x,
                                     ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(one, ir.Constant(vec_type, ir.Undefined),
                                      ir.Constant(ir.VectorType(ir.IntType(32), LANES),
                                                  [0] * LANES))

    return Vec16(arr.dtype)(arr, i), codegen


@intrinsic
def _vzeros(typingctx, arr):
    if not _float_array(arr):
        return None

    def codegen(context, builder, sig, args):
        vec_type = context.get_value_type(Vec16(sig.args[0].dtype))
        return ir.Constant(vec_type, [0.0] * LANES)

    return Vec16(arr.dtype)(arr), codegen


@intrinsic
def _vfma(typingctx, a, b, c):
    if not all(isinstance(x, Vec16) for x in (a, b, c)) or not a.dtype == b.dtype == c.dtype:
        return None

    def codegen(context, builder, sig, args):
        vec_type = context.get_value_type(sig.args[0])
        fn = cgutils.get_or_insert_function(builder.module,
                                            ir.FunctionType(vec_type, [vec_type] * 3),
                                            f"llvm.fmuladd.v{LANES}{'f32' if sig.args[0].dtype.bitwidth == 32 else 'f64'}")
        return builder.call(fn, args)

    return a(a, b, c), codegen


@intrinsic
def _vadd(typingctx, a, b):
    if not isinstance(a, Vec16) or a != b:
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])

    return a(a, b), codegen


@intrinsic
def _prefetch(typingctx, arr, i):
    if not _float_array(arr) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        _, elem_ptr = _vec_pointer(context, builder, sig.args[0], args[0], (sig.args[1], args[1]))
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # (address, 1 = for a write, 3 = keep in all cache levels, 1 = data)
        builder.call(fn, [builder.bitcast(elem_ptr, i8p), ir.Constant(i32, 1),
                          ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(arr, i), codegen


@overload(vload)
def _vload_jit(arr, i):
    return lambda arr, i: _vload(arr, i)


@overload(vstore)
def _vstore_jit(arr, i, v):
    return lambda arr, i, v: _vstore(arr, i, v)


@overload(vsplat)
def _vsplat_jit(arr, i):
    return lambda arr, i: _vsplat(arr, i)


@overload(vzeros)
def _vzeros_jit(arr):
    return lambda arr: _vzeros(arr)


@overload(vfma)
def _vfma_jit(a, b, c):
    return lambda a, b, c: _vfma(a, b, c)


@overload(vadd)
def _vadd_jit(a, b):
    return lambda a, b: _vadd(a, b)


@overload(prefetch)
def _prefetch_jit(arr, i):
    return lambda arr, i: _prefetch(arr, i)




# --------------------------------------------------------------------------- shuffles and the transpose
# A lane of a 16-lane vector is 4*q + l: quad q (4 lanes = 128 bits, the unit AVX shuffles within
# and between) and lane l in it. vshuffle(x, y, k) returns (x ++ y)[SHUFFLES[k]]: lanes 0-15 are
# x's, 16-31 y's. Each pattern is one instruction per 256-bit half on AVX2 (or none: HALVES_*
# only renames registers there), one on AVX-512.


def _quad(v, q):
    return list(range(16 * v + 4 * q, 16 * v + 4 * q + 4))


SHUFFLES = [
    [i for q in range(4) for i in (4 * q, 16 + 4 * q, 4 * q + 1, 17 + 4 * q)],          # ZIP32_LO
    [i for q in range(4) for i in (4 * q + 2, 18 + 4 * q, 4 * q + 3, 19 + 4 * q)],      # ZIP32_HI
    [i for q in range(4) for i in (4 * q, 4 * q + 1, 16 + 4 * q, 17 + 4 * q)],          # ZIP64_LO
    [i for q in range(4) for i in (4 * q + 2, 4 * q + 3, 18 + 4 * q, 19 + 4 * q)],      # ZIP64_HI
    _quad(0, 0) + _quad(1, 0) + _quad(0, 2) + _quad(1, 2),                              # QUADS_LO
    _quad(0, 1) + _quad(1, 1) + _quad(0, 3) + _quad(1, 3),                              # QUADS_HI
    _quad(0, 0) + _quad(0, 1) + _quad(1, 0) + _quad(1, 1),                              # HALVES_LO
    _quad(0, 2) + _quad(0, 3) + _quad(1, 2) + _quad(1, 3),                              # HALVES_HI
]
ZIP32_LO, ZIP32_HI, ZIP64_LO, ZIP64_HI, QUADS_LO, QUADS_HI, HALVES_LO, HALVES_HI = range(8)


@intrinsic
def _vshuffle(typingctx, x, y, k):
    if not isinstance(x, Vec16) or x != y or not isinstance(k, types.IntegerLiteral):
        return None
    mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), SHUFFLES[k.literal_value])

    def codegen(context, builder, sig, args):
        return builder.shuffle_vector(args[0], args[1], mask)

    return x(x, y, k), codegen


@overload(vshuffle, prefer_literal=True)
def _vshuffle_jit(x, y, k):
    return lambda x, y, k: _vshuffle(x, y, k)


@njit(inline="always")
def transpose16(r):
    """The columns of the 16 x 16 block whose rows are the 16 vectors of the tuple r:
    out[p][j] = r[j][p]. Four rounds of 16 shuffles, the AVX way:

    1-2. ZIP32 and ZIP64 transpose each 4 x 4 block of quads in place, within rows 4g..4g+3:
         then quad q of s[4g + k] is column 4q + k of those 4 rows;
    3-4. QUADS and HALVES move the quads: column 4q + k is quad q of s[k], s[4 + k], s[8 + k],
         s[12 + k], in that order."""
    r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15 = r
    t0, t1 = vshuffle(r0, r1, ZIP32_LO), vshuffle(r0, r1, ZIP32_HI)
    t2, t3 = vshuffle(r2, r3, ZIP32_LO), vshuffle(r2, r3, ZIP32_HI)
    t4, t5 = vshuffle(r4, r5, ZIP32_LO), vshuffle(r4, r5, ZIP32_HI)
    t6, t7 = vshuffle(r6, r7, ZIP32_LO), vshuffle(r6, r7, ZIP32_HI)
    t8, t9 = vshuffle(r8, r9, ZIP32_LO), vshuffle(r8, r9, ZIP32_HI)
    t10, t11 = vshuffle(r10, r11, ZIP32_LO), vshuffle(r10, r11, ZIP32_HI)
    t12, t13 = vshuffle(r12, r13, ZIP32_LO), vshuffle(r12, r13, ZIP32_HI)
    t14, t15 = vshuffle(r14, r15, ZIP32_LO), vshuffle(r14, r15, ZIP32_HI)
    s0, s1 = vshuffle(t0, t2, ZIP64_LO), vshuffle(t0, t2, ZIP64_HI)
    s2, s3 = vshuffle(t1, t3, ZIP64_LO), vshuffle(t1, t3, ZIP64_HI)
    s4, s5 = vshuffle(t4, t6, ZIP64_LO), vshuffle(t4, t6, ZIP64_HI)
    s6, s7 = vshuffle(t5, t7, ZIP64_LO), vshuffle(t5, t7, ZIP64_HI)
    s8, s9 = vshuffle(t8, t10, ZIP64_LO), vshuffle(t8, t10, ZIP64_HI)
    s10, s11 = vshuffle(t9, t11, ZIP64_LO), vshuffle(t9, t11, ZIP64_HI)
    s12, s13 = vshuffle(t12, t14, ZIP64_LO), vshuffle(t12, t14, ZIP64_HI)
    s14, s15 = vshuffle(t13, t15, ZIP64_LO), vshuffle(t13, t15, ZIP64_HI)
    y0, y1 = vshuffle(s0, s4, QUADS_LO), vshuffle(s0, s4, QUADS_HI)
    y2, y3 = vshuffle(s8, s12, QUADS_LO), vshuffle(s8, s12, QUADS_HI)
    y4, y5 = vshuffle(s1, s5, QUADS_LO), vshuffle(s1, s5, QUADS_HI)
    y6, y7 = vshuffle(s9, s13, QUADS_LO), vshuffle(s9, s13, QUADS_HI)
    y8, y9 = vshuffle(s2, s6, QUADS_LO), vshuffle(s2, s6, QUADS_HI)
    y10, y11 = vshuffle(s10, s14, QUADS_LO), vshuffle(s10, s14, QUADS_HI)
    y12, y13 = vshuffle(s3, s7, QUADS_LO), vshuffle(s3, s7, QUADS_HI)
    y14, y15 = vshuffle(s11, s15, QUADS_LO), vshuffle(s11, s15, QUADS_HI)
    return (vshuffle(y0, y2, HALVES_LO), vshuffle(y4, y6, HALVES_LO),
            vshuffle(y8, y10, HALVES_LO), vshuffle(y12, y14, HALVES_LO),
            vshuffle(y1, y3, HALVES_LO), vshuffle(y5, y7, HALVES_LO),
            vshuffle(y9, y11, HALVES_LO), vshuffle(y13, y15, HALVES_LO),
            vshuffle(y0, y2, HALVES_HI), vshuffle(y4, y6, HALVES_HI),
            vshuffle(y8, y10, HALVES_HI), vshuffle(y12, y14, HALVES_HI),
            vshuffle(y1, y3, HALVES_HI), vshuffle(y5, y7, HALVES_HI),
            vshuffle(y9, y11, HALVES_HI), vshuffle(y13, y15, HALVES_HI))


@njit(inline="always")
def vload_rows(arr, i, step):
    """The 16 vectors arr[i + t*step : i + t*step + 16], t < 16, as a tuple."""
    return (vload(arr, i), vload(arr, i + step), vload(arr, i + 2 * step),
            vload(arr, i + 3 * step), vload(arr, i + 4 * step), vload(arr, i + 5 * step),
            vload(arr, i + 6 * step), vload(arr, i + 7 * step), vload(arr, i + 8 * step),
            vload(arr, i + 9 * step), vload(arr, i + 10 * step), vload(arr, i + 11 * step),
            vload(arr, i + 12 * step), vload(arr, i + 13 * step), vload(arr, i + 14 * step),
            vload(arr, i + 15 * step))


@njit(inline="always")
def vstore_rows(arr, i, step, rows):
    """arr[i + t*step : i + t*step + 16] = rows[t], t < 16."""
    vstore(arr, i, rows[0])
    vstore(arr, i + step, rows[1])
    vstore(arr, i + 2 * step, rows[2])
    vstore(arr, i + 3 * step, rows[3])
    vstore(arr, i + 4 * step, rows[4])
    vstore(arr, i + 5 * step, rows[5])
    vstore(arr, i + 6 * step, rows[6])
    vstore(arr, i + 7 * step, rows[7])
    vstore(arr, i + 8 * step, rows[8])
    vstore(arr, i + 9 * step, rows[9])
    vstore(arr, i + 10 * step, rows[10])
    vstore(arr, i + 11 * step, rows[11])
    vstore(arr, i + 12 * step, rows[12])
    vstore(arr, i + 13 * step, rows[13])
    vstore(arr, i + 14 * step, rows[14])
    vstore(arr, i + 15 * step, rows[15])
