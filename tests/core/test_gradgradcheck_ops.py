"""Second derivatives of every differentiable op and layer: `autograd.gradgradcheck` (finite
differences of first derivatives recorded with create_graph=True) over a table of ops on small
float64 inputs, a test that no Function in tinyattn.ops is left without a differentiable backward
(outside a reasoned exemption list), and a few second derivatives compared with PyTorch's."""
import math

import pytest

import tinyattn as ta
from tinyattn import autograd
from tinyattn.autograd import Function
from tinyattn.ops import attention as _attention
from tinyattn.ops import rnn as _rnn

F = ta.nn.functional
f64 = ta.float64

# Ops whose backward is never reached: remainder and floor_divide of integers run under no_grad
# (integer results carry no gradient), so their node is never part of a graph.
EXEMPT = {"_Integerish": "integer remainder / floor_divide: built under no_grad, never in a graph"}


def _t(*shape, low=-1.0, high=1.0, seed=0):
    x = ta.rand(*shape, dtype=f64, generator=ta.Generator().manual_seed(seed)) * (high - low) + low
    return x.requires_grad_()


def _pos(*shape, seed=0):
    return _t(*shape, low=0.5, high=2.0, seed=seed)


def _long(values):
    return ta.tensor(values, dtype=ta.int64)


def _dropout(x):
    ta.manual_seed(3)                     # the same mask at every evaluation
    return F.dropout(x, 0.4, training=True)


def _setitem(x, v):
    y = x * 1.0
    y[1, :2] = v
    y[0] = y[0] * 2.0
    return y


def _sdpa_math(q, k, v):
    with ta.nn.attention.sdpa_kernel(ta.nn.attention.SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _sdpa_fused(q, k, v):
    mask = ta.tensor([[True, False, True], [True, True, False]])
    heads = ta.tensor([[[0.5, -1.0, 0.0], [0.0, 0.2, -0.3]]] * 2, dtype=f64)   # (2, 2, 3) float
    with ta.nn.attention.sdpa_kernel(ta.nn.attention.SDPBackend.FLASH_ATTENTION):
        four = F.scaled_dot_product_attention(q.unsqueeze(1).expand(1, 2, 2, 2), k.unsqueeze(1),
                                              v.unsqueeze(1), attn_mask=heads)     # (1, 2, 2, 2)
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                + F.scaled_dot_product_attention(q, k, v, is_causal=True) + four.sum(1))


def _batch_norm(x, w, b):
    rm, rv = ta.zeros(3, dtype=f64), ta.ones(3, dtype=f64)
    train = F.batch_norm(x, rm, rv, w, b, training=True)
    return train + F.batch_norm(x, ta.tensor([0.1, -0.2, 0.3], dtype=f64),
                                ta.tensor([1.5, 0.5, 2.0], dtype=f64), w, b)


