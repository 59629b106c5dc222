"""Schedules that decay the lr: StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR,
PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts.

Most compute the new lr from the current one (PyTorch's "recursive form"), so a learning rate
changed by hand carries on into the schedule, and the values match PyTorch's exactly, including
their rounding; `step(epoch)` (deprecated) uses the closed form, as PyTorch does.
"""
import math
from bisect import bisect_right
from collections import Counter

from .base import LRScheduler, warn_outside_step


def _number(name, key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: {key} must be a number, got {type(value).__name__}")


def _positive_int(name, key, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {key} must be a positive int, got {value!r}")


class StepLR(LRScheduler):
    """Multiply the lr by gamma every step_size steps:  lr = base_lr * gamma^(last_epoch //
    step_size), computed recursively (the current lr times gamma when last_epoch is a positive
    multiple of step_size) as PyTorch does."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
            raise TypeError(f"StepLR: gamma must be a number, got {type(gamma).__name__}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Follow half a cosine from base_lr down to eta_min over T_max steps (SGDR without restarts):

        lr_t = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2

    computed, as PyTorch does, recursively from the current lr,

        lr_t = eta_min + (lr_{t-1} - eta_min) * (1 + cos(pi t / T_max)) / (1 + cos(pi (t-1) / T_max))

    which agrees with the formula above up to rounding (and lets a hand-changed lr carry on).
    Past T_max the lr rises again along the cosine, as in PyTorch."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 (PyTorch's name)
        if isinstance(T_max, bool) or not isinstance(T_max, int) or T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive int, got {T_max!r}")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (int, float)):
            raise TypeError(f"CosineAnnealingLR: eta_min must be a number, got "
                            f"{type(eta_min).__name__}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and t > 0:
            return [eta_min + (base_lr - eta_min) * (1 + math.cos(t * math.pi / T)) / 2
                    for base_lr in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            # At the bottom of the cosine the ratio below would be 0/0: add the first step up.
            return [group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                * (group["lr"] - eta_min) + eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by gamma at each milestone epoch (by gamma^k for a milestone listed k
    times): lr = base_lr * gamma^(number of milestones <= last_epoch)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        milestones = list(milestones)
        for m in milestones:
            if isinstance(m, bool) or not isinstance(m, int):
                raise TypeError(f"MultiStepLR: milestones must be ints, got {m!r}")
        _number("MultiStepLR", "gamma", gamma)
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters steps, then base_lr (a simple warm-up)."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        _number("ConstantLR", "factor", factor)
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: constant multiplicative factor expected to be between "
                             f"0 and 1, got {factor!r}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr factor moves linearly from start_factor to end_factor over total_iters steps:
    lr = base_lr * (start + (end - start) * min(t, total_iters) / total_iters)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        _number("LinearLR", "start_factor", start_factor)
        _number("LinearLR", "end_factor", end_factor)
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: starting multiplicative factor expected to be greater "
                             f"than 0 and less or equal to 1, got {start_factor!r}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: ending multiplicative factor expected to be between 0 "
                             f"and 1, got {end_factor!r}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        change = self.end_factor - self.start_factor
        return [group["lr"] * (1.0 + change / (self.total_iters * self.start_factor
                                               + (self.last_epoch - 1) * change))
                for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by gamma at every step: lr = base_lr * gamma^last_epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        _number("ExponentialLR", "gamma", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(t, total_iters) / total_iters)^power: down to 0 at total_iters."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        _positive_int("PolynomialLR", "total_iters", total_iters)
        _number("PolynomialLR", "power", power)
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay_factor for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): the cosine of CosineAnnealingLR from base_lr down to
    eta_min over T_i steps, then a restart at base_lr; the first period is T_0 steps and each
    next one T_mult times longer:  lr = eta_min + (base_lr - eta_min)(1 + cos(pi T_cur / T_i))/2.

    step(epoch) with a float epoch (e.g. `epoch + i / iters`) sets the position directly, as in
    PyTorch (without the deprecation warning: here it is the documented way)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):  # noqa: N803
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected positive integer T_0, but "
                             f"got {T_0!r}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected integer T_mult >= 1, but "
                             f"got {T_mult!r}")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: expected float or int eta_min, but "
                             f"got {eta_min!r} of type {type(eta_min).__name__}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        warn_outside_step(self)
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base_lr in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts.step: expected non-negative "
                                 f"epoch, but got {epoch!r}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
