"""Module API, Linear, Embedding, Dropout, activations, init: behaviour, gradients, PyTorch parity.

What holds: a module's parameters and state_dict keys in PyTorch's names and order (also after a
parameter or submodule is replaced), PyTorch's constructor arguments (device before dtype),
Embedding's padding_idx, max_norm and scale_grad_by_freq, and weights that load both ways."""
import math
from collections import OrderedDict

import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn import functional as F
from tinyattn.testing import gradcheck

from helpers import assert_close, to_torch


def mlp():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, padding_idx=0)
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 3, bias=False)
        self.register_buffer("scale", ta.tensor([2.0]))
        self.register_buffer("cache", ta.zeros(1), persistent=False)

    def forward(self, ids):
        h = self.emb(ids)
        for blk in self.blocks:
            h = blk(h).relu() + h
        return self.head(self.norm(h)) * self.scale


# ----------------------------------------------------------------------------- Module API


def test_named_parameters_and_state_dict_keys():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["emb.weight", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "blocks.1.bias", "norm.weight", "norm.bias", "head.weight"]
    keys = list(net.state_dict())
    # PyTorch's order: a module's own parameters, its own (persistent) buffers, then its children
    assert keys == ["scale"] + names
    assert [n for n, _ in net.named_buffers()] == ["scale", "cache"]
    assert len(list(net.children())) == 4 and len(list(net.modules())) == 7


def test_shared_parameter_is_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.Tanh(), lin)
    assert len(list(seq.parameters())) == 2


def test_load_state_dict_errors_name_the_keys_and_shapes():
    net = Net()
    sd = net.state_dict()
    sd.pop("norm.bias")
    sd["extra.weight"] = ta.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "norm.bias"') as e:
        net.load_state_dict(sd)
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in str(e.value)
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert missing == ["norm.bias"] and unexpected == ["extra.weight"]
    bad = Net().state_dict()
    bad["head.weight"] = ta.zeros(4, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for head.weight: copying a param with "
                                           r"shape \(4, 3\) from checkpoint.*\(3, 4\)"):
        net.load_state_dict(bad)


def test_load_state_dict_copies_values_into_the_same_parameters():
    a, b = Net(), Net()
    w_before = b.head.weight
    b.load_state_dict(a.state_dict())
    assert b.head.weight is w_before
    assert b.head.weight.tolist() == a.head.weight.tolist()
    ids = ta.tensor([[1, 2, 0]])
    assert_close(a(ids), b(ids))


def test_train_eval_zero_grad_to_dtype():
    net = Net()
    assert net.training and net.blocks[0].training
    net.eval()
    assert not net.training and not net.blocks[1].training
    net.train()
    net(ta.tensor([[1, 2]])).sum().backward()
    assert net.head.weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    w = net.head.weight
    net.double()
    assert net.head.weight is w and w.dtype is ta.float64 and net.scale.dtype is ta.float64
    assert net(ta.tensor([[1]])).dtype is ta.float64
    net.float()
    assert w.dtype is ta.float32


def test_setattr_before_init_and_unknown_attribute():
    class Bad(nn.Module):
        def __init__(self):
            self.x = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        Net().nope


def test_containers():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Tanh())
    ml.extend([nn.ReLU()])
    ml.insert(0, nn.GELU())
    assert [type(m).__name__ for m in ml] == ["GELU", "Linear", "Tanh", "ReLU"]
    assert isinstance(ml[-1], nn.ReLU) and len(ml[1:]) == 3
    with pytest.raises(IndexError):
        ml[10]
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.Tanh())]))
    assert list(seq.state_dict()) == ["fc.weight", "fc.bias"] and seq[0] is seq.fc
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    assert "a" in md and list(md.keys()) == ["a"]


def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(ta.ones(2))
    assert p.requires_grad and p.is_leaf and isinstance(p, ta.Tensor)
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.]")
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]



