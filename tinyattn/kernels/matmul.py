"""Batched matrix multiply (placeholder reference kernel; the tiled kernel replaces it)."""
from .jit import kernel


@kernel
def bmm(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn, out, nb0, nb1, M, N, K):
    o = 0
    for i0 in range(nb0):
        for i1 in range(nb1):
            pa = a_off + i0 * a_sb0 + i1 * a_sb1
            pb = b_off + i0 * b_sb0 + i1 * b_sb1
            for m in range(M):
                for n in range(N):
                    s = 0.0
                    for k in range(K):
                        s += a[pa + m * a_sm + k * a_sk] * b[pb + k * b_sk + n * b_sn]
                    out[o] = s
                    o += 1
