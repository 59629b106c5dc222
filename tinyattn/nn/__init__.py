"""Neural-network layers with PyTorch's names, parameter shapes, initialisation and state_dict keys."""
from . import functional, init
from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, ReLU,
                         ReLU6, Sigmoid, SiLU, Softmax, Softplus, Tanh)
from .dropout import Dropout
from .linear import Identity, Linear, NonDynamicallyQuantizableLinear
from .loss import (BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)
from .module import (Module, ModuleDict, ModuleList, Parameter, ParameterDict, ParameterList,
                     Sequential)
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm
from .conv import Conv1d, Conv2d
from .pooling import (AdaptiveAvgPool2d, AvgPool2d, Flatten, Fold, MaxPool2d, Unflatten,
                      Unfold)
from .rnn import GRU, GRUCell
from .lstm import LSTM, RNN, LSTMCell, RNNCell
from .rnn_attention import AdditiveAttention, LuongAttention
from .seq2seq import AttentionDecoder, Hypothesis, Seq2Seq, Seq2SeqEncoder, pad_sequences
from . import utils
from .sparse import Embedding
from .attention import MultiheadAttention, SelfAttention, causal_mask, padding_mask
from .positional import LearnedPositionalEmbedding, PositionalEncoding
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer, attention_maps,
                          record_attention)
