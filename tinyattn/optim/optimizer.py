"""`Optimizer`: parameter groups, per-parameter state, `zero_grad`, `step`, `state_dict`.

The structure is PyTorch's, so that training loops and checkpoints look the same in both libraries:

    optimizer.param_groups   a list of dicts: {"params": [p0, p1, ...], "lr": 0.001, ...}; options
                             missing from a group come from the constructor's defaults, so groups
                             can train with different learning rates or weight decay
    optimizer.state          a dict parameter -> that parameter's state (Adam: step, exp_avg, ...),
                             created lazily at the parameter's first step

`state_dict()` replaces the parameters by their position (0, 1, 2, ... across all groups in order)
so that a checkpoint can be loaded into a fresh optimizer built over a fresh model:

    {"state": {0: {"step": tensor(3.), "exp_avg": ..., ...}, 1: {...}},
     "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), ..., "params": [0, 1, 2, 3]}]}

A subclass states its option checks in `_check_options(group)` and its update rule in
`_update(p, grad, state, group)`; `step()` does the rest: evaluating the closure, skipping
parameters whose `.grad` is None, making gradients contiguous, turning off graph building.
"""
from array import array
from collections import defaultdict

from ..autograd import enable_grad, no_grad
from ..storage import _make
from ..tensor import Tensor
from .. import dtypes as _dt
from ..creation import tensor


