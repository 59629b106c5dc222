"""What PyTorch programs reach for beyond attention: devices, the legacy constructor, f-string
formatting, torch.utils.data, as_torch, multinomial, sort / topk / cumsum, einsum, outer / dot,
the composed activations and losses, LSTM / RNN, ParameterList / ParameterDict. Values against
PyTorch (when installed) and against hand-computed ones; gradients with gradcheck."""
import math
import subprocess
import sys
import textwrap

import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F
from tinyattn.testing import gradcheck
from tinyattn.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset,
                                 RandomSampler, TensorDataset, default_collate, random_split)

from helpers import assert_close, to_torch


def f64(*shape, low=-2.0, high=2.0, seed=0):
    return ta.rand(*shape, dtype=ta.float64, low=low, high=high,
                   generator=ta.Generator(seed)).requires_grad_(True)


# --------------------------------------------------------------------------------- devices

def test_devices_cpu_accepted_others_refused_by_name():
    assert str(ta.device("cuda:1")) == "cuda:1" and ta.device("cuda", 1) == "cuda:1"
    assert repr(ta.device("cpu")) == "device(type='cpu')"
    assert ta.ones(2).device == ta.device("cpu") and not ta.ones(2).is_cuda
    assert ta.zeros(2, device="cpu").tolist() == [0.0, 0.0]
    assert ta.cuda.is_available() is False and ta.cuda.device_count() == 0
    assert ta.backends.mps.is_available() is False
    for make in (lambda: ta.zeros(2, device="cuda"), lambda: ta.ones(2).to("cuda:0"),
                 lambda: ta.ones(2).cuda(), lambda: nn.Linear(2, 2).to(ta.device("cuda")),
                 lambda: ta.randn(2, device="mps")):
        with pytest.raises(RuntimeError, match="CPU only"):
            make()
    with pytest.raises(RuntimeError, match="device string"):
        ta.device("gpu")
    t = ta.ones(2)
    assert t.to("cpu") is t and t.to("cpu", ta.float64).dtype is ta.float64
    assert t.to(ta.device("cpu"), copy=True) is not t


def test_legacy_constructor_and_formatting():
    assert ta.Tensor([1, 2]).dtype is ta.float32 and ta.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert ta.Tensor(2, 3).shape == (2, 3) and ta.Tensor().shape == (0,)
    assert f"{ta.tensor(2.0) / 3:.3f}" == "0.667" and f"{ta.tensor(7):>3d}" == "  7"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{ta.ones(2):.2f}"
    assert f"{ta.ones(2)}" == str(ta.ones(2))


# ------------------------------------------------------------------------ torch.utils.data

def test_dataloader_batches_shuffles_repeatably_and_counts():
    x = ta.arange(10).view(10, 1).float()
    y = ta.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7],
                                                                     [8, 9]]
    assert batches[0][0].shape == (4, 1)
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    order = [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True,
                                              generator=ta.Generator(3))]
    again = [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True,
                                              generator=ta.Generator(3))]
    assert order == again and sorted(order[0] + order[1]) == list(range(10))
    assert order != [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    ta.manual_seed(5)
    a = [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    ta.manual_seed(5)
    assert a == [b[1].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]


def test_random_split_subsets_and_samplers():
    ds = TensorDataset(ta.arange(10))
    parts = random_split(ds, [0.7, 0.3], generator=ta.Generator(0))
    assert [len(p) for p in parts] == [7, 3]
    seen = sorted(p[i][0].item() for p in parts for i in range(len(p)))
    assert seen == list(range(10))
    assert [len(p) for p in random_split(ds, [0.33, 0.33, 0.34])] == [4, 3, 3]  # PyTorch's too
    with pytest.raises(ValueError, match="do not add up"):
        random_split(ds, [3, 3])
    draws = list(RandomSampler(ds, replacement=True, num_samples=10 ** 9,
                               generator=ta.Generator(1)).__iter__().__next__() for _ in range(1))
    assert 0 <= draws[0] < 10        # a huge num_samples is drawn lazily
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(5), 0, False)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=range(10), shuffle=True)


