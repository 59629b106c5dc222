"""In-place changes inside the autograd graph, as PyTorch does them: recorded ops, version
counters, edges bound when a node is made. Hand-computed values everywhere, and PyTorch beside
them when it is installed.

What holds: an in-place op gives the out-of-place op's gradient; a write of a value that needs a
gradient (setitem) puts the written tensor in the graph, and a write of a constant (zero_, fill_,
copy_) keeps it there with gradient 0 for what it overwrote; changing a value that backward still
needs raises, as in PyTorch; a leaf that requires grad refuses in-place writes."""
import pytest

import tinyattn as ta

try:
    import torch
except ImportError:  # parity checks skip; the hand-computed ones still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def both(fn, *values):
    """fn(lib, *leaves) on tinyattn and on PyTorch (when installed): the leaves' grads."""
    out = []
    libs = [ta] + ([torch] if torch is not None else [])
    for lib in libs:
        leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in values]
        fn(lib, *leaves).sum().backward()
        out.append([leaf.grad.tolist() for leaf in leaves])
    return out


def flat(x):
    return [v for item in x for v in flat(item)] if isinstance(x, list) else [x]


def same(results):
    for r in results[1:]:
        for a, b in zip(results[0], r):
            assert flat(a) == pytest.approx(flat(b), abs=1e-12)
    return results[0]


def test_masked_write_into_a_tensor_inside_the_graph():
    # masking scores by hand: X[~mask] = -1e6 on a non-leaf, then a softmax over it
    def f(lib, x):
        s = x * 2.0
        mask = lib.tensor([[True, False, True], [True, True, False]])
        s[~mask] = -1e6
        return lib.softmax(s, -1) * lib.tensor([[1.0, 5.0, 2.0], [3.0, 1.0, 7.0]],
                                                dtype=lib.float64)
    (gx,) = same(both(f, [[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]]))
    assert gx[0][1] == 0.0 and gx[1][2] == 0.0           # overwritten: no gradient


def test_recorded_inplace_ops_match_the_out_of_place_gradient():
    def f(lib, a, b):
        h = a * 2.0
        h.mul_(b)                  # dh/da = 2 b, dh/db = old h = 2 a
        return h

    ga, gb = same(both(f, [1.0, -2.0], [3.0, 4.0]))
    assert ga == [6.0, 8.0] and gb == [2.0, -4.0]

    def g(lib, a):
        h = a * 1.0
        h.add_(1.0).clamp_(max=2.5)
        h.masked_fill_(lib.tensor([False, True, False]), 0.0)
        h += a                      # in place as well
        h.relu_()
        return h * h

    (ga,) = same(both(g, [0.5, -3.0, 4.0]))
    # by hand: h = relu(clamp(a + 1, max=2.5) masked + a) = [2, 0, 6.5]; d(h^2)/da = 2h h'
    assert ga == [8.0, 0.0, 13.0]


def test_an_op_that_read_the_old_value_sends_its_gradient_to_the_old_history():
    def f(lib, a):
        x = a * 1.0
        y = x * 3.0                 # reads x before the change
        x.mul_(10.0)
        return y + x                # d/da = 3 + 10
    (ga,) = same(both(f, [1.0, 2.0]))
    assert ga == [13.0, 13.0]

    def g(lib, h0, h1):             # a buffer read between two writes of the same slot
        buf = lib.zeros(2, dtype=lib.float64)
        buf[0] = h0
        y = buf * 5.0
        buf[0] = h1
        return y + buf
    g0, g1 = same(both(g, 1.0, 2.0))
    assert (g0, g1) == (5.0, 1.0)


