"""Optimizers: hand-computed steps, argument checks, state_dict round trips, and trajectories
matched against torch.optim (identical weights and gradients fed to both) when torch is installed."""
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyattn
from tinyattn import nn
from tinyattn.optim import SGD, Adam, AdamW, Optimizer


def leaf(values, dtype="float64"):
    return tinyattn.tensor(values, dtype=dtype, requires_grad=True)


def set_grad(p, values):
    p.grad = tinyattn.tensor(values, dtype=p.dtype)


# ============================================================================ hand-computed steps


def test_sgd_plain_step():
    p = leaf([1.0, -2.0])
    set_grad(p, [0.5, 0.25])
    SGD([p], lr=0.1).step()
    assert p.tolist() == [1.0 - 0.1 * 0.5, -2.0 - 0.1 * 0.25]


def test_sgd_weight_decay_and_maximize():
    p = leaf([1.0, -2.0])
    set_grad(p, [0.5, 0.25])
    SGD([p], lr=0.1, weight_decay=0.01, maximize=True).step()
    # d = -g + 0.01 p = [-0.49, -0.27]; p - 0.1 d
    assert p.tolist() == pytest.approx([1.049, -1.973], abs=1e-15)


def test_sgd_momentum_with_dampening_two_steps():
    p = leaf([1.0])
    opt = SGD([p], lr=0.1, momentum=0.9, dampening=0.5)
    set_grad(p, [2.0])
    opt.step()  # first step: buffer = g = 2 (no dampening), p = 1 - 0.2 = 0.8
    assert p.tolist() == pytest.approx([0.8], abs=1e-15)
    set_grad(p, [1.0])
    opt.step()  # buffer = 0.9 * 2 + 0.5 * 1 = 2.3, p = 0.8 - 0.23 = 0.57
    assert opt.state[p]["momentum_buffer"].tolist() == pytest.approx([2.3], abs=1e-15)
    assert p.tolist() == pytest.approx([0.57], abs=1e-15)


def test_sgd_nesterov_two_steps():
    p = leaf([1.0])
    opt = SGD([p], lr=0.1, momentum=0.5, nesterov=True)
    set_grad(p, [1.0])
    opt.step()  # buffer = 1, d = g + 0.5 * buffer = 1.5, p = 0.85
    assert p.tolist() == pytest.approx([0.85], abs=1e-15)
    set_grad(p, [2.0])
    opt.step()  # buffer = 0.5 + 2 = 2.5, d = 2 + 1.25 = 3.25, p = 0.85 - 0.325 = 0.525
    assert p.tolist() == pytest.approx([0.525], abs=1e-15)


def adam_reference(p, grads, lr, b1, b2, eps, wd=0.0, decoupled=False, amsgrad=False):
    """Adam written out for one scalar from the paper's equations (not from the code under test)."""
    m = v = v_max = 0.0
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        v_max = max(v_max, v)
        v_used = v_max if amsgrad else v
        m_hat = m / (1 - b1 ** t)
        p = p - lr * m_hat / (math.sqrt(v_used) / math.sqrt(1 - b2 ** t) + eps)
    return p


def test_adam_first_step_moves_by_lr_times_sign():
    # Step 1: m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g).
    p = leaf([1.0, 1.0, 1.0])
    set_grad(p, [0.5, -3.0, 1e-3])
    Adam([p], lr=0.1).step()
    expected = [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), 1.0 + 0.1 * 3.0 / (3.0 + 1e-8),
                1.0 - 0.1 * 1e-3 / (1e-3 + 1e-8)]
    assert p.tolist() == pytest.approx(expected, rel=1e-14)
    assert p.tolist() == pytest.approx([0.9, 1.1, 0.9], abs=1e-6)


@pytest.mark.parametrize("kwargs", [
    {}, {"weight_decay": 0.1}, {"amsgrad": True}, {"weight_decay": 0.2, "amsgrad": True}])