def test_default_collate_and_plain_datasets():
    batch = default_collate([(1, 2.0, "a", {"k": ta.ones(2)}), (3, 4.0, "b", {"k": ta.zeros(2)})])
    assert batch[0].dtype is ta.int64 and batch[0].tolist() == [1, 3]
    assert batch[1].dtype is ta.float64 and batch[2] == ["a", "b"]
    assert batch[3]["k"].tolist() == [[1.0, 1.0], [0.0, 0.0]]

    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return ta.tensor([float(i)]), i * i

    xb, yb = next(iter(DataLoader(Squares(), batch_size=5)))
    assert xb.shape == (5, 1) and yb.tolist() == [0, 1, 4, 9, 16]

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]


def test_dataloader_agrees_with_pytorch_on_what_it_yields():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TDL
    samples = [(i, float(i) / 2, {"x": [i, i + 1]}) for i in range(5)]
    ours = list(DataLoader(samples, batch_size=2))
    theirs = list(TDL(samples, batch_size=2))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
        assert [t.tolist() for t in a[2]["x"]] == [t.tolist() for t in b[2]["x"]]
        assert str(a[1].dtype).split(".")[-1] == str(b[1].dtype).split(".")[-1]
    assert torch is not None


# ---------------------------------------------------------------------------------- as_torch

