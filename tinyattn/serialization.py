"""`save(obj, path)` and `load(path)`: tensors and plain data as safetensors; other objects pickled.

A safetensors file (https://github.com/huggingface/safetensors) is

    8 bytes        N, the length of the header, an unsigned little-endian integer
    N bytes        a JSON header: {"__metadata__": {str: str},
                                   name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
                                   ...}
    the rest       the tensors' raw little-endian bytes; tensor `name` is bytes b..e of this part

Loading such a file reads numbers and JSON, so it cannot run code, unlike a pickle (what
torch.save writes) whose loading may call any function the file names. The files open with the
`safetensors` package (and through it in PyTorch); files it writes load here.

A checkpoint is usually nested, e.g. {"model": model.state_dict(), "optimizer":
opt.state_dict(), "step": 1200}. `save` stores each tensor under its dotted path
("model.fc1.weight", "optimizer.state.0.exp_avg") and the rest of the object (dicts, lists,
tuples, ints, floats, strings, bools, None) as JSON in the metadata entry "tinyattn.structure",
so that `load` rebuilds the same nested object. A flat dict of named tensors (a state_dict) is
stored as plain safetensors, with no structure entry.

Anything else (a whole module, an optimizer object, a dict with float keys, a list) is pickled,
as torch.save does, after a line that marks the file as a tinyattn pickle. Loading a pickle can run
any code the file names, so, as in PyTorch since 2.6, `load` refuses it unless asked: by default
(`weights_only=True`) it unpickles only tensors, containers and plain values, and anything else
raises PyTorch's explanation; `load(f, weights_only=False)` unpickles everything, for files you
trust. `add_safe_globals` and `safe_globals` allow more classes, as in torch.serialization.

Writes are atomic: the file is written to a temporary file in the same directory, then renamed
over `path`, so a crash or an error never leaves a half-written checkpoint behind. Loading checks
everything before trusting it and raises ValueError naming the file and the problem.
"""
import contextlib
import io
import json
import math
import os
import pickle
import secrets
import sys
from array import array

from . import dtypes as _dt
from ._devices import check
from .autograd import no_grad
from .storage import _make
from .tensor import Tensor

_STRUCTURE_KEY = "tinyattn.structure"
_FORMAT_VERSION = 1
_MAX_HEADER = 100_000_000  # the limit of the safetensors library: a bigger header is corrupt

_CODE = {_dt.float32: "F32", _dt.float64: "F64", _dt.int64: "I64", _dt.int32: "I32",
         _dt.uint8: "U8", _dt.bool: "BOOL"}
_DTYPE = {code: dt for dt, code in _CODE.items()}
# safetensors dtypes that tinyattn cannot hold: named in the error so the user knows what to do.
_OTHER_SAFETENSORS_DTYPES = {"F16", "BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                             "F6_E3M2", "I8", "I16", "U16", "U32", "U64", "C64"}
_BIG_ENDIAN = sys.byteorder == "big"
# A pickled file starts with this line. Read as a safetensors header length, its first 8 bytes
# are about 5e18, far beyond any file: the two formats cannot be mistaken for each other.
_PICKLE_MAGIC = b"TINYATTN-PICKLE\n"


# ============================================================================ save


def save(obj, path, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Write `obj` to `path` (a file name, written atomically, or an open binary file object).

    A dict of Tensors, nested dicts (keys str or int), lists, tuples, and plain ints, floats,
    strings, bools and None -- a state_dict or a checkpoint -- is written as a safetensors file;
    tensors as contiguous little-endian data, parameters and views as plain tensors of their
    current values. Any other object is pickled (with `pickle_module` and `pickle_protocol` when
    given), tensors in it by value; as in PyTorch, a tensor's graph and `.grad` are not saved."""
    structure = tensors = None
    if isinstance(obj, dict):
        if _is_flat_state_dict(obj):
            tensors = dict(obj)
        else:
            tensors = {}
            try:
                structure = _encode(obj, "", tensors)
            except _NotPlain:
                tensors = None
    if tensors is None:
        parts = [_PICKLE_MAGIC, _pickled(obj, pickle_module, pickle_protocol)]
    else:
        parts = _safetensors_parts(structure, tensors)
    if hasattr(path, "write"):                       # torch.save(obj, f) with an open file
        for part in parts:
            path.write(part)
        return
    _atomic_write(path, parts)


def _safetensors_parts(structure, tensors):
    """The safetensors file as byte strings: header length, JSON header, the tensors' data."""
    header = {}
    if structure is not None:
        meta = {"format": _FORMAT_VERSION, "root": structure}
        header["__metadata__"] = {_STRUCTURE_KEY: json.dumps(meta, allow_nan=False,
                                                             separators=(",", ":"))}
    payloads = []
    offset = 0
    with no_grad():
        for name, t in tensors.items():
            data = _tensor_bytes(t)
            header[name] = {"dtype": _CODE[t.dtype], "shape": list(t.shape),
                            "data_offsets": [offset, offset + len(data)]}
            payloads.append(data)
            offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # pad with spaces so the data starts 8-byte aligned
    return [len(head).to_bytes(8, "little"), head, *payloads]


def _is_flat_state_dict(obj):
    return all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()) and \
        "__metadata__" not in obj


class _NotPlain(Exception):
    """A value that safetensors' JSON metadata cannot hold: the object is pickled instead."""


def _encode(value, key, tensors):
    """The JSON form of `value`: tensors become {"tensor": name} (their data goes into `tensors`),
    dicts {"dict": [[key, value], ...]} (keys keep their type, str or int), tuples {"tuple": [...]},
    non-finite floats {"float": "inf"}; lists and other plain values stay as they are."""
    if isinstance(value, Tensor):
        name = key or "tensor"
        if name in tensors or name == "__metadata__":
            raise ValueError(f"save: two tensors would be stored under the name {name!r} (a dotted "
                             f"key like 'a.b' collides with a nested key b inside a)")
        tensors[name] = value
        return {"tensor": name}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list):
        return [_encode(v, _join(key, i), tensors) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, _join(key, i), tensors) for i, v in enumerate(value)]}
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise _NotPlain
            items.append([k, _encode(v, _join(key, k), tensors)])
        return {"dict": items}
    raise _NotPlain


