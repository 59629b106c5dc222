"""Grad mode is per thread, as in PyTorch; no_grad, enable_grad, set_grad_enabled and
inference_mode behave as PyTorch's as context managers, decorators and function calls.

The threads are ordered with events, so each test checks one interleaving: one where a single
switch for the whole process would go wrong."""
import threading

import pytest

import tinyattn as ta
from tinyattn.autograd import Function


def _in_thread(fn):
    """Run fn in a new thread; return what it returned (or raise what it raised)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed back to the test's thread
            box["error"] = e
    t = threading.Thread(target=run)
    t.start()
    return t, box


def _join(t, box):
    t.join(10)
    assert not t.is_alive(), "the thread did not finish"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_no_grad_in_one_thread_leaves_another_threads_graph_on():
    entered, done = threading.Event(), threading.Event()

    def evaluator():
        with ta.no_grad():
            entered.set()
            done.wait(10)
            return ta.is_grad_enabled()
    t, box = _in_thread(evaluator)
    assert entered.wait(10)
    w = ta.ones(2, requires_grad=True)
    y = (w * 3.0).sum()                  # built while the other thread is inside no_grad
    assert ta.is_grad_enabled() and y.requires_grad and y.grad_fn is not None
    y.backward()
    assert w.grad.tolist() == [3.0, 3.0]
    done.set()
    assert _join(t, box) is False        # and the other thread was in no_grad all along


def test_overlapping_no_grad_blocks_in_threads_leave_grad_mode_on():
    # A enters, B enters, A leaves, B leaves: with one global switch B restored "off"
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with ta.no_grad():
            a_in.set()
            b_in.wait(10)
        a_out.set()
        return ta.is_grad_enabled()

    def b():
        a_in.wait(10)
        with ta.no_grad():
            b_in.set()
            a_out.wait(10)
        return ta.is_grad_enabled()
    ta_, abox = _in_thread(a)
    tb, bbox = _in_thread(b)
    assert _join(ta_, abox) is True and _join(tb, bbox) is True
    assert ta.is_grad_enabled()
    assert (ta.ones(1, requires_grad=True) * 2).requires_grad


class _Pause(Function):
    """y = x; its backward waits until told to go on, so another thread can look meanwhile."""
    inside, resume = threading.Event(), threading.Event()

    @staticmethod
    def forward(ctx, x):
        return x.detach().clone()

    @staticmethod
    def backward(ctx, g):
        _Pause.inside.set()
        _Pause.resume.wait(10)
        return g


def test_backward_in_one_thread_does_not_turn_grad_off_in_another():
    w = ta.ones(2, requires_grad=True)
    y = _Pause.apply(w).sum()
    t, box = _in_thread(y.backward)
    assert _Pause.inside.wait(10)        # the other thread is inside backward now
    assert ta.is_grad_enabled()
    v = ta.ones(2, requires_grad=True)
    assert (v * 2).grad_fn is not None
    _Pause.resume.set()
    _join(t, box)
    assert w.grad.tolist() == [1.0, 1.0] and ta.is_grad_enabled()


def test_a_new_thread_starts_with_grad_on_whatever_the_parent_has():
    with ta.no_grad():
        t, box = _in_thread(lambda: (ta.is_grad_enabled(), ta.is_inference_mode_enabled()))
        assert _join(t, box) == (True, False)
    with ta.inference_mode():
        t, box = _in_thread(lambda: (ta.is_grad_enabled(), ta.is_inference_mode_enabled()))
        assert _join(t, box) == (True, False)


def _probe(lib):
    """What grad mode each form leads to: (is_grad_enabled, is_inference_mode_enabled, does an
    op on a leaf that requires grad record a graph), in the order PyTorch users write them."""
    seen = []

    def look():
        w = lib.ones(2, requires_grad=True)
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled(),
                     (w * 2).requires_grad))

    @lib.inference_mode
    def inference_bare():
        look()

    @lib.inference_mode()
    def inference_called():
        look()

    @lib.inference_mode(False)
    def inference_off():
        look()

    @lib.no_grad
    def no_grad_bare():
        look()

    @lib.no_grad()
    def no_grad_called():
        look()

    @lib.enable_grad()
    def enable_grad_called():
        look()

    @lib.set_grad_enabled(False)
    def grad_off():
        look()
    look()                                  # defining them changed nothing
    inference_bare()
    inference_called()
    no_grad_bare()
    no_grad_called()
    grad_off()
    with lib.no_grad():
        enable_grad_called()
        inference_off()                     # inference_mode(False) turns grad mode on
        with lib.inference_mode(False):
            look()
    with lib.inference_mode():
        look()
        with lib.enable_grad():             # grad mode on, and still no graph
            look()
        with lib.inference_mode(False):     # both back
            look()
        with lib.no_grad():
            look()
    with lib.set_grad_enabled(False):
        look()
    lib.set_grad_enabled(False)             # a plain call sets it at once
    look()
    lib.set_grad_enabled(True)
    look()
    return seen


# by hand: (grad mode, inference mode, graph recorded)
EXPECTED = [
    (True, False, True),                    # after the definitions
    (False, True, False), (False, True, False),
    (False, False, False), (False, False, False),
    (False, False, False),
    (True, False, True),                    # enable_grad inside no_grad
    (True, False, True), (True, False, True),
    (False, True, False),
    (True, True, False),
    (True, False, True),
    (False, True, False),
    (False, False, False),
    (False, False, False),
    (True, False, True),
]


def test_grad_mode_forms_by_hand():
    assert _probe(ta) == EXPECTED
    assert ta.is_grad_enabled() and not ta.is_inference_mode_enabled()


def test_grad_mode_forms_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _probe(ta) == _probe(torch)


def test_tensors_made_in_inference_mode_do_not_require_grad():
    w = ta.ones(2, requires_grad=True)
    with ta.inference_mode():
        y = w * 2
        z = ta.ones(2, requires_grad=True)  # asked for explicitly: kept, as PyTorch
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad


def test_decorators_keep_the_name_and_return_value():
    @ta.inference_mode
    def f(x):
        """doc"""
        return x + 1
    assert f(1) == 2 and f.__name__ == "f" and f.__doc__ == "doc"
    assert ta.autograd.inference_mode is ta.inference_mode
    assert ta.autograd.no_grad is ta.no_grad
