"""tinyattn.save / tinyattn.load: the safetensors layout (checked by hand), round trips, nested
checkpoints, damaged files, atomic writes, interop with the safetensors package and PyTorch, and
a training run that resumes exactly from a checkpoint."""
import json
import math
import os
import pickle
import stat
import struct

import pytest

import tinyattn
from tinyattn import nn
from tinyattn.optim import Adam
from tinyattn.optim.lr_scheduler import CosineAnnealingLR


def same(a, b):
    """Equal tensors: shape, dtype, and every value bit for bit (NaN == NaN, -0.0 != 0.0)."""
    assert isinstance(b, tinyattn.Tensor)
    assert a.shape == b.shape and a.dtype is b.dtype
    va, vb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    if a.dtype.is_floating_point:
        va, vb = [v.hex() for v in va], [v.hex() for v in vb]
    assert va == vb


def all_dtypes():
    return {
        "f32": tinyattn.tensor([[1.5, -2.25, float("inf")], [float("nan"), -0.0, 1e-40]]),
        "f64": tinyattn.tensor([0.1, -1e300, 5e-324], dtype="float64"),
        "i64": tinyattn.tensor([0, -1, 2 ** 62, -(2 ** 63)]),
        "bool": tinyattn.tensor([True, False, True]),
        "scalar": tinyattn.tensor(3.0),
        "int_scalar": tinyattn.tensor(7),
        "empty": tinyattn.zeros(0, 3),
        "empty_i64": tinyattn.zeros(0, dtype="int64"),
    }


# ============================================================================ round trips


def test_flat_round_trip_all_dtypes(tmp_path):
    d = all_dtypes()
    path = tmp_path / "flat.safetensors"
    tinyattn.save(d, path)
    back = tinyattn.load(path)
    assert list(back) == list(d)
    for k in d:
        same(d[k], back[k])


def test_file_layout_by_hand(tmp_path):
    """Parse the file with struct and json only, following the safetensors specification."""
    path = tmp_path / "layout.safetensors"
    tinyattn.save({"w": tinyattn.tensor([[1.0, 2.0, 3.0]]), "n": tinyattn.tensor([5, -6]),
                   "m": tinyattn.tensor([True, False])}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0  # header padded so that the data is 8-byte aligned
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    assert "__metadata__" not in header  # a flat state_dict is stored as plain safetensors
    assert header["w"] == {"dtype": "F32", "shape": [1, 3], "data_offsets": [0, 12]}
    assert header["n"] == {"dtype": "I64", "shape": [2], "data_offsets": [12, 28]}
    assert header["m"] == {"dtype": "BOOL", "shape": [2], "data_offsets": [28, 30]}
    assert struct.unpack("<3f", data[0:12]) == (1.0, 2.0, 3.0)
    assert struct.unpack("<2q", data[12:28]) == (5, -6)
    assert data[28:30] == b"\x01\x00" and len(data) == 30


def test_views_and_parameters_are_saved_by_value(tmp_path):
    base = tinyattn.arange(12, dtype="float32").reshape(3, 4)
    p = nn.Parameter(tinyattn.randn(2, 3))
    d = {"t": base.T, "slice": base[1:, ::2], "row": base[2], "expanded":
         tinyattn.tensor([1.0, 2.0]).expand(3, 2), "param": p}
    tinyattn.save(d, tmp_path / "v.safetensors")
    back = tinyattn.load(tmp_path / "v.safetensors")
    for k in d:
        same(d[k].detach().contiguous(), back[k])
    assert back["t"].tolist() == base.T.tolist()


def test_nested_checkpoint_round_trip(tmp_path):
    t1, t2 = tinyattn.randn(2, 2), tinyattn.arange(3)
    obj = {
        "model": {"fc.weight": t1, "fc.bias": tinyattn.zeros(2)},
        "optimizer": {"state": {0: {"step": tinyattn.tensor(3.0), "buf": t2}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1],
                                        "foreach": None, "amsgrad": False}]},
        "step": 1200, "name": "run-1", "ratio": 1 / 3, "huge": 2 ** 70,
        "specials": [float("inf"), -float("inf"), -0.0, 1e-310],
        "empty": {}, "nothing": [], "pair": (1, (2, [3, {"x": None}])),
        "tensors_in_list": [t1, {"deep": t2}],
    }
    path = tmp_path / "ck.safetensors"
    tinyattn.save(obj, path)
    back = tinyattn.load(path)

    def check(a, b):
        assert type(a) is type(b) or (isinstance(a, tinyattn.Tensor) and isinstance(b, tinyattn.Tensor))
        if isinstance(a, tinyattn.Tensor):
            same(a, b)
        elif isinstance(a, dict):
            assert list(a) == list(b)  # same keys, same order, ints stay ints
            for k in a:
                check(a[k], b[k])
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                check(x, y)
        elif isinstance(a, float):
            assert a.hex() == b.hex()
        else:
            assert a == b

    check(obj, back)
    nan = tinyattn.load(_saved(tmp_path, {"x": float("nan")}))["x"]
    assert math.isnan(nan)