def _join(prefix, key):
    return f"{prefix}.{key}" if prefix else str(key)


def _tensor_bytes(t):
    """The tensor's elements in row-major order as little-endian bytes."""
    n = t.numel()
    if t._packed and len(t._data) == n and not _BIG_ENDIAN:
        return memoryview(t._data).cast("B")  # no copy
    data = t.contiguous()._data[:n]
    if _BIG_ENDIAN:
        data.byteswap()
    return memoryview(data).cast("B")


def _atomic_write(path, chunks):
    """Write chunks to a temporary file next to `path`, flush it to disk, then rename it over
    `path` (os.replace is atomic): readers see the old file or the new one, never half of one."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # Mode 0o666 minus the umask, as for any new file (tempfile would make it private, 0o600).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with open(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    """Make the rename itself durable (POSIX); not possible, nor needed, everywhere."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ============================================================================ pickle


def _pickled(obj, pickle_module, protocol):
    """`obj` pickled, each Tensor (or subclass, such as nn.Parameter) by value: its class, its
    elements as little-endian bytes, its dtype, shape and requires_grad."""
    module = pickle_module or pickle

    class Pickler(module.Pickler):
        def reducer_override(self, value):
            if isinstance(value, Tensor):
                with no_grad():
                    raw = bytes(_tensor_bytes(value))
                return _rebuild_tensor, (type(value), raw, _CODE[value.dtype], tuple(value.shape),
                                         value.requires_grad)
            return NotImplemented

    buf = io.BytesIO()
    Pickler(buf, module.DEFAULT_PROTOCOL if protocol is None else protocol).dump(obj)
    return buf.getvalue()


def _rebuild_tensor(cls, raw, code, shape, requires_grad):
    """The tensor `_pickled` stored; a subclass is rebuilt as cls(data, requires_grad), the
    signature of nn.Parameter."""
    dtype = _DTYPE[code]
    data = array(dtype.typecode)
    data.frombytes(raw)
    if _BIG_ENDIAN:
        data.byteswap()
    t = _make(data, tuple(shape), dtype)
    if cls is not Tensor:
        return cls(t, requires_grad)
    return t.requires_grad_(True) if requires_grad else t


# What `load` unpickles with weights_only=True: tensors, containers and plain values, as PyTorch's
# weights-only unpickler; add_safe_globals and safe_globals add to it.
_SAFE = {("tinyattn.serialization", "_rebuild_tensor"), ("tinyattn.tensor", "Tensor"),
         ("tinyattn.nn.module", "Parameter"), ("collections", "OrderedDict"),
         ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
         ("builtins", "complex"), ("builtins", "bytearray"), ("builtins", "range")}
_user_safe = {}


def _global_name(obj):
    if isinstance(obj, tuple):                       # (obj, "module.name"), as in PyTorch
        obj, name = obj
        module, _, qualname = name.rpartition(".")
        return (module, qualname), obj
    return (obj.__module__, obj.__qualname__), obj


def add_safe_globals(safe_globals):
    """Let load(weights_only=True) unpickle these classes and functions too (PyTorch's name)."""
    for g in safe_globals:
        key, obj = _global_name(g)
        _user_safe[key] = obj


def get_safe_globals():
    return list(_user_safe.values())