class Optimizer:
    """Base class of all optimizers: `Optimizer(params, defaults)`.

    params: an iterable of tensors, of (name, tensor) pairs (`model.named_parameters()`), or of
    dicts, each one parameter group: `[{"params": model.body.parameters()},
    {"params": model.head.parameters(), "lr": 1e-2}]`."""

    def __init__(self, params, defaults):
        name = type(self).__name__
        self.defaults = dict(defaults)
        self._check_options(self.defaults)
        self.state = defaultdict(dict)  # as PyTorch: opt.state[p] is {} before p's first step
        self.param_groups = []
        self._step_count = 0  # how many times step() ran; schedulers check the call order with it
        if isinstance(params, Tensor):
            raise TypeError(f"{name}: params must be an iterable of Tensors or dicts, got a single "
                            f"Tensor; wrap it in a list: {name}([p], ...)")
        if isinstance(params, (set, frozenset)):
            raise TypeError(f"{name}: params must be an ordered collection (the order of a set "
                            f"changes between runs, and a checkpoint refers to parameters by "
                            f"position); use a list")
        if isinstance(params, dict):
            raise TypeError(f"{name}: params is a dict; pass a list of parameter groups, "
                            f"[{{'params': ...}}], or model.parameters()")
        groups = list(params)
        if not groups:
            raise ValueError(f"{name}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (e.g. to unfreeze layers while training).

        Options the group does not set come from the optimizer's defaults. A parameter may belong
        to only one group, once."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}.add_param_group: a parameter group must be a dict, got "
                            f"{type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError(f"{name}.add_param_group: the group has no 'params' entry")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(f"{name}: parameters must be in an ordered collection, not a set "
                            f"(a checkpoint refers to them by position); use a list")
        params = list(params)

        tensors, names = [], []
        for item in params:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Tensor):
                names.append(item[0])
                item = item[1]
            tensors.append(item)
        if names and len(names) != len(tensors):
            raise ValueError(f"{name}: either every parameter of a group has a name or none has")
        for i, p in enumerate(tensors):
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, but parameter {i} of the "
                                f"group is a {type(p).__name__}")
            if not p.dtype.is_floating_point:
                raise TypeError(f"{name}: can only optimize floating-point tensors, but parameter "
                                f"{i} of the group is {p.dtype}")
            if not p.is_leaf:
                raise ValueError(f"{name}: can't optimize a non-leaf Tensor (parameter {i} of the "
                                 f"group was computed by {p.grad_fn.name()}); optimize the leaves "
                                 f"it was computed from")
        group["params"] = tensors
        if names:
            group["param_names"] = names

        for key, default in self.defaults.items():
            group.setdefault(key, default)
        self._check_options(group)

        ids = [id(p) for p in tensors]
        if len(set(ids)) != len(ids):
            # PyTorch only warns; a duplicate would be updated twice per step.
            raise ValueError(f"{name}: a parameter group contains the same parameter twice")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if seen.intersection(ids):
            raise ValueError(f"{name}: some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _check_options(self, group):
        """Raise ValueError for an invalid option value (subclasses say which values are valid)."""

    # ------------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none=True):
        """Forget the gradients of every parameter (backward adds into .grad, it never overwrites).

        set_to_none=True (the default) sets .grad to None, so a parameter that then gets no
        gradient is skipped by step(); set_to_none=False gives a fresh zero tensor instead, and
        the parameter is then updated with a zero gradient (momentum and Adam still move it)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad = _make(_dt.zeros_buffer(p.dtype, p.numel()), p.shape, p.dtype)

    # ------------------------------------------------------------------ the step
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure() when one is given.

        closure: a function that recomputes the loss (zero_grad, forward, backward) and returns
        it; it runs with graph building on, before the update."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._step_count += 1
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = self._checked_grad(p)
                    state = self.state[p]
                    if p._packed:
                        self._update(p, grad, state, group)
                    else:
                        # The kernels update buffer elements 0..n-1 in place, so a strided view
                        # is updated through a packed copy that is written back.
                        work = p.contiguous()
                        self._update(work, grad, state, group)
                        p.copy_(work)
        return loss

    def _checked_grad(self, p):
        g = p.grad
        if not isinstance(g, Tensor):
            raise TypeError(f"{type(self).__name__}.step: a parameter's .grad is a "
                            f"{type(g).__name__}, not a Tensor")
        if g.shape != p.shape:
            raise ValueError(f"{type(self).__name__}.step: a parameter of shape {tuple(p.shape)} "
                             f"has a .grad of shape {tuple(g.shape)}")
        if g.dtype is not p.dtype:
            raise TypeError(f"{type(self).__name__}.step: a parameter of dtype {p.dtype} has a "
                            f".grad of dtype {g.dtype}")
        return g if g._packed else g.contiguous()  # step() runs under no_grad: no graph

    def _update(self, p, grad, state, group):
        """Update the packed parameter p in place from its packed gradient (same shape and dtype).

        `state` is this parameter's dict in self.state (empty before its first step)."""
        raise NotImplementedError(f"{type(self).__name__} must define _update()")

    def _new_state_tensor(self, p):
        """A zero tensor shaped like p: the usual initial value of a moment or momentum buffer."""
        return _make(_dt.zeros_buffer(p.dtype, p.numel()), p.shape, p.dtype)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """The optimizer's state as {"state": {index: {...}}, "param_groups": [{..., "params":
        [index, ...]}]}, with parameters replaced by their position across all groups, as PyTorch.

        The tensors in "state" are the optimizer's own buffers, not copies (as in PyTorch): save
        the dict (tinyattn.save) or clone them before the next step() if you keep it in memory."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = dict(self.state[p])
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore a state from `state_dict()` (this library's or PyTorch's `torch.optim` one).

        Parameters are matched by position, so this optimizer must have the same number of groups
        with the same number of parameters as the one that was saved. The group options (lr,
        betas, ...) come from the state_dict. State tensors are copied and converted to the
        parameter's dtype (the step counter stays float32); torch tensors are accepted."""
        name = type(self).__name__
        if not isinstance(state_dict, dict) or "state" not in state_dict or \
                "param_groups" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with keys 'state' and "
                             f"'param_groups' (from optimizer.state_dict())")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the loaded state dict has "
                             f"{len(saved_groups)} parameter groups, this optimizer has "
                             f"{len(self.param_groups)}")
        by_index = {}
        for gi, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(f"{name}.load_state_dict: parameter group {gi} of the loaded "
                                 f"state dict has {len(saved['params'])} parameters, this "
                                 f"optimizer's has {len(group['params'])}")
            for index, p in zip(saved["params"], group["params"]):
                by_index[index] = p

        new_state = defaultdict(dict)
        for index, saved_state in state_dict["state"].items():
            if index not in by_index:
                raise ValueError(f"{name}.load_state_dict: the loaded state dict has state for "
                                 f"parameter {index!r}, which none of its parameter groups lists")
            p = by_index[index]
            new_state[p] = {key: _state_value(name, index, key, value, p)
                            for key, value in saved_state.items()}

        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            new_group = {k: v for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new_group["param_names"] = group["param_names"]
            self._check_options(new_group)
            new_groups.append(new_group)
        self.state = new_state
        self.param_groups = new_groups

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key not in ("params", "param_names"):
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


_SCALAR_STATE = ("step", "mu_product")  # per-parameter scalars, not shaped like the parameter


def _state_value(opt_name, index, key, value, p):
    """One entry of a loaded per-parameter state: tensors are copied (the optimizer will update
    them in place, which must not change the dict they came from) and converted to p's dtype,
    except the step counter, which stays a float32 scalar as in PyTorch; a scalar state (NAdam's
    mu_product) stays a scalar."""
    if isinstance(value, Tensor):
        t = value.detach()
    elif hasattr(value, "tolist") and hasattr(value, "shape"):  # a torch.Tensor
        t = tensor(value.tolist(), dtype=_torch_dtype_name(value))
    else:
        return value
    if key in _SCALAR_STATE:
        if t.numel() != 1:
            raise ValueError(f"{opt_name}.load_state_dict: {key!r} of parameter {index} should "
                             f"be a single number, got shape {tuple(t.shape)}")
        if key == "step":
            return _make(array("f", [float(t.item())]), (), _dt.float32)
        return t.reshape(()).to(p.dtype).clone()  # as PyTorch, which converts all but "step"
    if t.shape != p.shape:
        raise ValueError(f"{opt_name}.load_state_dict: {key!r} of parameter {index} has shape "
                         f"{tuple(t.shape)}, but the parameter has shape {tuple(p.shape)}")
    return t.to(p.dtype).clone() if t.dtype is not p.dtype else t.clone()


def _torch_dtype_name(t):
    name = str(t.dtype).replace("torch.", "")
    return name if name in _dt.BY_NAME else "float64"


def _check_number(opt_name, key, value, low=0.0, high=None, high_open=False):
    """Raise unless `value` is a real number with low <= value (and value < / <= high)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{opt_name}: {key} must be a number, got {type(value).__name__} "
                        f"({value!r})")
    ok = low <= value
    if high is not None:
        ok = ok and (value < high if high_open else value <= high)
    if not ok:  # also catches NaN, for which every comparison is False
        bound = f"in [{low}, {high})" if high_open else (
            f"in [{low}, {high}]" if high is not None else f">= {low}")
        raise ValueError(f"{opt_name}: invalid {key} {value!r}; it must be {bound}")