# (name, fn, inputs): inputs is a function giving fresh tensors (those requiring grad are checked).
CASES = [
    # unary maps
    ("neg", lambda x: -x, lambda: [_t(2, 3)]),
    ("abs", lambda x: x.abs(), lambda: [_t(2, 3)]),
    ("exp", lambda x: x.exp(), lambda: [_t(2, 3)]),
    ("log", lambda x: x.log(), lambda: [_pos(2, 3)]),
    ("sqrt_rsqrt", lambda x: x.sqrt() + x.rsqrt(), lambda: [_pos(2, 3)]),
    ("tanh_sigmoid", lambda x: x.tanh() * x.sigmoid(), lambda: [_t(2, 3)]),
    ("relu", lambda x: x.relu() * x, lambda: [_t(2, 3)]),
    ("gelu", lambda x: F.gelu(x) + F.gelu(x, approximate="tanh"), lambda: [_t(2, 3)]),
    ("sin_cos", lambda x: x.sin() * x.cos(), lambda: [_t(2, 3)]),
    ("log1p_expm1", lambda x: x.log1p() + x.expm1(), lambda: [_pos(2, 3)]),
    ("erf_atan", lambda x: ta.erf(x) + ta.atan(x), lambda: [_t(2, 3)]),
    ("floor_round", lambda x: x.floor() + x.round() + x * x, lambda: [_t(2, 3)]),
    ("clamp", lambda x: x.clamp(-0.5, 0.5) * x, lambda: [_t(2, 3)]),
    ("pow_scalar", lambda x: x ** 3 + x ** 2.5 + 2.0 ** x + 2.0 / x, lambda: [_pos(2, 3)]),
    ("activations", lambda x: F.silu(x) + F.elu(x) + F.softplus(x) + F.leaky_relu(x, 0.1)
     + F.mish(x) + F.logsigmoid(x) + F.hardtanh(x * 3.0), lambda: [_t(2, 3)]),
    # binary maps
    ("add_sub_mul_div", lambda a, b: (a + b) * (a - b) / b, lambda: [_t(2, 3), _pos(3, seed=1)]),
    ("pow", lambda a, b: a ** b, lambda: [_pos(2, 3), _t(2, 3, seed=1)]),
    ("maximum_minimum", lambda a, b: ta.maximum(a, b) * ta.minimum(a, b),
     lambda: [_t(2, 3), _t(2, 3, seed=1)]),
    ("atan2", lambda a, b: ta.atan2(a, b), lambda: [_t(2, 3), _pos(2, 3, seed=1)]),
    ("remainder", lambda a, b: ta.remainder(a, b) * a, lambda: [_t(2, 3), _pos(2, 3, seed=1)]),
    ("where_masked_fill", lambda a, b: ta.where(a > 0, a * a, b) + a.masked_fill(b > 0, 0.5) * b,
     lambda: [_t(2, 3), _t(2, 3, seed=1)]),
    ("lerp_addcmul_addcdiv", lambda a, b, c: ta.lerp(a, b, c) + ta.addcmul(a, b, c)
     + ta.addcdiv(a, b, c), lambda: [_t(3), _t(3, seed=1), _pos(3, seed=2)]),
    # reductions
    ("sum_mean", lambda x: x.sum(0) * x.mean(1, keepdim=True), lambda: [_t(2, 3)]),
    ("var_std", lambda x: x.var(1) + x.std(0), lambda: [_t(3, 3)]),
    ("norm", lambda x: ta.norm(x) + ta.norm(x, 3, dim=1).sum() + ta.norm(x, math.inf)
     + ta.norm(x, 0),
     lambda: [_t(2, 3)]),
    ("amax_amin", lambda x: x.amax(1) * x.amin(0).sum(), lambda: [_t(2, 3)]),
    ("max_min_dim", lambda x: x.max(1).values * x.min(0).values.sum(), lambda: [_t(2, 3)]),
    ("logsumexp", lambda x: ta.logsumexp(x, 1), lambda: [_t(2, 3)]),
    ("prod_cumprod", lambda x: x.prod(1) + ta.cumprod(x, 1).sum(1), lambda: [_pos(2, 3)]),
    ("cumsum", lambda x: ta.cumsum(x, 1) * x, lambda: [_t(2, 3)]),
    ("sort_topk", lambda x: ta.sort(x, 1).values * ta.topk(x, 2, 1).values.sum(),
     lambda: [_t(2, 3)]),
    # softmax
    ("softmax", lambda x: ta.softmax(x, 1), lambda: [_t(2, 3)]),
    ("log_softmax", lambda x: ta.log_softmax(x, 0), lambda: [_t(2, 3)]),
    # layout and indexing
    ("views", lambda x: x.reshape(3, 2).t() * x.permute(0, 1) + x.unsqueeze(0).expand(2, 2, 3)[1],
     lambda: [_t(2, 3)]),
    ("slices", lambda x: x[1:, ::2] * x[0, 1] + x.narrow(1, 1, 2).sum(), lambda: [_t(3, 3)]),
    ("diagonal", lambda x: x.diagonal() * x.diagonal(1).sum(), lambda: [_t(3, 3)]),
    ("cat_stack_split", lambda a, b: ta.cat([a * b, b], 0) + ta.stack([a, a * a]).sum(0).repeat(2, 1)
     + ta.cat(ta.split(a * b, [1, 2], 1)[::-1], 1).repeat(2, 1), lambda: [_t(1, 3), _t(1, 3, seed=1)]),
    ("pad_roll_flip", lambda x: F.pad(x * x, (1, 2)).sum(1) + ta.roll(x, 1, 1).flip(0).sum(1),
     lambda: [_t(2, 3)]),
    ("index_select_gather", lambda x: x.index_select(1, _long([2, 0, 2])) * x
     + x.gather(1, _long([[0, 0, 1], [2, 1, 0]])) * x, lambda: [_t(2, 3)]),
    ("advanced_index", lambda x: x[_long([1, 0, 1])] * x[[0, 1, 1]] + x[x > 0].sum(),
     lambda: [_t(2, 3)]),
    ("setitem", _setitem, lambda: [_t(2, 3), _t(2, seed=1)]),
    ("scatter", lambda x, s: x.scatter(1, _long([[0, 2]]), s * s)
     + x.scatter_add(1, _long([[1, 1]]), s) * x, lambda: [_t(1, 3), _t(1, 2, seed=1)]),
    ("scatter_reduce", lambda x, s: x.scatter_reduce(1, _long([[0, 0, 2]]), s, "prod")
     + x.scatter_reduce(1, _long([[1, 1, 2]]), s, "amax") * x,
     lambda: [_pos(1, 3), _pos(1, 3, seed=1)]),
    ("index_add", lambda x, s: x.index_add(0, _long([1, 1]), s * s) * x,
     lambda: [_t(2, 2), _t(2, 2, seed=1)]),
    ("dtype_round_trip", lambda x: x.to(ta.float64) * x, lambda: [_t(2, 3)]),
    ("dropout", _dropout, lambda: [_t(2, 3)]),
    # products
    ("matmul", lambda a, b: (a @ b) * (a @ b), lambda: [_t(2, 3), _t(3, 2, seed=1)]),
    ("bmm_einsum", lambda a, b: ta.bmm(a, b) + ta.einsum("bij,bjk->bik", a, b) ** 2,
     lambda: [_t(2, 2, 2), _t(2, 2, 2, seed=1)]),
    ("linear", lambda x, w, b: F.linear(x, w, b).tanh(), lambda: [_t(2, 3), _t(2, 3, seed=1),
                                                               _t(2, seed=2)]),
    # normalisation
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (3,), w, b), lambda: [_t(2, 3), _t(3, seed=1),
                                                                        _t(3, seed=2)]),
    ("batch_norm", _batch_norm, lambda: [_t(2, 3, 2), _t(3, seed=1), _t(3, seed=2)]),
    ("rms_norm_normalize", lambda x: F.rms_norm(x, (3,)) + F.normalize(x, dim=1)
     + F.cosine_similarity(x, x.flip(0)).unsqueeze(1), lambda: [_t(2, 3)]),
    # losses
    ("cross_entropy", lambda x: F.cross_entropy(x, _long([0, 2, -100]), label_smoothing=0.2,
                                                weight=ta.tensor([1.0, 2.0, 0.5], dtype=f64)),
     lambda: [_t(3, 3)]),
    ("cross_entropy_probs", lambda x, t: F.cross_entropy(x, t.softmax(1)),
     lambda: [_t(2, 3), _t(2, 3, seed=1)]),
    ("nll_loss", lambda x: F.nll_loss(x * x, _long([1, 0]), reduction="sum"), lambda: [_t(2, 3)]),
    ("bce_with_logits", lambda x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
     lambda: [_t(2, 3), _t(2, 3, low=0.0, seed=1), _pos(3, seed=2)]),
    ("bce_mse_kl", lambda x, t: F.binary_cross_entropy(x.sigmoid(), t) + F.mse_loss(x, t)
     + F.kl_div(x.log_softmax(1), t.softmax(1), reduction="batchmean"),
     lambda: [_t(2, 3), _t(2, 3, low=0.0, seed=1)]),
    ("l1_smooth_huber", lambda x, t: F.l1_loss(x, t) + F.smooth_l1_loss(x, t, beta=0.5)
     + F.huber_loss(x * x, t, delta=0.3), lambda: [_t(2, 3), _t(2, 3, seed=1)]),
    # convolution and pooling
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
     lambda: [_t(1, 2, 3, 3), _t(2, 1, 2, 2, seed=1), _t(2, seed=2)]),
    ("conv1d", lambda x, w: F.conv1d(x, w, stride=2) + F.conv1d(x, w, dilation=2, padding=1)[..., :2],
     lambda: [_t(1, 1, 5), _t(2, 1, 2, seed=1)]),
    ("pools", lambda x: F.max_pool2d(x * x, 2) + F.avg_pool2d(x * x, 2)
     + F.adaptive_avg_pool2d(x * x, 1), lambda: [_t(1, 1, 2, 2)]),
    ("unfold_fold", lambda x: F.fold(F.unfold(x * x, 2), (3, 3), 2), lambda: [_t(1, 1, 3, 3)]),
    ("embedding", lambda w: F.embedding(_long([[0, 2], [2, 0]]), w * w), lambda: [_t(3, 2)]),
    # attention
    ("sdpa_math", _sdpa_math, lambda: [_t(1, 2, 2), _t(1, 3, 2, seed=1), _t(1, 3, 2, seed=2)]),
    ("sdpa_fused", _sdpa_fused, lambda: [_t(1, 2, 2), _t(1, 3, 2, seed=1), _t(1, 3, 2, seed=2)]),
    ("additive_score_context", lambda pk, q, v: _attention.attention_context(
        _attention.additive_score(pk, q, v).softmax(1), pk),
     lambda: [_t(1, 2, 2), _t(1, 2, seed=1), _t(2, seed=2)]),
    # recurrent
    ("gru_cell", lambda x, h, wi, wh: _rnn.gru_cell(x, h, wi, wh, wi[:, 0] * 1.0, wh[:, 0] * 1.0),
     lambda: [_t(1, 2), _t(1, 1, seed=1), _t(3, 2, seed=2), _t(3, 1, seed=3)]),
    ("gru_sequence", lambda gi, h0, w: _rnn.gru_sequence(gi, h0, w, None, None, [2, 1], True),
     lambda: [_t(2, 2, 3), _t(2, 1, seed=1), _t(3, 1, seed=2)]),
    ("bi_gru_sequence", lambda gi, h0, w, b: _rnn.bi_gru_sequence(
        gi, gi * 0.5, h0, h0 * h0, w, w * 2.0, b, b * b, b * 0.5, b, [2, 1]),
     lambda: [_t(2, 2, 3), _t(2, 1, seed=1), _t(3, 1, seed=2), _t(3, seed=3)]),
]


