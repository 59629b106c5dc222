"""Learning-rate schedules: change each parameter group's "lr" once per `scheduler.step()`.

Every scheduler of `torch.optim.lr_scheduler`, with PyTorch's arguments, values (to the last
bit: the same formulas in the same order), warnings and state_dict layout, and NoamLR:

    base.py        LRScheduler, LambdaLR, MultiplicativeLR, NoamLR (not in PyTorch)
    decay.py       StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
                   CosineAnnealingLR, CosineAnnealingWarmRestarts
    cyclic.py      CyclicLR, OneCycleLR
    composite.py   SequentialLR, ChainedScheduler, ReduceLROnPlateau (step(metric))
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
