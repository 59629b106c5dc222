"""torch.nn.utils: gradient clipping (clip_grad.py) and packed sequences for the RNN family
(rnn.py, also reached as `nn.utils.rnn`)."""
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]
