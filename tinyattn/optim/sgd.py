"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from ..ops.optim import sgd_step_
from .optimizer import Optimizer, _check_number


class SGD(Optimizer):
    """SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False), with PyTorch's update rule. For each parameter p with gradient g:

        g <- -g                                   if maximize (climb the objective)
        g <- g + weight_decay * p                 if weight_decay != 0 (L2 penalty)
        b <- g                                    at the first step    } if momentum != 0
        b <- momentum * b + (1 - dampening) * g   at later steps       } (b: momentum buffer)
        g <- g + momentum * b   if nesterov, else g <- b              }
        p <- p - lr * g

    Note the momentum form: lr multiplies the whole buffer (PyTorch's convention), not only the
    new gradient as in Sutskever et al. (2013); the two agree for a constant lr. Nesterov needs
    momentum > 0 and dampening = 0. State per parameter: "momentum_buffer" (when momentum != 0).

    Beyond PyTorch's checks, every parameter group's options are validated too, and lr must be a
    number (PyTorch also accepts a tensor). foreach / fused / differentiable do not exist here:
    one fused numba loop per parameter does the whole update (kernels/optim.py)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False):
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("SGD", "learning rate lr", group["lr"])
        _check_number("SGD", "momentum", group["momentum"])
        _check_number("SGD", "dampening", group["dampening"], low=-float("inf"))
        _check_number("SGD", "weight_decay", group["weight_decay"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: Nesterov momentum requires a momentum > 0 and zero dampening "
                             f"(got momentum={group['momentum']}, dampening={group['dampening']})")

    def _update(self, p, grad, state, group):
        momentum = float(group["momentum"])
        buf, first_step = None, False
        if momentum != 0.0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = self._new_state_tensor(p)
                first_step = True
        sgd_step_(p, grad, buf, lr=float(group["lr"]), momentum=momentum,
                  dampening=float(group["dampening"]), weight_decay=float(group["weight_decay"]),
                  nesterov=bool(group["nesterov"]), maximize=bool(group["maximize"]),
                  first_step=first_step)

