"""tinyattn: a small, readable deep-learning library for attention models.

Layers, bottom to top: kernels/ (numba loops on flat buffers) -> ops/ (the differentiable ops, one
file per kernel family) -> tensor.py, autograd.py, creation.py (Tensor, graph, factories) ->
nn/, optim/ -> demos/.
"""
from . import autograd  # first: tensor.py and ops/ build on it
from . import backend  # noqa: F401  (the kernels the ops call: TINYATTN_KERNELS)
from .tensor import Tensor
from ._devices import (BoolTensor, ByteTensor, DoubleTensor, FloatTensor, IntTensor,
                       LongTensor, backends,
                       channels_last, compile, contiguous_format, cuda, device, jit,  # noqa: A004
                       memory_format, onnx, preserve_format)
from .dtypes import (bool, double, dtype, float, float32, float64, int, int32,  # noqa: A004
                     int64, long, uint8)
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .random import Generator, get_rng_state, initial_seed, manual_seed, set_rng_state
from .creation import (arange, empty, empty_like, eye, full, full_like, linspace, ones, ones_like,
                       rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                       zeros_like)
from .ops.arithmetic import (add, arctan2, atan2, clamp, clip, div,  # noqa: A004
                             floor_divide, maximum, minimum, mul, pow, remainder, round, rsub,
                             sign, square, sub)
from .ops.compare import (bitwise_and, bitwise_not, bitwise_or, bitwise_xor, eq, ge, gt, le,
                          logical_and, logical_not, logical_or, logical_xor, lt, masked_fill, ne,
                          where)
from .ops.unary import (abs, arctan, atan, ceil,  # noqa: A004
                        cos, erf, exp, expm1, floor, gelu, isfinite, isinf,
                        isnan, log, log1p, neg, relu, rsqrt, sigmoid, sin, sqrt, tanh, trunc)
from .ops.indexing import gather, index_select, tril, triu, flip
from .ops.layout import (cat, chunk, clone, expand, flatten, narrow, permute, reshape, split,
                         squeeze, stack, t, transpose, unbind, unsqueeze)
from .ops.matmul import bmm, matmul, mm
from .ops.reduce import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min,  # noqa: A004
                         norm, prod, std, sum, var)
from .ops.composite import (addcdiv, addcmul, addmm, allclose, baddbmm, bernoulli, cumprod, diag,
                            diagonal, dot, equal, isclose, lerp, log10, log2, masked_select,
                            movedim, mv, nonzero, outer, repeat_interleave, roll, take_along_dim,
                            tile, trace)
from .ops.layout import expand as broadcast_to
from .ops.einsum import einsum
from .ops.random import multinomial
from .ops.sort import argsort, cumsum, sort, topk
from .ops.scatter import (index_add, index_fill, scatter, scatter_add, scatter_reduce, unique,
                          unique_consecutive)
from .ops.softmax import log_softmax, softmax
from ._parallel import get_num_threads, set_num_threads
from .serialization import load, save

__version__ = "0.1.0"
from . import kernels, nn, optim, testing, utils  # noqa: E402
from ._torch_names import as_torch  # noqa: E402