def test_as_torch_runs_an_unchanged_pytorch_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        device = "cuda" if torch.cuda.is_available() else "cpu"
        torch.manual_seed(0)
        x = torch.randn(64, 3, device=device)
        y = (x.sum(1) > 0).long()
        model = nn.Sequential(nn.Linear(3, 16), nn.SiLU(), nn.Linear(16, 2)).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        for epoch in range(30):
            for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True):
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
        acc = (model(x).argmax(1) == y).float().mean()
        print(f"{torch.__name__} {acc:.2f} {sys.argv[1:]}")
    """))
    run = subprocess.run([sys.executable, "-m", "tinyattn.as_torch", str(script), "a", "--b"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    name, acc, args = run.stdout.split(" ", 2)
    assert name == "tinyattn" and float(acc) > 0.9 and args.strip() == "['a', '--b']"
    bad = subprocess.run([sys.executable, "-m", "tinyattn.as_torch", str(tmp_path / "no.py")],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_as_torch_names_the_layers_where_pytorch_defines_them(tmp_path):
    script = tmp_path / "paths.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.nn.modules.rnn
        from torch.nn.modules.container import Sequential
        m = Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
        assert isinstance(m[0], torch.nn.modules.linear.Linear)
        assert torch.nn.modules.rnn.LSTM is torch.nn.LSTM
        assert torch.nn.modules.dropout.Dropout is torch.nn.Dropout
        assert torch.nn.modules.module.Module is torch.nn.Module
        print("ok")
    """))
    run = subprocess.run([sys.executable, "-m", "tinyattn.as_torch", str(script)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_as_torch_refuses_when_pytorch_is_already_imported():
    torch = pytest.importorskip("torch")
    assert sys.modules["torch"] is torch
    with pytest.raises(RuntimeError, match="already imported"):
        ta.as_torch()


# ------------------------------------------------------------------------------ multinomial

def test_multinomial_frequencies_determinism_and_errors():
    p = ta.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    draws = ta.multinomial(p, 4000, replacement=True, generator=ta.Generator(0))
    assert draws.shape == (2, 4000) and draws.dtype is ta.int64
    for row, probs in zip(draws.tolist(), ([0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.0, 0.5])):
        for k, q in enumerate(probs):
            assert abs(row.count(k) / 4000 - q) < 0.03        # 4 sigma at n = 4000
    assert (ta.multinomial(p, 2, generator=ta.Generator(7)).tolist()
            == ta.multinomial(p, 2, generator=ta.Generator(7)).tolist())
    perm = ta.multinomial(ta.ones(6), 6, generator=ta.Generator(1)).tolist()
    assert sorted(perm) == list(range(6))                    # without replacement: each once
    for bad, match in ((ta.tensor([0.0, 0.0]), "sum of probabilities"),
                       (ta.tensor([-1.0, 2.0]), "element < 0"),
                       (ta.tensor([math.nan, 1.0]), "inf, nan"),
                       (ta.ones(2, 2, 2), "1 or 2 dim")):
        with pytest.raises(RuntimeError, match=match):
            ta.multinomial(bad, 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        ta.multinomial(ta.ones(3), 4)
    with pytest.raises(RuntimeError, match="not enough"):
        ta.multinomial(ta.tensor([1.0, 0.0, 0.0]), 2)


# --------------------------------------------------------------------- sort, topk, cumsum

def test_sort_argsort_topk_match_pytorch_and_hand_values():
    x = ta.tensor([[3.0, 1.0, math.nan, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0, 2.0]])
    v, i = ta.sort(x, 1)
    assert i.tolist() == [[1, 4, 3, 0, 2], [1, 0, 4, 2, 3]]          # stable, NaN last
    v, i = x.sort(dim=1, descending=True)
    assert i.tolist() == [[2, 0, 3, 1, 4], [2, 3, 4, 0, 1]]          # NaN first
    v, i = ta.topk(x[1], 2)
    assert v.tolist() == [5.0, 5.0] and i.tolist() == [2, 3]
    assert ta.topk(x[1], 2, largest=False).indices.tolist() == [1, 0]
    assert ta.argsort(ta.tensor([True, False, True])).tolist() == [1, 0, 2]
    with pytest.raises(RuntimeError, match="out of range"):
        ta.topk(x, 6)
    torch = pytest.importorskip("torch")
    y = ta.randn(3, 7, 4, generator=ta.Generator(2))
    for dim in (0, 1, -1):
        for desc in (False, True):
            ours, theirs = ta.sort(y, dim, desc), torch.sort(to_torch(y), dim=dim, descending=desc, stable=True)
            assert ours.indices.tolist() == theirs.indices.tolist()
            assert_close(ours.values, theirs.values)
        ours, theirs = ta.topk(y, 3, dim), torch.topk(to_torch(y), 3, dim)
        assert_close(ours.values, theirs.values)


def test_sort_topk_cumsum_gradients():
    x = f64(3, 5)
    assert gradcheck(lambda t: ta.sort(t, 1, descending=True).values, [x])
    assert gradcheck(lambda t: ta.topk(t, 2, dim=0).values, [x])
    assert gradcheck(lambda t: ta.cumsum(t, 1), [x])
    assert gradcheck(lambda t: t.cumsum(0), [x])
    assert ta.cumsum(ta.tensor([[1, 2], [3, 4]]), 0).tolist() == [[1, 2], [4, 6]]
    assert ta.cumsum(ta.tensor([True, True, False]), 0).dtype is ta.int64
    torch = pytest.importorskip("torch")
    y = ta.randn(4, 6, generator=ta.Generator(1))
    assert_close(ta.cumsum(y, 1), torch.cumsum(to_torch(y), 1), atol=1e-5)


# ---------------------------------------------------------------------------------- einsum

EINSUMS = [("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
           ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
           ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
           ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]), ("ijk->k", [(2, 3, 4)]),
           ("b...d,bd->b...", [(2, 3, 4, 5), (2, 5)]), ("ab,ab", [(1, 4), (3, 4)])]


@pytest.mark.parametrize("equation,shapes", EINSUMS)
def test_einsum_values_and_gradients(equation, shapes):
    xs = [f64(*s, seed=k) for k, s in enumerate(shapes)]
    assert gradcheck(lambda *ts: ta.einsum(equation, *ts), xs)
    torch = pytest.importorskip("torch")
    assert_close(ta.einsum(equation, *xs), torch.einsum(equation, *[to_torch(x) for x in xs]),
                 atol=1e-12)


def test_einsum_errors():
    a = ta.ones(2, 3)
    with pytest.raises(ValueError, match="2 operand"):
        ta.einsum("ij,jk", a)
    with pytest.raises(ValueError, match="'j' has size 4 in one operand and 3"):
        ta.einsum("ij,jk", a, ta.ones(4, 2))
    with pytest.raises(ValueError, match="'i' is repeated for operand 0 but the sizes don't match"):
        ta.einsum("ii->i", ta.ones(3, 4))
    with pytest.raises(ValueError, match="does not appear"):
        ta.einsum("ij->k", a)


def test_outer_and_dot():
    a, b = ta.tensor([1.0, 2.0]), ta.tensor([3.0, 4.0, 5.0])
    assert ta.outer(a, b).tolist() == [[3.0, 4.0, 5.0], [6.0, 8.0, 10.0]]
    assert ta.dot(a, ta.tensor([3.0, 4.0])).item() == 11.0
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        ta.dot(a, b)
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        ta.dot(ta.ones(2, 2), ta.ones(2))


# -------------------------------------------------------------- activations and losses

ACTIVATIONS = [("silu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.7}),
               ("softplus", {"beta": 2.0, "threshold": 5.0}), ("mish", {}),
               ("hardtanh", {"min_val": -0.5, "max_val": 1.5}), ("relu6", {}), ("logsigmoid", {})]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS)
def test_activations(name, kwargs):
    x = ta.tensor([-30.0, -2.3, -0.7, 0.3, 1.1, 2.6, 7.2, 40.0], dtype=ta.float64)
    fn = getattr(F, name)
    smooth = [v for v in x.tolist() if v not in (-0.5, 1.5, 0.0, 6.0)]
    assert gradcheck(lambda t: fn(t, **kwargs), [ta.tensor(smooth, dtype=ta.float64,
                                                           requires_grad=True)])
    torch = pytest.importorskip("torch")
    assert_close(fn(x, **kwargs), getattr(torch.nn.functional, name)(to_torch(x), **kwargs),
                 atol=1e-12)


def test_activation_modules_match_pytorch_repr():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
                         (nn.ELU(0.5), torch.nn.ELU(0.5)), (nn.SiLU(), torch.nn.SiLU()),
                         (nn.Softplus(2.0), torch.nn.Softplus(2.0)),
                         (nn.Hardtanh(), torch.nn.Hardtanh())):
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_smooth_l1_and_huber_losses(reduction):
    x, t = f64(3, 4, seed=1), ta.rand(3, 4, dtype=ta.float64, generator=ta.Generator(2))
    for name, kw in (("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                     ("huber_loss", {"delta": 0.7})):
        fn = getattr(F, name)
        assert gradcheck(lambda a: fn(a, t, reduction=reduction, **kw), [x])
        torch = pytest.importorskip("torch")
        assert_close(fn(x, t, reduction=reduction, **kw),
                     getattr(torch.nn.functional, name)(to_torch(x), to_torch(t),
                                                        reduction=reduction, **kw), atol=1e-12)
    # by hand: smooth L1 with beta 1 on differences 0.5 and 3
    d = F.smooth_l1_loss(ta.tensor([0.5, 3.0]), ta.zeros(2), reduction="none")
    assert d.tolist() == [0.125, 2.5]


def test_kl_div():
    logp = ta.log_softmax(f64(2, 5, seed=3), -1)
    q = ta.tensor([[0.0, 0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0, 0.0]], dtype=ta.float64)
    assert gradcheck(lambda a: F.kl_div(ta.log_softmax(a, -1), q, reduction="batchmean"),
                     [f64(2, 5, seed=3)])
    torch = pytest.importorskip("torch")
    for reduction in ("batchmean", "sum", "none", "mean"):
        assert_close(F.kl_div(logp, q, reduction=reduction),
                     torch.nn.functional.kl_div(to_torch(logp), to_torch(q), reduction=reduction),
                     atol=1e-12)
    assert_close(F.kl_div(logp, ta.log(q + 1e-3), reduction="sum", log_target=True),
                 torch.nn.functional.kl_div(to_torch(logp), to_torch(ta.log(q + 1e-3)),
                                            reduction="sum", log_target=True), atol=1e-12)
    assert repr(nn.KLDivLoss(reduction="batchmean")) == "KLDivLoss()"


# -------------------------------------------------------------------------- LSTM and RNN

@pytest.mark.parametrize("cls,kwargs", [
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bidirectional": True})])
def test_lstm_and_rnn_match_pytorch(cls, kwargs):
    ta.manual_seed(0)
    m = getattr(nn, cls)(3, 4, dtype=ta.float64, **kwargs)
    x = f64(2, 5, 3)
    out, state = m(x)
    D = 2 if kwargs.get("bidirectional") else 1
    L = kwargs.get("num_layers", 1)
    assert out.shape == ((2, 5, 4 * D) if kwargs.get("batch_first") else (2, 5, 4 * D))
    h = state[0] if cls == "LSTM" else state
    assert h.shape == (L * D, 5 if not kwargs.get("batch_first") else 2, 4)
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, cls)(3, 4, dtype=torch.float64, **kwargs)
    assert list(tm.state_dict()) == list(m.state_dict()) and repr(tm) == repr(m)
    tm.load_state_dict({k: to_torch(v) for k, v in m.state_dict().items()})
    tx = to_torch(x, requires_grad=True)
    tout, tstate = tm(tx)
    assert_close(out, tout.detach(), atol=1e-12)
    th = tstate[0] if cls == "LSTM" else tstate
    assert_close(h, th.detach(), atol=1e-12)
    (out.sum() + h.sum()).backward()
    (tout.sum() + th.sum()).backward()
    assert_close(x.grad, tx.grad, atol=1e-12)


def test_lstm_cell_gradcheck_and_states():
    ta.manual_seed(1)
    cell = nn.LSTMCell(3, 2, dtype=ta.float64)
    x, h, c = f64(4, 3), f64(4, 2, seed=1), f64(4, 2, seed=2)
    assert gradcheck(lambda a, b, d: ta.cat(list(cell(a, (b, d))), 1), [x, h, c])
    h1, c1 = cell(x[0])
    assert h1.shape == (2,) and c1.shape == (2,)
    rnn = nn.RNNCell(3, 2, nonlinearity="relu", dtype=ta.float64)
    assert gradcheck(lambda a, b: rnn(a, b), [x, h])
    with pytest.raises(ValueError, match="expected input"):
        cell(ta.ones(4, 5, dtype=ta.float64))
    with pytest.raises(ValueError, match="h_0 must have shape"):
        nn.LSTM(3, 2)(ta.ones(5, 1, 3), (ta.zeros(2, 1, 2), ta.zeros(1, 1, 2)))


def test_parameter_list_and_dict():
    pl = nn.ParameterList([ta.ones(2), nn.Parameter(ta.zeros(3))])
    pl.append(ta.ones(1))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pd = nn.ParameterDict({"w": ta.ones(2)})
    pd["b"] = ta.zeros(1)
    assert list(pd.state_dict()) == ["w", "b"] and "w" in pd and len(pd) == 2
    with pytest.raises(TypeError, match="Tensor or Parameter"):
        pl.append(3)


# ---------------------------------------------- bitwise, rounding, div modes, prod, formats

def test_bitwise_ops_on_integers_and_bools():
    a, b = ta.tensor([6, 3, -8]), ta.tensor([3, 5, 7])
    assert (a & b).tolist() == [2, 1, 0] and (a | b).tolist() == [7, 7, -1]
    assert (a ^ b).tolist() == [5, 6, -1] and (~a).tolist() == [-7, -4, 7]
    assert (a & 1).tolist() == [0, 1, 0] and (1 | a).dtype is ta.int64
    t, f = ta.tensor([True, False]), ta.tensor([True, True])
    assert (t & f).dtype is ta.bool and (t ^ f).tolist() == [False, True]
    assert (~t).tolist() == [False, True]
    assert (ta.tensor([[1], [2]]) | ta.tensor([4, 8])).tolist() == [[5, 9], [6, 10]]
    with pytest.raises(TypeError, match="integers and bools"):
        ta.ones(2) & ta.ones(2)


def test_rounding_log1p_expm1_and_div_modes():
    x = ta.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.2, 3.7, math.inf, 1e20],
                  dtype=ta.float64)
    assert ta.round(x).tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, -0.0, 4.0, math.inf, 1e20]
    assert ta.floor(x).tolist()[:4] == [-3.0, -2.0, -1.0, 0.0]
    assert ta.ceil(x).tolist()[:4] == [-2.0, -1.0, -0.0, 1.0]
    assert ta.trunc(x).tolist()[:4] == [-2.0, -1.0, -0.0, 0.0]
    assert ta.floor(ta.tensor([3, -2])).tolist() == [3, -2]
    assert ta.round(ta.tensor([1.2345]), decimals=2).item() == pytest.approx(1.23)
    small = ta.tensor([1e-12], dtype=ta.float64)
    assert ta.log1p(small).item() == pytest.approx(1e-12, rel=1e-9)
    assert ta.expm1(small).item() == pytest.approx(1e-12, rel=1e-9)
    y = f64(4)
    assert gradcheck(ta.log1p, [ta.tensor([0.1, 0.5, 2.0], dtype=ta.float64, requires_grad=True)])
    assert gradcheck(ta.expm1, [y])
    assert gradcheck(ta.erf, [y])
    assert ta.erf(ta.tensor([0.0, math.inf, -math.inf])).tolist() == [0.0, 1.0, -1.0]
    assert ta.div(ta.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert ta.div(ta.tensor([-7, 7]), 2, rounding_mode="floor").tolist() == [-4, 3]
    assert ta.div(ta.tensor([-7.0, 7.0]), 2, rounding_mode="trunc").tolist() == [-3.0, 3.0]
    assert ta.tensor([-7, 7]).div(ta.tensor([-2, 2]), rounding_mode="trunc").tolist() == [3, 3]
    with pytest.raises(ValueError, match="rounding_mode"):
        ta.div(ta.ones(2), 2, rounding_mode="nearest")
    torch = pytest.importorskip("torch")
    for name in ("floor", "ceil", "trunc", "round"):
        assert_close(getattr(ta, name)(x), getattr(torch, name)(to_torch(x)))
    z = ta.tensor([-3.0, -0.5, 0.0, 0.2, 1.7, 5.0], dtype=ta.float64)
    assert_close(ta.erf(z), torch.erf(to_torch(z)), atol=1e-15)


def test_prod_with_zeros_and_integers():
    x = ta.tensor([[1.5, 0.0, -2.0, 3.0, 0.5], [2.0, 1.0, 0.0, 0.0, 4.0]], dtype=ta.float64,
                  requires_grad=True)
    assert ta.prod(x, 1).tolist() == [-0.0, 0.0] and x.prod(0).tolist()[0] == 3.0
    assert gradcheck(lambda t: ta.prod(t, 1), [x])
    assert gradcheck(lambda t: t.prod(), [f64(7)])
    assert ta.prod(ta.tensor([[1, 2], [3, 4]])).item() == 24
    assert ta.prod(ta.tensor([True, True])).dtype is ta.int64
    assert ta.prod(ta.ones(0)).item() == 1.0
    assert ta.prod(ta.ones(2, 3), 1, keepdim=True).shape == (2, 1)


def test_memory_formats():
    t = ta.ones(2, 3)
    assert t.clone(memory_format=ta.preserve_format).tolist() == t.tolist()
    assert t.contiguous(memory_format=ta.contiguous_format) is t
    assert ta.zeros_like(t, memory_format=ta.preserve_format).shape == (2, 3)
    with pytest.raises(NotImplementedError, match="channels_last"):
        t.clone(memory_format=ta.channels_last)


@pytest.mark.parametrize("kwargs", [{"add_bias_kv": True}, {"add_zero_attn": True},
                                    {"add_bias_kv": True, "add_zero_attn": True}])
def test_multihead_attention_extra_keys_match_pytorch(kwargs):
    ta.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dtype=ta.float64, **kwargs)
    q, k = f64(3, 2, 8, seed=1), f64(4, 2, 8, seed=2)
    pad = ta.tensor([[False, False, True, False], [False] * 4])
    out, w = m(q, k, k, key_padding_mask=pad, average_attn_weights=False)
    extra = sum(kwargs.values())
    assert w.shape == (2, 2, 3, 4 + extra)
    assert gradcheck(lambda a: m(a, k, k, key_padding_mask=pad)[0], [q])
    torch = pytest.importorskip("torch")
    tm = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64, **kwargs)
    assert list(tm.state_dict()) == list(m.state_dict())
    tm.load_state_dict({n: to_torch(v) for n, v in m.state_dict().items()})
    tout, tw = tm(to_torch(q), to_torch(k), to_torch(k), key_padding_mask=to_torch(pad),
                  average_attn_weights=False)
    assert_close(out, tout.detach(), atol=1e-12)
    assert_close(w, tw.detach(), atol=1e-12)


