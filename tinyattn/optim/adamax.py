"""Adamax (Kingma & Ba, 2015, section 7.1): Adam with the infinity norm, as PyTorch has it."""
from ._formulas import addcdiv_, advance, check_betas, direction, lerp_, new_step
from .optimizer import Optimizer, _check_number


class Adamax(Optimizer):
    """Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False),
    as PyTorch computes it. At step t, for each parameter p with gradient g:

        g <- -g                               if maximize
        g <- g + weight_decay * p             if weight_decay != 0
        m <- beta1 m + (1 - beta1) g          the first moment, as in Adam
        u <- max(beta2 u, |g| + eps)          a decaying maximum of |g| instead of Adam's v
        p <- p - lr / (1 - beta1^t) * m / u

    State per parameter: "step" (a float32 scalar tensor), "exp_avg" (m), "exp_inf" (u). Beyond
    PyTorch: every group's options are validated; no foreach / capturable / differentiable."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *,
                 maximize=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("Adamax", "learning rate lr", group["lr"])
        _check_number("Adamax", "epsilon eps", group["eps"])
        check_betas("Adamax", group["betas"])
        _check_number("Adamax", "weight_decay", group["weight_decay"])

    def _update(self, p, grad, state, group):
        if not state:
            state["step"] = new_step()
            state["exp_avg"] = self._new_state_tensor(p)
            state["exp_inf"] = self._new_state_tensor(p)
        t = advance(state["step"])
        beta1, beta2 = (float(b) for b in group["betas"])
        g = direction(p, grad, group)
        exp_avg = lerp_(state["exp_avg"], g, 1 - beta1)
        exp_inf = state["exp_inf"]
        exp_inf.copy_(exp_inf.mul_(beta2).maximum(g.abs().add_(float(group["eps"]))))
        clr = float(group["lr"]) / (1 - beta1 ** t)
        addcdiv_(p, exp_avg, exp_inf, -clr)
