"""On the fast backend, op outputs reuse the buffers of dead outputs instead of zero-filling fresh
ones (tinyattn/fast/recycle.py). What must hold: a buffer anything still refers to (a tensor, a view, the
graph) is never handed out again; a reused buffer's old contents never show; the autograd engine's
record of in-place writes does not follow a buffer to its next owner; the pool stays bounded."""
import os
import subprocess
import sys
import threading
import weakref

import pytest

import tinyattn as ta
from tinyattn import backend, storage
from tinyattn.fast import recycle as _recycle

N = 128  # a 128 x 128 float32 output is 64 KiB, the smallest size the pool takes


@pytest.fixture
def on():
    if not _recycle.ENABLED:
        pytest.skip("TINYATTN_RECYCLE=0")
    with backend.use("fast"):       # the pool is the fast backend's
        yield


def _pair(seed=0):
    """Two N x N tensors, and a pool with no dead buffer in it: the next dead one is the only one."""
    g = ta.Generator().manual_seed(seed)
    pair = ta.rand(N, N, generator=g), ta.rand(N, N, generator=g)
    _recycle.clear()
    return pair


def test_a_dead_output_buffer_is_reused(on):
    x, w = _pair()
    y = x @ w
    old = weakref.ref(y._data)
    del y
    z = x @ w
    assert z._data is old()


def test_a_buffer_that_is_still_referenced_is_not_reused(on):
    x, w = _pair()
    y = x @ w
    z = x @ w
    assert z._data is not y._data
    row = y[3]                  # a view keeps the buffer
    old = weakref.ref(y._data)
    del y
    z2 = x @ w
    assert z2._data is not old()
    assert row.tolist() == z[3].tolist()
    del row
    z3 = x @ w
    assert z3._data is old()


def test_outputs_saved_by_the_graph_are_not_reused(on):
    x, w = _pair(1)
    w.requires_grad_()
    (x @ w).tanh().sum().backward()
    expected = w.grad.clone()
    w.grad = None
    h = x @ w                   # tanh's backward needs tanh's output, and h holds x @ w
    loss = h.tanh().sum()
    del h
    for _ in range(4):          # would take the graph's buffers if the pool got them wrong
        (x @ x).tanh()
    loss.backward()
    assert w.grad.tolist() == expected.tolist()


def test_reused_contents_never_show(on, monkeypatch):
    # Every buffer handed out is filled with NaN first; the ops must overwrite all of it.
    monkeypatch.setattr(_recycle, "POISON", True)
    monkeypatch.setattr(_recycle, "MIN_BYTES", 0)
    monkeypatch.setattr(storage, "_SMALL", 0)
    for _ in range(3):          # fresh buffers, then reused ones
        a = ta.tensor([[1.0, 2.0], [3.0, 4.0]])
        b = ta.tensor([[5.0, 6.0], [7.0, 8.0]])
        assert (a @ b).tolist() == [[19.0, 22.0], [43.0, 50.0]]
        assert (a.unsqueeze(0) @ b.t().unsqueeze(0)).tolist() == [[[17.0, 23.0], [39.0, 53.0]]]
        assert (a + b).tolist() == [[6.0, 8.0], [10.0, 12.0]]
        assert (a * 2).tolist() == [[2.0, 4.0], [6.0, 8.0]]
        p = ta.tensor([0.0, 1.0986122886681098], dtype=ta.float64).softmax(-1)
        assert p.tolist() == pytest.approx([0.25, 0.75], abs=1e-12)
        assert ta.zeros(3).tolist() == [0.0, 0.0, 0.0]


def test_the_record_of_in_place_writes_does_not_follow_a_buffer(on):
    x, w = _pair()
    y = x @ w
    y.add_(1.0)
    y.mul_(2.0)
    assert y._version == 2
    old = weakref.ref(y._data)
    del y
    z = x @ w
    assert z._data is old()
    assert z._version == 0
    z.requires_grad_()
    (z * z).sum().backward()    # no stale "modified by an inplace operation" error
    assert z.grad.tolist() == (2 * z.detach()).tolist()


def test_the_pool_is_bounded(on, monkeypatch):
    _recycle.clear()
    before = _recycle.held_bytes()      # live buffers of other tests, if any
    monkeypatch.setattr(_recycle, "MAX_BYTES", before + 3 * N * N * 4)
    zero = ta.zeros(1)._data
    held = [_recycle.take(zero, N * N) for _ in range(3)]     # the pool is full of live buffers
    extra = _recycle.take(zero, N * N)                        # not pooled: nothing is dead
    assert _recycle.held_bytes() == before + 3 * N * N * 4
    refs = [weakref.ref(b) for b in held]
    del held
    other = _recycle.take(zero, N * N + 16)                   # a new size: the dead ones go
    assert all(r() is None for r in refs)
    assert _recycle.held_bytes() == before + (N * N + 16) * 4
    assert any(b is other for b in _recycle._pool["f", N * N + 16])  # and it is the one held
    assert extra is not other


def test_per_size_limit(on):
    _recycle.clear()
    before = _recycle.held_bytes()
    zero = ta.zeros(1, dtype=ta.float64)._data
    live = [_recycle.take(zero, 9000) for _ in range(_recycle.MAX_PER_SIZE + 3)]
    assert len({id(b) for b in live}) == len(live)
    assert _recycle.held_bytes() == before + _recycle.MAX_PER_SIZE * 9000 * 8


def test_two_threads_never_share_a_buffer(on):
    x, w = _pair()
    expected = {c: (x @ (w * c)).tolist() for c in (1.0, 3.0)}
    wc = {c: w * c for c in expected}
    bad = []

    def work(c):
        keep = []
        for i in range(60):
            y = x @ wc[c]
            keep.append(y)
            if i % 3 == 0:
                keep.pop(0)       # some die, some live: the pool hands buffers back and forth
            if y.tolist() != expected[c]:
                bad.append(c)

    ts = [threading.Thread(target=work, args=(c,)) for c in expected]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert bad == []


def test_the_reference_backend_takes_fresh_buffers():
    with backend.use("reference"):
        y = ta.rand(N, N) * 2.0
        old = weakref.ref(y._data)
        del y
        assert old() is None        # no pool holds on to it: it was freed with its tensor


@pytest.mark.parametrize("env, expected", [({"TINYATTN_RECYCLE": "0"}, "0.0 False"),
                                           ({"TINYATTN_POISON": "1"}, "nan True")])
def test_modes(env, expected):
    code = ("from tinyattn.fast import recycle as _recycle; import tinyattn as ta; "
            "b = _recycle.take(ta.zeros(1)._data, 4); "
            "print(b[0], _recycle.held_bytes() > 0)")
    env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == expected
