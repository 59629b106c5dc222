"""nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
PackedSequence) and packed sequences through nn.RNN, nn.GRU and nn.LSTM.

What holds: packing and padding give the rows worked out by hand and PyTorch's, in every order
(enforce_sorted, batch_first, padding side, total_length), with PyTorch's errors; their gradients
are index_select's (gradcheck); an RNN fed a PackedSequence returns PyTorch's packed output, h_n
and gradients, bidirectional and multi-layer, with the caller's batch order kept."""
import random

import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn.utils import rnn as R
from tinyattn.testing import gradcheck


def maxdiff(a, b):
    fa, fb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    assert len(fa) == len(fb)
    return max((abs(x - y) for x, y in zip(fa, fb)), default=0.0)


def _to_ta(t, grad=False):
    return ta.tensor(t.tolist(), dtype=str(t.dtype).replace("torch.", ""), requires_grad=grad)


# ----------------------------------------------------------------------------- by hand

def _steps(T, B):
    """x[t, b] = [10 t + b]: every row says where it came from."""
    return ta.tensor([[[10.0 * t + b] for b in range(B)] for t in range(T)])


def test_pack_padded_sequence_keeps_live_rows_step_by_step():
    p = R.pack_padded_sequence(_steps(4, 3), [4, 2, 1])
    assert p.data.reshape(-1).tolist() == [0, 1, 2, 10, 11, 20, 30]
    assert p.batch_sizes.tolist() == [3, 2, 1, 1] and p.batch_sizes.dtype is ta.int64
    assert p.sorted_indices is None and p.unsorted_indices is None


def test_pack_padded_sequence_unsorted_remembers_the_order():
    p = R.pack_padded_sequence(_steps(3, 3), ta.tensor([1, 3, 2]), enforce_sorted=False)
    assert p.sorted_indices.tolist() == [1, 2, 0] and p.unsorted_indices.tolist() == [2, 0, 1]
    assert p.data.reshape(-1).tolist() == [1, 2, 0, 11, 12, 21]
    padded, lengths = R.pad_packed_sequence(p, padding_value=-1.0)
    assert lengths.tolist() == [1, 3, 2]
    assert padded.reshape(3, 3).tolist() == [[0, 1, 2], [-1, 11, 12], [-1, 21, -1]]


def test_pad_packed_sequence_batch_first_and_total_length():
    p = R.pack_padded_sequence(_steps(2, 2), [2, 1])
    padded, lengths = R.pad_packed_sequence(p, batch_first=True, total_length=3)
    assert padded.shape == (2, 3, 1) and lengths.tolist() == [2, 1]
    assert padded.reshape(2, 3).tolist() == [[0, 10, 0], [1, 0, 0]]


def test_pad_sequence_right_left_and_batch_first():
    a, b = ta.tensor([1, 2]), ta.tensor([3, 4, 5])
    assert R.pad_sequence([a, b]).tolist() == [[1, 3], [2, 4], [0, 5]]
    assert R.pad_sequence([a, b], batch_first=True, padding_value=-1).tolist() == [
        [1, 2, -1], [3, 4, 5]]
    assert R.pad_sequence([a, b], padding_side="left").tolist() == [[0, 3], [1, 4], [2, 5]]
    assert R.pad_sequence(ta.ones(2, 3)).shape == (3, 2)   # a tensor: its rows are the sequences


def test_pack_sequence_and_unpack_sequence_round_trip():
    seqs = [ta.tensor([1.0, 2.0]), ta.tensor([3.0, 4.0, 5.0]), ta.tensor([6.0])]
    p = R.pack_sequence(seqs, enforce_sorted=False)
    assert p.data.tolist() == [3, 1, 6, 4, 2, 5] and p.batch_sizes.tolist() == [3, 2, 1]
    assert [s.tolist() for s in R.unpack_sequence(p)] == [s.tolist() for s in seqs]
    padded = R.pad_sequence(seqs, batch_first=True)
    assert [s.tolist() for s in R.unpad_sequence(padded, ta.tensor([2, 3, 1]), True)] == [
        s.tolist() for s in seqs]


