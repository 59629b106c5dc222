"""`Module`, `Parameter` and the containers, with PyTorch's names, semantics and state_dict keys.

A Module owns Parameters (leaf tensors that require grad), buffers (tensors that are saved but not
trained, e.g. a positional-encoding table) and child Modules, all registered by plain attribute
assignment (`self.linear = Linear(4, 8)`). `state_dict()` names every parameter and buffer by its
dotted path (`encoder.layers.0.self_attn.in_proj_weight`), exactly as PyTorch does, so weights move
between the two libraries by key.
"""
from collections import OrderedDict, namedtuple

from .. import _devices as _dev
from .. import dtypes as _dt
from ..autograd import no_grad
from ..storage import _make
from ..tensor import Tensor
from ..creation import empty, tensor


class Parameter(Tensor):
    """A tensor that is a module's trainable weight: a leaf with requires_grad=True by default."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        p = object.__new__(cls)
        src = data.contiguous()
        p._data, p.shape, p.dtype = src._data, src.shape, src.dtype
        p._strides, p._offset, p._packed = src._strides, src._offset, src._packed
        p.grad = None
        p.grad_fn = None
        p._base = None
        p._requires_grad = False
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        raise TypeError("pickle a Parameter with tinyattn.save, which stores tensors by value "
                        "(and load it with tinyattn.load)")

    def __deepcopy__(self, memo):
        # copy.deepcopy(module) is how PyTorch clones layers (TransformerEncoder's N copies of one
        # layer), so it must work although pickling is refused. copy.deepcopy consults `memo`
        # before calling this, so a parameter shared by two modules stays shared in the copy.
        new = Parameter(self.detach().clone(), self._requires_grad)
        if self.grad is not None:
            new.grad = self.grad.detach().clone()
        memo[id(self)] = new
        return new


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _set_tensor_data(t, src):
    """Replace t's contents (buffer, shape, dtype) with src's, keeping the object's identity, so that
    optimizers holding the parameter see the change."""
    src = src.contiguous()
    t._data, t.shape, t.dtype = src._data, src.shape, src.dtype
    t._strides, t._offset, t._packed = src._strides, src._offset, src._packed


class Module:
    """Base class of every layer: subclass it, assign parameters and sub-modules in `__init__`,
    and write `forward`. Calling the module calls `forward`."""

    training = True

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called "
                                 f"(call super().__init__() first)")
        if isinstance(value, Parameter):
            target = self._parameters
        elif isinstance(value, Module):
            target = self._modules
        elif name in self.__dict__.get("_buffer_names", ()) and (value is None or isinstance(
                value, Tensor)):
            target = self._buffers
        else:
            target = None
        # Re-assigning a name in its own store keeps its place (a dict keeps a key's position),
        # so weight tying or `model.decoder = ...` leaves parameters() and state_dict() in
        # PyTorch's order; only the other stores lose the name.
        for store in (self._parameters, self._buffers, self._modules):
            if store is not target:
                store.pop(name, None)
        if target is None:
            object.__setattr__(self, name, value)
            return
        target[name] = value
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return list(super().__dir__()) + list(self._parameters) + list(self._buffers) + list(
            self._modules)

    def register_parameter(self, name, param):
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor saved in state_dict (unless persistent=False) and moved by .to(), not trained."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None")
        self.__dict__.setdefault("_buffer_names", set()).add(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)
        self.__dict__.pop(name, None)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module, got {type(module).__name__}")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        mod = self
        for part in target.split(".") if target else ():
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule {part!r}")
            mod = mod._modules[part]
        return mod

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter) pairs; a parameter shared by two modules is listed once."""
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and dtypes
    def train(self, mode=True):
        """Training mode (dropout active) or, with mode=False, evaluation mode."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Forget accumulated gradients (backward adds into .grad, it never overwrites)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = _make(_dt.zeros_buffer(p.grad.dtype, p.numel()), p.shape, p.dtype)

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """Convert floating-point parameters and buffers to `dtype`, in place (as PyTorch);
        to(device) accepts the CPU and raises for any other device."""
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif _dev.is_device(a):
                device = a
            elif isinstance(a, (_dt.dtype, str)):
                dtype = a
            else:
                raise TypeError(f"Module.to: expected a dtype, a device or a tensor, got {a!r}")
        _dev.check(device, "Module.to")
        if dtype is None:
            return self
        dtype = _dt.get(dtype)
        if not dtype.is_floating_point:
            raise TypeError(f"Module.to: only floating-point dtypes are supported, got {dtype}")
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if t.dtype.is_floating_point and t.dtype is not dtype:
                    _set_tensor_data(t, t.to(dtype))
                    if t.grad is not None:
                        t.grad = t.grad.to(dtype)
        return self

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def cpu(self):
        return self

    def cuda(self, device=None):
        _dev.check("cuda" if device is None else device, "Module.cuda")

    # ------------------------------------------------------------------ state
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """OrderedDict of dotted name -> tensor for every parameter and persistent buffer (the
        tensors share storage with the module; they are detached unless keep_vars=True)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy tensors into this module's parameters and buffers by name.

        Values may be tinyattn tensors or anything with .tolist() and .shape (a torch.Tensor).
        strict=True raises on missing or unexpected keys; a shape mismatch always raises.
        Returns (missing_keys, unexpected_keys)."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict and (missing or unexpected):
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(
                    f'"{k}"' for k in missing) + ".")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(
                    f'"{k}"' for k in unexpected) + ".")
        updates = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            if not isinstance(v, Tensor):
                if not hasattr(v, "tolist"):
                    errors.append(f'"{k}" is a {type(v).__name__}, not a tensor.')
                    continue
                v = tensor(v.tolist(), dtype=target.dtype) if len(tuple(v.shape)) else tensor(
                    v.item(), dtype=target.dtype)
            if tuple(v.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{tuple(v.shape)} from checkpoint, the shape in current model is "
                              f"{tuple(target.shape)}.")
                continue
            updates.append((target, v))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for target, v in updates:
                target.copy_(v)
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ calling and printing
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        if not self._modules:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(lines)
        return f"{type(self).__name__}(\n  {body}\n)"


