"""GRUCell and GRU: gradcheck in float64, parity with torch.nn.GRU / GRUCell, the lengths= extension;
the RNN family's _flat_weights; LSTM(proj_size=).

What holds: the values worked out by hand and PyTorch's (packed sequences for lengths=); with
lengths=, each sequence gets what running it alone gives; a long sequence's backward needs no
recursion; the fast and reference sequence kernels agree; _flat_weights_names / _flat_weights are
PyTorch's names and the module's current parameters; LSTM with proj_size has PyTorch's
parameters, values and gradients."""
import math

import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.testing import gradcheck


def maxdiff(a, b):
    fa, fb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    assert len(fa) == len(fb)
    return max((abs(x - y) for x, y in zip(fa, fb)), default=0.0)


# ----------------------------------------------------------------------------- structure


def test_parameter_names_shapes_and_init():
    g = nn.GRU(5, 4, num_layers=2, bidirectional=True)
    shapes = {k: tuple(v.shape) for k, v in g.state_dict().items()}
    assert shapes == {
        "weight_ih_l0": (12, 5), "weight_hh_l0": (12, 4), "bias_ih_l0": (12,), "bias_hh_l0": (12,),
        "weight_ih_l0_reverse": (12, 5), "weight_hh_l0_reverse": (12, 4),
        "bias_ih_l0_reverse": (12,), "bias_hh_l0_reverse": (12,),
        "weight_ih_l1": (12, 8), "weight_hh_l1": (12, 4), "bias_ih_l1": (12,), "bias_hh_l1": (12,),
        "weight_ih_l1_reverse": (12, 8), "weight_hh_l1_reverse": (12, 4),
        "bias_ih_l1_reverse": (12,), "bias_hh_l1_reverse": (12,)}
    bound = 1 / math.sqrt(4)
    values = [v for p in g.parameters() for v in p.reshape(-1).tolist()]
    assert all(-bound <= v <= bound for v in values)
    assert max(values) > 0.4 and min(values) < -0.4  # spread over the whole range
    cell = nn.GRUCell(3, 2, bias=False)
    assert {k: tuple(v.shape) for k, v in cell.state_dict().items()} == {
        "weight_ih": (6, 3), "weight_hh": (6, 2)}


def test_gru_cell_hand_computed():
    # H = 1, I = 1, all weights 1 except chosen biases: r = z = sigmoid(2), n = tanh(1 + r*1)
    cell = nn.GRUCell(1, 1).double()
    with ta.no_grad():
        for p in cell.parameters():
            p.fill_(1.0)
        cell.bias_ih.fill_(0.0)
        cell.bias_hh.fill_(0.0)
    h = cell(ta.tensor([[1.0]], dtype="float64"), ta.tensor([[1.0]], dtype="float64"))
    s = 1 / (1 + math.exp(-2.0))
    n = math.tanh(1.0 + s * 1.0)
    assert abs(h.item() - ((1 - s) * n + s * 1.0)) < 1e-12


def test_shapes_unbatched_and_errors():
    g = nn.GRU(3, 4, bidirectional=True)
    out, h = g(ta.randn(7, 3))
    assert out.shape == (7, 8) and h.shape == (2, 4)
    out, h = nn.GRU(3, 4, batch_first=True, num_layers=2)(ta.randn(2, 7, 3))
    assert out.shape == (2, 7, 4) and h.shape == (2, 2, 4) and out.is_contiguous()
    assert nn.GRUCell(3, 4)(ta.randn(3)).shape == (4,)
    with pytest.raises(ValueError, match="input_size=3"):
        g(ta.randn(7, 2, 5))
    with pytest.raises(ValueError, match=r"hx must have shape \(2, 2, 4\)"):
        g(ta.randn(7, 2, 3), ta.zeros(1, 2, 4))
    with pytest.raises(ValueError, match=r"length must be an int in \[0, 7\]"):
        g(ta.randn(7, 2, 3), lengths=[3, 8])
    with pytest.raises(ValueError, match="one length per sequence"):
        g(ta.randn(7, 2, 3), lengths=[3])
    with pytest.raises(ValueError, match="input_size=3"):
        nn.GRUCell(3, 4)(ta.randn(2, 4))


# ----------------------------------------------------------------------------- gradcheck


