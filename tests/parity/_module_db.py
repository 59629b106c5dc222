"""The machinery of tests/parity/test_module_db.py: PyTorch's own module samples (ModuleInfo,
shipped in the torch wheel as torch.testing._internal.common_modules.module_db) run through tinyattn.

For every ModuleInfo whose class tinyattn.nn has (same name), every constructor and forward input
PyTorch generates, for float32 and float64, in training and in evaluation mode where they differ:
the module is built in both libraries from the same arguments, PyTorch's state_dict is loaded into
tinyattn's (so the keys and shapes must be PyTorch's), the forward outputs are compared, then for
float64 the gradients of a weighted sum of the outputs with respect to the inputs and to every
parameter; and each of PyTorch's `module_error_inputs` must raise in tinyattn too.
"""
import torch

import tinyattn as ta

from _op_db import Unconvertible, close, convert as convert_value, same_outputs

DTYPES = (torch.float32, torch.float64)


def tinyattn_module(info):
    return getattr(ta.nn, info.module_cls.__name__, None)


def convert(x, seen=None):
    """A torch value -> tinyattn; a PackedSequence stays one, and a tensor passed twice (as input
    and target, say) becomes one tinyattn tensor, so its gradients add up as in PyTorch."""
    seen = {} if seen is None else seen
    if isinstance(x, torch.nn.utils.rnn.PackedSequence):
        return ta.nn.utils.rnn.PackedSequence(*(convert(v, seen) for v in x))
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(convert(v, seen) for v in x)
    if isinstance(x, dict):
        return {k: convert(v, seen) for k, v in x.items()}
    if isinstance(x, torch.Tensor):
        if id(x) not in seen:
            seen[id(x)] = convert_value(x)
        return seen[id(x)]
    return convert_value(x)


def _outputs(x):
    """Nested outputs -> their floating-point tensors, in order (a PackedSequence gives its data)."""
    if isinstance(x, (torch.Tensor, ta.Tensor)):
        return [x] if x.dtype.is_floating_point else []
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _outputs(v)]
    return []


def _random(module, training):
    """Is the forward random: a Dropout submodule, or a dropout argument, above 0 in training?"""
    if not training:
        return False
    for m in module.modules():
        p = getattr(m, "dropout", None) if not isinstance(m, torch.nn.Dropout) else m.p
        if isinstance(p, float) and p > 0:
            return True
    return False


def check_module(info, report):
    """Run info's samples through tinyattn; append (module, dtype, kind, message) to report."""
    cls = tinyattn_module(info)
    name = info.module_cls.__name__
    modes = (True, False) if info.train_and_eval_differ else (True,)
    for training in modes:
        for dtype in DTYPES:
            if dtype not in info.supported_dtypes("cpu"):
                continue
            torch.manual_seed(0)
            try:
                samples = info.module_inputs_func(info, device="cpu", dtype=dtype,
                                                  requires_grad=dtype is torch.float64,
                                                  training=training)
            except Exception:          # noqa: BLE001 - a generator that needs something absent
                continue
            for k, mi in enumerate(samples):
                where = f"sample {k} ({'training' if training else 'eval'})"
                ci, fi = mi.constructor_input, mi.forward_input
                if fi is None:
                    continue
                try:
                    torch_module = info.module_cls(*ci.args, **ci.kwargs).to(dtype)
                    torch_module.train(training)
                    expected = torch_module(*fi.args, **fi.kwargs)
                except Exception:      # noqa: BLE001 - PyTorch refuses it: nothing to compare
                    continue
                try:
                    seen = {}
                    args, kwargs = convert(list(fi.args), seen), convert(fi.kwargs, seen)
                    cargs, ckwargs = convert(list(ci.args)), convert(ci.kwargs)
                except Unconvertible:
                    continue
                try:
                    module = cls(*cargs, **ckwargs).to(convert(dtype))
                    module.train(training)
                    theirs = {key: convert(v.detach()) for key, v in
                              torch_module.state_dict().items()}
                    module.load_state_dict(theirs)
                    got = module(*args, **kwargs)
                except Exception as e:   # noqa: BLE001 - every failure is reported
                    report.append((name, dtype, "error",
                                   f"{where}: {type(e).__name__}: {str(e)[:140]}"))
                    continue
                random = _random(torch_module, training)
                diff = same_outputs(_flat(got), _flat(expected), dtype, random)
                if diff:
                    report.append((name, dtype, "mismatch", f"{where}: {diff}"))
                    continue
                if dtype is torch.float64 and not random:
                    _check_grads(name, where, torch_module, module, fi, args, expected, got,
                                 report)
    _check_errors(info, cls, report)


