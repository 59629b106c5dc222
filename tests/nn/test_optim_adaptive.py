"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam: steps computed by hand from the papers'
equations, PyTorch's argument checks, state_dict round trips, and many-step trajectories and
state dicts matched against torch.optim (identical weights and gradients fed to both)."""
import math

import pytest

import tinyattn
from tinyattn import nn
from tinyattn.optim import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop


def leaf(values, dtype="float64"):
    return tinyattn.tensor(values, dtype=dtype, requires_grad=True)


def run_scalar(opt_cls, grads, p0=0.5, **kwargs):
    p = leaf([p0])
    opt = opt_cls([p], **kwargs)
    for g in grads:
        p.grad = tinyattn.tensor([g], dtype="float64")
        opt.step()
    return p.item(), opt


GRADS = [0.3, -1.2, 0.0, 2.5, 0.7, -0.1, 1.0, 0.4]


# ============================================================================ the equations by hand


def rmsprop_reference(p, grads, lr, alpha, eps, weight_decay=0.0, momentum=0.0, centered=False,
                      maximize=False):
    v = m = b = 0.0
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        m = alpha * m + (1 - alpha) * g
        d = math.sqrt(v - m * m if centered else v) + eps
        if momentum > 0:
            b = momentum * b + g / d
            p = p - lr * b
        else:
            p = p - lr * g / d
    return p


@pytest.mark.parametrize("kwargs", [
    {}, {"weight_decay": 0.1}, {"momentum": 0.9}, {"centered": True},
    {"centered": True, "momentum": 0.5, "maximize": True, "alpha": 0.3}])
def test_rmsprop_matches_the_equations(kwargs):
    opts = {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, **kwargs}
    ours, _ = run_scalar(RMSprop, GRADS, **opts)
    assert ours == pytest.approx(rmsprop_reference(0.5, GRADS, **opts), rel=1e-12)


def test_rmsprop_first_step_by_hand():
    # v = 0.01 g^2, so the first step is lr g / (0.1 |g| + eps) = 10 lr sign(g), nearly
    p, _ = run_scalar(RMSprop, [2.0], p0=1.0, lr=0.01)
    assert p == pytest.approx(1.0 - 0.01 * 2.0 / (0.2 + 1e-8), rel=1e-14)


def test_adagrad_matches_the_equations_and_decays_the_rate():
    lr, decay, init, eps, wd = 0.1, 0.05, 0.2, 1e-10, 0.01
    ours, opt = run_scalar(Adagrad, GRADS, lr=lr, lr_decay=decay, initial_accumulator_value=init,
                           eps=eps, weight_decay=wd)
    p, s = 0.5, init
    for t, g in enumerate(GRADS, start=1):
        g = g + wd * p
        s += g * g
        p -= lr / (1 + (t - 1) * decay) * g / (math.sqrt(s) + eps)
    assert ours == pytest.approx(p, rel=1e-12)
    assert opt.state[opt.param_groups[0]["params"][0]]["sum"].item() == pytest.approx(s)


def test_adagrad_creates_its_state_in_the_constructor():
    a, b = leaf([1.0, 2.0]), leaf([3.0])
    opt = Adagrad([a, b], initial_accumulator_value=0.5)
    assert opt.state[a]["sum"].tolist() == [0.5, 0.5] and opt.state[b]["step"].item() == 0.0
    assert set(opt.state_dict()["state"]) == {0, 1}


def test_adadelta_matches_the_equations():
    rho, eps, lr = 0.9, 1e-6, 1.0
    ours, _ = run_scalar(Adadelta, GRADS, lr=lr, rho=rho, eps=eps)
    p, v, u = 0.5, 0.0, 0.0
    for g in GRADS:
        v = rho * v + (1 - rho) * g * g
        d = math.sqrt(u + eps) / math.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d * d
        p -= lr * d
    assert ours == pytest.approx(p, rel=1e-12)


def test_adamax_matches_the_equations():
    lr, b1, b2, eps = 0.002, 0.9, 0.999, 1e-8
    ours, _ = run_scalar(Adamax, GRADS, lr=lr, betas=(b1, b2), eps=eps, maximize=True)
    p, m, u = 0.5, 0.0, 0.0
    for t, g in enumerate(GRADS, start=1):
        g = -g
        m = b1 * m + (1 - b1) * g
        u = max(b2 * u, abs(g) + eps)
        p -= lr / (1 - b1 ** t) * m / u
    assert ours == pytest.approx(p, rel=1e-12)


def nadam_reference(p, grads, lr, b1, b2, eps, psi, wd=0.0, decoupled=False):
    m = v = 0.0
    prod = 1.0
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p *= 1 - lr * wd
        else:
            g = g + wd * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        prod *= mu
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        d = math.sqrt(v / (1 - b2 ** t)) + eps
        p -= lr * (1 - mu) / (1 - prod) * g / d + lr * mu_next / (1 - prod * mu_next) * m / d
    return p


@pytest.mark.parametrize("wd, decoupled", [(0.0, False), (0.1, False), (0.1, True)])
def test_nadam_matches_the_equations(wd, decoupled):
    # PyTorch keeps the product of the mu_t in float32: its relative rounding, ~1e-7, is the
    # tolerance against the float64 equations.
    ours, opt = run_scalar(NAdam, GRADS, lr=0.002, weight_decay=wd,
                           decoupled_weight_decay=decoupled)
    expected = nadam_reference(0.5, GRADS, 0.002, 0.9, 0.999, 1e-8, 4e-3, wd, decoupled)
    assert ours == pytest.approx(expected, rel=1e-6)
    assert opt.state[opt.param_groups[0]["params"][0]]["mu_product"].dtype is tinyattn.float32


def test_nadam_mu_product_takes_the_parameter_dtype_when_loaded_as_in_pytorch():
    p = leaf([1.0])
    opt = NAdam([p])
    p.grad = tinyattn.tensor([0.5], dtype="float64")
    opt.step()
    opt2 = NAdam([p])
    opt2.load_state_dict(opt.state_dict())
    assert opt2.state[p]["mu_product"].dtype is tinyattn.float64
    assert opt2.state[p]["mu_product"].item() == opt.state[p]["mu_product"].item()
    assert opt2.state[p]["step"].dtype is tinyattn.float32


def radam_reference(p, grads, lr, b1, b2, eps, wd=0.0, decoupled=False):
    m = v = 0.0
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p *= 1 - lr * wd
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2)
                                                                  * rho_t))
            p -= lr * m_hat * math.sqrt(1 - b2 ** t) / (math.sqrt(v) + eps) * r
        else:
            p -= lr * m_hat
    return p


@pytest.mark.parametrize("betas, wd, decoupled", [
    ((0.9, 0.999), 0.0, False),   # rho_t <= 5 for the first 6 steps: momentum SGD, then adaptive
    ((0.9, 0.5), 0.1, False),     # rho_inf = 3: never adaptive
    ((0.5, 0.9), 0.1, True)])
def test_radam_matches_the_equations(betas, wd, decoupled):
    grads = GRADS * 2
    ours, _ = run_scalar(RAdam, grads, lr=0.01, betas=betas, weight_decay=wd,
                         decoupled_weight_decay=decoupled)
    expected = radam_reference(0.5, grads, 0.01, *betas, 1e-8, wd, decoupled)
    assert ours == pytest.approx(expected, rel=1e-12)


def test_radam_first_steps_are_momentum_sgd():
    p, _ = run_scalar(RAdam, [2.0], p0=1.0, lr=0.1)
    assert p == pytest.approx(1.0 - 0.1 * 2.0, rel=1e-14)  # m_hat = g at step 1


# ============================================================================ argument checks


@pytest.mark.parametrize("make, error, words", [
    (lambda p: RMSprop([p], lr=-0.1), ValueError, "RMSprop.*lr"),
    (lambda p: RMSprop([p], alpha=-0.5), ValueError, "alpha.*-0.5"),
    (lambda p: RMSprop([p], momentum=-1), ValueError, "momentum"),
    (lambda p: RMSprop([p], eps=-1e-8), ValueError, "eps"),
    (lambda p: RMSprop([p], weight_decay=-1), ValueError, "weight_decay"),
    (lambda p: Adagrad([p], lr_decay=-0.1), ValueError, "Adagrad.*lr_decay"),
    (lambda p: Adagrad([p], initial_accumulator_value=-1.0), ValueError, "initial_accumulator"),
    (lambda p: Adagrad([p], eps=-1.0), ValueError, "eps"),
    (lambda p: Adadelta([p], rho=1.5), ValueError, "Adadelta.*rho.*1.5"),
    (lambda p: Adadelta([p], rho=-0.1), ValueError, "rho"),
    (lambda p: Adadelta([p], lr=-1.0), ValueError, "lr"),
    (lambda p: Adamax([p], betas=(1.0, 0.9)), ValueError, "Adamax.*index 0"),
    (lambda p: NAdam([p], betas=(0.9, 1.0)), ValueError, "NAdam.*index 1"),
    (lambda p: NAdam([p], momentum_decay=-1e-3), ValueError, "momentum_decay"),
    (lambda p: RAdam([p], weight_decay=-0.1), ValueError, "RAdam.*weight_decay"),
    (lambda p: RAdam([p], lr="1e-3"), TypeError, "lr"),
    (lambda p: RMSprop([{"params": [p], "alpha": -1.0}]), ValueError, "alpha"),
])
def test_invalid_arguments_raise(make, error, words):
    with pytest.raises(error, match=words):
        make(leaf([1.0]))


def test_defaults_are_pytorchs():
    p = leaf([1.0])
    assert RMSprop([p]).defaults == {"lr": 1e-2, "momentum": 0, "alpha": 0.99, "eps": 1e-8,
                                     "centered": False, "weight_decay": 0, "maximize": False}
    assert Adagrad([p]).defaults == {"lr": 1e-2, "lr_decay": 0, "eps": 1e-10,
                                     "weight_decay": 0, "initial_accumulator_value": 0,
                                     "maximize": False}
    assert Adadelta([p]).defaults["lr"] == 1.0 and Adadelta([p]).defaults["rho"] == 0.9
    assert Adamax([p]).defaults["lr"] == 2e-3 and NAdam([p]).defaults["momentum_decay"] == 4e-3
    assert RAdam([p]).defaults["lr"] == 1e-3


# ============================================================================ state_dict

MAKERS = {
    "RMSprop": lambda ps: RMSprop(ps, lr=0.01, momentum=0.9, centered=True),
    "Adagrad": lambda ps: Adagrad(ps, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
    "Adadelta": lambda ps: Adadelta(ps, weight_decay=0.01),
    "Adamax": lambda ps: Adamax(ps, lr=0.01),
    "NAdam": lambda ps: NAdam(ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": lambda ps: RAdam(ps, lr=0.01, weight_decay=0.1),
}


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


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_state_dict_round_trip_resumes_exactly(name):
    make = MAKERS[name]
    # NAdam's mu_product is float32 until loaded, then the parameter's dtype (as in PyTorch):
    # float32 parameters make the round trip exact.
    dtype = "float32" if name == "NAdam" else "float64"
    model = small_model(dtype)
    opt = make(model.parameters())
    train_steps(model, opt, 3, seed=1)
    model2 = small_model(dtype, seed=99)
    model2.load_state_dict(model.state_dict())
    opt2 = make(model2.parameters())
    opt2.load_state_dict(opt.state_dict())
    train_steps(model, opt, 4, seed=2)
    train_steps(model2, opt2, 4, seed=2)
    assert values(model) == values(model2)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_float32_parameters_keep_float32_state(name):
    model = small_model("float32")
    opt = MAKERS[name](model.parameters())
    train_steps(model, opt, 2, seed=0)
    for key, value in opt.state[model[0].weight].items():
        assert value.dtype is tinyattn.float32, key


# ============================================================================ parity with PyTorch

OPTIONS = [
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.05}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "maximize": True, "alpha": 0.3}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1,
                 "initial_accumulator_value": 0.3, "eps": 1e-6}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.3, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "betas": (0.8, 0.9), "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "betas": (0.3, 0.8), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}),
]
STEPS = 30


def torch_twin(torch, model, dtype):
    tdt = getattr(torch, dtype)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    twin = twin.to(tdt)
    twin.load_state_dict({k: torch.tensor(v.tolist(), dtype=tdt)
                          for k, v in model.state_dict().items()})
    return twin


def flat(tensors):
    return [v for t in tensors for v in t.reshape(-1).tolist()]


def assert_close(ours, theirs, dtype):
    rtol, atol = (1e-12, 1e-14) if dtype == "float64" else (2e-5, 1e-6)
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= atol + rtol * abs(b), (a, b)


def step_both(torch, model, twin, opt, topt, gen):
    """One gradient, computed at our weights, given to both optimizers; then both step."""
    dtype = model[0].weight.dtype
    x = tinyattn.randn(5, 3, dtype=dtype, generator=gen)
    opt.zero_grad()
    ((model(x) - 0.5) ** 2).mean().backward()
    for p, tp in zip(model.parameters(), twin.parameters()):
        tp.grad = torch.tensor(p.grad.tolist(), dtype=tp.dtype)
    opt.step()
    topt.step()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, kwargs", OPTIONS)
def test_trajectory_and_state_match_pytorch(name, kwargs, dtype):
    torch = pytest.importorskip("torch")
    model = small_model(dtype)
    twin = torch_twin(torch, model, dtype)
    opt = getattr(tinyattn.optim, name)(model.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)
    gen = tinyattn.Generator(3)
    for _ in range(STEPS):
        step_both(torch, model, twin, opt, topt, gen)
        assert_close(flat(model.parameters()), flat(twin.parameters()), dtype)
    for p, tp in zip(model.parameters(), twin.parameters()):
        assert list(opt.state[p]) == list(topt.state[tp])
        for key, value in topt.state[tp].items():
            if key == "step":
                assert opt.state[p]["step"].item() == value.item() == STEPS
            else:
                assert_close(flat([opt.state[p][key]]), value.reshape(-1).tolist(), dtype)
    ours, theirs = opt.state_dict()["param_groups"][0], topt.state_dict()["param_groups"][0]
    assert ours == {k: theirs[k] for k in ours}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_state_dict_moves_between_pytorch_and_tinyattn(name):
    torch = pytest.importorskip("torch")
    model = small_model()
    twin = torch_twin(torch, model, "float64")
    make = MAKERS[name]
    kwargs = make([leaf([0.0])]).defaults
    opt = make(model.parameters())
    topt = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)
    gen = tinyattn.Generator(5)
    for _ in range(4):
        step_both(torch, model, twin, opt, topt, gen)
    # torch -> tinyattn: a fresh tinyattn optimizer continues from torch's state
    opt2 = make(model.parameters())
    opt2.load_state_dict(topt.state_dict())
    # tinyattn -> torch: a fresh torch optimizer continues from ours (tensors converted by value)
    sd = opt.state_dict()
    sd = {"state": {i: {k: torch.tensor(v.tolist(), dtype=getattr(torch, v.dtype.name))
                        for k, v in s.items()} for i, s in sd["state"].items()},
          "param_groups": sd["param_groups"]}
    topt2 = getattr(torch.optim, name)(twin.parameters(), foreach=False, **kwargs)
    topt2.load_state_dict(sd)
    for _ in range(4):
        step_both(torch, model, twin, opt2, topt2, gen)
        assert_close(flat(model.parameters()), flat(twin.parameters()), "float64")


def test_param_groups_with_their_own_options_match_pytorch():
    torch = pytest.importorskip("torch")
    model = small_model()
    twin = torch_twin(torch, model, "float64")

    def groups(m):
        return [{"params": list(m[0].parameters()), "lr": 0.05, "centered": True},
                {"params": list(m[2].parameters()), "momentum": 0.5}]
    opt = RMSprop(groups(model), lr=0.01)
    topt = torch.optim.RMSprop(groups(twin), lr=0.01, foreach=False)
    gen = tinyattn.Generator(7)
    for _ in range(10):
        step_both(torch, model, twin, opt, topt, gen)
    assert_close(flat(model.parameters()), flat(twin.parameters()), "float64")
