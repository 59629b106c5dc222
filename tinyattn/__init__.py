"""tinyattn: a small, readable deep-learning library for attention models.

Layers, bottom to top. A module imports only from its own layer and the layers below it, and no
two modules import each other; tests/core/test_imports.py builds the import graph from the source
and holds it to this list. (A call can still go up at run time through a tensor's methods: an op
written as `x.exp()` calls tensor.py, which calls ops/unary.py.)

    _shapes, dtypes, _devices      shapes and broadcasting, the six dtypes, devices
    _numpy                         NumPy arrays and buffers read in, tensors handed out as arrays
    storage                        a tensor's data: TensorBase (buffer, shape, strides, dtype,
                                   grad_fn), _make and _empty, where new buffers come from
    grad_mode                      grad mode per thread: no_grad, enable_grad, inference_mode
    autograd                       Function, the graph, backward
    kernels/                       the reference backend: plain loops over flat buffers
    fast/                          the fast backend: the same functions, tiled, vectorised, threaded
    backend                        which backend the ops call (TINYATTN_KERNELS)
    ops/, creation, random         the differentiable ops, one file per family; tensor factories
                                   (zeros, rand, ...); the random generator
    _format, _parallel             printing; set_num_threads
    tensor                         tinyattn.Tensor: TensorBase with every op as a method
    serialization, testing         save and load; gradcheck
    autograd_functional            vjp, jvp, jacobian, hessian, hvp; gradgradcheck
    nn/, optim/, utils/            layers, optimizers, data loading
    viz/, _torch_names, as_torch   pictures of tensors and graphs; tinyattn as `import torch`
    exercises/                     students rebuild a piece; graded, then plugged into a demo

This file, on top, gathers the public names.
"""
from . import autograd
from . import backend  # noqa: F401  (the kernels the ops call: TINYATTN_KERNELS)
from .tensor import Tensor
from ._devices import (backends, channels_last, compile, contiguous_format, cuda,  # noqa: A004
                       device, jit, memory_format, onnx, preserve_format)
from .dtypes import (bool, double, dtype, float, float32, float64, int, int32,  # noqa: A004
                     int64, long, uint8)
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .random import Generator, get_rng_state, initial_seed, manual_seed, set_rng_state
from .creation import (BoolTensor, ByteTensor, DoubleTensor, FloatTensor, IntTensor, LongTensor,
                       arange, as_tensor, asarray, bernoulli, empty, empty_like, eye, from_numpy,
                       frombuffer, full, full_like, linspace, ones, ones_like, rand, rand_like,
                       randint, randn, randn_like, randperm, tensor, zeros, zeros_like)
from .ops.angle import arctan2, atan2
from .ops.arithmetic import (add, clamp, clip, div,  # noqa: A004
                             floor_divide, maximum, minimum, mul, pow, remainder, round, rsub,
                             sign, square, sub)
from .ops.compare import (bitwise_and, bitwise_not, bitwise_or, bitwise_xor, eq, ge, gt, le,
                          logical_and, logical_not, logical_or, logical_xor, lt, masked_fill, ne,
                          where)
from .ops.unary import (abs, arctan, atan, ceil,  # noqa: A004
                        cos, erf, exp, expm1, floor, gelu, isfinite, isinf,
                        isnan, log, log1p, neg, positive, relu, rsqrt, sigmoid, sin, sqrt, tanh,
                        trunc)
from .ops.blend import addcdiv, addcmul, lerp
from .ops.indexing import (diag, diagonal, flip, gather, index_select, masked_select, nonzero,
                           repeat_interleave, take_along_dim, trace, tril, triu)
from .ops.isclose import allclose, equal, isclose
from .ops.layout import (cat, chunk, clone, expand, flatten, movedim, narrow, permute, reshape,
                         roll, split, squeeze, stack, t, tile, transpose, unbind, unsqueeze)
from .ops.logarithm import log10, log2
from .ops.matmul import addmm, baddbmm, bmm, dot, matmul, mm, mv, outer
from .ops.norm import norm
from .ops.product import cumprod, prod
from .ops.reduce import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min,  # noqa: A004
                         std, sum, var)
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

# The backend switch, also where users of the kernels package look for it:
# tinyattn.kernels.use("reference") is tinyattn.backend.use("reference").
kernels.use, kernels.active = backend.use, backend.active

# torch.autograd.functional, gradcheck and gradgradcheck live above the engine (they call ops and
# the tensor API); they are reached where PyTorch's programs look for them.
from . import autograd_functional  # noqa: E402
autograd.functional = autograd_functional
autograd.gradcheck = autograd_functional.gradcheck
autograd.gradgradcheck = autograd_functional.gradgradcheck