class _ModuleSequence(Module):
    """What ModuleList and Sequential share: children in order, named "0", "1", ..."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self


class ModuleList(_ModuleSequence):
    """A list of modules, registered as children named "0", "1", ..."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def _key(self, i):
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"ModuleList index {i} is out of range for length {n}")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return self._modules[self._key(i)]

    def __setitem__(self, i, module):
        self._modules[self._key(i)] = module

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class Sequential(_ModuleSequence):
    """Modules applied in order: Sequential(Linear(2, 16), ReLU(), Linear(16, 1))."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleDict(Module):
    """A dict of named child modules."""

    def __init__(self, modules=None):
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, m):
        self.add_module(k, m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, k):
        return k in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ... (tensors are wrapped as Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def _key(self, i):
        n = len(self._parameters)
        if not isinstance(i, int) or not -n <= i < n:
            raise IndexError(f"ParameterList index {i} is out of range for length {n}")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ParameterList(list(self._parameters.values())[i])
        return self._parameters[self._key(i)]

    def __setitem__(self, i, value):
        self.register_parameter(self._key(i), _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items())


class ParameterDict(Module):
    """A dict of named parameters (tensors are wrapped as Parameters), in insertion order."""

    def __init__(self, parameters=None):
        super().__init__()
        for k, v in (parameters.items() if hasattr(parameters, "items") else parameters or ()):
            self[k] = v

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        for k, v in (parameters.items() if hasattr(parameters, "items") else parameters):
            self[k] = v

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items())


def _as_parameter(value):
    if isinstance(value, Parameter) or value is None:
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"expected a Tensor or Parameter, got {type(value).__name__}")