def clear_safe_globals():
    _user_safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """add_safe_globals inside a `with` block only."""
    saved = dict(_user_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_safe.clear()
        _user_safe.update(saved)


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _user_safe:
            return _user_safe[module, name]
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(_WEIGHTS_ONLY_HELP.format(name=f"{module}.{name}"))


_WEIGHTS_ONLY_HELP = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, do "
    "those steps only if you trust the source of the checkpoint.\n"
    "\t(1) As in PyTorch 2.6 and later, `weights_only` defaults to True. Re-running `load` with "
    "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
    "execution. Do it only if you got the file from a trusted source.\n"
    "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
    "the following error message.\n"
    "\tWeightsUnpickler error: Unsupported global: GLOBAL {name} was not an allowed global by "
    "default. Please use `tinyattn.serialization.add_safe_globals([{name}])` or the "
    "`tinyattn.serialization.safe_globals([{name}])` context manager to allowlist this global "
    "if you trust this class/function.")


def _unpickle(f, path, weights_only, pickle_module, pickle_load_args):
    if weights_only is None:                 # PyTorch: an explicit pickle_module means a full load
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    try:
        if weights_only:
            return _WeightsUnpickler(f).load()
        return (pickle_module or pickle).load(f, **pickle_load_args)
    except (EOFError, pickle.UnpicklingError) as e:
        if str(e).startswith("Weights only load failed"):
            raise
        raise ValueError(f"load: {path!r}: the pickled object is truncated or corrupt ({e})") from e


# ============================================================================ load