def test_adam_several_steps_match_the_equations(kwargs):
    grads = [1.0, 0.0, -0.5, 2.0, 0.1]  # the zero gradient makes v shrink: amsgrad keeps the max
    p = leaf([0.3])
    opt = Adam([p], lr=0.05, betas=(0.8, 0.9), eps=1e-6, **kwargs)
    for g in grads:
        set_grad(p, [g])
        opt.step()
    expected = adam_reference(0.3, grads, 0.05, 0.8, 0.9, 1e-6, wd=kwargs.get("weight_decay", 0.0),
                              amsgrad=kwargs.get("amsgrad", False))
    assert p.item() == pytest.approx(expected, rel=1e-13)
    assert opt.state[p]["step"].item() == 5.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(-10, 10), min_size=3, max_size=3), min_size=1, max_size=4),
       st.floats(0.0, 0.99), st.floats(0.0, 0.999), st.floats(0.0, 0.5), st.booleans(),
       st.booleans())
def test_adam_matches_the_equations_property(grads, b1, b2, wd, amsgrad, decoupled):
    p = leaf([0.5, -1.0, 2.0])
    cls = AdamW if decoupled else Adam
    opt = cls([p], lr=0.01, betas=(b1, b2), eps=1e-3, weight_decay=wd, amsgrad=amsgrad)
    for g in grads:
        set_grad(p, g)
        opt.step()
    for j, p0 in enumerate([0.5, -1.0, 2.0]):
        expected = adam_reference(p0, [g[j] for g in grads], 0.01, b1, b2, 1e-3, wd=wd,
                                  decoupled=decoupled, amsgrad=amsgrad)
        assert p.tolist()[j] == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_amsgrad_differs_from_adam_once_v_shrinks():
    results = []
    for amsgrad in (False, True):
        p = leaf([0.0])
        opt = Adam([p], lr=0.1, amsgrad=amsgrad)
        for g in (1.0, 0.0, 0.0):
            set_grad(p, [g])
            opt.step()
        results.append(p.item())
    assert results[0] != results[1]


def test_adamw_decays_the_weight_not_the_gradient():
    grads = [0.5, -0.25, 1.0]
    p = leaf([2.0])
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    for g in grads:
        set_grad(p, [g])
        opt.step()
    expected = adam_reference(2.0, grads, 0.1, 0.9, 0.999, 1e-8, wd=0.5, decoupled=True)
    assert p.item() == pytest.approx(expected, rel=1e-13)
    # With a zero gradient AdamW still shrinks the weight by exactly (1 - lr * wd) at step 1.
    q = leaf([2.0])
    set_grad(q, [0.0])
    AdamW([q], lr=0.1, weight_decay=0.5).step()
    assert q.item() == 2.0 * (1 - 0.1 * 0.5)


def test_adam_maximize_climbs():
    p = leaf([1.0])
    set_grad(p, [2.0])
    Adam([p], lr=0.1, maximize=True).step()
    assert p.item() == pytest.approx(1.1, abs=1e-7)


def test_beta1_zero_keeps_m_equal_to_g():
    p = leaf([0.0, 0.0])
    opt = Adam([p], lr=0.1, betas=(0.0, 0.5))
    for g in ([0.3, -7.0], [0.1, 0.2]):
        set_grad(p, g)
        opt.step()
        assert opt.state[p]["exp_avg"].tolist() == g


def test_zero_eps_and_zero_gradient_give_nan_like_pytorch():
    # denominator sqrt(0) + 0 = 0 and numerator 0: 0/0 = NaN (IEEE, also when interpreted)
    p = leaf([1.0])
    set_grad(p, [0.0])
    Adam([p], lr=0.1, eps=0.0).step()
    assert math.isnan(p.item())