def test_packed_sequence_is_a_namedtuple_with_conversions():
    p = R.PackedSequence(ta.ones(3), ta.tensor([2, 1]))
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert sorted_indices is None and unsorted_indices is None
    assert p.double().data.dtype is ta.float64 and p.double().batch_sizes.dtype is ta.int64
    assert p.to(ta.float32) is p and p.float() is p and p.long().data.dtype is ta.int64
    assert p.to("cpu") is p and not p.is_cuda
    q = R.PackedSequence((ta.ones(3), ta.tensor([2, 1])))
    assert q.batch_sizes.tolist() == [2, 1]
    r = R.PackedSequence(ta.ones(3), ta.tensor([2, 1]), ta.tensor([1, 0]))
    assert r.unsorted_indices.tolist() == [1, 0]
    assert R.invert_permutation(ta.tensor([2, 0, 1])).tolist() == [1, 2, 0]


def test_errors_as_pytorch():
    x = ta.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        R.pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(x, [3, 2, 0])
    with pytest.raises(RuntimeError, match=r"equal to batch_size, but got 2 \(batch_size=3\)"):
        R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="1D CPU int64 tensor"):
        R.pack_padded_sequence(x, ta.tensor([[3, 2, 1]]))
    with pytest.raises(RuntimeError, match="Cannot pack empty tensors"):
        R.pack_padded_sequence(ta.randn(0, 3, 2), [3, 2, 1])
    with pytest.raises(RuntimeError, match="a length of 5 is longer"):   # PyTorch reads past
        R.pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 3"):
        R.pad_packed_sequence(R.pack_padded_sequence(x, [3, 2, 2]), total_length=2)
    with pytest.raises(RuntimeError, match="padding_side to be one of left or right"):
        R.pad_sequence([ta.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="empty list of sequences"):
        R.pad_sequence([])
    with pytest.raises(RuntimeError, match="same trailing dimensions"):
        R.pad_sequence([ta.ones(2, 3), ta.ones(3, 2)])
    with pytest.raises(AssertionError, match="list or tuple of length 2"):
        R.PackedSequence(ta.ones(3))


def test_gradcheck_pack_and_pad():
    ta.manual_seed(0)
    x = ta.randn(2, 3, 2, dtype="float64", requires_grad=True)
    assert gradcheck(lambda x: R.pack_padded_sequence(x, [1, 3], batch_first=True,
                                                      enforce_sorted=False).data, (x,))
    d = ta.randn(4, 2, dtype="float64", requires_grad=True)
    packed = R.PackedSequence(d, ta.tensor([2, 1, 1]), ta.tensor([1, 0]))
    assert gradcheck(lambda d: R.pad_packed_sequence(packed._replace(data=d), True, 0.5)[0],
                     (d,))
    a = ta.randn(2, 2, dtype="float64", requires_grad=True)
    b = ta.randn(3, 2, dtype="float64", requires_grad=True)
    assert gradcheck(lambda a, b: R.pad_sequence([a, b], padding_side="left"), (a, b))


# ----------------------------------------------------------------------------- against PyTorch

@pytest.mark.parametrize("seed", range(6))
def test_pack_and_pad_match_torch_on_random_lengths(seed):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as TR
    rng = random.Random(seed)
    B, T = rng.randint(1, 5), rng.randint(1, 6)
    lens = [rng.randint(1, T) for _ in range(B)]
    batch_first, enforce_sorted = rng.random() < 0.5, rng.random() < 0.5
    if enforce_sorted:
        lens.sort(reverse=True)
    x = torch.randn(B, T, 3) if batch_first else torch.randn(T, B, 3)
    xt = x.clone().requires_grad_()
    xa = _to_ta(x, True)
    p = TR.pack_padded_sequence(xt, lens, batch_first, enforce_sorted)
    q = R.pack_padded_sequence(xa, ta.tensor(lens), batch_first, enforce_sorted)
    assert q.data.tolist() == p.data.tolist()
    assert q.batch_sizes.tolist() == p.batch_sizes.tolist()
    for mine, theirs in ((q.sorted_indices, p.sorted_indices),
                         (q.unsorted_indices, p.unsorted_indices)):
        assert (mine is None) == (theirs is None)
        assert mine is None or mine.tolist() == theirs.tolist()
    total = T + rng.randint(0, 2)
    po, pl = TR.pad_packed_sequence(p, batch_first, -3.0, total)
    qo, ql = R.pad_packed_sequence(q, batch_first, -3.0, total)
    assert qo.tolist() == po.tolist() and ql.tolist() == pl.tolist()
    w = torch.randn(*po.shape)
    (po * w).sum().backward()
    (qo * _to_ta(w)).sum().backward()
    assert xa.grad.tolist() == xt.grad.tolist()
    seqs = [torch.randn(n, 2) for n in lens]
    for side in ("left", "right"):
        assert R.pad_sequence([_to_ta(s) for s in seqs], batch_first, 7.0, side).tolist() == \
            TR.pad_sequence(seqs, batch_first, 7.0, side).tolist()
    if not enforce_sorted:
        assert R.pack_sequence([_to_ta(s) for s in seqs], False).data.tolist() == \
            TR.pack_sequence(seqs, False).data.tolist()


def test_as_torch_name_torch_nn_utils_rnn():
    from tinyattn import _torch_names
    assert _torch_names.ALIASES["torch.nn.utils.rnn"] == "nn.utils.rnn"
    assert nn.utils.rnn.pack_padded_sequence is R.pack_padded_sequence
    assert nn.utils.clip_grad_norm_ is nn.utils.clip_grad.clip_grad_norm_


# ----------------------------------------------------------------------------- through RNNs

def _state_of(cls, h):
    return (h, h * 0.5) if cls == "LSTM" else h


def _h(cls, state):
    return state[0] + state[1] * state[1] if cls == "LSTM" else state


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("kw", [dict(), dict(bidirectional=True, num_layers=2)])
def test_packed_rnn_equals_each_sequence_alone(cls, kw):
    """Without PyTorch: a sequence's rows in the packed output, and its h_n, are what running it
    alone (unpadded) gives; gradients too."""
    ta.manual_seed(5)
    m = getattr(nn, cls)(2, 3, **kw).double()
    D, L = (2, 2) if kw else (1, 1)
    lens = [2, 4, 1]
    x = ta.randn(4, 3, 2, dtype="float64", requires_grad=True)
    h0 = ta.randn(L * D, 3, 3, dtype="float64", requires_grad=True)
    out, hn = m(R.pack_padded_sequence(x, lens, enforce_sorted=False), _state_of(cls, h0))
    padded, got_lens = R.pad_packed_sequence(out)
    assert got_lens.tolist() == lens and isinstance(out, R.PackedSequence)
    w = ta.randn(*padded.shape, dtype="float64")
    ((padded * w).sum() + (_h(cls, hn) ** 2).sum()).backward()
    for b, n in enumerate(lens):
        xb = x.detach()[:n, b:b + 1].clone().requires_grad_()
        hb = h0.detach()[:, b:b + 1].clone().requires_grad_()
        ob, hnb = m(xb, _state_of(cls, hb))
        assert maxdiff(padded[:n, b:b + 1], ob) < 1e-12
        assert all(v == 0.0 for v in padded[n:, b].reshape(-1).tolist())
        assert maxdiff(_h(cls, hn)[:, b:b + 1], _h(cls, hnb)) < 1e-12
        ((ob * w[:n, b:b + 1]).sum() + (_h(cls, hnb) ** 2).sum()).backward()
        assert maxdiff(x.grad[:n, b:b + 1], xb.grad) < 1e-12
        assert maxdiff(h0.grad[:, b:b + 1], hb.grad) < 1e-12


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
def test_gradcheck_packed_rnn(cls):
    ta.manual_seed(6)
    m = getattr(nn, cls)(2, 2, bidirectional=True).double()
    x = ta.randn(3, 3, 2, dtype="float64", requires_grad=True)
    h0 = ta.randn(2, 3, 2, dtype="float64", requires_grad=True)

    def f(x, h0, *params):
        out, hn = m(R.pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False),
                    _state_of(cls, h0))
        return R.pad_packed_sequence(out)[0], _h(cls, hn)
    assert gradcheck(f, (x, h0, *m.parameters()))


