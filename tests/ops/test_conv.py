"""Convolution, unfold / fold, pooling and batch norm (ops/conv.py, kernels/conv.py, nn/conv.py,
nn/pooling.py, nn/normalization.py): hand-computed values, gradcheck in float64, PyTorch parity on
random geometries, modules' state_dict and initialisation, and the errors.

What holds: the values worked out by hand and PyTorch's on random geometries (strides, padding,
dilation, groups, layouts), including an empty batch; gradients by finite differences; errors
that name the op and the offending value."""
import math

import pytest
from hypothesis import given, settings, strategies as st

import tinyattn as ta
import tinyattn.nn as nn
import tinyattn.nn.functional as F
from helpers import assert_close, check_value_and_dtype, make_tensor, seeds, to_torch
from tinyattn.testing import gradcheck

FEW = settings(max_examples=15, deadline=None)


def r64(*shape, seed=0):
    return ta.randn(*shape, dtype=ta.float64, generator=ta.Generator(seed)).requires_grad_()


# ---------------------------------------------------------------------------- by hand


def test_conv2d_by_hand():
    # x = [[1 2 3] [4 5 6] [7 8 9]], a 2x2 kernel [[1 0] [0 -1]] (x[h, w] - x[h+1, w+1]) + bias 10
    x = ta.arange(1., 10.).view(1, 1, 3, 3)
    w = ta.tensor([[[[1., 0.], [0., -1.]]]])
    assert F.conv2d(x, w, ta.tensor([10.])).tolist() == [[[[6., 6.], [6., 6.]]]]
    # padding 1: the corners see one pixel each
    out = F.conv2d(x, w, padding=1)[0, 0]
    assert out.tolist() == [[-1., -2., -3., 0.], [-4., -4., -4., 3.], [-7., -4., -4., 6.],
                            [0., 7., 8., 9.]]
    # stride 2 and dilation 2: a 2x2 kernel with holes reads x[0,0] - x[2,2]
    assert F.conv2d(x, w, dilation=2).tolist() == [[[[-8.]]]]
    assert F.conv2d(x, w, stride=2).tolist() == [[[[-4.]]]]


def test_integer_and_bool_images_by_hand():
    """As PyTorch's CPU kernels: conv and pooling take int64 (avg_pool2d truncates toward 0),
    unfold / fold take bool (overlaps OR together)."""
    x = ta.tensor([[[[-1, -2], [-3, -5]]]])
    assert F.conv2d(x, ta.tensor([[[[1, 2], [3, 4]]]])).tolist() == [[[[-34]]]]   # -1-4-9-20
    assert F.max_pool2d(x, 2).tolist() == [[[[-1]]]]
    assert F.avg_pool2d(x, 2).tolist() == [[[[-2]]]]                 # -11/4 = -2.75 -> -2
    assert F.avg_pool2d(-x, 2, stride=()).tolist() == [[[[2]]]]      # stride () = kernel size
    assert F.avg_pool2d(-x, 2, divisor_override=-3).tolist() == [[[[-3]]]]   # 11 / -3
    b = ta.tensor([[[[True, False, False]]]])
    cols = F.unfold(b, (1, 2))
    assert cols.dtype is ta.bool and cols.tolist() == [[[True, False], [False, False]]]
    assert F.fold(ta.ones(1, 2, 2, dtype=ta.bool), (1, 3), (1, 2)).tolist() == [
        [[[True, True, True]]]]


def test_groups_by_hand():
    # groups=2: output channel 0 reads input channel 0 only, channel 1 reads channel 1 only
    x = ta.tensor([[[[1.]], [[10.]]]])
    w = ta.tensor([[[[2.]]], [[[3.]]]])
    assert F.conv2d(x, w, groups=2).tolist() == [[[[2.]], [[30.]]]]