def test_parameters_without_grad_are_skipped():
    a, b = leaf([1.0]), leaf([2.0])
    set_grad(a, [1.0])
    opt = Adam([a, b], lr=0.1)
    opt.step()
    assert b.item() == 2.0 and b not in opt.state
    assert a.item() != 1.0


def test_non_contiguous_gradient_and_parameter():
    base = tinyattn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="float64")
    g = tinyattn.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], dtype="float64")
    # reference: contiguous parameter, contiguous gradient
    p_ref = leaf(base.tolist())
    p_ref.grad = g.T.contiguous()
    SGD([p_ref], lr=0.5, momentum=0.9).step()
    # the same with a transposed (strided) gradient
    p = leaf(base.tolist())
    p.grad = g.T
    assert not p.grad.is_contiguous()
    SGD([p], lr=0.5, momentum=0.9).step()
    assert p.tolist() == p_ref.tolist()
    # a parameter that is itself a strided view (leaf made from a transpose)
    q = tinyattn.tensor(base.T.tolist(), dtype="float64").T.detach().requires_grad_()
    assert not q._packed
    q.grad = g.T
    opt = Adam([q], lr=0.5)
    opt.step()
    p2 = leaf(base.tolist())
    p2.grad = g.T.contiguous()
    Adam([p2], lr=0.5).step()
    assert q.tolist() == p2.tolist()


def test_expanded_gradient():
    p = leaf([[1.0, 2.0], [3.0, 4.0]])
    p.grad = tinyattn.tensor([0.5, -0.5], dtype="float64").expand(2, 2)
    SGD([p], lr=1.0).step()
    assert p.tolist() == [[0.5, 2.5], [2.5, 4.5]]


def test_step_does_not_touch_the_gradient_and_builds_no_graph():
    p = leaf([1.0, 2.0])
    set_grad(p, [0.5, 0.5])
    Adam([p], lr=0.1, weight_decay=0.1, maximize=True).step()
    assert p.grad.tolist() == [0.5, 0.5]
    assert p.is_leaf and p.requires_grad


def test_closure_is_evaluated_with_grad_and_returned():
    p = leaf([3.0])
    opt = SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tinyattn.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    assert p.item() == pytest.approx(3.0 - 0.1 * 6.0)