def _order_after_reassigning(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(2, 3)
            self.decoder = nn.Linear(3, 2)
            self.head = nn.Linear(2, 2)
    net = Net()
    net.encoder = nn.Linear(2, 3)                 # replace a submodule
    net.decoder.weight = nn.Parameter(net.decoder.weight.detach())   # replace a parameter
    return list(net.state_dict().keys()), [n for n, _ in net.named_parameters()]


def test_reassigning_a_parameter_or_submodule_keeps_its_place():
    keys, names = _order_after_reassigning(nn)
    order = ["encoder.weight", "encoder.bias", "decoder.weight", "decoder.bias", "head.weight",
             "head.bias"]
    assert keys == order and names == order
    torch = pytest.importorskip("torch")
    assert _order_after_reassigning(torch.nn) == (order, order)


def test_modules_take_device_before_dtype_as_pytorch():
    """PyTorch's factory arguments come in the order device, dtype: Linear(3, 4, True, 'cpu')."""
    assert ta.nn.Linear(3, 4, True, "cpu", ta.float64).weight.dtype is ta.float64
    assert ta.nn.GRUCell(3, 4, True, "cpu", ta.float64).weight_ih.dtype is ta.float64
    assert ta.nn.LayerNorm(4, 1e-5, True, True, "cpu", ta.float64).weight.dtype is ta.float64
    assert ta.nn.Embedding(5, 3, None, None, 2.0, False, False, None, False, "cpu",
                           ta.float64).weight.dtype is ta.float64
    for make in (lambda: ta.nn.Linear(3, 4, device="cuda"),
                 lambda: ta.nn.Conv2d(1, 2, 3, device="cuda"),
                 lambda: ta.nn.Embedding(5, 3, device="cuda")):
        with pytest.raises(RuntimeError, match="CPU only"):
            make()

# ----------------------------------------------------------------------------- layers


def test_linear_init_shapes_and_gradcheck():
    ta.manual_seed(0)
    lin = nn.Linear(16, 5)
    assert lin.weight.shape == (5, 16) and lin.bias.shape == (5,)
    bound = 1 / math.sqrt(16)  # PyTorch's default: U(-1/sqrt(in), 1/sqrt(in)) for both
    assert max(abs(v) for v in lin.weight.tolist_flat() + lin.bias.tolist_flat()) <= bound
    assert lin.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.2)
    lin.double()
    x = ta.randn(2, 3, 16, dtype=ta.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: nn.functional.linear(x, w, b),
                     (x, lin.weight, lin.bias))
    with pytest.raises(ValueError, match="linear: input has 4 features"):
        lin(ta.zeros(2, 4, dtype=ta.float64))


def test_embedding_padding_row_and_gradient():
    ta.manual_seed(1)
    emb = nn.Embedding(6, 3, padding_idx=-1)
    assert emb.padding_idx == 5 and emb.weight[5].tolist() == [0.0, 0.0, 0.0]
    ids = ta.tensor([[1, 5, 1], [2, 5, 0]])
    out = emb(ids)
    assert out.shape == (2, 3, 3)
    out.sum().backward()
    g = emb.weight.grad.tolist()
    assert g[1] == [2.0] * 3 and g[5] == [0.0] * 3 and g[3] == [0.0] * 3
    e2 = nn.Embedding.from_pretrained(ta.eye(3))
    assert not e2.weight.requires_grad and e2(ta.tensor([2])).tolist() == [[0.0, 0.0, 1.0]]


def test_embedding_gradcheck():
    w = ta.randn(5, 2, dtype=ta.float64, requires_grad=True)
    ids = ta.tensor([[0, 4, 4], [1, 0, 2]])
    assert gradcheck(lambda w: nn.functional.embedding(ids, w), (w,))
    # padding_idx deliberately withholds the gradient of its row, so check it with an unused one
    assert gradcheck(lambda w: nn.functional.embedding(ids, w, padding_idx=3), (w,))



def test_embedding_negative_padding_idx_counts_from_the_end():
    w = ta.ones(4, 2, requires_grad=True)
    F.embedding(ta.tensor([1, 3, 3]), w, padding_idx=-1).sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_embedding_negative_padding_idx_matches_pytorch():
    torch = pytest.importorskip("torch")
    w = torch.ones(4, 2, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor([1, 3, 3]), w, padding_idx=-1).sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def _embedding(lib, **kw):
    w = lib.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], dtype=lib.float64, requires_grad=True)
    idx = lib.tensor([[0, 1], [0, 0]])
    out = lib.nn.functional.embedding(idx, w, **kw)
    (out * lib.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                      dtype=lib.float64)).sum().backward()
    return out.tolist(), w.detach().tolist(), w.grad.tolist()


def _flat(rows):
    return [v for r in rows for v in (_flat(r) if isinstance(r[0], list) else r)]


def test_embedding_max_norm_renormalises_the_rows_it_uses():
    """Rows 0 (norm 5) and 1 (norm 0.5) are used; with max_norm=1 row 0 becomes (3, 4) / (5 + 1e-7),
    row 1 is left alone, and row 2 (norm 10, unused) too."""
    out, w, grad = _embedding(ta, max_norm=1.0)
    s = 1.0 / (5.0 + 1e-7)
    assert _flat(w) == pytest.approx([3 * s, 4 * s, 0.3, 0.4, 6.0, 8.0], rel=1e-12)
    assert _flat(out) == pytest.approx([3 * s, 4 * s, 0.3, 0.4, 3 * s, 4 * s, 3 * s, 4 * s],
                                       rel=1e-12)
    assert grad == [[13.0, 16.0], [3.0, 4.0], [0.0, 0.0]]
    torch = pytest.importorskip("torch")
    theirs = _embedding(torch, max_norm=1.0)
    assert _flat(w) == pytest.approx(_flat(theirs[1]), rel=1e-12) and grad == theirs[2]


def test_embedding_scale_grad_by_freq_divides_by_the_count():
    """Index 0 occurs 3 times in the batch, index 1 once: row 0's gradient (1+5+7, 2+6+8) / 3."""
    _, _, grad = _embedding(ta, scale_grad_by_freq=True)
    assert _flat(grad) == pytest.approx([13 / 3, 16 / 3, 3.0, 4.0, 0.0, 0.0], rel=1e-12)
    torch = pytest.importorskip("torch")
    assert _flat(grad) == pytest.approx(_flat(_embedding(torch, scale_grad_by_freq=True)[2]),
                                        rel=1e-12)

