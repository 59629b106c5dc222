"""PyTorch's module names -> tinyattn's modules, and `as_torch()`, which installs them in
sys.modules (the command line around it is as_torch.py: `python -m tinyattn.as_torch`)."""
import sys

# PyTorch's module -> tinyattn's (an attribute path of the tinyattn package)
ALIASES = {
    "torch": "",
    "torch.nn": "nn",
    "torch.nn.functional": "nn.functional",
    "torch.nn.init": "nn.init",
    "torch.nn.utils": "nn.utils",
    "torch.nn.utils.rnn": "nn.utils.rnn",
    "torch.nn.utils.clip_grad": "nn.utils.clip_grad",
    "torch.nn.parameter": "nn",
    "torch.nn.modules": "nn",
    "torch.optim": "optim",
    "torch.optim.lr_scheduler": "optim.lr_scheduler",
    "torch.autograd": "autograd",
    "torch.serialization": "serialization",
    "torch.utils": "utils",
    "torch.utils.data": "utils.data",
    "torch.utils.data.dataloader": "utils.data",
    "torch.utils.data.dataset": "utils.data",
    "torch.utils.data.sampler": "utils.data",
    "torch.testing": "testing",
    "torch.cuda": "cuda",
    "torch.backends": "backends",
    "torch.backends.mps": "backends.mps",
    "torch.backends.cudnn": "backends.cudnn",
    "torch.backends.cuda": "backends.cuda",
    "torch.onnx": "onnx",
    "torch.jit": "jit",
}


def as_torch():
    """Make `import torch` (and its submodules above) give tinyattn; returns tinyattn."""
    tinyattn = sys.modules[__package__]   # the package is imported before any of its modules
    real = sys.modules.get("torch")
    if real is not None and real is not tinyattn:
        raise RuntimeError("as_torch: PyTorch itself is already imported in this process; call "
                           "tinyattn.as_torch() before the first `import torch` (in a notebook: "
                           "restart the kernel)")
    for name, path in ALIASES.items():
        module = tinyattn
        for part in filter(None, path.split(".")):
            module = getattr(module, part)
        sys.modules[name] = module
    return tinyattn
