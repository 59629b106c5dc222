"""Embedding: a lookup table of vectors indexed by token id."""
from .. import _devices as _dev
from ..autograd import no_grad
from ..creation import empty
from . import functional as F
from . import init
from .module import Module, Parameter


class Embedding(Module):
    """out[..., :] = weight[input[...], :].  input (*) int64 -> output (*, embedding_dim).

    weight (num_embeddings, embedding_dim) starts as N(0, 1). The row `padding_idx` starts at zero
    and receives no gradient, so a padding token contributes nothing and stays distinct from every
    real token (use a separate index for a start-of-sequence token). max_norm, norm_type and
    scale_grad_by_freq as F.embedding; sparse=True raises NotImplementedError (no sparse tensors)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        _dev.check(device, "Embedding")
        if sparse:
            raise NotImplementedError("Embedding: sparse=True (a sparse gradient) is not "
                                      "implemented in tinyattn, which has no sparse tensors")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within "
                                 f"num_embeddings {num_embeddings}")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is not None:
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        else:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):  # noqa: A002
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        s += f", max_norm={self.max_norm}" if self.max_norm is not None else ""
        s += f", norm_type={self.norm_type}" if self.norm_type != 2.0 else ""
        return s + (", scale_grad_by_freq=True" if self.scale_grad_by_freq else "")

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        return cls(embeddings.shape[0], embeddings.shape[1], padding_idx, max_norm, norm_type,
                   scale_grad_by_freq, sparse, _weight=embeddings.detach().clone(),
                   _freeze=freeze)