# ---------------------------------------------- the everyday ops composed of others

def _m(*shape, seed=0, low=-2.0, high=2.0):
    return f64(*shape, seed=seed, low=low, high=high)


COMPOSED = [  # (name, tinyattn call, torch call, inputs) -- values against PyTorch, gradcheck
    ("log2", lambda L, a: L.log2(a), [(3, 4, 0.5, 3.0)]),
    ("log10", lambda L, a: L.log10(a), [(3, 4, 0.5, 3.0)]),
    ("lerp", lambda L, a, b: L.lerp(a, b, 0.3), [(3, 4), (3, 4)]),
    ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [(3, 4), (3, 4), (4,)]),
    ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c, value=2), [(3, 4), (3, 4), (3, 4, 1., 2.)]),
    ("addmm", lambda L, a, b, c: L.addmm(a, b, c, beta=0.5, alpha=2), [(3, 5), (3, 4), (4, 5)]),
    ("baddbmm", lambda L, a, b, c: L.baddbmm(a, b, c), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("mv", lambda L, a, b: L.mv(a, b), [(3, 4), (4,)]),
    ("diagonal", lambda L, a: L.diagonal(a, 1, 0, 2), [(4, 3, 5)]),
    ("diag", lambda L, a: L.diag(a, -1), [(4, 3)]),
    ("diag1d", lambda L, a: L.diag(a, 1), [(3,)]),
    ("trace", lambda L, a: L.trace(a), [(4, 3)]),
    ("roll", lambda L, a: L.roll(a, (1, -2), (0, 1)), [(3, 4)]),
    ("roll_flat", lambda L, a: L.roll(a, 5), [(3, 4)]),
    ("repeat_interleave", lambda L, a: L.repeat_interleave(a, 2, dim=1), [(2, 3)]),
    ("tile", lambda L, a: L.tile(a, (2, 1, 2)), [(2, 3)]),
    ("movedim", lambda L, a: L.movedim(a, (0, 2), (2, 0)), [(2, 3, 4)]),
    ("masked_select", lambda L, a: L.masked_select(a, a > 0), [(3, 4)]),
    ("take_along_dim", lambda L, a: L.take_along_dim(a, L.argsort(a, 1), 1), [(3, 4)]),
    ("cumprod", lambda L, a: L.cumprod(a, 1), [(3, 4)]),
    ("broadcast_to", lambda L, a: L.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    ("normalize", lambda L, a: L.nn.functional.normalize(a, dim=1), [(3, 4)]),
    ("cosine_similarity", lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=1),
     [(3, 4), (3, 4)]),
    ("binary_cross_entropy", lambda L, a, b: L.nn.functional.binary_cross_entropy(a, b),
     [(3, 4, 0.05, 0.95), (3, 4, 0.0, 1.0)]),
    ("glu", lambda L, a: L.nn.functional.glu(a, 1), [(3, 4)]),
    ("rms_norm", lambda L, a, w: L.nn.functional.rms_norm(a, (4,), w, 1e-6), [(3, 4), (4,)]),
]


