"""RMSprop (Hinton's lecture 6e, 2012; centered as in Graves, 2013), with PyTorch's update rule."""
from ._formulas import addcdiv_, addcmul_, advance, direction, lerp_, new_step
from .optimizer import Optimizer, _check_number


class RMSprop(Optimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    *, maximize=False), as PyTorch computes it. For each parameter p with gradient g:

        g <- -g                               if maximize
        g <- g + weight_decay * p             if weight_decay != 0
        v <- alpha v + (1 - alpha) g^2        a running mean of g^2
        m <- alpha m + (1 - alpha) g          if centered: a running mean of g, and
        d = sqrt(v - m^2) + eps               the divisor is the gradient's standard deviation;
        d = sqrt(v) + eps                     otherwise its root mean square
        b <- momentum b + g / d;  p <- p - lr b      if momentum > 0
        p <- p - lr g / d                            otherwise

    State per parameter: "step" (a float32 scalar tensor), "square_avg" (v), "momentum_buffer"
    (with momentum > 0) and "grad_avg" (m, when centered), PyTorch's names, so that its state
    dicts load. The update is composed of tensor ops in PyTorch's order. Beyond PyTorch: every
    group's options are validated; there is no foreach / capturable / differentiable (PyTorch
    takes capturable and foreach positionally before maximize: here maximize is keyword-only)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, *, maximize=False):
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("RMSprop", "learning rate lr", group["lr"])
        _check_number("RMSprop", "epsilon eps", group["eps"])
        _check_number("RMSprop", "momentum", group["momentum"])
        _check_number("RMSprop", "weight_decay", group["weight_decay"])
        _check_number("RMSprop", "alpha", group["alpha"])

    def _update(self, p, grad, state, group):
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        if not state:
            state["step"] = new_step()
            state["square_avg"] = self._new_state_tensor(p)
            if momentum > 0:
                state["momentum_buffer"] = self._new_state_tensor(p)
            if centered:
                state["grad_avg"] = self._new_state_tensor(p)
        advance(state["step"])
        lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
        g = direction(p, grad, group)
        square_avg = addcmul_(state["square_avg"].mul_(alpha), g, g, 1 - alpha)
        if centered:
            grad_avg = lerp_(state["grad_avg"], g, 1 - alpha)
            avg = square_avg.sub(grad_avg.mul(grad_avg)).sqrt()
        else:
            avg = square_avg.sqrt()
        avg.add_(eps)
        if momentum > 0:
            buf = addcdiv_(state["momentum_buffer"].mul_(momentum), g, avg)
            p.add_(buf, alpha=-lr)
        else:
            addcdiv_(p, g, avg, -lr)