def _check(fn, inputs):
    """gradgradcheck with its random upstream gradients, which it checks too: so the derivatives
    of each backward in its upstream gradient (an Adjoint's backward) are checked with those in x."""
    assert autograd.gradgradcheck(fn, inputs) is True


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_second_derivatives_of_op_match_finite_differences(name, fn, make):
    _check(fn, make())


class _Triple(Function):
    """y = 3 x, whose recorded backward drops the upstream gradient's graph (a wrong one)."""

    @staticmethod
    def forward(ctx, x):
        return x.detach() * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0


_Triple.differentiable_backward = lambda ctx, g: g.detach() * 3.0


def test_gradgradcheck_catches_a_backward_wrong_in_its_upstream_gradient():
    x = _t(3)
    assert autograd.gradgradcheck(lambda x: _Triple.apply(x) * x, (x,), raise_exception=False) \
        is False
    assert autograd.gradgradcheck(lambda x: (x * 3.0) * x, (x,)) is True


def test_embedding_options_second_derivatives_follow_their_first_derivatives():
    """padding_idx and scale_grad_by_freq change the first derivative on purpose (PyTorch's
    rule), so finite differences of the forward disagree; the backward, as a function of the
    weight and the upstream gradient, is differentiated exactly."""
    idx = _long([[0, 2], [2, 1]])
    w, u = _t(3, 2), _t(2, 2, 2, seed=1)

    def backward(w, u):
        with ta.enable_grad():
            out = F.embedding(idx, w * w, padding_idx=1, scale_grad_by_freq=True)
            return autograd.grad(out, w, u, create_graph=True)
    assert ta.testing.gradcheck(backward, (w, u))
    g, = backward(w, u)
    assert g[1].tolist() == [0.0, 0.0]                  # the padding row gets nothing
    assert g[0].tolist() == pytest.approx((2 * w[0] * u[0, 0]).tolist())