def _flat(x):
    if isinstance(x, (torch.nn.utils.rnn.PackedSequence, ta.nn.utils.rnn.PackedSequence)):
        return [x.data]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    return [x]


def _check_grads(name, where, torch_module, module, fi, args, expected, got, report):
    outs_t, outs = _outputs(_flat(expected)), _outputs(_flat(got))
    leaves_t = [t for t in _outputs(list(fi.args)) if t.requires_grad]
    leaves = [t for t in _outputs(list(args)) if t.requires_grad]
    unique_t = {id(t): t for t in leaves_t}
    leaves_t, leaves = list(unique_t.values()), list({id(t): t for t in leaves}.values())
    params_t = dict(torch_module.named_parameters())
    params = dict(module.named_parameters())
    if not outs_t or len(outs_t) != len(outs):
        return
    weights = [torch.linspace(-1, 1, o.numel(), dtype=torch.float64).reshape(o.shape)
               for o in outs_t]
    try:
        wanted = list(leaves_t) + list(params_t.values())
        grads_t = torch.autograd.grad(sum((o * w).sum() for o, w in zip(outs_t, weights)),
                                      wanted, allow_unused=True)
    except Exception:                  # noqa: BLE001 - PyTorch cannot: nothing to compare
        return
    try:
        total = None
        for o, w in zip(outs, weights):
            term = (o * convert(w)).sum()
            total = term if total is None else total + term
        grads = ta.autograd.grad(total, list(leaves) + [params[k] for k in params_t],
                                 allow_unused=True)
    except Exception as e:             # noqa: BLE001
        report.append((name, torch.float64, "grad error",
                       f"{where}: {type(e).__name__}: {str(e)[:140]}"))
        return
    names = [f"input {j}" for j in range(len(leaves))] + list(params_t)
    for label, a, b in zip(names, grads, grads_t):
        if b is None:
            continue
        if a is None or not close(a.tolist(), b.tolist(), 1e-6, 1e-7):
            report.append((name, torch.float64, "grad mismatch",
                           f"{where}: the gradient of {label} differs"))
            return


def _check_errors(info, cls, report):
    """PyTorch's bad constructor/forward inputs must raise in tinyattn too."""
    if info.module_error_inputs_func is None:
        return
    try:
        errors = list(info.module_error_inputs_func(info, device="cpu", dtype=torch.float32,
                                                    requires_grad=False, training=True))
    except Exception:                  # noqa: BLE001
        return
    for k, e in enumerate(errors):
        mi = e.module_error_input
        ci, fi = mi.constructor_input, mi.forward_input
        try:
            cargs, ckwargs = convert(list(ci.args)), convert(ci.kwargs)
            args = convert(list(fi.args)) if fi is not None else None
            kwargs = convert(fi.kwargs) if fi is not None else None
        except Unconvertible:
            continue
        try:
            module = cls(*cargs, **ckwargs)
            if fi is not None:
                module(*args, **kwargs)
        except Exception:              # noqa: BLE001 - any error is the right answer here
            continue
        report.append((info.module_cls.__name__, None, "accepted bad input",
                       f"error input {k}: PyTorch raises {e.error_type.__name__} "
                       f"({str(e.error_regex)[:60]!r})"))