def test_zero_grad():
    p = leaf([1.0, 2.0])
    opt = SGD([p], lr=0.1, momentum=0.9)
    set_grad(p, [1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_have_their_own_options():
    a, b = leaf([1.0]), leaf([1.0])
    opt = SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.0)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    set_grad(a, [1.0])
    set_grad(b, [1.0])
    opt.step()
    assert (a.item(), b.item()) == (pytest.approx(0.9), pytest.approx(0.5))
    c = leaf([1.0])
    opt.add_param_group({"params": [c], "momentum": 0.9})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.9


def test_named_parameters_are_accepted():
    model = nn.Linear(2, 3)
    opt = Adam(model.named_parameters())
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"][0] is model.weight


# ============================================================================ argument checks


@pytest.mark.parametrize("make, error, words", [
    (lambda p: SGD([p], lr=-0.1), ValueError, "lr"),
    (lambda p: SGD([p], lr=float("nan")), ValueError, "lr"),
    (lambda p: SGD([p], lr="0.1"), TypeError, "lr"),
    (lambda p: SGD([p], momentum=-0.5), ValueError, "momentum"),
    (lambda p: SGD([p], weight_decay=-1), ValueError, "weight_decay"),
    (lambda p: SGD([p], nesterov=True), ValueError, "Nesterov"),
    (lambda p: SGD([p], momentum=0.9, dampening=0.1, nesterov=True), ValueError, "Nesterov"),
    (lambda p: Adam([p], lr=-1e-3), ValueError, "lr"),
    (lambda p: Adam([p], betas=(1.0, 0.999)), ValueError, "index 0"),
    (lambda p: Adam([p], betas=(0.9, -0.1)), ValueError, "index 1"),
    (lambda p: Adam([p], betas=(0.9,)), ValueError, "pair"),
    (lambda p: Adam([p], eps=-1e-8), ValueError, "eps"),
    (lambda p: AdamW([p], weight_decay=-0.01), ValueError, "weight_decay"),
    (lambda p: Adam([{"params": [p], "lr": -1.0}]), ValueError, "lr"),
    (lambda p: Adam(p), TypeError, "single Tensor"),
    (lambda p: Adam({p}), TypeError, "set"),
    (lambda p: Adam([]), ValueError, "empty"),
    (lambda p: Adam([p, p]), ValueError, "twice"),
    (lambda p: Adam([{"params": [p]}, {"params": [p]}]), ValueError, "more than one"),
    (lambda p: Adam([p * 2]), ValueError, "non-leaf"),
    (lambda p: Adam([1.0]), TypeError, "Tensors"),
    (lambda p: Adam([tinyattn.arange(3)]), TypeError, "floating"),
])
def test_invalid_arguments_raise(make, error, words):
    p = leaf([1.0])
    with pytest.raises(error, match=words):
        make(p)


def test_add_param_group_checks_the_group():
    a, b = leaf([1.0]), leaf([2.0])
    opt = Adam([a])
    with pytest.raises(ValueError, match="more than one"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="index 1"):
        opt.add_param_group({"params": [b], "betas": (0.9, 1.5)})
    with pytest.raises(TypeError, match="dict"):
        opt.add_param_group([b])
    assert len(opt.param_groups) == 1


def test_gradient_of_the_wrong_shape_raises():
    p = leaf([1.0, 2.0])
    p.grad = tinyattn.tensor([1.0, 2.0, 3.0], dtype="float64")
    with pytest.raises(ValueError, match=r"shape \(2,\).*\(3,\)"):
        SGD([p], lr=0.1).step()


# ============================================================================ state_dict


def small_model(dtype="float64", seed=0):
    tinyattn.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(dtype)


def train_steps(model, opt, steps, seed):
    gen = tinyattn.Generator(seed)
    for _ in range(steps):
        x = tinyattn.randn(5, 3, dtype=model[0].weight.dtype, generator=gen)
        opt.zero_grad()
        ((model(x) - 0.5) ** 2).mean().backward()
        opt.step()


def values(model):
    return [t.tolist() for t in model.state_dict().values()]


@pytest.mark.parametrize("make", [
    lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: AdamW(ps, lr=0.01),
])
def test_state_dict_round_trip_resumes_exactly(make):
    model = small_model()
    opt = make(model.parameters())
    train_steps(model, opt, 3, seed=1)
    # a fresh model with other weights and a fresh optimizer, then load both states
    model2 = small_model(seed=99)
    model2.load_state_dict(model.state_dict())
    opt2 = make(model2.parameters())
    opt2.load_state_dict(opt.state_dict())
    train_steps(model, opt, 4, seed=2)
    train_steps(model2, opt2, 4, seed=2)
    assert values(model) == values(model2)


def test_state_dict_structure_is_pytorchs():
    model = small_model()
    opt = Adam([{"params": [model[0].weight]}, {"params": [model[0].bias, model[2].weight],
                                                "lr": 0.1}])
    train_steps(model, opt, 1, seed=0)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    assert set(sd["state"]) == {0, 1, 2}
    assert set(sd["state"][1]) == {"step", "exp_avg", "exp_avg_sq"}
    assert sd["state"][1]["step"].shape == () and sd["state"][1]["step"].dtype is tinyattn.float32
    assert sd["param_groups"][1]["lr"] == 0.1 and sd["param_groups"][0]["betas"] == (0.9, 0.999)


def test_loaded_state_is_a_copy():
    model = small_model()
    opt = Adam(model.parameters(), lr=0.01)
    train_steps(model, opt, 2, seed=0)
    sd = opt.state_dict()
    saved = sd["state"][0]["exp_avg"].tolist()
    opt2 = Adam(model.parameters(), lr=0.01)
    opt2.load_state_dict(sd)
    train_steps(model, opt2, 1, seed=1)
    assert sd["state"][0]["exp_avg"].tolist() == saved


def test_load_state_dict_mismatch_raises():
    model = small_model()
    opt = Adam(model.parameters())
    train_steps(model, opt, 1, seed=0)
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="parameter groups"):
        Adam([{"params": [model[0].weight]}, {"params": [model[0].bias]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="has 4 parameters"):
        Adam([model[0].weight]).load_state_dict(sd)
    swapped = list(model.parameters())
    swapped[0], swapped[1] = swapped[1], swapped[0]  # the checkpoint's state would not fit
    with pytest.raises(ValueError, match="shape"):
        Adam(swapped).load_state_dict(sd)


def test_dtype_is_converted_on_load():
    model = small_model("float64")
    opt = Adam(model.parameters())
    train_steps(model, opt, 1, seed=0)
    model32 = small_model("float32")
    opt32 = Adam(model32.parameters())
    opt32.load_state_dict(opt.state_dict())
    st = opt32.state[model32[0].weight]
    assert st["exp_avg"].dtype is tinyattn.float32 and st["step"].dtype is tinyattn.float32


def test_optimizer_subclass_api():
    class SignSGD(Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def _update(self, p, grad, state, group):
            p.sub_(grad.sign() * group["lr"])

    p = leaf([1.0, 1.0])
    set_grad(p, [3.0, -0.2])
    SignSGD([p]).step()
    assert p.tolist() == [0.9, 1.1]


# ============================================================================ compiled == interpreted

_SCRIPT = r"""
import tinyattn
from tinyattn.optim import SGD, Adam, AdamW
out = []
for dtype in ("float32", "float64"):
    for make in (lambda ps: SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
                 lambda ps: SGD(ps, lr=0.1, momentum=0.8, nesterov=True, maximize=True),
                 lambda ps: Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
                 lambda ps: AdamW(ps, lr=0.01, betas=(0.3, 0.9), maximize=True)):
        tinyattn.manual_seed(0)
        p = tinyattn.randn(37, dtype=dtype, requires_grad=True)
        opt = make([p])
        for step in range(4):
            p.grad = tinyattn.randn(37, dtype=dtype)
            opt.step()
        out.append([v.hex() for v in p.tolist()])
print(out)
"""


def test_kernels_compiled_and_interpreted_agree_bitwise():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    interpreted = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                                 text=True, check=True).stdout
    compiled = subprocess.run([sys.executable, "-c", _SCRIPT],
                              env=dict(env, NUMBA_DISABLE_JIT="0"), capture_output=True,
                              text=True, check=True).stdout
    assert interpreted == compiled
    assert len(eval(compiled)) == 8


# ============================================================================ parity with PyTorch

OPTIONS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.5, 0.8), "eps": 1e-6}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True, "weight_decay": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "betas": (0.0, 0.99)}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True, "maximize": True}),
]


