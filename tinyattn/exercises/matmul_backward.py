"""Exercise `matmul_backward` (chapter 2): the two gradients of a matrix product.

Plugged in as MatMul.backward for 2-d products (ops/matmul.py); batched products keep the
library's.
"""
import random

from .. import backend
from .. import dtypes as _dt
from ..autograd_functional import vjp
from ..ops import matmul as _matmul
from ._grader import Failed, call, close, forall, grads, on_reference, randn

NAME = "matmul_backward"
CHAPTER = 2
TITLE = "the gradients of C = A @ B: dA = G B^T, dB = A^T G"
FUNCTIONS = ("matmul_backward",)

SKELETON = '''"""Exercise matmul_backward (tour chapter 2, docs/02-kernels.md section 2.8): the gradients of a matmul.

C = A @ B with A (M, K), B (K, N), C (M, N): C[i, j] = sum_k A[i, k] B[k, j]. Given the upstream
gradient G = dL/dC (M, N):

    dL/dA[i, k] = sum_j G[i, j] B[k, j]        dA = G @ B^T      (M, N) @ (N, K) -> (M, K)
    dL/dB[k, j] = sum_i A[i, k] G[i, j]        dB = A^T @ G      (K, M) @ (M, N) -> (K, N)

Each gradient has its input's shape: let the shapes tell you which side the transpose goes on.
Tensor operations you may use: @, .transpose(0, 1) (or .T, .t()), loops over .tolist() if you
prefer; not autograd itself.
Grade it:  python -m tinyattn.exercises check matmul_backward
"""


def matmul_backward(g, a, b):
    """g (M, N), a (M, K), b (K, N) -> (grad_a (M, K), grad_b (K, N))."""
    # TODO: grad_a from g and b
    # TODO: grad_b from a and g
    raise NotImplementedError("matmul_backward")
'''

HINTS = [
    "Write one element out: C[i, j] = sum_k A[i, k] B[k, j], so dC[i, j]/dA[i, k] = B[k, j]; "
    "sum G[i, j] times that over j.",
    "grad_a must be (M, K): the only product of G (M, N) and B (K, N) with that shape is "
    "G @ B^T.",
    "grad_b must be (K, N): A^T (K, M) @ G (M, N). Transposes are free views.",
]


def reference():
    """MatMul.backward's formulas (ops/matmul.py) for 2-d operands."""
    return {"matmul_backward": lambda g, a, b: (_matmul.matmul(g, b.transpose(0, 1)),
                                                _matmul.matmul(a.transpose(0, 1), g))}


def _autograd(g, a, b):
    """The expected gradients: autograd's vector-Jacobian product through the library's matmul."""
    _, (ga, gb) = vjp(_matmul.matmul, (a, b), g)
    return ga, gb


def plug(ns, compiled=False):
    """MatMul's backward for 2-d products is ns.matmul_backward."""
    library = _matmul.MatMul.backward

    def backward(ctx, g):
        a, b = ctx.inputs
        if a.ndim == 2 and b.ndim == 2:
            return ns.matmul_backward(g, a, b)
        return library(ctx, g)
    return backend.override(_matmul.MatMul, "backward", staticmethod(backward))


HINT = "each gradient has its input's shape: dA = G @ B^T (M, K), dB = A^T @ G (K, N)"


def _compare(ns, g, a, b):
    what = {"g": g, "a": a, "b": b}
    got = call(ns.matmul_backward, g, a, b, what=what, hint=HINT)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Failed("matmul_backward must return a pair (grad_a, grad_b)", input=what, got=got,
                     hint="return grad_a, grad_b")
    want = on_reference(_autograd, g, a, b)
    for name, x, y in (("grad_a", got[0], want[0]), ("grad_b", got[1], want[1])):
        close(x, y, f"matmul_backward: {name}", input=what, hint=HINT)


def check_random(ns):
    def body(rng):
        M, K, N = (rng.randint(1, 4) for _ in range(3))
        dtype = rng.choice((_dt.float32, _dt.float64))
        lay = lambda: rng.choice(("contiguous", "transposed"))  # noqa: E731
        _compare(ns, randn(rng, (M, N), dtype, layout=lay()), randn(rng, (M, K), dtype,
                 layout=lay()), randn(rng, (K, N), dtype, layout=lay()))
    forall(body)


def check_edges(ns):
    rng = random.Random(3)
    for M, K, N in ((1, 1, 1), (1, 5, 1), (3, 1, 2), (2, 0, 3)):
        _compare(ns, randn(rng, (M, N)), randn(rng, (M, K)), randn(rng, (K, N)))


def check_plugged(ns):
    rng = random.Random(4)
    a, b = randn(rng, (3, 2)).requires_grad_(), randn(rng, (2, 4)).requires_grad_()
    with plug(ns):
        grads(lambda a, b: (a @ b).tanh() @ b.transpose(0, 1), (a, b),
              "tanh(a @ b) @ b^T with your backward in the library", hint=HINT)


CHECKS = [
    ("equals autograd's gradients on random (M, K, N), float32/float64, transposed views",
     check_random),
    ("edges: 1x1, an inner dim of 1 and of 0", check_edges),
    ("gradcheck of a two-matmul function with your backward plugged into the library",
     check_plugged),
]

DEMO = None
