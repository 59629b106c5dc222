"""The scheduler base class, LambdaLR, MultiplicativeLR and NoamLR; the package's docstring
(`__init__.py`) says how schedulers work. NoamLR, the warm-up schedule of "Attention Is All You
Need", is not in PyTorch; chapter 5 of the tour (docs/05-transformer.md) walks through it.
"""
import types
import warnings

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")  # PyTorch's words, so that filters written for its warning still match


class LRScheduler:
    """Base class: subclasses define `get_lr()`, the lrs for the current `last_epoch`."""

    _is_initial = False  # True during the first step taken by the constructor
    _get_lr_called_within_step = False  # PyTorch's name: state dicts move between the two

    def __init__(self, optimizer, last_epoch=-1):
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not a tinyattn Optimizer")
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, int) or last_epoch < -1:
            raise ValueError(f"{name}: last_epoch must be an int >= -1, got {last_epoch!r}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"{name}: param_groups[{i}] has no 'initial_lr', which "
                                   f"resuming with last_epoch={last_epoch} needs; load the "
                                   f"optimizer's state dict first, or use last_epoch=-1")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The learning rate of every parameter group at `last_epoch`."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def get_last_lr(self):
        """The learning rates set by the last step() (a new list; one entry per group)."""
        return list(self._last_lr)

    def step(self, epoch=None):
        """Advance the schedule by one step; call it after optimizer.step().

        epoch (deprecated, as in PyTorch, with its warning): jump to that epoch, using the
        schedule's closed form where it has one."""
        if self._step_count == 1 and self.optimizer._step_count == 0 and \
                type(self.optimizer).step is Optimizer.step:
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`: "
                          "call them in the opposite order, or the first value of the learning "
                          "rate schedule is skipped", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        """Set last_epoch (one more, or `epoch`) and write the lrs for it into the groups."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        get_lr = self.get_lr if epoch is None else getattr(self, "_get_closed_form_lr", self.get_lr)
        self._get_lr_called_within_step = True
        try:
            values = get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        """Every attribute except the optimizer: base_lrs, last_epoch, the schedule's options."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class _LambdaSchedule(LRScheduler):
    """What LambdaLR and MultiplicativeLR share: one function of the epoch per parameter group.

    state_dict() stores None in place of plain functions and lambdas (code is not data; rebuild
    the scheduler with the same functions before loading), and the attributes (`__dict__`) of
    callable objects, as PyTorch does."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not a tinyattn Optimizer")
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"{name}: expected {n} lr_lambdas (one per parameter group), "
                                 f"but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{name}: lr_lambda must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved_lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaSchedule):
    """lr = base_lr * lr_lambda(last_epoch), with one function for all groups or one per group.

        LambdaLR(optimizer, lambda epoch: 0.95 ** epoch)"""

    def get_lr(self):
        warn_outside_step(self)
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                     self.base_lrs)]


class MultiplicativeLR(_LambdaSchedule):
    """Multiply each group's current lr by lr_lambda(last_epoch) at every step (not at
    construction): lr_t = lr_{t-1} * lr_lambda(t).

        MultiplicativeLR(optimizer, lambda epoch: 0.95)"""

    def get_lr(self):
        warn_outside_step(self)
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * fn(self.last_epoch)
                for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


def warn_outside_step(scheduler):
    """PyTorch's warning when get_lr() is called by hand (it computes the next lr; a recursive
    schedule's value then depends on the current one)."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


def per_group(name, optimizer, value):
    """One value per parameter group: a list or tuple of that length, or one value for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


class NoamLR(LRScheduler):
    """The warm-up schedule of "Attention Is All You Need" (Vaswani et al., 2017, sec. 5.3):

        lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    a linear rise for warmup_steps steps, then decay as 1/sqrt(step); the peak, at step =
    warmup_steps, is factor / sqrt(d_model * warmup_steps). The paper uses d_model = 512,
    warmup_steps = 4000 with Adam(betas=(0.9, 0.98), eps=1e-9).

    Not in PyTorch. It equals `LambdaLR(optimizer, lambda e: noam_lambda(e))` with
    `noam_lambda = NoamLR.lr_lambda`, so the group's lr is multiplied by the formula: build the
    optimizer with lr=1.0 to get the paper's values (as the Annotated Transformer does); any other
    lr scales the whole schedule. step = last_epoch + 1: the first optimizer step uses step 1 (the
    Annotated Transformer's `max(step, 1)` uses step 1 twice instead)."""

    def __init__(self, optimizer, d_model, warmup_steps=4000, factor=1.0, last_epoch=-1):
        for key, value in (("d_model", d_model), ("warmup_steps", warmup_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"NoamLR: {key} must be a positive int, got {value!r}")
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
            raise ValueError(f"NoamLR: factor must be a positive number, got {factor!r}")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.factor = factor
        super().__init__(optimizer, last_epoch)

    def lr_lambda(self, epoch):
        """The multiplier of the base lr after `epoch` scheduler steps (at optimizer step epoch+1)."""
        step = epoch + 1
        return self.factor * self.d_model ** -0.5 * min(step ** -0.5,
                                                        step * self.warmup_steps ** -1.5)

    def get_lr(self):
        return [base_lr * self.lr_lambda(self.last_epoch) for base_lr in self.base_lrs]
