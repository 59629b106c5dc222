"""Module API, Linear, Embedding, Dropout, activations, init: behaviour, gradients, PyTorch parity."""
import math
from collections import OrderedDict

import pytest

import tinyattn as ta
from tinyattn import nn
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