@pytest.mark.parametrize("name,call,shapes", COMPOSED, ids=[c[0] for c in COMPOSED])
def test_composed_ops_against_pytorch_and_gradcheck(name, call, shapes):
    xs = [_m(*s[:-2], seed=k, low=s[-2], high=s[-1]) if len(s) > 2 and isinstance(s[-1], float)
          else _m(*s, seed=k) for k, s in enumerate(shapes)]
    if name == "binary_cross_entropy":
        xs[1] = xs[1].detach()
    ours = call(ta, *xs)
    free = [k for k, x in enumerate(xs) if x.requires_grad]

    def with_leaves(*ts):
        args = list(xs)
        for k, t in zip(free, ts):
            args[k] = t
        return call(ta, *args)
    assert gradcheck(with_leaves, [xs[k] for k in free])
    torch = pytest.importorskip("torch")
    theirs = call(torch, *[to_torch(x) for x in xs])
    assert_close(ours, theirs, atol=1e-10)


def test_comparisons_nonzero_bernoulli_and_legacy_types():
    a = ta.tensor([1.0, 2.0, math.inf, math.nan])
    b = ta.tensor([1.0 + 1e-9, 2.1, math.inf, math.nan])
    assert ta.isclose(a, b).tolist() == [True, False, True, False]
    assert ta.isclose(a, b, equal_nan=True).tolist()[3] is True
    assert ta.allclose(ta.ones(2), ta.ones(2) + 1e-9) and not ta.allclose(a, b)
    assert ta.equal(ta.ones(2), ta.ones(2)) and not ta.equal(ta.ones(2), ta.ones(3))
    x = ta.tensor([[0, 3], [4, 0]])
    assert ta.nonzero(x).tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in ta.nonzero(x, as_tuple=True)] == [[0, 1], [1, 0]]
    p = ta.full((4000,), 0.3)
    assert abs(ta.bernoulli(p, generator=ta.Generator(0)).mean().item() - 0.3) < 0.03
    assert ta.LongTensor([1, 2]).dtype is ta.int64 and ta.FloatTensor(2, 3).shape == (2, 3)
    assert ta.ones(2).type_as(ta.ones(1, dtype=ta.float64)).dtype is ta.float64
    torch = pytest.importorskip("torch")
    assert ta.nonzero(x).tolist() == torch.nonzero(to_torch(x)).tolist()


