"""NAdam (Dozat, 2016): Adam with Nesterov momentum, with PyTorch's update rule and options."""
from array import array

from .. import dtypes as _dt
from ..storage import _make
from ._formulas import addcdiv_, addcmul_, advance, check_betas, direction, lerp_, new_step
from ._formulas import scalar_value
from .optimizer import Optimizer, _check_number


class NAdam(Optimizer):
    """NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, maximize=False), as PyTorch computes it. At step t:

        g <- -g                                     if maximize
        p <- p (1 - lr weight_decay)                if decoupled_weight_decay (NAdamW)
        g <- g + weight_decay * p                   otherwise, if weight_decay != 0
        mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2)      the momentum schedule
        P_t = mu_1 mu_2 ... mu_t                            ("mu_product")
        m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
        d = sqrt(v / (1 - beta2^t)) + eps
        p <- p - lr (1 - mu_t) / (1 - P_t) g / d - lr mu_{t+1} / (1 - P_t mu_{t+1}) m / d

    The update looks one momentum step ahead: the first term is the new gradient's share, the
    second the momentum's, at the next step's coefficient. State per parameter: "step" and
    "mu_product" (float32 scalar tensors, as in PyTorch, whose rounding is kept; load_state_dict
    gives mu_product the parameter's dtype, as PyTorch's does), "exp_avg" (m), "exp_avg_sq" (v).
    Beyond PyTorch: every group's options are validated; no foreach / capturable /
    differentiable."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, maximize=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_options(self, group):
        _check_number("NAdam", "learning rate lr", group["lr"])
        _check_number("NAdam", "epsilon eps", group["eps"])
        check_betas("NAdam", group["betas"])
        _check_number("NAdam", "weight_decay", group["weight_decay"])
        _check_number("NAdam", "momentum_decay", group["momentum_decay"])

    def _update(self, p, grad, state, group):
        if not state:
            state["step"] = new_step()
            state["mu_product"] = _make(array("f", [1.0]), (), _dt.float32)
            state["exp_avg"] = self._new_state_tensor(p)
            state["exp_avg_sq"] = self._new_state_tensor(p)
        t = advance(state["step"])
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        psi = float(group["momentum_decay"])
        bias_correction2 = 1 - beta2 ** t
        if wd != 0 and group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        g = direction(p, grad, group)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
        # PyTorch multiplies its float32 tensor by mu rounded to float32; the product of two
        # float32 values is exact in float64, so storing it rounds once, as PyTorch does. (After
        # load_state_dict, PyTorch's mu_product has the parameter's dtype; so has ours.)
        mp = state["mu_product"]
        factor = float(array("f", [mu])[0]) if mp.dtype is _dt.float32 else mu
        mp._data[mp._offset] = scalar_value(mp) * factor
        mu_product = scalar_value(mp)
        exp_avg = lerp_(state["exp_avg"], g, 1 - beta1)
        exp_avg_sq = addcmul_(state["exp_avg_sq"].mul_(beta2), g, g, 1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(float(group["eps"]))
        mu_product_next = mu_product * mu_next
        addcdiv_(p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
        addcdiv_(p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next))
