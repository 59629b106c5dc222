"""RAdam (Liu et al., 2020): Adam with a rectified variance, with PyTorch's update rule."""
from ._formulas import addcmul_, advance, check_betas, direction, lerp_, new_step
from .optimizer import Optimizer, _check_number


class RAdam(Optimizer):
    """RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, *, maximize=False), as PyTorch computes it. At step t:

        g, m, v as in Adam (decoupled_weight_decay: p <- p (1 - lr weight_decay) first)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)        the length of v's average
        r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        p <- p - lr m_hat sqrt(1 - beta2^t) / (sqrt(v) + eps) r_t     if rho_t > 5
        p <- p - lr m_hat                                             otherwise (SGD with momentum)

    Early on v averages too few gradients to be trusted, so the first steps are momentum SGD and
    the adaptive step comes in as r_t rises to 1: a warm-up built in. State per parameter: "step"
    (a float32 scalar tensor), "exp_avg" (m), "exp_avg_sq" (v). Beyond PyTorch: every group's
    options are validated; no foreach / capturable / differentiable."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, maximize=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("RAdam", "learning rate lr", group["lr"])
        _check_number("RAdam", "epsilon eps", group["eps"])
        check_betas("RAdam", group["betas"])
        _check_number("RAdam", "weight_decay", group["weight_decay"])

    def _update(self, p, grad, state, group):
        if not state:
            state["step"] = new_step()
            state["exp_avg"] = self._new_state_tensor(p)
            state["exp_avg_sq"] = self._new_state_tensor(p)
        t = advance(state["step"])
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        if wd != 0 and group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        g = direction(p, grad, group)
        exp_avg = lerp_(state["exp_avg"], g, 1 - beta1)
        exp_avg_sq = addcmul_(state["exp_avg_sq"].mul_(beta2), g, g, 1 - beta2)
        bias_correction1 = 1 - beta1 ** t
        bias_correction2 = 1 - beta2 ** t
        update = exp_avg.div(bias_correction1).mul_(lr)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * (beta2 ** t) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            # PyTorch's `scalar / tensor` is the tensor's reciprocal times the scalar.
            adaptive = exp_avg_sq.sqrt().add_(float(group["eps"])).reciprocal()
            update.mul_(adaptive.mul_(bias_correction2 ** 0.5)).mul_(rect)
        p.sub_(update)