def test_gradcheck_gru_cell():
    ta.manual_seed(0)
    cell = nn.GRUCell(3, 2).double()
    x = ta.randn(2, 3, dtype="float64", requires_grad=True)
    h = ta.randn(2, 2, dtype="float64", requires_grad=True)
    params = list(cell.parameters())
    assert gradcheck(lambda x, h, *ps: cell(x, h), (x, h, *params))


@pytest.mark.parametrize("kw", [dict(), dict(bidirectional=True, num_layers=2),
                                dict(bias=False, batch_first=True)])
def test_gradcheck_gru(kw):
    ta.manual_seed(1)
    g = nn.GRU(2, 3, **kw).double()
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    x = ta.randn(2, 4, 2, dtype="float64", requires_grad=True)  # (T, B) or (B, T) = (2, 4)
    B = 2 if kw.get("batch_first") else 4
    h0 = ta.randn(L * D, B, 3, dtype="float64", requires_grad=True)
    params = list(g.parameters())
    assert gradcheck(lambda x, h0, *ps: g(x, h0), (x, h0, *params))


def test_gradcheck_gru_with_lengths():
    ta.manual_seed(2)
    g = nn.GRU(2, 3, bidirectional=True).double()
    x = ta.randn(5, 3, 2, dtype="float64", requires_grad=True)
    h0 = ta.randn(2, 3, 3, dtype="float64", requires_grad=True)
    params = list(g.parameters())
    assert gradcheck(lambda x, h0, *ps: g(x, h0, lengths=[5, 2, 0]), (x, h0, *params))


def test_long_sequence_backward_no_recursion_error():
    g = nn.GRU(2, 3)
    out, h = g(ta.randn(2000, 1, 2))
    h.sum().backward()
    assert all(math.isfinite(v) for v in g.weight_hh_l0.grad.reshape(-1).tolist())


# ----------------------------------------------------------------------------- lengths=


@pytest.mark.parametrize("layers,bidirectional", [(1, True), (2, True), (2, False)])
def test_lengths_equal_running_each_sequence_alone(layers, bidirectional):
    ta.manual_seed(3)
    g = nn.GRU(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=True).double()
    D = 2 if bidirectional else 1
    lengths = [6, 2, 4, 1]
    x = ta.randn(4, 6, 3, dtype="float64", requires_grad=True)
    h0 = ta.randn(layers * D, 4, 4, dtype="float64", requires_grad=True)
    out, h_n = g(x, h0, lengths=lengths)
    w = ta.randn(*out.shape, dtype="float64")
    ((out * w).sum() + (h_n * h_n).sum()).backward()
    for b, n in enumerate(lengths):
        xb = x.detach()[b:b + 1, :n].clone().requires_grad_()
        hb = h0.detach()[:, b:b + 1].clone().requires_grad_()
        ob, hnb = g(xb, hb)
        assert maxdiff(out[b:b + 1, :n], ob) < 1e-12
        assert maxdiff(h_n[:, b:b + 1], hnb) < 1e-12
        assert all(v == 0.0 for v in out[b, n:].reshape(-1).tolist())  # zero past the length
        ((ob * w[b:b + 1, :n]).sum() + (hnb * hnb).sum()).backward()
        assert maxdiff(x.grad[b:b + 1, :n], xb.grad) < 1e-12
        assert all(v == 0.0 for v in x.grad[b, n:].reshape(-1).tolist())  # padding gets no grad
        assert maxdiff(h0.grad[:, b:b + 1], hb.grad) < 1e-12


def test_lengths_zero_keeps_initial_state():
    g = nn.GRU(2, 3, bidirectional=True)
    h0 = ta.randn(2, 2, 3)
    out, h_n = g(ta.randn(4, 2, 2), h0, lengths=ta.tensor([0, 4]))
    assert maxdiff(h_n[:, 0], h0[:, 0]) == 0.0
    assert all(v == 0.0 for v in out[:, 0].reshape(-1).tolist())


# ----------------------------------------------------------------------------- PyTorch parity


def _to_ta(t, grad=False):
    return ta.tensor(t.tolist(), requires_grad=grad)


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2), dict(bidirectional=True),
                                dict(num_layers=2, bidirectional=True, batch_first=True),
                                dict(bias=False), dict(batch_first=True)])
