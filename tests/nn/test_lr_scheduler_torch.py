"""Every scheduler of torch.optim.lr_scheduler: values by hand, the lr sequences PyTorch gives
(to 1e-12) over many steps, momentum cycling, warnings and errors, state_dict round trips and
PyTorch's scheduler state_dicts loaded here."""
import math
import sys
import warnings

import pytest

import tinyattn
from tinyattn.optim import SGD, Adam
from tinyattn.optim import lr_scheduler as S


def make_opt(lrs=(0.1,), cls=SGD, **kwargs):
    groups = [{"params": [tinyattn.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return cls(groups, lr=lrs[0], **kwargs)


def lr_sequence(sched, opt, steps, metrics=None):
    """The lr (and momentum) of every group before each of `steps` optimizer steps."""
    out = []
    for i in range(steps):
        out.append([(g["lr"], g.get("momentum", g.get("betas", (None,))[0]))
                    for g in opt.param_groups])
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
    return out


# ============================================================================ by hand


def test_multistep_by_hand():
    opt = make_opt((1.0,))
    lrs = [s[0][0] for s in lr_sequence(S.MultiStepLR(opt, [2, 5, 5], gamma=0.5), opt, 7)]
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.5, 0.125, 0.125]


def test_constant_linear_exponential_polynomial_by_hand():
    opt = make_opt((1.0,))
    lrs = [s[0][0] for s in lr_sequence(S.ConstantLR(opt, factor=0.5, total_iters=2), opt, 4)]
    assert lrs == [0.5, 0.5, 1.0, 1.0]
    opt = make_opt((1.0,))
    lrs = [s[0][0] for s in lr_sequence(S.LinearLR(opt, 0.25, 1.0, total_iters=3), opt, 5)]
    assert lrs == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0], abs=1e-15)
    opt = make_opt((2.0,))
    lrs = [s[0][0] for s in lr_sequence(S.ExponentialLR(opt, gamma=0.5), opt, 4)]
    assert lrs == [2.0, 1.0, 0.5, 0.25]
    opt = make_opt((1.0,))
    lrs = [s[0][0] for s in lr_sequence(S.PolynomialLR(opt, total_iters=4, power=2.0), opt, 6)]
    assert lrs == pytest.approx([1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0], abs=1e-15)


def test_multiplicative_by_hand():
    opt = make_opt((1.0,))
    lrs = [s[0][0] for s in lr_sequence(S.MultiplicativeLR(opt, lambda e: 0.5), opt, 4)]
    assert lrs == [1.0, 0.5, 0.25, 0.125]


def test_warm_restarts_by_hand():
    opt = make_opt((1.0,))
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    lrs = [s[0][0] for s in lr_sequence(sched, opt, 7)]
    expected = [1.0, 0.5, 1.0, (1 + math.cos(math.pi / 4)) / 2, 0.5,
                (1 + math.cos(3 * math.pi / 4)) / 2, 1.0]
    assert lrs == pytest.approx(expected, abs=1e-15)


def test_cyclic_triangular_by_hand():
    opt = make_opt((0.5,), momentum=0.9)
    sched = S.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2, base_momentum=0.8,
                       max_momentum=0.9)
    seq = lr_sequence(sched, opt, 6)
    assert [s[0][0] for s in seq] == pytest.approx([0.1, 0.3, 0.5, 0.3, 0.1, 0.3], abs=1e-15)
    assert [s[0][1] for s in seq] == pytest.approx([0.9, 0.85, 0.8, 0.85, 0.9, 0.85], abs=1e-15)


def test_one_cycle_by_hand():
    opt = make_opt((0.1,), cls=Adam)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.2,
                         anneal_strategy="linear", div_factor=10, final_div_factor=100)
    seq = lr_sequence(sched, opt, 10)
    lrs = [s[0][0] for s in seq]
    assert lrs[0] == 0.1 and lrs[1] == 1.0 and lrs[-1] == pytest.approx(0.001)
    assert [s[0][1] for s in seq][:2] == [0.95, 0.85]  # beta1 cycles against the lr
    with pytest.raises(ValueError, match="total steps is 10"):
        sched.step()


def test_reduce_on_plateau_by_hand():
    opt = make_opt((1.0,))
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    seen = []
    for metric in [5, 4, 4, 4, 4, 4, 4, 4, 4]:
        sched.step(metric)
        seen.append(sched.get_last_lr()[0])
    # two bad steps (> patience) halve the lr; one cooldown step; the floor is min_lr
    assert seen == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    for _ in range(3):
        sched.step(4)
    assert sched.get_last_lr() == [0.2]


