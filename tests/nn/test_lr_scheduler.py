"""Learning-rate schedulers: values by hand, PyTorch's exact sequences, state_dict round trips."""
import math
import warnings

import pytest

import tinyattn
from tinyattn.optim import SGD, Adam
from tinyattn.optim.lr_scheduler import (CosineAnnealingLR, LambdaLR, LRScheduler, NoamLR,
                                         StepLR)


def make_opt(lrs=(0.1,)):
    groups = [{"params": [tinyattn.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return SGD(groups, lr=lrs[0])


def run(sched, opt, steps):
    """The lr sequence seen by `steps` optimizer steps (the lr is set before each step)."""
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs


def test_construction_takes_the_first_step():
    opt = make_opt((0.5,))
    sched = StepLR(opt, step_size=2, gamma=0.1)
    assert sched.last_epoch == 0 and sched._step_count == 1
    assert opt.param_groups[0]["initial_lr"] == 0.5 and sched.base_lrs == [0.5]
    assert sched.get_last_lr() == [0.5]


def test_step_lr_by_hand():
    opt = make_opt((1.0, 0.5))
    lrs = run(StepLR(opt, step_size=3, gamma=0.5), opt, 7)
    assert [lr[0] for lr in lrs] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]
    assert [lr[1] for lr in lrs] == [0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125]
    assert opt.param_groups[0]["lr"] == 0.25


def test_lambda_lr_by_hand_and_per_group():
    opt = make_opt((1.0, 2.0))
    sched = LambdaLR(opt, [lambda e: 1.0 / (e + 1), lambda e: 0.5 ** e])
    lrs = run(sched, opt, 3)
    assert lrs == [[1.0, 2.0], [0.5, 1.0], [1.0 / 3, 0.5], [0.25, 0.25]]


def test_cosine_by_hand():
    opt = make_opt((1.0,))
    lrs = [lr[0] for lr in run(CosineAnnealingLR(opt, T_max=4, eta_min=0.2), opt, 8)]
    closed = [0.2 + 0.8 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(9)]
    assert lrs == pytest.approx(closed, abs=1e-12)
    assert lrs[4] == pytest.approx(0.2, abs=1e-15) and lrs[8] == pytest.approx(1.0)


def test_noam_by_hand():
    opt = Adam([tinyattn.zeros(1, requires_grad=True)], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = NoamLR(opt, d_model=512, warmup_steps=4000)
    lrs = [lr[0] for lr in run(sched, opt, 4)]
    # the first optimizer step uses step_num = 1: lr = 512^-0.5 * 1 * 4000^-1.5
    assert lrs[0] == pytest.approx(512 ** -0.5 * 4000 ** -1.5, rel=1e-12)
    assert lrs[1:] == pytest.approx([k * lrs[0] for k in (2, 3, 4, 5)], rel=1e-12)  # linear rise
    sched.last_epoch = 3998
    sched.step()  # step_num 4000: the peak, 1 / sqrt(d_model * warmup)
    assert sched.get_last_lr()[0] == pytest.approx(1 / math.sqrt(512 * 4000), rel=1e-12)
    sched.last_epoch = 15998
    sched.step()  # step_num 16000: decays as 1/sqrt(step), half the peak at 4 x warmup
    assert sched.get_last_lr()[0] == pytest.approx(0.5 / math.sqrt(512 * 4000), rel=1e-12)


def test_noam_scales_with_the_optimizer_lr_and_factor():
    opt = make_opt((0.5,))
    sched = NoamLR(opt, d_model=64, warmup_steps=10, factor=2.0)
    assert sched.get_last_lr()[0] == pytest.approx(0.5 * 2.0 * 64 ** -0.5 * 10 ** -1.5)


def test_noam_equals_lambda_lr_with_its_lambda():
    opt_a, opt_b = make_opt((0.7,)), make_opt((0.7,))
    noam = NoamLR(opt_a, d_model=32, warmup_steps=5, factor=1.5)
    lam = LambdaLR(opt_b, lambda e: 1.5 * 32 ** -0.5 * min((e + 1) ** -0.5, (e + 1) * 5 ** -1.5))
    assert run(noam, opt_a, 20) == run(lam, opt_b, 20)


@pytest.mark.parametrize("make, error", [
    (lambda o: StepLR(o, step_size=0), ValueError),
    (lambda o: StepLR(o, step_size=2.5), ValueError),
    (lambda o: CosineAnnealingLR(o, T_max=0), ValueError),
    (lambda o: NoamLR(o, d_model=0), ValueError),
    (lambda o: NoamLR(o, d_model=8, warmup_steps=-1), ValueError),
    (lambda o: LambdaLR(o, [lambda e: 1.0, lambda e: 2.0]), ValueError),
    (lambda o: LambdaLR(o, 0.5), TypeError),
    (lambda o: StepLR("not an optimizer", 2), TypeError),
    (lambda o: StepLR(o, 2, last_epoch=5), KeyError),  # resuming needs initial_lr in the groups
])
def test_invalid_arguments(make, error):
    with pytest.raises(error):
        make(make_opt())


def test_warns_when_scheduler_steps_before_optimizer():
    opt = make_opt()
    sched = StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        sched.step()
    opt2 = make_opt()
    sched2 = StepLR(opt2, 2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


@pytest.mark.parametrize("make", [
    lambda o: StepLR(o, step_size=3, gamma=0.7),
    lambda o: CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    lambda o: NoamLR(o, d_model=16, warmup_steps=4),
])
def test_state_dict_round_trip(make):
    opt = make_opt((0.3, 0.1))
    sched = make(opt)
    run(sched, opt, 7)
    # rebuild: scheduler over a fresh optimizer, then the optimizer's state, then the scheduler's
    opt2 = make_opt((0.3, 0.1))
    sched2 = make(opt2)
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    assert "optimizer" not in sched.state_dict()
    assert run(sched, opt, 12) == run(sched2, opt2, 12)


def test_lambda_lr_state_dict_excludes_functions_but_keeps_callable_objects():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_opt((1.0, 1.0))
    sched = LambdaLR(opt, [lambda e: 1.0, Decay(0.5)])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"rate": 0.5}]
    assert not any(callable(v) for v in sd.values())
    other = Decay(0.9)
    sched2 = LambdaLR(make_opt((1.0, 1.0)), [lambda e: 1.0, other])
    sched2.load_state_dict(sd)
    assert other.rate == 0.5 and sched2.last_epoch == sched.last_epoch


def test_custom_scheduler_subclass():
    class Halve(LRScheduler):
        def get_lr(self):
            return [base / 2 ** self.last_epoch for base in self.base_lrs]

    opt = make_opt((1.0,))
    assert [lr[0] for lr in run(Halve(opt), opt, 3)] == [1.0, 0.5, 0.25, 0.125]


# ============================================================================ parity with PyTorch


CASES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("StepLR", {"step_size": 1, "gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 10}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.003}),  # runs past T_max: back up again
    ("LambdaLR", {"lr_lambda": lambda e: 0.95 ** e}),
]


def torch_opt(torch, lrs):
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return torch.optim.SGD(groups, lr=lrs[0])


@pytest.mark.parametrize("name, kwargs", CASES)
def test_lr_sequence_matches_pytorch_exactly(name, kwargs):
    torch = pytest.importorskip("torch")
    opt, topt = make_opt((0.1, 0.02)), torch_opt(torch, (0.1, 0.02))
    ours = run(getattr(tinyattn.optim.lr_scheduler, name)(opt, **kwargs), opt, 30)
    theirs = run(getattr(torch.optim.lr_scheduler, name)(topt, **kwargs), topt, 30)
    assert ours == theirs  # exact float equality: same formulas in the same order


def test_noam_matches_pytorch_lambda_lr():
    torch = pytest.importorskip("torch")
    opt, topt = make_opt((1.0,)), torch_opt(torch, (1.0,))
    ours = run(NoamLR(opt, d_model=64, warmup_steps=8), opt, 30)
    lam = lambda e: 64 ** -0.5 * min((e + 1) ** -0.5, (e + 1) * 8 ** -1.5)  # noqa: E731
    theirs = run(torch.optim.lr_scheduler.LambdaLR(topt, lam), topt, 30)
    assert ours == theirs


@pytest.mark.parametrize("name, kwargs", CASES[:4])
def test_state_dict_from_pytorch_resumes(name, kwargs):
    torch = pytest.importorskip("torch")
    topt = torch_opt(torch, (0.1,))
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    run(tsched, topt, 9)
    opt = make_opt((0.1,))
    sched = getattr(tinyattn.optim.lr_scheduler, name)(opt, **kwargs)
    opt.param_groups[0].update(lr=topt.param_groups[0]["lr"],
                               initial_lr=topt.param_groups[0]["initial_lr"])
    sched.load_state_dict(tsched.state_dict())
    assert run(sched, opt, 15) == run(tsched, topt, 15)