def test_dropout_train_and_eval():
    ta.manual_seed(0)
    d = nn.Dropout(0.25)
    x = ta.ones(20000)
    y = d(x)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    assert set(round(v, 5) for v in y.tolist()) == {0.0, round(1 / 0.75, 5)}
    assert abs(y.mean().item() - 1.0) < 0.03  # inverted dropout keeps the expectation
    d.eval()
    assert d(x) is x
    assert nn.Dropout(0.0)(x) is x and nn.Dropout(1.0)(x).sum().item() == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_init_functions():
    ta.manual_seed(0)
    w = ta.empty(200, 300)
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / 500)
    assert max(abs(v) for v in w.tolist_flat()) <= a and w.std().item() == pytest.approx(
        a / math.sqrt(3), rel=0.05)
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert w.std().item() == pytest.approx(math.sqrt(2 / 300), rel=0.05)
    nn.init.constant_(w, 0.5)
    assert w.min().item() == w.max().item() == 0.5
    with pytest.raises(ValueError, match="at least 2 dims"):
        nn.init.xavier_uniform_(ta.empty(3))


# ----------------------------------------------------------------------------- PyTorch parity


def test_repr_matches_pytorch():
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    ours = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1), nn.LayerNorm(4),
                         nn.Embedding(5, 4, padding_idx=0), nn.GELU(), nn.Tanh())
    theirs = tnn.Sequential(tnn.Linear(3, 4), tnn.ReLU(), tnn.Dropout(0.1), tnn.LayerNorm(4),
                            tnn.Embedding(5, 4, padding_idx=0), tnn.GELU(), tnn.Tanh())
    assert repr(ours) == repr(theirs)


def test_state_dict_keys_match_pytorch_and_weights_move_both_ways():
    torch = pytest.importorskip("torch")
    tnn = torch.nn

    class TNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.emb = tnn.Embedding(10, 4, padding_idx=0)
            self.blocks = tnn.ModuleList([tnn.Linear(4, 4), tnn.Linear(4, 4)])
            self.norm = tnn.LayerNorm(4)
            self.head = tnn.Linear(4, 3, bias=False)
            self.register_buffer("scale", torch.tensor([2.0]))
            self.register_buffer("cache", torch.zeros(1), persistent=False)

        def forward(self, ids):
            h = self.emb(ids)
            for blk in self.blocks:
                h = blk(h).relu() + h
            return self.head(self.norm(h)) * self.scale

    tnet, net = TNet().double(), Net().double()
    assert list(tnet.state_dict()) == list(net.state_dict())
    net.load_state_dict(tnet.state_dict())  # torch tensors are accepted
    ids = [[1, 0, 3, 3], [9, 2, 0, 5]]
    out, tout = net(ta.tensor(ids)), tnet(torch.tensor(ids))
    assert_close(out, tout.detach(), rtol=1e-10)
    ((out + 1) ** 2).mean().backward()
    ((tout + 1) ** 2).mean().backward()
    for (name, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        assert_close(p.grad, tp.grad, rtol=1e-9, atol=1e-12, msg=name)
    # and back: tinyattn weights into torch
    net2 = Net().double()
    tnet.load_state_dict({k: to_torch(v) for k, v in net2.state_dict().items()})
    assert_close(net2(ta.tensor(ids)), tnet(torch.tensor(ids)).detach(), rtol=1e-10)


def test_activation_modules_match_pytorch():
    torch = pytest.importorskip("torch")
    x = ta.randn(4, 5, dtype=ta.float64)
    tx = to_torch(x)
    for ours, theirs in [(nn.ReLU(), torch.nn.ReLU()), (nn.GELU(), torch.nn.GELU()),
                         (nn.GELU("tanh"), torch.nn.GELU("tanh")), (nn.Tanh(), torch.nn.Tanh()),
                         (nn.Sigmoid(), torch.nn.Sigmoid()), (nn.Softmax(1), torch.nn.Softmax(1)),
                         (nn.LogSoftmax(0), torch.nn.LogSoftmax(0))]:
        assert_close(ours(x), theirs(tx), rtol=1e-12, atol=1e-14, msg=type(ours).__name__)


def test_embedding_matches_pytorch_including_padding_gradient():
    torch = pytest.importorskip("torch")
    emb, temb = nn.Embedding(7, 3, padding_idx=2), torch.nn.Embedding(7, 3, padding_idx=2)
    emb.load_state_dict(temb.state_dict())
    ids = [[2, 3, 3, 6], [0, 2, 1, 1]]
    out, tout = emb(ta.tensor(ids)), temb(torch.tensor(ids))
    assert_close(out, tout.detach())
    w = ta.arange(24, dtype=ta.float32).reshape(2, 4, 3) / 10
    (out * w).sum().backward()
    (tout * to_torch(w)).sum().backward()
    assert_close(emb.weight.grad, temb.weight.grad)
