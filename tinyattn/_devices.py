"""Devices, as far as a CPU-only library has them: `tinyattn.device`, `tinyattn.cuda`,
`tinyattn.backends`.

tinyattn computes on the CPU. PyTorch programs still name devices everywhere
(`device = "cuda" if torch.cuda.is_available() else "cpu"`, `x.to(device)`, `zeros(..., device=d)`),
so every place PyTorch takes a device takes one here: "cpu" (or None) is accepted, and a device
this machine does not have raises a clear RuntimeError naming the op, instead of being ignored.
`tinyattn.cuda.is_available()` is False, as PyTorch says on a machine without a GPU.
"""
import types

_KNOWN = ("cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "privateuseone")


class device:  # noqa: N801 - PyTorch's name
    """torch.device: device("cpu"), device("cuda", 0), device("cuda:1")."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's argument name
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type             # PyTorch: an int is a CUDA ordinal
        elif not isinstance(type, str):
            raise TypeError(f"device: expected a string or a device, got {type!r}")
        else:
            name, _, number = type.partition(":")
            if name not in _KNOWN or (number and not number.isdigit()):
                raise RuntimeError(f"device: expected one of {', '.join(_KNOWN)} at the start of "
                                   f"the device string, optionally followed by :N; got {type!r}")
            if number:
                if index is not None:
                    raise RuntimeError(f"device: {type!r} has an index, and index={index} too")
                index = int(number)
            type = name
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"device: the index must be a non-negative int, got {index!r}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")


def check(dev, op):
    """None, "cpu" or a cpu device -> the cpu device; any other device raises."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise RuntimeError(f"{op}: tinyattn computes on the CPU only, so device {str(d)!r} is not "
                           f"available (tinyattn.cuda.is_available() is False); use 'cpu'")
    return CPU


def is_device(x):
    """Does x name a device (rather than a dtype or a tensor)?"""
    if isinstance(x, device):
        return True
    if isinstance(x, str):
        return x.partition(":")[0] in _KNOWN
    return False


# ---------------------------------------------------------------------------- memory formats

class memory_format:  # noqa: N801 - PyTorch's name
    """torch.memory_format: tinyattn stores every tensor row-major ("strided"), so
    preserve_format and contiguous_format are accepted, and channels_last raises."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tinyattn.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")


def check_memory_format(fmt, op):
    if fmt is None or fmt is preserve_format or fmt is contiguous_format:
        return
    if fmt is channels_last:
        raise NotImplementedError(f"{op}: memory_format=channels_last is not supported; "
                                  f"tinyattn keeps tensors row-major")
    raise TypeError(f"{op}: memory_format must be a tinyattn memory format, got {fmt!r}")


# ------------------------------------------------------------------------ tinyattn.cuda

def _no_gpu(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tinyattn.cuda.{name}: tinyattn computes on the CPU only; there is "
                           f"no CUDA device (check tinyattn.cuda.is_available() first)")
    fn.__name__ = name
    return fn


cuda = types.ModuleType("tinyattn.cuda", "torch.cuda for a CPU-only library: no device is "
                                         "available; seeding and synchronising do nothing.")
cuda.is_available = lambda: False
cuda.device_count = lambda: 0
cuda.is_bf16_supported = lambda *a, **k: False
cuda.is_initialized = lambda: False
cuda.manual_seed = lambda seed: None
cuda.manual_seed_all = lambda seed: None
cuda.synchronize = lambda device=None: None
cuda.empty_cache = lambda: None
for _name in ("current_device", "get_device_name", "get_device_properties", "set_device",
              "memory_allocated", "max_memory_allocated"):
    setattr(cuda, _name, _no_gpu(_name))

# --------------------------------------------------------------------- tinyattn.backends

backends = types.ModuleType("tinyattn.backends", "torch.backends: flags programs set; none "
                                                 "changes what tinyattn computes.")
backends.mps = types.ModuleType("tinyattn.backends.mps")
backends.mps.is_available = lambda: False
backends.mps.is_built = lambda: False
backends.cudnn = types.ModuleType("tinyattn.backends.cudnn")
backends.cudnn.enabled, backends.cudnn.benchmark, backends.cudnn.deterministic = True, False, False
backends.cudnn.allow_tf32 = True
backends.cudnn.is_available = lambda: False
backends.cuda = types.ModuleType("tinyattn.backends.cuda")
backends.cuda.matmul = types.SimpleNamespace(allow_tf32=False)
backends.cuda.is_built = lambda: False

# ------------------------------------------------------------ out of scope, named loudly


def _out_of_scope(what):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{what} is not available in tinyattn (a CPU-only teaching "
                                  f"library): run the model eagerly instead")
    fn.__name__ = what.rsplit(".", 1)[-1]
    return fn


compile = _out_of_scope("torch.compile")  # noqa: A001 - PyTorch's name
onnx = types.ModuleType("tinyattn.onnx", "torch.onnx: export is out of scope.")
onnx.export = _out_of_scope("torch.onnx.export")
jit = types.ModuleType("tinyattn.jit", "torch.jit: TorchScript is out of scope.")
jit.script = _out_of_scope("torch.jit.script")
jit.trace = _out_of_scope("torch.jit.trace")