def test_unfold_fold_by_hand():
    x = ta.arange(1., 7.).view(1, 1, 2, 3)          # [[1 2 3] [4 5 6]]
    cols = F.unfold(x, (2, 2))                       # two 2x2 patches
    assert cols.tolist() == [[[1., 2.], [2., 3.], [4., 5.], [5., 6.]]]
    # fold sums overlapping entries: the middle column is read by both patches
    assert F.fold(cols, (2, 3), (2, 2)).tolist() == [[[[1., 4., 3.], [4., 10., 6.]]]]


def test_pooling_by_hand():
    x = ta.tensor([[[[1., 5., 2., 0.], [3., 4., 8., 1.], [0., 0., 1., 1.], [9., 2., 1., 3.]]]])
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert out.tolist() == [[[[5., 8.], [9., 3.]]]]
    assert idx.tolist() == [[[[1, 6], [12, 15]]]]
    assert F.avg_pool2d(x, 2).tolist() == [[[[3.25, 2.75], [2.75, 1.5]]]]
    assert F.adaptive_avg_pool2d(x, 1).tolist() == [[[[41. / 16]]]]
    # padding counted or not in the mean: the corner window holds one real pixel
    assert F.avg_pool2d(x, 2, 2, 1)[0, 0, 0, 0].item() == 0.25
    assert F.avg_pool2d(x, 2, 2, 1, count_include_pad=False)[0, 0, 0, 0].item() == 1.0
    # max pooling's gradient goes to the winner only
    x.requires_grad_()
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad[0, 0].tolist() == [[0., 1., 0., 0.], [0., 0., 1., 0.], [0., 0., 0., 0.],
                                     [1., 0., 0., 1.]]


def test_batch_norm_by_hand():
    # channel 0 holds 1, 3 (mean 2, biased var 1); channel 1 holds 0, 0 (var 0)
    x = ta.tensor([[[[1.]], [[0.]]], [[[3.]], [[0.]]]])
    bn = nn.BatchNorm2d(2, eps=1e-12)     # eps must be positive, as in PyTorch; this one is tiny
    y = bn(x)
    assert_close(y[:, 0].flatten(), ta.tensor([-1.0, 1.0]))
    # running stats: 0.9 * init + 0.1 * batch, with the unbiased variance (2 for channel 0)
    assert_close(bn.running_mean, ta.tensor([0.2, 0.0]))
    assert_close(bn.running_var, ta.tensor([0.9 + 0.2, 0.9]))
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    assert_close(bn(x)[:, 0].flatten(), (ta.tensor([1., 3.]) - 0.2) / math.sqrt(1.1))


def test_batch_norm_refuses_an_eps_that_is_not_positive():
    for eps in (0.0, -1.0):
        with pytest.raises(ValueError, match="BatchNorm1d: eps must be positive"):
            nn.BatchNorm1d(3, eps=eps)



def test_batch_norm_of_an_empty_batch_is_empty():
    check_value_and_dtype("lib.nn.functional.batch_norm(lib.zeros(0, 3), lib.zeros(3), "
                          "lib.ones(3), training=True)", [], "float32")

# ---------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), ((2, 1), (0, 1), (1, 2), 2), (1, "same", 2, 1)])
def test_conv2d_gradcheck(stride, padding, dilation, groups):
    x, w, b = r64(2, 4, 6, 5), r64(4, 4 // groups, 3, 2, seed=1), r64(4, seed=2)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
                     (x, w, b))


def test_conv1d_unfold_fold_gradcheck():
    assert gradcheck(lambda x, w: F.conv1d(x, w, None, 2, 1, 1, 2), (r64(2, 4, 9), r64(6, 2, 3)))
    assert gradcheck(lambda x: F.unfold(x, (2, 3), 1, 1, (2, 1)), (r64(2, 2, 5, 4),))
    assert gradcheck(lambda c: F.fold(c, (5, 4), (2, 3), 1, 1, (2, 1)), (r64(2, 12, 12),))


