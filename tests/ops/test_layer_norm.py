"""The fused layer_norm primitive: against the formula composed from primitives, gradcheck, torch.

Also meant to run under NUMBA_DISABLE_JIT=1 (the kernel's plain-Python twin)."""
import math

import pytest

import tinyattn
from tinyattn import nn
from tinyattn.testing import gradcheck
from tinyattn.nn import functional as F

from _attn_testing import assert_close, rand, to_torch, upstream_loss


def composed(x, shape, w, b, eps):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    y = xc * ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("shape,affine", [((5,), "both"), ((5,), "none"), ((5,), "weight"),
                                          ((3, 4), "both")])
def test_fused_layer_norm_equals_the_composed_formula(shape, affine):
    tinyattn.manual_seed(0)
    x = rand(2, 3, *shape) * 3.0 + 1.0
    x = x.detach().requires_grad_(True)
    w = rand(*shape) if affine in ("both", "weight") else None
    b = rand(*shape) if affine == "both" else None
    got = F.layer_norm(x, shape, w, b, eps=1e-3)
    ref = composed(x, shape, w, b, 1e-3)
    assert_close(got, ref, 1e-12)
    upstream_loss(got).backward()
    grads = [t.grad for t in (x, w, b) if t is not None]
    for t in (x, w, b):
        if t is not None:
            t.grad = None
    upstream_loss(ref).backward()
    for g, t in zip(grads, [t for t in (x, w, b) if t is not None]):
        assert_close(g, t.grad, 1e-12)


def test_fused_layer_norm_gradcheck():
    tinyattn.manual_seed(1)
    x, w, b = rand(3, 4), rand(4), rand(4)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, 4, w, b), (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x.transpose(0, 1), 3), (x,))  # a strided input


def test_fused_layer_norm_hand_values_and_constant_rows():
    x = tinyattn.tensor([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]], dtype=tinyattn.float64)
    y = F.layer_norm(x, (3,), eps=0.0).tolist()
    s = math.sqrt(1.5)
    assert y[0] == pytest.approx([-s, 0.0, s], abs=1e-12)
    y = F.layer_norm(x, (3,), eps=1e-5).tolist()
    assert y[1] == [0.0, 0.0, 0.0]


def test_layer_norm_module_matches_torch_float32():
    torch = pytest.importorskip("torch")
    tinyattn.manual_seed(2)
    ours = nn.LayerNorm(6)
    theirs = torch.nn.LayerNorm(6)
    with torch.no_grad():
        theirs.weight.copy_(torch.rand(6) + 0.5)
        theirs.bias.copy_(torch.rand(6))
    ours.load_state_dict(theirs.state_dict())
    x = tinyattn.randn(4, 5, 6, requires_grad=True)
    tx = to_torch(torch, x, True)
    out, tout = ours(x), theirs(tx)
    assert_close(out, tout, 1e-5, 1e-4)
    upstream_loss(out).backward()
    upstream_loss(tout).backward()
    assert_close(x.grad, tx.grad, 1e-5, 1e-4)
    assert_close(ours.weight.grad, theirs.weight.grad, 1e-5, 1e-4)
    assert_close(ours.bias.grad, theirs.bias.grad, 1e-5, 1e-4)


def test_layer_norm_errors():
    x = tinyattn.randn(2, 3)
    with pytest.raises(ValueError, match="trailing shape"):
        F.layer_norm(x, (4,))
    with pytest.raises(ValueError, match="weight must have shape"):
        F.layer_norm(x, (3,), tinyattn.ones(4))
