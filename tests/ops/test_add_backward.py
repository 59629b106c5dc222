"""Add's backward skips the input that needs no gradient: adding a broadcast attention mask to the
scores must not cost a reduction over the whole score tensor."""
import tinyattn
from tinyattn.ops import arithmetic as functions  # Add.backward calls its sum_to


def test_add_backward_reduces_only_for_inputs_that_need_grad(monkeypatch):
    scores = tinyattn.randn(2, 3, 4, 4, requires_grad=True)
    mask = tinyattn.zeros(4, 4)  # broadcast over (2, 3), needs no gradient
    out = scores + mask
    reduced = []
    real = functions.sum_to
    monkeypatch.setattr(functions, "sum_to", lambda g, shape: reduced.append(shape) or real(g, shape))
    out.backward(tinyattn.ones(2, 3, 4, 4))
    assert reduced == [(2, 3, 4, 4)]
    assert scores.grad.tolist() == tinyattn.ones(2, 3, 4, 4).tolist()
    mask.requires_grad_(True)
    scores.grad = None
    (scores + mask).backward(tinyattn.ones(2, 3, 4, 4))
    assert mask.grad.tolist() == [[6.0] * 4] * 4