def load(path, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read a file written by `save` (or a safetensors file of the safetensors library): a file
    name or an open binary file object.

    A safetensors file gives back the nested checkpoint `save` was given, or, for a plain
    safetensors file, a dict name -> Tensor in the order of the data; this runs no code, whatever
    `weights_only` says. A pickled object is unpickled as in PyTorch: with weights_only=True (the
    default, unless `pickle_module` is given) only tensors, containers and plain values, and
    pickle.UnpicklingError with PyTorch's explanation for anything else (a module, say); with
    weights_only=False, everything. Anything that is not a valid file raises ValueError naming
    the file and the problem. map_location may name the CPU (or map devices to it)."""
    _check_map_location(map_location)
    if hasattr(path, "read"):                        # torch.load(f) with an open file
        return _load_from(path, getattr(path, "name", "<file object>"), weights_only,
                          pickle_module, pickle_load_args)
    path = os.fspath(path)
    with open(path, "rb") as f:
        return _load_from(f, path, weights_only, pickle_module, pickle_load_args)


def _check_map_location(map_location):
    if map_location is None or callable(map_location):
        return
    targets = map_location.values() if isinstance(map_location, dict) else [map_location]
    for target in targets:
        check(target, "load(map_location=...)")


def _load_from(f, path, weights_only=None, pickle_module=None, pickle_load_args=None):
    base = f.tell()                   # a file object may hold the checkpoint after other data
    f.seek(0, 2)
    size = f.tell() - base
    f.seek(base)
    if f.read(len(_PICKLE_MAGIC)) == _PICKLE_MAGIC:
        return _unpickle(f, path, weights_only, pickle_module, pickle_load_args or {})
    f.seek(base)
    head = f.read(8)
    if len(head) < 8:
        raise ValueError(f"load: {path!r} is not a safetensors file: it has only {size} bytes "
                         f"(it must start with an 8-byte header length)")
    n = int.from_bytes(head, "little")
    if n > size - 8 and (head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"):
        raise ValueError(f"load: {path!r} looks like a torch.save (zip / pickle) file, not a "
                         f"file of tinyattn.save; tinyattn does not read PyTorch's format. "
                         f"Convert it with safetensors.torch.save_file(torch.load(...), ...)")
    if n > size - 8:
        raise ValueError(f"load: {path!r} is not a valid safetensors file: the header length "
                         f"{n} is beyond the end of the file ({size} bytes); the file is "
                         f"truncated or not a safetensors file")
    if n > _MAX_HEADER:
        raise ValueError(f"load: {path!r}: header length {n} is larger than the limit "
                         f"{_MAX_HEADER}; the file is corrupt")
    header = _parse_header(path, f.read(n))
    data_size = size - 8 - n
    entries = _check_entries(path, header, data_size)
    tensors = {}
    for name, dtype, shape, begin, end in entries:
        tensors[name] = _read_tensor(path, f, base + 8 + n + begin, end - begin, dtype, shape,
                                     name)
    metadata = header.get("__metadata__") or {}
    if _STRUCTURE_KEY not in metadata:
        return tensors
    return _decode_structure(path, metadata[_STRUCTURE_KEY], tensors)


def _parse_header(path, raw):
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"load: {path!r} is not a valid safetensors file: the header is not "
                         f"valid UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"load: {path!r}: the header must be a JSON object, got "
                         f"{type(header).__name__}")
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        raise ValueError(f"load: {path!r}: '__metadata__' must map strings to strings")
    return header


def _check_entries(path, header, data_size):
    """Validate every tensor entry; return (name, dtype, shape, begin, end) in data order."""
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"load: {path!r}: tensor {name!r}"
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
            raise ValueError(f"{where}: the entry must be an object with 'dtype', 'shape' and "
                             f"'data_offsets', got {info!r}")
        code = info["dtype"]
        if code not in _DTYPE:
            if code in _OTHER_SAFETENSORS_DTYPES:
                raise ValueError(f"{where} has dtype {code}, which tinyattn does not have (only "
                                 f"F32, F64, I64, I32, U8, BOOL); convert it before saving, e.g. "
                                 f"t.float() or t.long()")
            raise ValueError(f"{where} has an unknown dtype {code!r}")
        shape = info["shape"]
        if not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise ValueError(f"{where}: shape must be a list of non-negative ints, got {shape!r}")
        offsets = info["data_offsets"]
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(
                isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
            raise ValueError(f"{where}: data_offsets must be a pair of ints, got {offsets!r}")
        begin, end = offsets
        if not 0 <= begin <= end:
            raise ValueError(f"{where}: invalid data_offsets {offsets} (need 0 <= begin <= end)")
        if end > data_size:
            raise ValueError(f"{where}: data_offsets {offsets} go past the end of the data "
                             f"({data_size} bytes); the file is truncated or corrupt")
        dtype = _DTYPE[code]
        numel = 1
        for s in shape:
            numel *= s
        if end - begin != numel * dtype.itemsize:
            raise ValueError(f"{where}: data_offsets {offsets} hold {end - begin} bytes, but "
                             f"shape {tuple(shape)} of {code} needs {numel * dtype.itemsize}")
        entries.append((name, dtype, tuple(shape), begin, end))
    entries.sort(key=lambda e: (e[3], e[4]))
    position, previous = 0, None
    for name, _, _, begin, end in entries:
        if begin < position:
            raise ValueError(f"load: {path!r}: the data of tensors {previous!r} and {name!r} "
                             f"overlap (bytes {begin}..{position})")
        if begin > position:
            raise ValueError(f"load: {path!r}: bytes {position}..{begin} of the data belong to no "
                             f"tensor; the header is corrupt")
        position, previous = end, name
    if position != data_size:
        raise ValueError(f"load: {path!r}: the header describes {position} bytes of data but the "
                         f"file holds {data_size}; the file is corrupt")
    return entries


def _read_tensor(path, f, start, nbytes, dtype, shape, name):
    buf = _dt.zeros_buffer(dtype, nbytes // dtype.itemsize)
    f.seek(start)
    if nbytes and f.readinto(memoryview(buf).cast("B")) != nbytes:
        raise ValueError(f"load: {path!r}: the file ended inside tensor {name!r} (truncated "
                         f"while being read?)")
    if _BIG_ENDIAN and dtype.itemsize > 1:
        buf.byteswap()
    if dtype is _dt.bool:
        buf = array("B", bytes(buf).translate(_BOOL_TABLE))  # any nonzero byte means True
    return _make(buf, shape, dtype)


_BOOL_TABLE = bytes([0] + [1] * 255)


def _decode_structure(path, text, tensors):
    where = f"load: {path!r}: the metadata entry {_STRUCTURE_KEY!r}"
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where} is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or "root" not in meta:
        raise ValueError(f"{where} has no 'root'")
    if meta.get("format") != _FORMAT_VERSION:
        raise ValueError(f"{where} has format {meta.get('format')!r}; this tinyattn reads "
                         f"format {_FORMAT_VERSION}")
    used = set()
    obj = _decode(meta["root"], tensors, used, where)
    unused = tensors.keys() - used
    if unused:
        raise ValueError(f"{where} does not mention the tensors {sorted(unused)}")
    return obj


def _decode(value, tensors, used, where):
    if isinstance(value, list):
        return [_decode(v, tensors, used, where) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"{where} is corrupt: unexpected object {value!r}")
    (kind, body), = value.items()
    if kind == "tensor":
        if body not in tensors or body in used:
            raise ValueError(f"{where} refers to tensor {body!r}, which the file does not hold "
                             f"(or refers to it twice)")
        used.add(body)
        return tensors[body]
    if kind == "tuple" and isinstance(body, list):
        return tuple(_decode(v, tensors, used, where) for v in body)
    if kind == "dict" and isinstance(body, list):
        out = {}
        for item in body:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int))):
                raise ValueError(f"{where} is corrupt: bad dict item {item!r}")
            out[item[0]] = _decode(item[1], tensors, used, where)
        return out
    if kind == "float" and body in ("inf", "-inf", "nan"):
        return float(body)
    raise ValueError(f"{where} is corrupt: unexpected object {value!r}")