def _node_types(t):
    seen, stack, types = set(), [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        types.add(type(node).__name__)
        stack.extend(autograd.next_functions(node))
    return types


def _ops_functions():
    found, stack = [], [Function]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("tinyattn.ops"):
                found.append(sub)
    return found


def test_every_differentiable_function_in_ops_has_a_differentiable_backward():
    missing = sorted(c.__name__ for c in _ops_functions()
                     if not c.differentiable_backward and c.__name__ not in EXEMPT)
    assert missing == []
    assert all(not c.differentiable_backward for c in _ops_functions() if c.__name__ in EXEMPT)


def test_the_table_reaches_every_function_of_ops():
    """Each Function of tinyattn.ops (not exempt) is a node of some case's graph."""
    reached = set()
    for _, fn, make in CASES:
        reached |= _node_types(fn(*make()).sum())
    helpers = {"Adjoint", "_Alias"}  # the recorded backwards' own nodes (checked through the rest)
    elsewhere = {"ToDtype"}   # float32 <-> float64: test_float32_round_trip_..., exact values
    never = sorted(c.__name__ for c in _ops_functions()
                   if c.__name__ not in reached | set(EXEMPT) | helpers | elsewhere)
    assert never == []


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_recorded_backward_gives_the_kernels_first_derivatives(name, fn, make):
    """gradgradcheck checks the second derivatives against the recorded first derivatives; these
    must be the kernels' (which gradcheck checks elsewhere), for a random upstream gradient."""
    xs = make()
    with ta.no_grad():
        u = _t(*fn(*xs).shape, seed=5)
    plain = autograd.grad(fn(*xs), xs, u)
    recorded = autograd.grad(fn(*xs), xs, u, create_graph=True)
    for a, b in zip(plain, recorded):
        assert (a - b.detach()).abs().max().item() < 1e-12


def test_float32_round_trip_differentiates_twice_exactly():
    x = ta.tensor([0.5, -1.5], dtype=f64, requires_grad=True)
    g, = autograd.grad((x.to(ta.float32) ** 2).sum(), x, create_graph=True)   # 2 x
    assert g.dtype is f64 and g.requires_grad
    assert autograd.grad(g.sum(), x)[0].tolist() == [2.0, 2.0]


def test_third_derivative_through_a_linear_fused_op():
    """Adjoint nodes are differentiable again: d^3/dx^3 of sum(cumsum(x)^3) = 6 * (#uses)."""
    x = ta.tensor([0.3, -0.2, 0.5], dtype=f64, requires_grad=True)
    y = (ta.cumsum(x, 0) ** 3).sum()
    g, = autograd.grad(y, x, create_graph=True)
    h, = autograd.grad(g.sum(), x, create_graph=True)
    t, = autograd.grad(h.sum(), x)
    # y = sum_k s_k^3 with s_k = sum_{i<=k} x_i: d^3 y / dx_a dx_b dx_c summed = 6 * sum_k n_k^3
    # over the prefix sums, where n_k = k + 1 inputs feed s_k; d/dx_i picks the s_k with k >= i
    expected = [6.0 * sum((k + 1) ** 2 for k in range(i, 3)) for i in range(3)]
    assert t.tolist() == pytest.approx(expected)


# -------------------------------------------------------------------------- nn layers


def _layer_case(make_module, make_input):
    ta.manual_seed(0)
    m = make_module().double()
    x = make_input()
    params = [p for p in m.parameters()]

    def fn(x, *ps):     # ps are m's own parameters: gradcheck moves them in place
        out = m(x)
        return out[0] if isinstance(out, tuple) else out
    return fn, [x] + params


LAYERS = [
    ("Linear", lambda: ta.nn.Linear(2, 2), lambda: _t(1, 2)),
    ("LayerNorm", lambda: ta.nn.LayerNorm(3), lambda: _t(2, 3)),
    ("Conv2d", lambda: ta.nn.Conv2d(1, 2, 2), lambda: _t(1, 1, 3, 3)),
    ("Embedding", lambda: ta.nn.Embedding(3, 2), None),
    ("RNN", lambda: ta.nn.RNN(2, 2), lambda: _t(2, 1, 2)),
    ("GRU", lambda: ta.nn.GRU(2, 1, bidirectional=True), lambda: _t(2, 1, 2)),
    ("LSTM", lambda: ta.nn.LSTM(1, 1), lambda: _t(2, 1, 1)),
    ("MultiheadAttention", lambda: ta.nn.MultiheadAttention(2, 1), lambda: _t(2, 1, 2)),
    ("TransformerEncoderLayer", lambda: ta.nn.TransformerEncoderLayer(2, 1, 3, dropout=0.0),
     lambda: _t(2, 1, 2)),
]


@pytest.mark.parametrize("name,make_module,make_input", LAYERS, ids=[c[0] for c in LAYERS])
def test_second_derivatives_of_layer_parameters_match_finite_differences(name, make_module,
                                                                         make_input):
    if name == "Embedding":
        ta.manual_seed(0)
        m = make_module().double()
        _check(lambda w: m(_long([[0, 2], [2, 2]])) ** 2, [m.weight])
        return
    if name == "MultiheadAttention":
        ta.manual_seed(0)
        m = make_module().double()
        x = make_input()
        _check(lambda x, *ps: m(x, x, x)[0], [x] + list(m.parameters()))
        return
    fn, inputs = _layer_case(make_module, make_input)
    _check(fn, inputs)


# -------------------------------------------------------------------------- against PyTorch


def _hvp(lib, fn, values, v):
    xs = [lib.tensor(x, dtype=lib.float64, requires_grad=True) for x in values]
    out = fn(lib, *xs)
    gs = lib.autograd.grad(out, xs, create_graph=True)
    total = sum((g * lib.tensor(w, dtype=lib.float64)).sum() for g, w in zip(gs, v))
    return [h.tolist() for h in lib.autograd.grad(total, xs)]


TORCH_CASES = [
    ("softmax", lambda lib, x: (lib.softmax(x, 1) ** 2).sum(), [[[0.2, -1.0, 0.5], [1.0, 0.0, 2.0]]]),
    ("layer_norm", lambda lib, x, w: (lib.nn.functional.layer_norm(x, (3,), w) ** 3).sum(),
     [[[0.2, -1.0, 0.5], [1.0, 0.0, 2.0]], [0.5, 1.5, -1.0]]),
    ("cross_entropy", lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([2, 0]), label_smoothing=0.1), [[[0.2, -1.0, 0.5], [1.0, 0.0, 2.0]]]),
    ("conv2d", lambda lib, x, w: (lib.nn.functional.conv2d(x, w, padding=1) ** 2).sum(),
     [[[[0.1, 0.4], [-0.3, 0.8]]], [[[[0.5, -0.2], [0.3, 0.7]]]]]),
    ("sdpa", lambda lib, q, k, v: (lib.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True) ** 2).sum(),
     [[[[0.1, 0.4], [-0.3, 0.8]]], [[[0.5, -0.2], [0.3, 0.7]]], [[[1.0, 0.2], [-0.4, 0.6]]]]),
    ("gru_cell", lambda lib, x, h, wi, wh: ((_rnn.gru_cell if lib is ta else lib.gru_cell)(
        x, h, wi, wh, wi[:, 0] * 0.5, wh[:, 0] * 0.5) ** 3).sum(),
     [[[0.3, -0.6]], [[0.2]], [[0.5, -0.1], [0.4, 0.9], [-0.7, 0.2]], [[0.6], [-0.3], [0.8]]]),
    ("batch_norm", lambda lib, x, w: (lib.nn.functional.batch_norm(
        x, None, None, w, None, training=True) ** 3).sum(),
     [[[0.2, -1.0], [1.0, 0.5], [0.3, -0.2]], [1.5, -0.5]]),
]


@pytest.mark.parametrize("name,fn,values", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_hessian_vector_products_match_pytorch(name, fn, values):
    torch = pytest.importorskip("torch")
    v = [_like(x, 0.7) for x in values]
    ours = _hvp(ta, fn, values, v)
    theirs = _hvp(torch, fn, values, v)
    assert _flat(ours) == pytest.approx(_flat(theirs), abs=1e-10)


def _like(values, start):
    """A nested list of values' shape filled with start, start - 0.37, ... (a fixed direction)."""
    if isinstance(values, list):
        out = []
        for x in values:
            out.append(_like(x, start))
            start -= 0.37 * len(_flat(x))
        return out
    return start


def _flat(x):
    return [y for v in x for y in _flat(v)] if isinstance(x, list) else [x]
