"""Ctrl-C inside the thread pool (tinyattn/fast/threads.py): a KeyboardInterrupt that lands at any
point of a threaded op leaves the library whole.

A timer thread interrupts the main thread (``_thread.interrupt_main``, what Ctrl-C and a
notebook's "interrupt kernel" do) after a random delay, once per op, hundreds of times: inside
threaded products, backward passes, training steps and bare parallel_for/run_two calls. After
each interrupt the same op runs again, uninterrupted, and must give exactly the result it gave
before the storm. At the end the pool lock is free, the workers are alive, and a worker still
runs blocks (its count of blocks run, threads.stats, grows: not a timing). A watchdog ends the
process if anything hangs.

Random timing rarely lands in the pool's few bytecodes that matter, such as the moment a lock is
taken: `interrupt_at` also interrupts a threaded op at every point where CPython can deliver a
signal in tinyattn/fast/threads.py, one point per run, in turn."""
import _thread
import dis
import faulthandler
import random
import signal
import sys
import threading
import time

import pytest

import tinyattn as ta
from tinyattn import backend, nn
from tinyattn.fast import jobs, threads

WATCHDOG_S = 120


class Interrupter:
    """Interrupts the main thread once per `arm()`, after a random delay, unless `disarm()`
    came first."""

    def __init__(self, seed, max_delay):
        self.rng = random.Random(seed)
        self.max_delay = max_delay
        self.lock = threading.Lock()
        self.armed = False
        self.go = threading.Event()
        self.stopping = False
        self.fired = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            if not self.go.wait(0.05):
                continue
            self.go.clear()
            time.sleep(self.rng.uniform(0.0, self.max_delay))
            with self.lock:
                if self.armed:
                    self.armed = False
                    self.fired += 1
                    _thread.interrupt_main()

    def arm(self):
        with self.lock:
            self.armed = True
        self.go.set()

    def disarm(self):
        with self.lock:
            self.armed = False
        # (an interrupt fired just before is raised at one of these bytecodes, inside the try)
        time.sleep(0)

    def close(self):
        self.stopping = True
        self.thread.join()


def storm(op, check, interrupts, max_delay, seed=0):
    """Run op() under random interrupts until `interrupts` have landed; after each, check() the
    next, uninterrupted op. Returns (interrupts that landed inside op, ops that finished)."""
    timer = Interrupter(seed, max_delay)
    landed = finished = 0
    try:
        while timer.fired < interrupts:
            try:        # an interrupt that lands between the inner try and here
                try:
                    timer.arm()
                    op()
                    timer.disarm()
                    finished += 1
                except KeyboardInterrupt:
                    landed += 1
                    timer.disarm()
                    check()
            except KeyboardInterrupt:
                pass
    finally:
        timer.close()
    return landed, finished


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Python's own Ctrl-C handler for the test: a process started in the background by a
    non-interactive shell (as CI may be) inherits SIGINT ignored, and then interrupt_main() does
    nothing at all."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.fixture
def two_threads():
    """The pool with two threads, and a watchdog that ends the process if anything hangs."""
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    old = threads.num_threads()
    threads.set_num_threads(2)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        threads.set_num_threads(old)


@pytest.fixture
def pool(two_threads):
    """Two threads on the fast backend."""
    with backend.use("fast"):
        yield


def assert_pool_whole():
    assert not threads._in_use
    workers = threads._workers
    assert workers and all(w._thread.is_alive() for w in workers)
    for w in workers:
        assert threads._flags[w._w + jobs.DONE] == threads._flags[w._w + jobs.CLAIM] == w._seq
        assert threads._flags[w._w + jobs.SLEEPING] == 0


def assert_still_threaded(monkeypatch, op):
    """With the caller waiting for its worker (no take-back), op() gives blocks to the worker,
    which runs them: its count grows."""
    monkeypatch.setattr(threads, "_adaptive", False)
    before = threads.stats()["ran_by_workers"]
    op()
    assert threads.stats()["ran_by_workers"] > before
    monkeypatch.setattr(threads, "_adaptive", True)