@pytest.mark.parametrize("with_hx", [False, True])
def test_gru_matches_torch(kw, with_hx):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tg = torch.nn.GRU(5, 4, **kw)
    g = nn.GRU(5, 4, **kw)
    g.load_state_dict(tg.state_dict())
    T, B = 6, 3
    x = torch.randn(B, T, 5) if kw.get("batch_first") else torch.randn(T, B, 5)
    D = 2 if kw.get("bidirectional") else 1
    h0 = torch.randn(kw.get("num_layers", 1) * D, B, 4)
    xt = x.clone().requires_grad_()
    ht = h0.clone().requires_grad_()
    o, hn = tg(xt, ht if with_hx else None)
    (((o + 1) ** 2).mean() + (hn ** 3).sum()).backward()
    xa, ha = _to_ta(x, True), _to_ta(h0, True)
    oa, hna = g(xa, ha if with_hx else None)
    (((oa + 1) ** 2).mean() + (hna ** 3).sum()).backward()
    assert maxdiff(oa, o.detach()) < 1e-5
    assert maxdiff(hna, hn.detach()) < 1e-5
    assert maxdiff(xa.grad, xt.grad) < 1e-5
    if with_hx:
        assert maxdiff(ha.grad, ht.grad) < 1e-5
    tp = dict(tg.named_parameters())
    for name, p in g.named_parameters():
        assert maxdiff(p.grad, tp[name].grad) < 1e-5, name


def test_gru_lengths_match_torch_packed_sequences():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    tg = torch.nn.GRU(3, 4, bidirectional=True, batch_first=True)
    g = nn.GRU(3, 4, bidirectional=True, batch_first=True)
    g.load_state_dict(tg.state_dict())
    lengths = [5, 3, 1]
    x = torch.randn(3, 5, 3)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
    po, hn = tg(packed)
    o, _ = torch.nn.utils.rnn.pad_packed_sequence(po, batch_first=True)
    oa, hna = g(_to_ta(x), lengths=lengths)
    assert maxdiff(oa, o.detach()) < 1e-5
    assert maxdiff(hna, hn.detach()) < 1e-5


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_matches_torch(bias):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    c = torch.nn.GRUCell(5, 4, bias=bias)
    ca = nn.GRUCell(5, 4, bias=bias)
    ca.load_state_dict(c.state_dict())
    x, h = torch.randn(3, 5), torch.randn(3, 4)
    xt, ht = x.clone().requires_grad_(), h.clone().requires_grad_()
    ((c(xt, ht) + 1) ** 2).mean().backward()
    xa, ha = _to_ta(x, True), _to_ta(h, True)
    oa = ca(xa, ha)
    ((oa + 1) ** 2).mean().backward()
    assert maxdiff(oa, c(x, h).detach()) < 1e-6
    assert maxdiff(xa.grad, xt.grad) < 1e-6
    assert maxdiff(ha.grad, ht.grad) < 1e-6
    tp = dict(c.named_parameters())
    for name, p in ca.named_parameters():
        assert maxdiff(p.grad, tp[name].grad) < 1e-6, name
    assert maxdiff(ca(xa), c(x).detach()) < 1e-6  # hx=None means zeros


def test_dropout_between_layers_only_in_training():
    ta.manual_seed(4)
    g = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = ta.randn(5, 2, 3)
    g.eval()
    a, b = g(x)[0].reshape(-1).tolist(), g(x)[0].reshape(-1).tolist()
    assert a == b
    g.train()
    assert g(x)[0].reshape(-1).tolist() != a
    one = nn.GRU(3, 4, num_layers=1, dropout=0.5)  # no layer after the last: no dropout at all
    assert one(x)[0].reshape(-1).tolist() == one(x)[0].reshape(-1).tolist()


# ----------------------------------------------------------------------------- sequence kernels