def _saved(tmp_path, obj, name="obj.safetensors"):
    path = tmp_path / name
    tinyattn.save(obj, path)
    return path


def test_nested_tensor_names_are_dotted(tmp_path):
    path = _saved(tmp_path, {"model": {"w": tinyattn.ones(1)}, "opt": {"state": {0: {
        "exp_avg": tinyattn.ones(1)}}}, "step": 3})
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert set(header) == {"__metadata__", "model.w", "opt.state.0.exp_avg"}
    assert set(header["__metadata__"]) == {"tinyattn.structure"}


def test_model_and_optimizer_state_dicts_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = Adam(model.parameters(), lr=0.01, amsgrad=True)
    model(tinyattn.randn(5, 3)).sum().backward()
    opt.step()
    back = tinyattn.load(_saved(tmp_path, {"model": model.state_dict(),
                                           "optimizer": opt.state_dict()}))
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    model2.load_state_dict(back["model"])
    opt2 = Adam(model2.parameters(), lr=0.5)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["betas"] == (0.9, 0.999)
    for p, q in zip(model.parameters(), model2.parameters()):
        same(p.detach(), q.detach())
        for key in opt.state[p]:
            same(opt.state[p][key], opt2.state[q][key])


# ============================================================================ what save refuses


def test_save_refuses_two_tensors_under_one_name_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.safetensors"
    obj = {"a.b": tinyattn.ones(1), "a": {"b": tinyattn.ones(1)}, "n": 1}
    with pytest.raises(ValueError, match="'a.b'"):
        tinyattn.save(obj, path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_an_object_pickle_cannot_store_raises_its_error_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.pt"
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        tinyattn.save({"f": lambda: 1}, path)
    assert not path.exists() and os.listdir(tmp_path) == []


# ============================================================================ whole objects: pickle


class _Net(tinyattn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tinyattn.nn.Linear(3, 2)
        self.scale = 2.5

    def forward(self, x):
        return self.fc(x) * self.scale


@pytest.mark.parametrize("obj", [
    [tinyattn.ones(2), (1, "a")],
    {"x": {1.5: tinyattn.arange(3)}, "y": {True: 1}},
    {"a": {"b": frozenset({1, 2})}, "c": slice(1, 2)},
])
def test_what_json_cannot_hold_is_pickled_and_loads_by_default(tmp_path, obj):
    path = tmp_path / "obj.pt"
    tinyattn.save(obj, path)
    assert path.read_bytes().startswith(b"TINYATTN-PICKLE\n")
    back = tinyattn.load(path)                        # weights_only=True: plain values only
    assert repr(back) == repr(obj)


def test_a_whole_module_is_refused_by_default_and_loads_when_asked(tmp_path):
    tinyattn.manual_seed(0)
    net = _Net()
    x = tinyattn.randn(4, 3)
    path = tmp_path / "net.pt"
    tinyattn.save(net, path)
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed(.|\n)*weights_only"
                                                      r"(.|\n)*GLOBAL test_serialization._Net"):
        tinyattn.load(path)
    back = tinyattn.load(path, weights_only=False)
    assert type(back) is _Net and type(back.fc.weight) is tinyattn.nn.Parameter
    assert back.fc.weight.requires_grad and back.scale == 2.5
    assert back(x).tolist() == net(x).tolist()
    assert [n for n, _ in back.named_parameters()] == ["fc.weight", "fc.bias"]
    with tinyattn.serialization.safe_globals([_Net, tinyattn.nn.Linear]):
        assert type(tinyattn.load(path)) is _Net       # allowlisted: loads with weights_only


def test_pickled_tensors_keep_values_dtype_and_requires_grad_but_not_the_graph(tmp_path):
    x = tinyattn.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (x * 2).t()                                   # a non-leaf, non-contiguous view
    obj = [y, x, tinyattn.tensor([3, -4]), tinyattn.tensor([True, False])]
    path = tmp_path / "t.pt"
    tinyattn.save(obj, path)
    back = tinyattn.load(path)
    assert back[0].tolist() == [[2.0, 6.0], [4.0, 8.0]] and back[0].grad_fn is None
    assert back[0].requires_grad and back[1].requires_grad and back[1].is_leaf
    assert [t.dtype for t in back] == [t.dtype for t in obj]
    assert back[2].tolist() == [3, -4] and back[3].tolist() == [True, False]


def test_a_pickle_that_runs_code_is_refused_by_default(tmp_path):
    target = str(tmp_path / "pwned")
    path = tmp_path / "evil.pt"
    path.write_bytes(b"TINYATTN-PICKLE\n" + pickle.dumps(_Exploit(target)))
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|nt)\.mkdir"):
        tinyattn.load(path)
    assert not os.path.exists(target)


