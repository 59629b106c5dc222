"""The functional API (`tinyattn.nn.functional`, imported as F), with PyTorch's names and arguments.

Layers in tinyattn.nn hold parameters and call these functions; the functions hold no state. Each
is defined in the ops/ file of its family (next to its kernels) and gathered here:

    linear                     ops/matmul.py        dropout               ops/random.py
    layer_norm, batch_norm, rms_norm, normalize, cosine_similarity      ops/norm.py
    embedding, one_hot         ops/embedding.py     pad                   ops/pad.py
    cross_entropy, nll_loss, binary_cross_entropy_with_logits, mse_loss, l1_loss,
    smooth_l1_loss, huber_loss, kl_div, binary_cross_entropy                  ops/loss.py
    relu, gelu, tanh, sigmoid  ops/unary.py         softmax, log_softmax  ops/softmax.py
    silu, leaky_relu, elu, softplus, mish, hardtanh, relu6, logsigmoid, glu  ops/activation.py
    scaled_dot_product_attention, causal_mask, padding_mask    ops/attention.py (composed)
    conv1d, conv2d, unfold, fold, max_pool2d, avg_pool2d, adaptive_avg_pool2d      ops/conv.py
"""
from ..ops.conv import (adaptive_avg_pool2d, avg_pool2d, conv1d, conv2d, fold,  # noqa: F401
                        max_pool2d, unfold)
from ..ops.activation import (elu, glu, hardtanh, leaky_relu, logsigmoid, mish,  # noqa: F401
                              relu6, silu, softplus)
from ..ops.unary import gelu, relu, sigmoid, tanh  # noqa: F401
from ..ops.embedding import embedding, one_hot  # noqa: F401
from ..ops.loss import (binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: F401
                        cross_entropy, huber_loss, kl_div, l1_loss, mse_loss, nll_loss,
                        smooth_l1_loss)
from ..ops.matmul import linear  # noqa: F401
from ..ops.norm import (batch_norm, cosine_similarity, layer_norm, normalize,  # noqa: F401
                        rms_norm)
from ..ops.pad import pad  # noqa: F401
from ..ops.random import dropout  # noqa: F401
from ..ops.softmax import functional_log_softmax as log_softmax  # noqa: F401 (dim optional)
from ..ops.softmax import functional_softmax as softmax  # noqa: F401
from ..ops.attention import causal_mask, padding_mask, scaled_dot_product_attention  # noqa: F401
