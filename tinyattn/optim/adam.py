"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), with PyTorch's update rules."""
from array import array

from .. import dtypes as _dt
from ..ops.optim import adam_step_
from ..storage import _make
from .optimizer import Optimizer, _check_number


class Adam(Optimizer):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    maximize=False, decoupled_weight_decay=False), as PyTorch computes it. At step t, for each
    parameter p with gradient g:

        g <- -g                               if maximize
        g <- g + weight_decay * p             if weight_decay != 0 (L2 penalty; AdamW differs)
        m <- beta1 m + (1 - beta1) g          first moment: a running mean of g
        v <- beta2 v + (1 - beta2) g^2        second moment: a running mean of g^2
        m_hat = m / (1 - beta1^t)             bias corrections: m and v start at 0, so early
        v_hat = v / (1 - beta2^t)             averages are too small by exactly these factors
        p <- p - lr * m_hat / (sqrt(v_hat) + eps)

    Each parameter moves by about lr in the direction of its recent gradients' sign, whatever
    their scale. amsgrad=True divides by the running maximum of v instead of v (Reddi et al.,
    2018), so the step size never grows again. State per parameter: "step" (a float32 scalar
    tensor, as in PyTorch), "exp_avg" (m), "exp_avg_sq" (v) and, with amsgrad, "max_exp_avg_sq".

    As in PyTorch, eps is added to sqrt(v) / sqrt(1 - beta2^t) and the learning rate is divided
    by 1 - beta1^t; the whole update is one fused loop per parameter (kernels/optim.py). Beyond
    PyTorch: every parameter group's options are validated; lr and betas must be numbers
    (PyTorch also accepts tensors); there is no foreach / fused / capturable / differentiable."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, maximize=False, decoupled_weight_decay=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _check_options(self, group):
        name = type(self).__name__
        _check_number(name, "learning rate lr", group["lr"])
        _check_number(name, "epsilon eps", group["eps"])
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        _check_number(name, "beta parameter at index 0", betas[0], high=1.0, high_open=True)
        _check_number(name, "beta parameter at index 1", betas[1], high=1.0, high_open=True)
        _check_number(name, "weight_decay", group["weight_decay"])

    def _update(self, p, grad, state, group):
        if not state:
            state["step"] = _make(array("f", [0.0]), (), _dt.float32)
            state["exp_avg"] = self._new_state_tensor(p)
            state["exp_avg_sq"] = self._new_state_tensor(p)
        amsgrad = bool(group["amsgrad"])
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = self._new_state_tensor(p)

        # The step counter is a float32 tensor in PyTorch; keeping that type keeps checkpoints
        # interchangeable (and exact: float32 counts integers exactly up to 2^24).
        step = state["step"]
        step._data[step._offset] += 1.0
        t = float(step._data[step._offset])

        lr = float(group["lr"])
        beta1, beta2 = (float(b) for b in group["betas"])
        bias_correction1 = 1 - beta1 ** t
        bias_correction2 = 1 - beta2 ** t
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5

        adam_step_(p, grad, state["exp_avg"], state["exp_avg_sq"],
                   state["max_exp_avg_sq"] if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2,
                   eps=float(group["eps"]), weight_decay=float(group["weight_decay"]),
                   decoupled_weight_decay=bool(group["decoupled_weight_decay"]), amsgrad=amsgrad,
                   maximize=bool(group["maximize"]), step_size=step_size,
                   bias_correction2_sqrt=bias_correction2_sqrt)


class AdamW(Adam):
    """AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
    maximize=False): Adam with decoupled weight decay. The decay shrinks the parameter directly,

        p <- p * (1 - lr * weight_decay)

    before the Adam step, instead of adding weight_decay * p to the gradient: with plain Adam the
    penalty's gradient is divided by sqrt(v_hat) like any other gradient, so weights with large
    gradients are hardly decayed; here every weight decays at the same rate. Same as
    `Adam(..., decoupled_weight_decay=True)`, as in PyTorch."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # an AdamW stays AdamW, whatever the checkpoint said
            group["decoupled_weight_decay"] = True