def test_a_truncated_pickle_names_the_file(tmp_path):
    path = tmp_path / "cut.pt"
    tinyattn.save([tinyattn.ones(3)], path)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(ValueError, match="cut.pt.*truncated or corrupt"):
        tinyattn.load(path)


def test_an_explicit_pickle_module_means_a_full_load_as_in_pytorch(tmp_path):
    path = tmp_path / "net.pt"
    tinyattn.save(_Net(), path, pickle_module=pickle, pickle_protocol=2)
    assert type(tinyattn.load(path, pickle_module=pickle)) is _Net
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        tinyattn.load(path, pickle_module=pickle, weights_only=True)


def test_whole_module_loading_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    net = torch.nn.Linear(2, 3)
    path = tmp_path / "torch.pt"
    torch.save(net, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as theirs:
        torch.load(path)
    ours_path = tmp_path / "ours.pt"
    tinyattn.save(tinyattn.nn.Linear(2, 3), ours_path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as ours:
        tinyattn.load(ours_path)
    assert "Unsupported global: GLOBAL torch.nn.modules.linear.Linear" in str(theirs.value)
    assert "Unsupported global: GLOBAL tinyattn.nn.linear.Linear" in str(ours.value)


# ============================================================================ damaged files


def _valid_bytes():
    header = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]}}).encode()
    return struct.pack("<Q", len(header)) + header + struct.pack("<2fq", 1.0, 2.0, 3)


def _file(header, data=b"", raw_header=None):
    head = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + data


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