def test_interrupted_parallel_for_and_run_two_leave_the_pool_whole(two_threads, monkeypatch):
    """The bare pool, with Python blocks (compiled or not): every interrupted call leaves the
    next one right and threaded."""
    n = 2000
    out = [0] * n

    def fill(start, stop):      # (the sleep lets the other thread have the GIL)
        for i in range(start, stop):
            out[i] = i * i
        time.sleep(0.0002)

    def op():
        out[:] = [0] * n
        threads.parallel_for(fill, n)

    def pair():
        threads.run_two(lambda a, b: fill(0, n // 2), lambda a, b: fill(n // 2, n))

    expected = [i * i for i in range(n)]

    def check():
        op()
        assert out == expected
        out[:] = [0] * n
        pair()
        assert out == expected

    landed, _ = storm(lambda: (op(), pair()), check, interrupts=200, max_delay=0.002)
    assert landed >= 150
    check()
    assert_still_threaded(monkeypatch, op)
    assert_pool_whole()


def _values(*tensors):
    return [t.tolist() for t in tensors]


@pytest.mark.jit_only
def test_interrupted_products_and_backward_passes_leave_the_library_whole(pool, monkeypatch):
    g = ta.Generator().manual_seed(0)
    a = ta.randn(192, 192, generator=g, requires_grad=True)
    b = ta.randn(192, 192, generator=g, requires_grad=True)
    q, k, v = (ta.randn(2, 4, 128, 32, generator=g, requires_grad=True) for _ in range(3))

    def product():
        return (a @ b).tolist()

    def backward():
        a.grad = b.grad = q.grad = k.grad = v.grad = None
        loss = (a @ b).softmax(-1).sum() + nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True).square().sum()
        loss.backward()
        return _values(a.grad, b.grad, q.grad, k.grad, v.grad)

    want_product, want_backward = product(), backward()

    def check():
        assert product() == want_product
        assert backward() == want_backward

    landed, finished = storm(lambda: (product(), backward()), check, interrupts=250,
                             max_delay=0.004, seed=1)
    assert landed >= 200 and finished > 0
    check()
    assert_still_threaded(monkeypatch, product)
    assert_pool_whole()


@pytest.mark.jit_only
def test_interrupted_training_steps_leave_the_library_whole(pool, monkeypatch):
    """A small transformer layer trained with Adam, interrupted anywhere in forward, backward or
    the optimizer step; the check is the gradient of a second, fixed copy of the model."""
    ta.manual_seed(0)
    make = lambda: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)  # noqa
    model, fixed = make(), make()
    fixed.load_state_dict(model.state_dict())
    opt = ta.optim.Adam(model.parameters(), lr=1e-3)
    x = ta.randn(32, 32, 64, generator=ta.Generator().manual_seed(1))

    def step():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    def gradients():
        fixed.zero_grad()
        fixed(x).square().mean().backward()
        return _values(*(p.grad for p in fixed.parameters()))

    want = gradients()
    step()      # (compiled before the storm: an interrupt inside numba's compiler is numba's)

    def check():
        assert gradients() == want

    landed, finished = storm(step, check, interrupts=150, max_delay=0.006, seed=2)
    assert landed >= 100 and finished > 0
    check()
    assert_still_threaded(monkeypatch, lambda: gradients())
    assert_pool_whole()


# Where CPython 3.11 looks for a pending signal (and so raises KeyboardInterrupt): a function's
# first instruction (RESUME), after a call returns, after a backward jump.
_CALLS = {dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX") if name in dis.opmap}
_BACK = {code for name, code in dis.opmap.items()
         if "BACKWARD" in name and "NO_INTERRUPT" not in name}


def interrupt_at(op, k):
    """op() with a KeyboardInterrupt raised at the k-th signal check in threads.py's frames on
    this thread; the point's name, or None if op() ran to the end (k is past the last point)."""
    count = [0]
    last = {}

    def local(frame, event, arg):
        if event == "opcode":
            code = frame.f_code.co_code
            prev = last.get(frame)
            last[frame] = frame.f_lasti
            if prev is None or code[prev] in _CALLS or code[prev] in _BACK:
                count[0] += 1
                if count[0] == k:
                    raise KeyboardInterrupt(f"{frame.f_code.co_name}, line {frame.f_lineno}")
        return local

    def on_call(frame, event, arg):
        if frame.f_code.co_filename != threads.__file__:
            return None
        frame.f_trace_opcodes = True
        return local

    sys.settrace(on_call)
    try:
        op()
        return None
    except KeyboardInterrupt as exc:
        return str(exc)
    finally:
        sys.settrace(None)


def every_point(op, monkeypatch, adaptive):
    """Interrupt op() at each point in turn; after each, the pool is whole, op() is right again
    and its worker still runs blocks. Returns how many points there were."""
    want = op()
    k = 1
    while True:
        monkeypatch.setattr(threads, "_adaptive", adaptive)
        monkeypatch.setattr(threads, "_solo_until", 0.0)   # (the slow traced run: no back-off)
        where = interrupt_at(op, k)
        if where is None:
            return k - 1
        assert not threads._in_use, where
        assert op() == want, where
        monkeypatch.setattr(threads, "_adaptive", False)
        before = threads.stats()["ran_by_workers"]
        for _ in range(20):     # (a worker put to sleep by the slow traced run wakes up)
            op()
            if threads.stats()["ran_by_workers"] > before:
                break
        assert threads.stats()["ran_by_workers"] > before, f"not threaded after {where}"
        k += 1


@pytest.mark.parametrize("adaptive", [False, True], ids=["waiting", "taking back"])
def test_an_interrupt_at_any_point_of_the_pool_leaves_it_whole(two_threads, monkeypatch,
                                                              adaptive):
    n = 64
    out = [0] * n

    def fill(start, stop):
        for i in range(start, stop):
            out[i] = i * i + start

    def op():
        out[:] = [0] * n
        threads.parallel_for(fill, n)
        first = list(out)
        threads.run_two(lambda a, b: fill(0, n // 2), lambda a, b: fill(n // 2, n))
        return first, list(out)

    assert every_point(op, monkeypatch, adaptive) > 30
    assert_pool_whole()


@pytest.mark.jit_only
@pytest.mark.parametrize("adaptive", [False, True], ids=["waiting", "taking back"])
def test_an_interrupt_at_any_point_of_a_product_and_its_backward_leaves_the_library_whole(
        pool, monkeypatch, adaptive):
    """Compiled blocks handed over as numbers (the product) and two products at once (the
    backward pass's mm_pair)."""
    g = ta.Generator().manual_seed(3)
    a = ta.randn(128, 256, generator=g, requires_grad=True)
    b = ta.randn(256, 128, generator=g, requires_grad=True)

    def op():
        a.grad = b.grad = None
        out = a @ b
        out.sum().backward()
        return _values(out, a.grad, b.grad)

    assert every_point(op, monkeypatch, adaptive) > 40
    assert_pool_whole()