def test_rmsnorm_module_and_out_of_scope_features(tmp_path):
    m = nn.RMSNorm(4, eps=1e-6, dtype=ta.float64)
    x = f64(3, 4)
    assert gradcheck(lambda t: m(t), [x])
    torch = pytest.importorskip("torch")
    tm = torch.nn.RMSNorm(4, eps=1e-6, dtype=torch.float64)
    assert list(tm.state_dict()) == list(m.state_dict()) and repr(tm) == repr(m)
    assert_close(m(x), tm(to_torch(x)).detach(), atol=1e-12)
    for call in (lambda: ta.compile(nn.Linear(2, 2)), lambda: ta.onnx.export(None, None, "m"),
                 lambda: ta.jit.script(nn.Linear(2, 2))):
        with pytest.raises(NotImplementedError, match="not available in tinyattn"):
            call()
    ta.save(nn.Linear(2, 2), tmp_path / "m.pt")           # a whole module: pickled, as in PyTorch
    assert type(ta.load(tmp_path / "m.pt", weights_only=False)) is nn.Linear


def test_einsum_repeated_letter_takes_the_diagonal():
    m = ta.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], requires_grad=True)
    assert ta.einsum("ii->i", m).tolist() == [1.0, 5.0, 9.0]
    trace = ta.einsum("ii", m)
    assert trace.item() == 15.0
    trace.backward()
    assert m.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    x = ta.arange(18.0).reshape(3, 2, 3)     # x[i, j, i] = 6i + 3j + i, summed over i = 0, 1, 2
    assert ta.einsum("iji->j", x).tolist() == [0.0 + 7.0 + 14.0, 3.0 + 10.0 + 17.0]
