"""PyTorch's module names -> tinyattn's modules, and `as_torch()`, which installs them in
sys.modules (the command line around it is as_torch.py: `python -m tinyattn.as_torch`)."""
import sys
import types

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
    "torch.optim": "optim",
    "torch.optim.lr_scheduler": "optim.lr_scheduler",
    "torch.autograd": "autograd",
    "torch.autograd.functional": "autograd_functional",
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
    _install_nn_modules(tinyattn.nn)
    return tinyattn


# torch.nn.modules.<file>: where PyTorch defines its layers. Programs name them there
# (torch.nn.modules.rnn.LSTM, in safe_globals lists and isinstance checks); every one of them is
# tinyattn.nn itself, which holds all the layers.
NN_MODULE_FILES = ("activation", "adaptive", "batchnorm", "container", "conv", "distance",
                   "dropout", "flatten", "fold", "instancenorm", "linear", "loss", "module",
                   "normalization", "padding", "pixelshuffle", "pooling", "rnn", "sparse",
                   "transformer", "upsampling", "utils")


class _NNModules(types.ModuleType):
    """torch.nn.modules: each of PyTorch's layer files is tinyattn.nn."""

    def __init__(self, nn):
        super().__init__("torch.nn.modules")
        self._nn = nn

    def __getattr__(self, name):
        if name in NN_MODULE_FILES:
            return self._nn
        return getattr(self._nn, name)


def _install_nn_modules(nn):
    package = _NNModules(nn)
    package.__path__ = []                      # a package, so `import torch.nn.modules.rnn` works
    sys.modules["torch.nn.modules"] = package
    for name in NN_MODULE_FILES:
        sys.modules[f"torch.nn.modules.{name}"] = nn
    nn.modules = package
