"""The functional API (`tinyattn.nn.functional`, imported as F), with PyTorch's names and arguments.

Layers in tinyattn.nn hold parameters and call these functions; the functions hold no state. Each
is defined in the ops/ file of its family (next to its kernels) and gathered here:

    linear                     ops/matmul.py        layer_norm            ops/norm.py
    dropout                    ops/random.py        embedding, pad, one_hot  ops/indexing.py
    cross_entropy, nll_loss, binary_cross_entropy_with_logits, mse_loss           ops/loss.py
    relu, gelu, tanh, sigmoid  ops/unary.py         softmax, log_softmax  ops/softmax.py
    scaled_dot_product_attention, causal_mask, padding_mask    ops/attention.py (composed)
    conv1d, conv2d, unfold, fold, max_pool2d, avg_pool2d, adaptive_avg_pool2d      ops/conv.py
    batch_norm                 ops/norm.py
    silu, leaky_relu, elu, softplus, mish, hardtanh, relu6, logsigmoid, l1_loss,
    smooth_l1_loss, huber_loss, kl_div                   ops/composite.py (composed of other ops)
"""
from ..ops.conv import (adaptive_avg_pool2d, avg_pool2d, conv1d, conv2d, fold,  # noqa: F401
                        max_pool2d, unfold)
from ..ops.composite import (binary_cross_entropy, cosine_similarity, elu, glu,  # noqa: F401
                             hardtanh, huber_loss, kl_div, l1_loss, leaky_relu, logsigmoid, mish,
                             normalize, relu6, rms_norm, silu, smooth_l1_loss, softplus)
from ..ops.unary import gelu, relu, sigmoid, tanh  # noqa: F401
from ..ops.indexing import embedding, one_hot, pad  # noqa: F401
from ..ops.loss import (binary_cross_entropy_with_logits, cross_entropy, mse_loss,  # noqa: F401
                        nll_loss)
from ..ops.matmul import linear  # noqa: F401
from ..ops.norm import batch_norm, layer_norm  # noqa: F401
from ..ops.random import dropout  # noqa: F401
from ..ops.softmax import log_softmax, softmax  # noqa: F401
from ..ops.attention import causal_mask, padding_mask, scaled_dot_product_attention  # noqa: F401