def test_pooling_and_batch_norm_gradcheck():
    x = r64(2, 3, 7, 6)
    assert gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, (3, 2), (2, 1), (1, 1), True, False), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), (x,))
    w, b = r64(3, seed=1), r64(3, seed=2)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), (x, w, b))
    rm, rv = ta.randn(3, dtype=ta.float64), ta.rand(3, dtype=ta.float64) + 0.5
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, False), (x, w, b))
    assert gradcheck(lambda x: F.batch_norm(x, None, None, training=True), (r64(4, 2, 3),))


def test_non_contiguous_input():
    # a permuted view goes through the same kernels (packed first)
    base = r64(2, 5, 6, 3)
    x = base.permute(0, 3, 1, 2)                     # (2, 3, 5, 6), not contiguous
    w = r64(4, 3, 3, 3, seed=1)
    assert_close(F.conv2d(x, w, padding=1), F.conv2d(x.contiguous(), w, padding=1),
                 rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda x: F.max_pool2d(x.permute(0, 3, 1, 2), 2), (base,))


# ---------------------------------------------------------------------------- PyTorch


@st.composite
def geometry(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    H = draw(st.integers(max(1, d[0] * (k[0] - 1) + 1 - 2 * p[0]), 9))
    W = draw(st.integers(max(1, d[1] * (k[1] - 1) + 1 - 2 * p[1]), 9))
    return groups, k, s, p, d, H, W


@FEW
@given(g=geometry(), N=st.integers(1, 3), cg=st.integers(1, 3), og=st.integers(1, 3), seed=seeds,
       layout=st.sampled_from(["contiguous", "transposed", "strided"]))
def test_conv2d_matches_torch(g, N, cg, og, seed, layout):
    torch = pytest.importorskip("torch")
    groups, k, s, p, d, H, W = g
    x = make_tensor((N, cg * groups, H, W), layout, seed).requires_grad_()
    w = make_tensor((og * groups, cg, *k), "contiguous", seed + 1).requires_grad_()
    b = make_tensor((og * groups,), "contiguous", seed + 2).requires_grad_()
    tx, tw, tb = (to_torch(t, requires_grad=True) for t in (x, w, b))
    out = F.conv2d(x, w, b, s, p, d, groups)
    tout = torch.nn.functional.conv2d(tx, tw, tb, s, p, d, groups)
    assert_close(out, tout.detach(), 1e-10, 1e-10)
    cot = ta.arange(out.numel(), dtype=out.dtype).reshape(out.shape).sin()
    (out * cot).sum().backward()
    (tout * to_torch(cot)).sum().backward()
    for a, t in ((x, tx), (w, tw), (b, tb)):
        assert_close(a.grad, t.grad, 1e-10, 1e-10)
    assert_close(F.unfold(x, k, d, p, s), torch.nn.functional.unfold(tx, k, d, p, s).detach(),
                 0, 0)


@FEW
@given(g=geometry(), seed=seeds, ceil_mode=st.booleans(), count_include_pad=st.booleans(),
       divisor=st.sampled_from([None, 3]), out=st.tuples(st.integers(1, 5), st.integers(1, 5)))
def test_pooling_matches_torch(g, seed, ceil_mode, count_include_pad, divisor, out):
    torch = pytest.importorskip("torch")
    _, k, s, _, d, H, W = g
    p = (k[0] // 2, k[1] // 2)
    x = make_tensor((2, 3, H + 2, W + 2), "contiguous", seed).requires_grad_()
    tx = to_torch(x, requires_grad=True)
    cases = [
        (lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode),
         lambda t: torch.nn.functional.max_pool2d(t, k, s, p, d, ceil_mode)),
        (lambda x: F.avg_pool2d(x, k, s, p, ceil_mode, count_include_pad, divisor),
         lambda t: torch.nn.functional.avg_pool2d(t, k, s, p, ceil_mode, count_include_pad,
                                                  divisor)),
        (lambda x: F.adaptive_avg_pool2d(x, out),
         lambda t: torch.nn.functional.adaptive_avg_pool2d(t, out)),
    ]
    for fn, tfn in cases:
        try:
            expected = tfn(tx)
        except RuntimeError:     # torch finds the window does not fit: so must we
            with pytest.raises(ValueError):
                fn(x)
            continue
        got = fn(x)
        assert_close(got, expected.detach(), 1e-12, 1e-12)
        cot = ta.arange(got.numel(), dtype=got.dtype).reshape(got.shape).cos()
        (gx,) = torch.autograd.grad(expected, tx, to_torch(cot))
        x.grad = None
        got.backward(cot)
        assert_close(x.grad, gx, 1e-12, 1e-12)
    idx = F.max_pool2d(x, k, s, p, d, ceil_mode, return_indices=True)[1]
    tidx = torch.nn.functional.max_pool2d(tx, k, s, p, d, ceil_mode, return_indices=True)[1]
    assert idx.dtype == ta.int64 and idx.tolist() == tidx.tolist()


def test_same_padding_matches_torch():
    torch = pytest.importorskip("torch")
    for k, d in ((3, 1), (4, 1), (2, 3), ((2, 5), (2, 1))):
        x, w = r64(2, 3, 7, 8), r64(5, 3, *(k if isinstance(k, tuple) else (k, k)), seed=1)
        tout = torch.nn.functional.conv2d(to_torch(x), to_torch(w), None, 1, "same", d)
        assert_close(F.conv2d(x, w, None, 1, "same", d), tout, 1e-12, 1e-12)
    x1, w1 = r64(2, 4, 10), r64(6, 2, 4, seed=1)
    for padding in ("same", "valid", 2):
        tout = torch.nn.functional.conv1d(to_torch(x1), to_torch(w1), None, 1, padding, 2, 2)
        assert_close(F.conv1d(x1, w1, None, 1, padding, 2, 2), tout, 1e-12, 1e-12)


def test_modules_match_torch_state_dict_and_init():
    torch = pytest.importorskip("torch")
    pairs = [(nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2),
              torch.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)),
             (nn.Conv1d(3, 5, 3, bias=False), torch.nn.Conv1d(3, 5, 3, bias=False)),
             (nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6))]
    for mine, theirs in pairs:
        ours, ref = mine.state_dict(), theirs.state_dict()
        assert list(ours) == list(ref)
        for key in ref:
            assert tuple(ours[key].shape) == tuple(ref[key].shape), key
        assert repr(mine) == repr(theirs)
    conv = nn.Conv2d(4, 6, (3, 2), groups=2)
    bound = 1 / math.sqrt(2 * 3 * 2)            # fan_in = C_in/groups * KH * KW
    assert conv.weight.abs().max().item() <= bound and conv.bias.abs().max().item() <= bound
    assert conv.weight.abs().max().item() > 0.8 * bound
    # a torch state_dict loads, and the layers then compute the same
    tconv = torch.nn.Conv2d(3, 4, 3, padding="same")
    conv = nn.Conv2d(3, 4, 3, padding="same")
    conv.load_state_dict({k: ta.tensor(v.tolist()) for k, v in tconv.state_dict().items()})
    x = ta.randn(2, 3, 5, 5)
    assert_close(conv(x), tconv(to_torch(x).float()).detach(), 1e-5, 1e-5)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_module_matches_torch(momentum):
    torch = pytest.importorskip("torch")
    bn, tbn = nn.BatchNorm2d(3, momentum=momentum), torch.nn.BatchNorm2d(3, momentum=momentum)
    for step in range(3):
        x = ta.randn(4, 3, 5, 2, generator=ta.Generator(step)) * (step + 1) + step
        x.requires_grad_()
        tx = to_torch(x, requires_grad=True).float()
        tx.retain_grad()
        y, ty = bn(x), tbn(tx)
        assert_close(y, ty.detach(), 1e-5, 1e-5)
        (y * y).sum().backward()
        (ty * ty).sum().backward()
        assert_close(x.grad, tx.grad, 1e-4, 1e-4)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(bn, name), getattr(tbn, name), 1e-5, 1e-5)
    bn.eval(), tbn.eval()
    x = ta.randn(2, 3, 4, 4)
    assert_close(bn(x), tbn(to_torch(x).float()).detach(), 1e-5, 1e-5)


