"""Adadelta (Zeiler, 2012), with PyTorch's update rule and options."""
from ._formulas import addcmul_, advance, direction, new_step
from .optimizer import Optimizer, _check_number


class Adadelta(Optimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False), as PyTorch
    computes it. For each parameter p with gradient g:

        g <- -g                                   if maximize
        g <- g + weight_decay * p                 if weight_decay != 0
        v <- rho v + (1 - rho) g^2                a running mean of g^2
        d = sqrt(u + eps) / sqrt(v + eps) * g     the step, in the units of p
        u <- rho u + (1 - rho) d^2                a running mean of the squared steps
        p <- p - lr d

    The ratio of the two root mean squares gives the step the parameter's own units, so no
    learning rate is needed: lr=1.0 is the paper's method, and lr only scales d. State per
    parameter: "step" (a float32 scalar tensor), "square_avg" (v), "acc_delta" (u). Beyond
    PyTorch: every group's options are validated; no foreach / capturable / differentiable."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False):
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("Adadelta", "learning rate lr", group["lr"])
        _check_number("Adadelta", "rho", group["rho"], high=1.0)
        _check_number("Adadelta", "epsilon eps", group["eps"])
        _check_number("Adadelta", "weight_decay", group["weight_decay"])

    def _update(self, p, grad, state, group):
        if not state:
            state["step"] = new_step()
            state["square_avg"] = self._new_state_tensor(p)
            state["acc_delta"] = self._new_state_tensor(p)
        advance(state["step"])
        rho, eps = float(group["rho"]), float(group["eps"])
        g = direction(p, grad, group)
        square_avg = addcmul_(state["square_avg"].mul_(rho), g, g, 1 - rho)
        std = square_avg.add(eps).sqrt()
        delta = state["acc_delta"].add(eps).sqrt().div_(std).mul_(g)
        addcmul_(state["acc_delta"].mul_(rho), delta, delta, 1 - rho)
        p.add_(delta, alpha=-float(group["lr"]))