@pytest.mark.parametrize("typecode", ["f", "d"])
@pytest.mark.parametrize("B", [3, 19])          # the few-rows product, and tiles with an edge
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("path", ["compiled", "stepwise"])
def test_sequence_kernels_fast_against_reference(monkeypatch, typecode, B, reverse, with_lengths,
                                                 path):
    """The whole-sequence kernels of the two backends: the fast one as one compiled call (the
    blocked product), or as a loop of threaded products (steps big enough to split, forced
    here), against kernels/rnn.py's loops, forward and backward."""
    import random
    from array import array

    from tinyattn.fast import matmul as fast_matmul
    from tinyattn.fast import rnn as fast
    from tinyattn.fast import threads
    from tinyattn.kernels import rnn as reference
    if path == "stepwise":
        monkeypatch.setattr(fast_matmul, "PARALLEL_MIN_WORK", 0)
        monkeypatch.setattr(threads, "num_threads", lambda: 2)
        # a pool that stopped offering on a busy machine would keep the steps whole: the split
        # is tested here, not the load
        monkeypatch.setattr(threads, "_adaptive", False)
    rng = random.Random(B * 7 + reverse * 3 + with_lengths)
    T, H = 5, 6

    def buf(n, scale=1.0):
        return array(typecode, [rng.uniform(-scale, scale) for _ in range(n)])
    gi, h0, w = buf(T * B * 3 * H), buf(B * H + 2), buf(3 * H * H, 0.5)
    bi, bh, g = buf(3 * H), buf(3 * H), buf(T * B * H)
    lens = array("q", [rng.randint(0, T) for _ in range(B)] if with_lengths else [0])
    assert fast._split_steps(typecode, B, 6) == (path == "stepwise" and B >= fast_matmul.MR)
    results = []
    for kernels in (fast, reference):
        hs, ws = buf(T * B * H), buf(T * B * 4 * H)     # (garbage in: every element written)
        kernels.gru_sequence_forward(gi, h0, 2, w, bi, bh, lens, with_lengths, reverse, hs, ws,
                                     T, B, H)
        carry = array(typecode, [0.0] * (B * H))
        m = array(typecode, [0.0] * (B * H))
        dgi, dgh = buf(T * B * 3 * H), buf(T * B * 3 * H)
        kernels.gru_sequence_backward(g, carry, m, h0, 2, hs, ws, w, lens, with_lengths, reverse,
                                      dgi, dgh, T, B, H)
        results.append([hs, ws, dgi, dgh, carry, m])
    tol = 1e-5 if typecode == "f" else 1e-12
    for name, got, want in zip(("hs", "ws", "dgi", "dgh", "carry", "m"), *results):
        worst = max(abs(x - y) for x, y in zip(got, want))
        assert worst <= tol * (1 + max(abs(y) for y in want)), (name, worst)


# ----------------------------------------------------------------------------- flat weights

def test_flat_weights_names_in_pytorch_order():
    g = nn.GRU(3, 2, num_layers=2, bidirectional=True)
    assert g._flat_weights_names == [
        f"{w}_l{k}{s}" for k in range(2) for s in ("", "_reverse")
        for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    assert g._all_weights[1] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse",
                                 "bias_ih_l0_reverse", "bias_hh_l0_reverse"]
    assert nn.RNN(3, 2, bias=False)._flat_weights_names == ["weight_ih_l0", "weight_hh_l0"]
    assert nn.LSTM(3, 4, proj_size=2)._flat_weights_names == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]


def test_flat_weights_are_the_current_parameters():
    lstm = nn.LSTM(3, 2, num_layers=2)
    assert all(w is getattr(lstm, n)
               for n, w in zip(lstm._flat_weights_names, lstm._flat_weights))
    lstm = lstm.double()                         # new parameters: the list follows them
    assert lstm._flat_weights[0] is lstm.weight_ih_l0 and lstm._flat_weights[0].dtype is ta.float64
    replacement = nn.Parameter(ta.zeros(8, 2, dtype="float64"))
    lstm.weight_hh_l1 = replacement              # what weight-drop wrappers do
    assert lstm._flat_weights[lstm._flat_weights_names.index("weight_hh_l1")] is replacement
    assert [len(w) for w in lstm.all_weights] == [4, 4]
    assert lstm.all_weights[1][1] is replacement


def test_flat_weights_names_match_torch():
    torch = pytest.importorskip("torch")
    for cls, kw in [("GRU", dict(num_layers=2, bidirectional=True)), ("RNN", dict(bias=False)),
                    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2))]:
        tm, m = getattr(torch.nn, cls)(3, 4, **kw), getattr(nn, cls)(3, 4, **kw)
        assert m._flat_weights_names == tm._flat_weights_names
        assert m._all_weights == tm._all_weights
        assert [tuple(w.shape) for w in m._flat_weights] == [
            tuple(w.shape) for w in tm._flat_weights]


# ----------------------------------------------------------------------------- LSTM proj_size

