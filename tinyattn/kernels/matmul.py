"""Matrix products over strided views of flat buffers: a batch (bmm), one (mm), two (mm_pair).

    out[i0, i1] = a[i0, i1] @ b[i0, i1]          out[i, j] = sum over p < K of a[i, p] * b[p, j]

for a batch of (M, K) @ (K, N) matrices indexed by (i0, i1) < (nb0, nb1): two batch dims cover
attention's (B, H, T, d) head-split views. Each operand is a buffer, an offset and one stride per
dim, so a transposed view (K^T in Q @ K^T: b_sn != 1) or a broadcast one (stride 0) is read where
it lies, with no copy:

    a[i0, i1, i, p] = a[a_off + i0*a_sb0 + i1*a_sb1 + i*a_sm + p*a_sk]
    b[i0, i1, p, j] = b[b_off + i0*b_sb0 + i1*b_sb1 + p*b_sk + j*b_sn]
    out[i0, i1, i, j] = out[((i0*nb1 + i1)*M + i)*N + j]        (contiguous, overwritten)

The sums are accumulated in float64, also for float32 buffers, and rounded once when stored: of
all the orders a sum can be added in, this one errs least, and the tests use it as the oracle
for the fast backend's float32 sums. K == 0 gives zeros. The caller has checked every index.
"""
from . import kernel

__all__ = ["bmm", "mm", "mm_pair"]


@kernel
def bmm(a, a_off, a_sb0, a_sb1, a_sm, a_sk, b, b_off, b_sb0, b_sb1, b_sk, b_sn,
        out, nb0, nb1, M, N, K):
    """out[i0, i1] = a[i0, i1] @ b[i0, i1] for a (nb0, nb1, M, K) and b (nb0, nb1, K, N)."""
    for i0 in range(nb0):
        for i1 in range(nb1):
            a_base = a_off + i0 * a_sb0 + i1 * a_sb1
            b_base = b_off + i0 * b_sb0 + i1 * b_sb1
            o_base = (i0 * nb1 + i1) * M * N
            for i in range(M):
                for j in range(N):
                    s = 0.0
                    for p in range(K):
                        s += (float(a[a_base + i * a_sm + p * a_sk])
                              * float(b[b_base + p * b_sk + j * b_sn]))
                    out[o_base + i * N + j] = s


@kernel
def mm(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K):
    """out (M, N) = a (M, K) @ b (K, N): a batch of one matrix (x @ W, Linear)."""
    bmm(a, a_off, 0, 0, a_sm, a_sk, b, b_off, 0, 0, b_sk, b_sn, out, 1, 1, M, N, K)


@kernel
def mm_pair(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K,
            c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2):
    """out (M, N) = a @ b and out2 (M2, N2) = c @ d: two independent products (a backward's
    gradients of a layer's input and of its weights), one after the other. The fast backend
    runs them one on each core."""
    mm(a, a_off, a_sm, a_sk, b, b_off, b_sk, b_sn, out, M, N, K)
    mm(c, c_off, c_sm, c_sk, d, d_off, d_sk, d_sn, out2, M2, N2, K2)
