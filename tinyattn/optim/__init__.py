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
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