def torch_twin(torch, model, dtype):
    tdt = getattr(torch, dtype)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    twin = twin.to(tdt)
    twin.load_state_dict({k: torch.tensor(v.tolist(), dtype=tdt)
                          for k, v in model.state_dict().items()})
    return twin


def assert_close(ours, theirs, dtype):
    rtol, atol = (1e-13, 1e-15) if dtype == "float64" else (2e-6, 1e-7)
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= atol + rtol * abs(b), (a, b)


def flat(tensors):
    return [v for t in tensors for v in t.reshape(-1).tolist()]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, kwargs", OPTIONS)
def test_trajectory_matches_pytorch(name, kwargs, dtype):
    torch = pytest.importorskip("torch")
    model = small_model(dtype)
    twin = torch_twin(torch, model, dtype)
    opt = getattr(tinyattn.optim, name)(model.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)
    gen = tinyattn.Generator(3)
    for _ in range(6):
        # one gradient, computed here at our weights, is given to both optimizers
        x = tinyattn.randn(5, 3, dtype=dtype, generator=gen)
        opt.zero_grad()
        ((model(x) - 0.5) ** 2).mean().backward()
        for p, tp in zip(model.parameters(), twin.parameters()):
            tp.grad = torch.tensor(p.grad.tolist(), dtype=tp.dtype)
        opt.step()
        topt.step()
        assert_close(flat(model.parameters()), flat(twin.parameters()), dtype)
    # the optimizer state agrees too
    for p, tp in zip(model.parameters(), twin.parameters()):
        for key, value in topt.state[tp].items():
            if key == "step":
                assert opt.state[p]["step"].item() == value.item() == 6
            elif value is not None:
                assert_close(flat([opt.state[p][key]]), value.reshape(-1).tolist(), dtype)


