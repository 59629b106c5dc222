"""Explicit vector code: a 16-lane vector type for numba, and the few operations the matmul
micro-kernel needs, each one LLVM instruction.

Why: the micro-kernel's 8 x 16 tile was written as 128 scalar variables, and LLVM's SLP vectoriser
was trusted to pack them into vector registers. Whether it does depends on the CPU LLVM tunes for:
on an AMD EPYC with AVX-512 it did; compiled for Haswell (AVX2) or for an Intel Xeon it left most
of the tile scalar, and the same kernel ran 2-3x slower. Here the vector is a type of its own,
``Vec16`` (LLVM's ``<16 x float>`` or ``<16 x double>``), so the code is vector code on every CPU:

    vload(arr, i)        arr[i:i+16] as one vector              (one load)
    vstore(arr, i, v)    arr[i:i+16] = v                        (one store)
    vsplat(arr, i)       (arr[i], arr[i], ..., arr[i])          (one broadcast load)
    vzeros(arr)          the zero vector of arr's dtype
    vfma(a, b, c)        a * b + c, lane by lane                (``llvm.fmuladd``: one FMA where
                                                                 the CPU has it)

LLVM splits a 16-lane vector into what the CPU has: one 512-bit register (AVX-512, float32), two
256-bit ones (AVX2), four 128-bit ones (SSE, NEON on arm64). ``rows_per_pass`` turns that into
how many rows of the tile fit in the registers at once (``vector_isa`` names what numba targets).

Interpreted (``NUMBA_DISABLE_JIT=1``) these are plain Python on lists, so the kernels that use them
still run and can be stepped through.
"""
import platform

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

LANES = 16

__all__ = ["LANES", "vload", "vstore", "vsplat", "vzeros", "vfma", "vector_isa", "rows_per_pass"]


# --------------------------------------------------------------------------- the target


def _features():
    """The CPU features numba compiles for: NUMBA_CPU_FEATURES when set (benchmarks/run.py
    --isa avx2 sets it), else the host's."""
    if numba.config.CPU_FEATURES:
        return {f[1:] for f in numba.config.CPU_FEATURES.split(",") if f.startswith("+")}
    import llvmlite.binding as llvm
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


def rows_per_pass(itemsize, isa=None):
    """How many 16-wide rows of C stay in registers during one pass over k: r rows need r
    accumulators of `per_row` registers, plus one row of B and one broadcast element of A."""
    _, bits, regs = isa or vector_isa()
    per_row = max(1, LANES * itemsize * 8 // bits)
    for r in (8, 4, 2, 1):
        if r * per_row + per_row + 1 <= regs:
            return r
    return 1


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