def test_changing_a_saved_value_raises_as_in_pytorch():
    # exp saves its output; changing it makes the saved value wrong
    a = ta.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ExpBackward.*"
                                           "now at version 1"):
        b.sum().backward()
    # a mask that does not require grad, saved by a multiplication, then zeroed
    w = ta.tensor([1.0, 2.0], requires_grad=True)
    m = ta.tensor([3.0, 4.0])
    y = w * m
    m.fill_(0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # an optimizer step between forward and backward changes a parameter the graph saved
    p = ta.nn.Parameter(ta.tensor([1.0, 2.0]))
    loss = (p * p).sum()
    p.grad = ta.zeros(2)
    ta.optim.SGD([p], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    if torch is not None:   # PyTorch raises in the same three places
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = a.exp()
        b.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            b.sum().backward()


def test_changes_that_do_not_touch_saved_values_are_allowed():
    def f(lib, a):
        x = a + 1.0                 # add saves nothing
        y = x + a
        x.mul_(3.0)                 # fine: y's backward does not need x's values
        return y + x
    (ga,) = same(both(f, [1.0, 2.0]))
    assert ga == [5.0, 5.0]         # y: 1 (through x) + 1; x: 3


def test_versions_count_inplace_writes_and_views_share_them():
    t = ta.zeros(4)
    assert t._version == 0
    t.add_(1.0)
    v = t[1:3]
    v.fill_(5.0)
    t[0] = 2.0
    assert t._version == 3 and v._version == 3
    assert t.tolist() == [2.0, 5.0, 5.0, 1.0]
    if torch is not None:
        u = torch.zeros(4)
        u.add_(1.0)
        u[1:3].fill_(5.0)
        u[0] = 2.0
        assert u._version == 3


def test_what_stays_an_error():
    w = ta.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w[0] = 1.0
    h = w * 2.0
    with pytest.raises(RuntimeError, match="view of a tensor in the autograd graph"):
        h[0:1].mul_(3.0)    # PyTorch rewrites h's history here; tinyattn asks for setitem
    # ... which is what x[idx] op= y does: the view is changed out of place, then written back
    def f(lib, a, b):
        h = a * 2.0
        h[0:2] += b
        h[1] *= b[0]
        return h
    ga, gb = same(both(f, [1.0, 2.0, 3.0], [10.0, 20.0]))
    assert gb == [1.0 + (2.0 * 2.0 + 20.0), 1.0 * 10.0]


def test_a_view_taken_before_its_base_changed_is_refused_not_silently_wrong():
    a = ta.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    v = b[0:2]
    b.mul_(3.0)            # v now holds 3a, but its history is b's old one
    with pytest.raises(RuntimeError, match="taken before its base tensor was changed"):
        v * 2.0
    w = b[0:2]             # taken again: fine, and right
    (w * 2.0).sum().backward()
    assert a.grad.tolist() == [6.0, 6.0, 0.0]
    # the loop that fills a buffer from its previous slot reads each view before the write
    h0 = ta.tensor([1.0], requires_grad=True)
    buf = ta.zeros(4, 1)
    buf[0] = h0
    for t in range(1, 4):
        buf[t] = buf[t - 1] * 2.0
    buf.sum().backward()
    assert h0.grad.tolist() == [1.0 + 2.0 + 4.0 + 8.0]


def _filled_buffer_grads(lib):
    # The seq2seq pattern: encoder states written into a buffer in a loop, then used.
    h = [lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) for _ in range(3)]  # (B, H)
    out = lib.zeros(2, 3, 2)                                                          # (B, T, H)
    for t in range(3):
        out[:, t] = h[t] * (t + 1)
    b = lib.tensor([5.0], requires_grad=True)
    out[0, 0, :] = b                        # broadcast into the region, and overwrite h[0][0]
    loss = (out * lib.tensor([[[0.5, -1.0]]])).sum()
    loss.backward()
    return [x.grad.tolist() for x in h], b.grad.tolist()


def test_setitem_of_a_value_that_requires_grad_puts_the_buffer_in_the_graph():
    # d loss / d h[t] = (t + 1) * [0.5, -1] per row, except where b overwrote h[0]'s row 0;
    # d loss / d b = 0.5 - 1 (b was broadcast to both elements of that row)
    expected = ([[[0.0, 0.0], [0.5, -1.0]], [[1.0, -2.0], [1.0, -2.0]],
                 [[1.5, -3.0], [1.5, -3.0]]], [-0.5])
    assert _filled_buffer_grads(ta) == expected
    torch = pytest.importorskip("torch")
    assert _filled_buffer_grads(torch) == expected


def test_setitem_refuses_a_leaf_that_requires_grad():
    w = ta.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem: a leaf tensor that requires grad"):
        w[0] = ta.tensor(1.0, requires_grad=True)
    x = ta.zeros(3)
    x[0] = ta.tensor(1.0)                      # nothing requires grad: no graph
    assert not x.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("change", ["y.zero_()", "y.fill_(5.0)", "y.copy_(lib.tensor([1.0, 2.0]))"])
def test_writing_a_constant_into_a_tensor_in_the_graph_keeps_it_there(change):
    """PyTorch records y.zero_() (ZeroBackward) with gradient 0, so y stays in the graph and
    y.sum().backward() reaches x through the other terms."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        eval(change, {"lib": lib, "y": y})
        assert y.requires_grad
        (y * 3 + x).sum().backward()
        return y.tolist(), x.grad.tolist()
    values, grad = run(ta)
    assert grad == [1.0, 1.0]       # only the "+ x" term reaches x
    torch = pytest.importorskip("torch")
    assert (values, grad) == run(torch)
