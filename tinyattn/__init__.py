"""tinyattn: a small, readable deep-learning library for attention models.

Layers, bottom to top: kernels/ (numba loops on flat buffers) -> tensor.py, autograd.py,
functions.py (Tensor, graph, differentiable ops) -> nn/, optim/ -> demos/.
"""
from . import _malloc  # noqa: F401  (keeps freed tensor memory for reuse; see _malloc.py)
from . import autograd  # first: tensor.py and functions.py build on it
from .tensor import Tensor
from .dtypes import bool, double, dtype, float, float32, float64, int64, long  # noqa: A004
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .random import Generator, get_rng_state, initial_seed, manual_seed, set_rng_state
from .creation import (arange, empty, empty_like, eye, full, full_like, linspace, ones, ones_like,
                       rand, rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                       zeros_like)
from .functions import (abs, add, all, amax, amin, any, argmax, argmin, bmm, cat, chunk, clamp,
                        clip, clone, cos, div, floor_divide, remainder, eq, exp, expand, flatten, flip, gather, ge, gelu,
                        gt, index_select, isfinite, isinf, isnan, le, log, log_softmax,
                        logical_and, logical_not, logical_or, logical_xor, logsumexp, lt,
                        masked_fill, matmul, max, maximum, mean, min, minimum, mm, mul, narrow, ne,
                        neg, norm, permute, pow, relu, reshape, rsqrt, sigmoid, sign, sin, softmax,
                        split, sqrt, square, squeeze, stack, std, sub, sum, tanh, transpose, tril,
                        triu, unbind, unsqueeze, var, where)
from .serialization import load, save

__version__ = "0.1.0"
from . import nn
from . import optim