def test_sequential_and_chained_by_hand():
    opt = make_opt((1.0,))
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.1, total_iters=2),
                               S.ExponentialLR(opt, gamma=0.5)], milestones=[2])
    assert [s[0][0] for s in lr_sequence(seq, opt, 5)] == \
        pytest.approx([0.1, 0.1, 1.0, 0.5, 0.25], abs=1e-15)
    opt = make_opt((1.0,))
    chain = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=2),
                                S.ExponentialLR(opt, gamma=0.5)])
    assert [s[0][0] for s in lr_sequence(chain, opt, 4)] == \
        pytest.approx([0.1, 0.05, 0.25, 0.125], abs=1e-15)


# ============================================================================ errors and warnings


@pytest.mark.parametrize("make, error, words", [
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError, "between 0 and 1"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError, "greater than 0"),
    (lambda o: S.LinearLR(o, end_factor=2), ValueError, "between 0 and 1"),
    (lambda o: S.PolynomialLR(o, total_iters=0), ValueError, "total_iters"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "T_0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "T_mult"),
    (lambda o: S.OneCycleLR(o, 1.0), ValueError, "total_steps OR"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=0), ValueError, "total_steps"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=5, pct_start=2.0), ValueError, "pct_start"),
    (lambda o: S.OneCycleLR(o, 1.0, total_steps=5, anneal_strategy="x"), ValueError, "anneal"),
    (lambda o: S.OneCycleLR(o, [1.0, 2.0], total_steps=5), ValueError, "same length"),
    (lambda o: S.CyclicLR(o, 0.1, 1.0, mode="sine"), ValueError, "mode"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "factor"),
    (lambda o: S.ReduceLROnPlateau(o, mode="up"), ValueError, "mode"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError, "threshold mode"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0, 0]), ValueError, "min_lrs"),
    (lambda o: S.SequentialLR(o, [], []), ValueError, "at least one"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2)], [1]), ValueError, "milestone"),
    (lambda o: S.SequentialLR(o, [S.StepLR(make_opt(), 2)], []), ValueError, "same optimizer"),
    (lambda o: S.ChainedScheduler([S.ReduceLROnPlateau(o)]), ValueError, "ReduceLROnPlateau"),
    (lambda o: S.MultiplicativeLR(o, 0.5), TypeError, "callable"),
])
def test_invalid_arguments(make, error, words):
    with pytest.raises(error, match=words):
        make(make_opt())


def test_cycle_momentum_needs_momentum():
    from tinyattn.optim import Adagrad
    opt = make_opt(cls=Adagrad)
    with pytest.raises(ValueError, match="momentum or beta1"):
        S.OneCycleLR(opt, 1.0, total_steps=5)
    S.OneCycleLR(opt, 1.0, total_steps=5, cycle_momentum=False)


def test_get_lr_by_hand_warns_and_step_epoch_is_deprecated():
    opt = make_opt()
    sched = S.ExponentialLR(opt, 0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(3)  # the closed form: base_lr * gamma^3
    assert sched.get_last_lr() == [0.1 * 0.125]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


# ============================================================================ state_dict

SCHEDULES = {
    "StepLR": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda o: S.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3),
    "ConstantLR": lambda o: S.ConstantLR(o, factor=0.25, total_iters=4),
    "LinearLR": lambda o: S.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=10),
    "ExponentialLR": lambda o: S.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda o: S.PolynomialLR(o, total_iters=15, power=1.7),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, 3, 2, 1e-3),
    "MultiplicativeLR": lambda o: S.MultiplicativeLR(o, lambda e: 0.97),
    "LambdaLR": lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e)),
    "CyclicLR": lambda o: S.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=3,
                                     step_size_down=5, mode="triangular2"),
    "CyclicLR-exp": lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, mode="exp_range",
                                         gamma=0.97),
    "OneCycleLR": lambda o: S.OneCycleLR(o, [0.5, 1.0], total_steps=30),
    "OneCycleLR-3": lambda o: S.OneCycleLR(o, 0.5, epochs=3, steps_per_epoch=10,
                                           anneal_strategy="linear", three_phase=True),
    "SequentialLR": lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=4),
                                                 S.CosineAnnealingLR(o, T_max=10),
                                                 S.ExponentialLR(o, 0.9)], milestones=[4, 14]),
    "ChainedScheduler": lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=5),
                                                      S.ExponentialLR(o, 0.9)]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_state_dict_round_trip_resumes(name):
    opt = make_opt((0.1, 0.2), momentum=0.9)
    sched = SCHEDULES[name](opt)
    lr_sequence(sched, opt, 7)
    opt2 = make_opt((0.1, 0.2), momentum=0.9)
    sched2 = SCHEDULES[name](opt2)
    sched2.load_state_dict(sched.state_dict())
    opt2.load_state_dict(opt.state_dict())
    assert lr_sequence(sched, opt, 20) == lr_sequence(sched2, opt2, 20)


