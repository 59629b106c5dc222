"""Embedding: a lookup table of vectors indexed by token id."""
from ..autograd import no_grad
from ..creation import empty
from . import functional as F
from . import init
from .module import Module, Parameter


class Embedding(Module):
    """out[..., :] = weight[input[...], :].  input (*) int64 -> output (*, embedding_dim).

    weight (num_embeddings, embedding_dim) starts as N(0, 1). The row `padding_idx` starts at zero
    and receives no gradient, so a padding token contributes nothing and stays distinct from every
    real token (use a separate index for a start-of-sequence token)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None,
                 _weight=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within "
                                 f"num_embeddings {num_embeddings}")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is not None:
            self.weight = Parameter(_weight)
        else:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):  # noqa: A002
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
        m = cls(embeddings.shape[0], embeddings.shape[1], padding_idx=padding_idx,
                _weight=embeddings.detach().clone())
        m.weight.requires_grad_(not freeze)
        return m