def test_param_groups_match_pytorch():
    torch = pytest.importorskip("torch")
    model = small_model()
    twin = torch_twin(torch, model, "float64")
    groups = lambda m: [{"params": list(m[0].parameters()), "lr": 0.05},  # noqa: E731
                        {"params": list(m[2].parameters()), "weight_decay": 0.1}]
    opt = Adam(groups(model), lr=0.01)
    topt = torch.optim.Adam(groups(twin), lr=0.01, foreach=False)
    for _ in range(3):
        opt.zero_grad()
        ((model(tinyattn.randn(4, 3, dtype="float64")) + 1) ** 2).mean().backward()
        for p, tp in zip(model.parameters(), twin.parameters()):
            tp.grad = torch.tensor(p.grad.tolist(), dtype=torch.float64)
        opt.step()
        topt.step()
    assert_close(flat(model.parameters()), flat(twin.parameters()), "float64")
    ours, theirs = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in ours["param_groups"]] == [g["params"] for g in theirs["param_groups"]]
    for g, tg in zip(ours["param_groups"], theirs["param_groups"]):
        assert {k: g[k] for k in g} == {k: tg[k] for k in g}
    assert set(ours["state"]) == set(theirs["state"])
    for i in ours["state"]:
        assert set(ours["state"][i]) == set(theirs["state"][i])


@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                          ("Adam", {"lr": 0.01, "amsgrad": True}),
                                          ("AdamW", {"lr": 0.01})])
def test_state_dict_moves_between_pytorch_and_tinyattn(name, kwargs):
    torch = pytest.importorskip("torch")
    model = small_model()
    twin = torch_twin(torch, model, "float64")
    opt = getattr(tinyattn.optim, name)(model.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)

    def step_both(o, to):
        o.zero_grad()
        ((model(tinyattn.randn(4, 3, dtype="float64")) + 1) ** 2).mean().backward()
        for p, tp in zip(model.parameters(), twin.parameters()):
            tp.grad = torch.tensor(p.grad.tolist(), dtype=torch.float64)
        o.step()
        to.step()

    for _ in range(3):
        step_both(opt, topt)
    # torch -> tinyattn: a fresh tinyattn optimizer continues from torch's state
    opt2 = getattr(tinyattn.optim, name)(model.parameters(), **kwargs)
    opt2.load_state_dict(topt.state_dict())
    # tinyattn -> torch: a fresh torch optimizer continues from ours (tensors converted by value)
    sd = opt.state_dict()
    sd = {"state": {i: {k: torch.tensor(v.tolist(), dtype=getattr(torch, v.dtype.name))
                        if isinstance(v, tinyattn.Tensor) else v
                        for k, v in s.items()} for i, s in sd["state"].items()},
          "param_groups": sd["param_groups"]}
    topt2 = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)
    topt2.load_state_dict(sd)
    for _ in range(3):
        step_both(opt2, topt2)
    assert_close(flat(model.parameters()), flat(twin.parameters()), "float64")