def test_packed_rnn_errors():
    g = nn.GRU(2, 3)
    p = R.pack_padded_sequence(ta.randn(4, 3, 2), [4, 2, 1])
    with pytest.raises(ValueError, match="carries its own lengths"):
        g(p, lengths=[4, 2, 1])
    with pytest.raises(ValueError, match=r"hx must have shape \(1, 3, 3\)"):
        g(p, ta.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        nn.LSTM(2, 3)(R.PackedSequence(ta.randn(7, 1, 2), p.batch_sizes))
    with pytest.raises(ValueError, match="input_size=2"):
        nn.RNN(2, 3)(R.PackedSequence(ta.randn(7, 5), p.batch_sizes))


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("seed", range(4))
def test_packed_rnn_matches_torch(cls, seed):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as TR
    rng = random.Random(seed)
    kw = dict(num_layers=rng.choice([1, 2]), bidirectional=rng.random() < 0.5,
              batch_first=rng.random() < 0.5, bias=rng.random() < 0.8)
    enforce_sorted, with_hx = rng.random() < 0.5, rng.random() < 0.7
    B, T, I, H = rng.randint(1, 4), rng.randint(1, 5), 3, 4
    lens = [rng.randint(1, T) for _ in range(B)]
    if enforce_sorted:
        lens.sort(reverse=True)
    torch.manual_seed(seed)
    tm = getattr(torch.nn, cls)(I, H, **kw)
    m = getattr(nn, cls)(I, H, **kw)
    m.load_state_dict(tm.state_dict())
    x = torch.randn(B, T, I) if kw["batch_first"] else torch.randn(T, B, I)
    D = 2 if kw["bidirectional"] else 1
    h0 = torch.randn(kw["num_layers"] * D, B, H)
    xt, ht = x.clone().requires_grad_(), h0.clone().requires_grad_()
    xa, ha = _to_ta(x, True), _to_ta(h0, True)
    po, hn = tm(TR.pack_padded_sequence(xt, lens, kw["batch_first"], enforce_sorted),
                _state_of(cls, ht) if with_hx else None)
    qo, hna = m(R.pack_padded_sequence(xa, lens, kw["batch_first"], enforce_sorted),
                _state_of(cls, ha) if with_hx else None)
    assert qo.batch_sizes.tolist() == po.batch_sizes.tolist()
    assert (qo.unsorted_indices is None) == (po.unsorted_indices is None)
    (((po.data + 1) ** 2).mean() + (_h(cls, hn) ** 3).sum()).backward()
    (((qo.data + 1) ** 2).mean() + (_h(cls, hna) ** 3).sum()).backward()

    def close(a, b):
        return maxdiff(a, b) <= 1e-5 * (1 + max((abs(v) for v in b.reshape(-1).tolist()),
                                                default=0.0))
    assert close(qo.data, po.data.detach())
    assert close(_h(cls, hna), _h(cls, hn).detach())
    assert close(xa.grad, xt.grad)
    if with_hx:
        assert close(ha.grad, ht.grad)
    tp = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        assert close(p.grad, tp[name].grad), name
