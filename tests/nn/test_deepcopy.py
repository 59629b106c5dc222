"""copy.deepcopy of modules: independent parameters with equal values, shared ones stay shared."""
import copy

import tinyattn
from tinyattn import nn


def test_deepcopy_module_copies_parameters():
    tinyattn.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    m[0].weight.grad = tinyattn.ones(4, 3)
    c = copy.deepcopy(m)
    for (k, p), (k2, q) in zip(m.named_parameters(), c.named_parameters()):
        assert k == k2 and p is not q and type(q) is nn.Parameter
        assert q.requires_grad and q.tolist() == p.tolist()
    assert c[0].weight.grad.tolist() == [[1.0] * 3] * 4
    with tinyattn.no_grad():
        c[0].weight.fill_(7.0)
    assert m[0].weight.tolist() != c[0].weight.tolist()  # no shared buffer


def test_deepcopy_keeps_shared_parameters_shared():
    a = nn.Linear(2, 2)
    m = nn.ModuleList([a, a])
    c = copy.deepcopy(m)
    assert c[0].weight is c[1].weight and c[0].weight is not a.weight
