"""Optimizers and learning-rate schedulers, with PyTorch's names, options and state_dict layout.

    optimizer = tinyattn.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = tinyattn.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=1000)
    for x, y in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "lr_scheduler"]
