"""Adagrad (Duchi, Hazan & Singer, 2011), with PyTorch's update rule and options."""
from ._formulas import addcdiv_, addcmul_, advance, direction, new_step
from .optimizer import Optimizer, _check_number


class Adagrad(Optimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, *, maximize=False), as PyTorch computes it. At step t, for each parameter p with
    gradient g:

        g <- -g                               if maximize
        g <- g + weight_decay * p             if weight_decay != 0
        s <- s + g^2                          the sum of every squared gradient so far
        p <- p - lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)

    Each coordinate's step shrinks with the gradients it has seen: rare features keep large
    steps. State per parameter: "step" (a float32 scalar tensor) and "sum" (s). As in PyTorch,
    the state of every parameter is created by the constructor (so `state_dict()` has it before
    the first step), and s starts at the constructor's initial_accumulator_value for every group,
    also one that sets its own. Beyond PyTorch: every group's options are validated; no sparse
    gradients, foreach / fused / differentiable."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, *, maximize=False):
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "maximize": maximize}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p])

    def _init_state(self, p, state):
        state["step"] = new_step()
        value = float(self.defaults["initial_accumulator_value"])
        state["sum"] = self._new_state_tensor(p).fill_(value)

    def _check_options(self, group):
        _check_number("Adagrad", "learning rate lr", group["lr"])
        _check_number("Adagrad", "lr_decay", group["lr_decay"])
        _check_number("Adagrad", "weight_decay", group["weight_decay"])
        _check_number("Adagrad", "initial_accumulator_value", group["initial_accumulator_value"])
        _check_number("Adagrad", "epsilon eps", group["eps"])

    def _update(self, p, grad, state, group):
        if not state:  # a parameter added by add_param_group after construction
            self._init_state(p, state)
        t = advance(state["step"])
        g = direction(p, grad, group)
        clr = float(group["lr"]) / (1 + (t - 1) * float(group["lr_decay"]))
        state_sum = addcmul_(state["sum"], g, g)
        std = state_sum.sqrt().add_(float(group["eps"]))
        addcdiv_(p, g, std, -clr)