DAMAGED = [
    ("empty", b"", "only 0 bytes"),
    ("short", b"\x01\x02\x03", "only 3 bytes"),
    ("header_too_long", struct.pack("<Q", 1000) + b"{}", "beyond the end of the file"),
    ("huge_length", b"\xff" * 8 + b"{}", "beyond the end of the file"),
    ("bad_json", _file(None, raw_header=b'{"a": {"dtype": '), "not valid UTF-8 JSON"),
    ("not_utf8", _file(None, raw_header=b"\xff\xfe{}"), "not valid UTF-8 JSON"),
    ("json_list", _file(None, raw_header=b"[1, 2]"), "must be a JSON object"),
    ("unknown_dtype", _file({"a": _entry("X99")}, b"\0" * 8), "unknown dtype 'X99'"),
    ("f16", _file({"a": _entry("F16", (4,))}, b"\0" * 8), "F16, which tinyattn does not have"),
    ("end_past_data", _file({"a": _entry(offsets=(0, 8))}, b"\0" * 4), "past the end of the data"),
    ("begin_after_end", _file({"a": _entry(offsets=(8, 0))}, b"\0" * 8), "begin <= end"),
    ("size_mismatch", _file({"a": _entry(shape=(3,))}, b"\0" * 8), "needs 12"),
    ("overlap", _file({"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(4, 12))}, b"\0" * 12),
     "overlap"),
    ("hole", _file({"a": _entry(offsets=(4, 12))}, b"\0" * 12), "belong to no tensor"),
    ("trailing", _file({"a": _entry()}, b"\0" * 9), "describes 8 bytes"),
    ("bad_shape", _file({"a": _entry(shape=(-2,))}, b"\0" * 8), "non-negative ints"),
    ("bad_offsets", _file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, b"\0" * 8),
     "pair of ints"),
    ("missing_field", _file({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "data_offsets"),
    ("bad_metadata", _file({"__metadata__": {"k": 1}}), "strings to strings"),
    ("bad_structure", _file({"__metadata__": {"tinyattn.structure": "{oops"}}), "not valid JSON"),
    ("structure_missing_tensor", _file({"__metadata__": {"tinyattn.structure": json.dumps(
        {"format": 1, "root": {"dict": [["x", {"tensor": "nope"}]]}})}}), "'nope'"),
    ("truncated", _valid_bytes()[:-5], "truncated"),
    ("garbage", bytes(range(256)) * 4, "beyond the end of the file"),
    ("zip", b"PK\x03\x04" + b"\0" * 100, "torch.save"),
]


@pytest.mark.parametrize("name, content, words", DAMAGED, ids=[d[0] for d in DAMAGED])
def test_damaged_files_raise_value_error_naming_file_and_problem(tmp_path, name, content, words):
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=words) as info:
        tinyattn.load(path)
    assert str(path) in str(info.value)


def test_the_valid_file_used_above_loads(tmp_path):
    path = tmp_path / "ok.safetensors"
    path.write_bytes(_valid_bytes())
    back = tinyattn.load(path)
    assert back["a"].tolist() == [1.0, 2.0] and back["b"].tolist() == [3]


class _Exploit:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


def test_torch_save_file_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(ValueError, match="torch.save"):
        tinyattn.load(path)


# ============================================================================ atomic writes


def test_failed_write_leaves_the_existing_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ck.safetensors"
    tinyattn.save({"w": tinyattn.ones(3)}, path)
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        tinyattn.save({"w": tinyattn.zeros(1000), "step": 2}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ck.safetensors"]  # the temporary file was removed
    assert tinyattn.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_failed_replace_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.safetensors"

    def broken_replace(src, dst):
        raise PermissionError("simulated")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(PermissionError):
        tinyattn.save({"w": tinyattn.ones(3)}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_new_file_gets_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = _saved(tmp_path, {"w": tinyattn.ones(1)})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_overwrite_replaces_the_file(tmp_path):
    path = _saved(tmp_path, {"w": tinyattn.ones(3)})
    tinyattn.save({"v": tinyattn.zeros(2, dtype="int64"), "step": 9}, path)
    back = tinyattn.load(path)
    assert back == {"v": back["v"], "step": 9} and back["v"].tolist() == [0, 0]


# ============================================================================ interop


def test_files_open_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    d = all_dtypes()
    path = _saved(tmp_path, d)
    theirs = st.load_file(str(path))
    names = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool,
             "scalar": torch.float32, "int_scalar": torch.int64, "empty": torch.float32,
             "empty_i64": torch.int64}
    for k, t in d.items():
        assert theirs[k].dtype == names[k] and tuple(theirs[k].shape) == t.shape
        a, b = t.reshape(-1).tolist(), theirs[k].reshape(-1).tolist()
        if t.dtype.is_floating_point:
            a, b = [v.hex() for v in a], [v.hex() for v in b]
        assert a == b
    # a nested checkpoint opens too: dotted names, the structure in the metadata
    path = _saved(tmp_path, {"model": {"w": tinyattn.ones(2)}, "step": 5}, "nested.safetensors")
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        assert list(f.keys()) == ["model.w"]
        assert "tinyattn.structure" in f.metadata()


def test_files_written_by_safetensors_load(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    theirs = {"w": torch.randn(3, 4, dtype=torch.float64), "i": torch.arange(5),
              "m": torch.tensor([True, False]), "s": torch.tensor(2.5), "e": torch.zeros(0, 2),
              "t": torch.randn(4, 3).t()}
    path = tmp_path / "theirs.safetensors"
    st.save_file({k: v.contiguous() for k, v in theirs.items()}, str(path),
                 metadata={"format": "pt"})
    ours = tinyattn.load(path)
    assert set(ours) == set(theirs)
    for k, v in theirs.items():
        assert ours[k].shape == tuple(v.shape) and ours[k].tolist() == v.tolist()
    assert ours["i"].dtype is tinyattn.int64 and ours["m"].dtype is tinyattn.bool


def test_weights_move_between_pytorch_and_tinyattn_through_files(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))
    st.save_file(tmodel.state_dict(), str(tmp_path / "torch.safetensors"))
    model = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2))
    model.load_state_dict(tinyattn.load(tmp_path / "torch.safetensors"))
    x = [[0.1, -0.2, 0.3], [1.0, 2.0, -1.5]]
    ours = model(tinyattn.tensor(x)).reshape(-1).tolist()
    theirs = tmodel(torch.tensor(x)).reshape(-1).tolist()
    assert ours == pytest.approx(theirs, abs=1e-6)
    # and back: tinyattn -> file -> torch
    tinyattn.save(model.state_dict(), tmp_path / "ours.safetensors")
    tmodel2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))
    tmodel2.load_state_dict(st.load_file(str(tmp_path / "ours.safetensors")))
    assert tmodel2(torch.tensor(x)).reshape(-1).tolist() == theirs