def test_flatten_unflatten_and_cnn_shapes():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 4, 3), nn.AdaptiveAvgPool2d((2, 2)),
                          nn.Flatten(), nn.Unflatten(1, (4, 4)))
    assert model(ta.randn(5, 3, 12, 12)).shape == (5, 4, 4)
    assert nn.Unfold(2)(ta.randn(1, 3, 4, 4)).shape == (1, 12, 9)
    assert nn.Fold((4, 4), 2)(ta.randn(1, 12, 9)).shape == (1, 3, 4, 4)
    # unbatched (C, H, W) inputs, as PyTorch accepts
    assert nn.Conv2d(3, 2, 3)(ta.randn(3, 5, 5)).shape == (2, 3, 3)
    assert F.max_pool2d(ta.randn(3, 4, 4), 2).shape == (3, 2, 2)


# ---------------------------------------------------------------------------- errors


def test_errors_name_the_op_and_the_values():
    x, w = ta.randn(1, 3, 5, 5), ta.randn(4, 3, 3, 3)
    with pytest.raises(ValueError, match=r"conv2d.*3 channels.*\(4, 2, 3, 3\).*groups=1"):
        F.conv2d(x, ta.randn(4, 2, 3, 3))
    with pytest.raises(ValueError, match="conv2d.*groups=2"):
        F.conv2d(x, ta.randn(4, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"conv2d: the kernel \(size 3.*height"):
        F.conv2d(ta.randn(1, 3, 2, 5), w)
    with pytest.raises(ValueError, match="conv2d: padding='same'.*strided"):
        F.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError, match="conv2d: padding must be.*'full'"):
        F.conv2d(x, w, padding="full")
    with pytest.raises(ValueError, match="conv2d: stride must be positive"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match=r"conv2d: bias must be a \(4,\)"):
        F.conv2d(x, w, ta.randn(3))
    with pytest.raises(TypeError, match="conv2d: expected a float32, float64, int64 tensor, got "
                                        "tinyattn.bool"):
        F.conv2d(ta.ones(1, 3, 5, 5, dtype=ta.bool), w)
    with pytest.raises(TypeError, match=r"conv2d: input \(tinyattn.int64\) and weight"):
        F.conv2d(ta.ones(1, 3, 5, 5, dtype=ta.int64), w)
    with pytest.raises(TypeError, match="unfold: expected a float32, float64, bool tensor"):
        F.unfold(ta.ones(1, 3, 5, 5, dtype=ta.int64), 2)
    with pytest.raises(TypeError, match=r"conv2d: input \(torch.float64\)|conv2d: input"):
        F.conv2d(x.double(), w)
    with pytest.raises(ValueError, match=r"conv2d: expected a \(N, C, H, W\)"):
        F.conv2d(ta.randn(5, 5), w)
    with pytest.raises(ValueError, match="max_pool2d: padding .* at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match=r"fold: output_size \(5, 5\).*16 blocks.*9"):
        F.fold(ta.randn(1, 12, 9), (5, 5), 2)
    with pytest.raises(ValueError, match="fold: the input's dim 1 \\(10\\)"):
        F.fold(ta.randn(1, 10, 9), (4, 4), 2)
    with pytest.raises(ValueError, match="Conv2d: in_channels \\(3\\).*groups \\(2\\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="BatchNorm2d: expected 3 channels"):
        nn.BatchNorm2d(3)(ta.randn(2, 4, 3, 3))
    with pytest.raises(ValueError, match="batch_norm: expected more than 1 value per channel"):
        nn.BatchNorm2d(3)(ta.randn(1, 3, 1, 1))
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: output_size must be positive"):
        F.adaptive_avg_pool2d(x, 0)