def test_lstm_proj_size_parameters_and_shapes():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes["weight_ih_l0"] == (16, 3) and shapes["weight_hh_l0"] == (16, 2)
    assert shapes["weight_hr_l0"] == (2, 4) and shapes["weight_hr_l1_reverse"] == (2, 4)
    assert shapes["weight_ih_l1"] == (16, 4)    # the layer below gives D * proj_size features
    out, (h, c) = m(ta.randn(5, 3, 3))
    assert out.shape == (5, 3, 4) and h.shape == (4, 3, 2) and c.shape == (4, 3, 4)
    out, (h, c) = m(ta.randn(5, 3))              # unbatched
    assert out.shape == (5, 4) and h.shape == (4, 2) and c.shape == (4, 4)
    assert "proj_size=2" in repr(m)
    with pytest.raises(ValueError, match=r"h_0 must have shape \(4, 3, 2\)"):
        m(ta.randn(5, 3, 3), (ta.zeros(4, 3, 4), ta.zeros(4, 3, 4)))


def test_lstm_proj_size_errors_as_pytorch():
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        nn.LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(TypeError, match="proj_size must be an int"):
        nn.LSTM(3, 4, proj_size=2.5)


def test_lstm_proj_size_hand_computed():
    # I = 1, H = 2, P = 1, every weight 0.5, biases 0, x = 1, zero state: all gates are 0.5,
    # c = s * tanh(0.5), h = 0.5 * 2 * s * tanh(c) with s = sigmoid(0.5).
    m = nn.LSTM(1, 2, proj_size=1).double()
    with ta.no_grad():
        for p in m.parameters():
            p.fill_(0.5)
        m.bias_ih_l0.fill_(0.0)
        m.bias_hh_l0.fill_(0.0)
    out, (h, c) = m(ta.ones(1, 1, 1, dtype="float64"))
    s = 1 / (1 + math.exp(-0.5))
    c_want = s * math.tanh(0.5)
    assert abs(c.reshape(-1).tolist()[0] - c_want) < 1e-12
    assert abs(h.item() - s * math.tanh(c_want)) < 1e-12 and out.item() == h.item()


@pytest.mark.parametrize("kw", [dict(), dict(bidirectional=True, num_layers=2)])
def test_gradcheck_lstm_proj_size(kw):
    ta.manual_seed(7)
    m = nn.LSTM(2, 3, proj_size=2, **kw).double()
    D, L = (2, 2) if kw else (1, 1)
    x = ta.randn(3, 2, 2, dtype="float64", requires_grad=True)
    h0 = ta.randn(L * D, 2, 2, dtype="float64", requires_grad=True)
    c0 = ta.randn(L * D, 2, 3, dtype="float64", requires_grad=True)

    def f(x, h0, c0, *params):
        out, (h, c) = m(x, (h0, c0))
        return out, h, c
    assert gradcheck(f, (x, h0, c0, *m.parameters()))


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True),
                                dict(batch_first=True, bias=False)])
@pytest.mark.parametrize("packed", [False, True])
def test_lstm_proj_size_matches_torch(kw, packed):
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    tm = torch.nn.LSTM(5, 4, proj_size=3, **kw)
    m = nn.LSTM(5, 4, proj_size=3, **kw)
    m.load_state_dict(tm.state_dict())
    T, B = 6, 3
    bf = kw.get("batch_first", False)
    x = torch.randn(B, T, 5) if bf else torch.randn(T, B, 5)
    D, L = (2 if kw.get("bidirectional") else 1), kw.get("num_layers", 1)
    h0, c0 = torch.randn(L * D, B, 3), torch.randn(L * D, B, 4)
    xt, ht, ct = (t.clone().requires_grad_() for t in (x, h0, c0))
    xa, ha, ca = (_to_ta(t, True) for t in (x, h0, c0))
    if packed:
        pack = torch.nn.utils.rnn.pack_padded_sequence
        o, (hn, cn) = tm(pack(xt, [3, 6, 1], bf, enforce_sorted=False), (ht, ct))
        oa, (hna, cna) = m(nn.utils.rnn.pack_padded_sequence(xa, [3, 6, 1], bf, False),
                           (ha, ca))
        o, oa = o.data, oa.data
    else:
        o, (hn, cn) = tm(xt, (ht, ct))
        oa, (hna, cna) = m(xa, (ha, ca))
    (((o + 1) ** 2).mean() + (hn ** 3).sum() + (cn ** 2).sum()).backward()
    (((oa + 1) ** 2).mean() + (hna ** 3).sum() + (cna ** 2).sum()).backward()
    for mine, theirs in ((oa, o), (hna, hn), (cna, cn), (xa.grad, xt.grad), (ha.grad, ht.grad),
                         (ca.grad, ct.grad)):
        assert maxdiff(mine, theirs.detach()) < 1e-5
    tp = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        assert maxdiff(p.grad, tp[name].grad) < 1e-5, name
