"""Learning-rate schedules: change each parameter group's "lr" once per `scheduler.step()`.

Every scheduler of `torch.optim.lr_scheduler`, with PyTorch's arguments, values (to the last
bit: the same formulas in the same order), warnings and state_dict layout, and NoamLR:

    base.py        LRScheduler, LambdaLR, MultiplicativeLR, NoamLR (not in PyTorch)
    decay.py       StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
                   CosineAnnealingLR, CosineAnnealingWarmRestarts
    cyclic.py      CyclicLR, OneCycleLR
    composite.py   SequentialLR, ChainedScheduler, ReduceLROnPlateau (step(metric))

PyTorch's semantics, so that a loop written for one library runs with the other:

- Constructing a scheduler records each group's starting lr as group["initial_lr"] (`base_lrs`)
  and takes a first step, which sets `last_epoch = 0` and the lr of step 0.
- `step()` (called after `optimizer.step()`) adds 1 to `last_epoch` and sets the lr for the next
  optimizer step; `get_last_lr()` returns the lrs it set. Most schedules compute the new lr from
  the current one (PyTorch's "recursive form"), so an lr changed by hand carries on.
- `state_dict()` holds every attribute except the optimizer (and functions, which cannot be
  saved); to resume, rebuild the scheduler over the rebuilt optimizer first, then load the
  optimizer's state dict, then the scheduler's. PyTorch's scheduler state dicts load too.
"""
from .base import LambdaLR, LRScheduler, MultiplicativeLR, NoamLR
from .composite import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .cyclic import CyclicLR, OneCycleLR
from .decay import (ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, ExponentialLR,
                    LinearLR, MultiStepLR, PolynomialLR, StepLR)

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "LRScheduler", "NoamLR"]