# ============================================================================ exact resume


def build(seed):
    tinyattn.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 1))
    opt = Adam(model.parameters(), lr=0.02, weight_decay=1e-3)
    sched = CosineAnnealingLR(opt, T_max=10, eta_min=1e-3)
    return model, opt, sched


def clip_grad_norm(params, max_norm):
    """By hand: scale all gradients so that their joint L2 norm is at most max_norm."""
    grads = [p.grad for p in params if p.grad is not None]
    total = math.sqrt(sum((g * g).sum().item() for g in grads))
    if total > max_norm:
        for g in grads:
            g.mul_(max_norm / (total + 1e-6))


def train(model, opt, sched, steps):
    losses = []
    for _ in range(steps):
        x = tinyattn.randn(16, 4)  # data and dropout masks both come from the global generator
        y = (x * tinyattn.tensor([1.0, -2.0, 0.5, 3.0])).sum(-1, keepdim=True).tanh()
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        clip_grad_norm(model.parameters(), 0.5)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_training_resumes_exactly_from_a_checkpoint(tmp_path):
    n, k = 14, 6
    model, opt, sched = build(0)
    straight = train(model, opt, sched, n)

    model, opt, sched = build(0)
    first = train(model, opt, sched, k)
    path = tmp_path / "ck.safetensors"
    tinyattn.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                   "scheduler": sched.state_dict(), "rng": tinyattn.get_rng_state(),
                   "step": k}, path)
    del model, opt, sched

    ck = tinyattn.load(path)
    model, opt, sched = build(1234)  # fresh objects, other weights, other random stream
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    tinyattn.set_rng_state(ck["rng"])
    assert ck["step"] == k
    rest = train(model, opt, sched, n - k)

    assert first + rest == straight  # exact float equality, step by step
    assert len(set(straight)) == n  # and the run did change the loss every step


# ============================================================================ property test

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def tensors(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    dtype = draw(st.sampled_from(["float32", "float64", "int64", "bool"]))
    n = 1
    for s in shape:
        n *= s
    if dtype == "bool":
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype == "int64":
        values = draw(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=n, max_size=n))
    else:
        values = draw(st.lists(st.floats(width=32 if dtype == "float32" else 64), min_size=n,
                               max_size=n))
    t = tinyattn.tensor(values, dtype=dtype).reshape(shape)
    if len(shape) >= 2 and draw(st.booleans()):
        t = t.transpose(0, 1)  # a strided view
    return t


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "__metadata__"),
                       tensors(), max_size=4),
       st.booleans())
def test_round_trip_property(tmp_path_factory, named, nested):
    obj = {"model": named, "step": 3} if nested else named
    path = tmp_path_factory.mktemp("prop") / "x.safetensors"
    tinyattn.save(obj, path)
    back = tinyattn.load(path)
    got = back["model"] if nested else back
    assert list(got) == list(named)
    for k, t in named.items():
        same(t.contiguous(), got[k])


def test_save_and_load_with_open_files_map_location_and_weights_only(tmp_path):
    import tinyattn as ta
    import io
    ckpt = {"model": {"w": ta.arange(6).float().view(2, 3)}, "step": 7}
    buf = io.BytesIO()
    buf.write(b"prefix")                 # a checkpoint need not start the file object
    ta.save(ckpt, buf)
    buf.seek(6)
    back = ta.load(buf, map_location="cpu", weights_only=True)
    assert back["step"] == 7 and back["model"]["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    path = tmp_path / "ckpt.pt"
    with open(path, "wb") as f:
        ta.save({"x": ta.ones(2)}, f)
    with open(path, "rb") as f:
        assert ta.load(f, map_location=ta.device("cpu"))["x"].tolist() == [1.0, 1.0]
    assert ta.load(path, map_location={"cuda:0": "cpu"}, weights_only=False)["x"].shape == (2,)
    assert ta.load(path, map_location=lambda storage, loc: storage)["x"].shape == (2,)
    with pytest.raises(RuntimeError, match="CPU only"):
        ta.load(path, map_location="cuda:0")