# ============================================================================ parity with PyTorch


def torch_sgd(torch, momentum=0.9):
    """A torch.optim.SGD whose groups mirror make_opt((0.1, 0.2), momentum=0.9)."""
    return torch.optim.SGD([{"params": [torch.zeros(2, requires_grad=True)], "lr": 0.1},
                            {"params": [torch.zeros(2, requires_grad=True)], "lr": 0.2}],
                           lr=0.1, momentum=momentum)


class _TorchNames:
    """Makes the SCHEDULES lambdas build torch's schedulers (S.X -> torch.optim.lr_scheduler.X)."""

    def __init__(self, torch):
        self.torch = torch

    def __getattr__(self, name):
        return getattr(self.torch.optim.lr_scheduler, name)


def run_torch(topt, sched, steps, metrics=None):
    out = []
    for i in range(steps):
        out.append([(g["lr"], g.get("momentum")) for g in topt.param_groups])
        topt.step()
        sched.step() if metrics is None else sched.step(metrics[i])
    return out


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_lr_sequence_matches_pytorch(name, monkeypatch):
    torch = pytest.importorskip("torch")
    opt = make_opt((0.1, 0.2), momentum=0.9)
    ours = lr_sequence(SCHEDULES[name](opt), opt, 30)
    monkeypatch.setattr(sys.modules[__name__], "S", _TorchNames(torch))
    topt = torch_sgd(torch)
    tsched = SCHEDULES[name](topt)
    assert type(tsched).__module__ == "torch.optim.lr_scheduler"
    theirs = run_torch(topt, tsched, 30)
    for a, b in zip(ours, theirs):
        for (lr, mom), (tlr, tmom) in zip(a, b):
            assert abs(lr - tlr) <= 1e-12 and abs(mom - tmom) <= 1e-12, (a, b)


def test_reduce_on_plateau_matches_pytorch():
    torch = pytest.importorskip("torch")
    metrics = [5, 4, 4.5, 4.2, 3.9996, 4, 4, 3, 3, 3, 3, 3, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5]
    for kwargs in ({"patience": 1}, {"mode": "max", "factor": 0.5, "patience": 0},
                   {"threshold_mode": "abs", "threshold": 0.1, "cooldown": 2, "patience": 0,
                    "min_lr": [0.05, 0.01]}):
        opt = make_opt((0.1, 0.2))
        ours = lr_sequence(S.ReduceLROnPlateau(opt, **kwargs), opt, len(metrics), metrics)
        topt = torch_sgd(torch, momentum=0)
        tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
        theirs = run_torch(topt, tsched, len(metrics), metrics)
        assert [[lr for lr, _ in s] for s in ours] == [[lr for lr, _ in s] for s in theirs]


def test_cycling_beta1_of_adam_matches_pytorch():
    torch = pytest.importorskip("torch")
    opt = make_opt((0.1,), cls=Adam)
    ours = lr_sequence(S.OneCycleLR(opt, 0.5, total_steps=20), opt, 20)
    topt = torch.optim.Adam([torch.zeros(2, requires_grad=True)], lr=0.1)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, 0.5, total_steps=20)
    theirs = []
    for _ in range(20):
        theirs.append([(g["lr"], g["betas"][0]) for g in topt.param_groups])
        topt.step()
        tsched.step()
    assert ours == theirs


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "CyclicLR",
                                  "LinearLR", "CosineAnnealingWarmRestarts"])
def test_pytorch_scheduler_state_dict_loads(name, monkeypatch):
    torch = pytest.importorskip("torch")
    topt = torch_sgd(torch)
    with monkeypatch.context() as m:
        m.setattr(sys.modules[__name__], "S", _TorchNames(torch))
        tsched = SCHEDULES[name](topt)
    run_torch(topt, tsched, 9)
    opt = make_opt((0.1, 0.2), momentum=0.9)
    sched = SCHEDULES[name](opt)
    sched.load_state_dict(tsched.state_dict())
    for group, tgroup in zip(opt.param_groups, topt.param_groups):
        for key in ("lr", "momentum", "initial_lr"):
            group[key] = tgroup[key]
    ours = lr_sequence(sched, opt, 15)
    theirs = run_torch(topt, tsched, 15)
    assert ours == theirs
