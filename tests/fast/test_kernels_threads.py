"""The fast backend's thread pool (tinyattn/fast/threads.py, fast/jobs.py) and the thread count
that tinyattn.set_num_threads gives it (tinyattn/backend.py).

What holds: parallel_for runs every index exactly once, in nested and concurrent calls too, and
re-raises a worker's exception; the workers survive exceptions and resizes, stop burning a core
when idle, keep no reference to a finished job; the pool imports none of its clients; and the
thread count takes and refuses what PyTorch's set_num_threads does."""

import threading
from array import array

import numba
import pytest

from tinyattn.fast import jobs, threads
from tinyattn.fast.buffers import buffer_at
from tinyattn.fast.jit import kernel


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, and a caller that waits for the worker instead of taking its block back
    (threads._adaptive): these tests check what the worker does with its block."""
    old = threads.num_threads()
    threads.set_num_threads(2)
    monkeypatch.setattr(threads, "_adaptive", False)
    yield
    threads.set_num_threads(old)


@pytest.mark.parametrize("n,parts", [(0, 2), (1, 2), (5, 2), (10, 3), (3, 8)])
def test_split_covers_range_in_order(n, parts):
    blocks = threads.split(n, parts)
    covered = [i for start, stop in blocks for i in range(start, stop)]
    assert covered == list(range(n))
    assert all(stop > start for start, stop in blocks)
    sizes = [stop - start for start, stop in blocks]
    assert not sizes or max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("n,min_chunk", [(0, 1), (1, 1), (7, 1), (100, 10), (100, 60)])
def test_parallel_for_runs_every_index_once(two_threads, n, min_chunk):
    seen = []
    names = set()
    lock = threading.Lock()

    def fn(start, stop):
        with lock:
            seen.extend(range(start, stop))
            names.add(threading.current_thread().name)

    threads.parallel_for(fn, n, min_chunk)
    assert sorted(seen) == list(range(n))
    if n >= 2 * min_chunk:
        assert len(names) == 2       # the caller and one pool thread
    else:
        assert names <= {threading.current_thread().name}


def test_parallel_for_reraises(two_threads):
    def fn(start, stop):
        if start > 0:
            raise ValueError("block failed")

    with pytest.raises(ValueError, match="block failed"):
        threads.parallel_for(fn, 10)


def test_env_var_sets_the_default_thread_count(monkeypatch):
    from tinyattn import backend
    old = backend._num_threads
    monkeypatch.setenv("TINYATTN_NUM_THREADS", "1")
    backend.set_num_threads(None)       # back to the default, which the variable sets
    try:
        assert backend.num_threads() == 1 and threads.num_threads() == 1
        calls = []
        threads.parallel_for(lambda a, b: calls.append((a, b)), 10)
        assert calls == [(0, 10)]    # one thread: everything inline, in one block
        monkeypatch.setenv("TINYATTN_NUM_THREADS", "two")
        with pytest.raises(ValueError, match="TINYATTN_NUM_THREADS.*'two'"):
            backend.num_threads()
    finally:
        monkeypatch.delenv("TINYATTN_NUM_THREADS")
        backend.set_num_threads(old)


def test_nested_and_concurrent_parallel_for_finish(two_threads):
    """A parallel_for inside a block, or from a second thread while the workers are busy, runs
    its blocks in its own thread instead of waiting for the workers (which would never come)."""
    results = []
    lock = threading.Lock()

    def inner(start, stop):
        with lock:
            results.extend(range(start, stop))

    def outer(start, stop):
        for i in range(start, stop):
            threads.parallel_for(lambda a, b, i=i: inner(100 * i + a, 100 * i + b), 4)

    threads.parallel_for(outer, 6)
    assert sorted(results) == sorted(100 * i + j for i in range(6) for j in range(4))

    seen = []
    callers = [threading.Thread(target=lambda k=k: threads.parallel_for(
        lambda a, b: seen.extend([(k, a, b)]), 10)) for k in range(3)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    for k in range(3):
        assert sorted(i for kk, a, b in seen if kk == k for i in range(a, b)) == list(range(10))


def test_workers_survive_an_exception_and_a_resize(two_threads):
    with pytest.raises(ValueError):
        threads.parallel_for(lambda a, b: (_ for _ in ()).throw(ValueError("x")) if a else None, 4)
    out = []
    threads.parallel_for(lambda a, b: out.append((a, b)), 4)
    assert sorted(out) == [(0, 2), (2, 4)]
    threads.set_num_threads(3)
    out.clear()
    threads.parallel_for(lambda a, b: out.append((a, b)), 6)
    assert sorted(out) == [(0, 2), (2, 4), (4, 6)]


def _blocks_of(n):
    out = []
    threads.parallel_for(lambda a, b: out.append((a, b)), n)
    return sorted(out)


def test_jobs_after_the_workers_fell_asleep(two_threads):
    # Workers spin SPIN_US after a job, then sleep: a job after a longer pause takes the slow
    # path (an Event) and must still run, as must a long job the caller sleeps through.
    import time
    assert _blocks_of(4) == [(0, 2), (2, 4)]
    for _ in range(3):
        time.sleep(threads.SPIN_US * 1e-6 * 5 + 0.002)
        assert _blocks_of(4) == [(0, 2), (2, 4)]
    slow = []
    threads.parallel_for(lambda a, b: (time.sleep(0.01 if a else 0), slow.append(a)), 2)
    assert sorted(slow) == [0, 1]
    for w in threads._workers:
        assert threads._flags[w._w + jobs.DONE] == w._seq     # every job reported done


def _child(code, **env):
    import os
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


def test_spinning_can_be_turned_off_and_is_validated():
    code = ("from tinyattn.fast import threads; threads.set_num_threads(2); out = [];"
            "[threads.parallel_for(lambda a, b: out.append((a, b)), 4) for _ in range(50)];"
            "print(threads._SPINNING, len(out))")
    r = _child(code, TINYATTN_SPIN_US="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "100"]
    r = _child(code, TINYATTN_SPIN_US="fast")
    assert r.returncode != 0 and "TINYATTN_SPIN_US" in r.stderr and "'fast'" in r.stderr


def test_idle_workers_do_not_burn_a_core(two_threads):
    import time
    _blocks_of(4)
    t0 = time.process_time()
    time.sleep(0.3)                       # the worker spins SPIN_US (5 ms) of this, then sleeps
    assert time.process_time() - t0 < 0.05


def test_workers_keep_no_reference_to_a_finished_job(two_threads):
    """A job's closure refers to the op's buffers; once parallel_for returns, nothing of it may
    stay alive in a worker, or tinyattn/fast/recycle.py could never hand those buffers out again."""
    import gc
    import weakref

    class Payload:
        pass

    payload = Payload()
    ref = weakref.ref(payload)

    def job(start, stop, payload=payload):
        payload.seen = (start, stop)

    threads.parallel_for(job, 100)
    del job, payload
    gc.collect()
    assert ref() is None


def test_torch_names_set_and_get_the_thread_count(monkeypatch):
    import tinyattn as ta
    monkeypatch.setattr(threads, "_adaptive", False)   # (the worker runs its block)
    from tinyattn import backend
    old = backend._num_threads
    try:
        ta.set_num_threads(1)
        assert ta.get_num_threads() == 1
        calls = []
        threads.parallel_for(lambda a, b: calls.append((a, b)), 10)
        assert calls == [(0, 10)]    # one thread: the caller runs everything, in one block
        ta.set_num_threads(2)
        assert ta.get_num_threads() == 2
        names = set()
        threads.parallel_for(lambda a, b: names.add(threading.current_thread().name), 10)
        assert len(names) == 2
    finally:
        backend.set_num_threads(old)


def test_more_threads_than_the_pool_holds_run_as_many_as_it_holds():
    import tinyattn as ta
    from tinyattn import backend
    old = backend._num_threads
    try:
        ta.set_num_threads(3 * threads.MAX_THREADS)
        assert ta.get_num_threads() == 3 * threads.MAX_THREADS      # what was asked, as PyTorch
        assert threads.num_threads() == threads.MAX_THREADS
        seen = []
        threads.parallel_for(lambda a, b: seen.extend(range(a, b)), 100)
        assert sorted(seen) == list(range(100))
    finally:
        backend.set_num_threads(old)


def test_the_reference_backend_keeps_the_count_for_the_fast_one():
    """The reference kernels run on the calling thread; the count set meanwhile is kept (by
    tinyattn/backend.py, which never imports the pool for it) and is the fast backend's when it
    is bound."""
    code = ("import tinyattn as ta\n"
            "ta.set_num_threads(3)\n"
            "print(ta.get_num_threads())\n"
            "ta.backend.use('fast')\n"
            "from tinyattn.fast import threads\n"
            "print(ta.get_num_threads(), threads.num_threads())")
    r = _child(code, TINYATTN_KERNELS="reference")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "3", "3"]


def test_the_pool_imports_none_of_its_clients():
    """threads.py and jobs.py know the kernels they run only through the runners registered with
    jobs.register: they import the pool's own helpers and nothing else of tinyattn."""
    import ast
    from pathlib import Path
    here = Path(threads.__file__).parent
    for name in ("threads.py", "jobs.py"):
        imported = set()
        for node in ast.walk(ast.parse((here / name).read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                imported |= {node.module} if node.module else {a.name for a in node.names}
        assert imported <= {"jit", "buffers", "jobs"}, (name, imported)


@kernel
def _mark(words):
    """A runner for the test below: out[w[2]] = 7, out's address in w[1] (w: the job's words)."""
    w = buffer_at(words, 3, numba.int64)
    out = buffer_at(w[1], 4, numba.int64)
    out[w[2]] = 7


def _post_mark(words, at, worker, start, stop, out_address):
    words[at + 1] = out_address
    words[at + 2] = start


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="compiled jobs: compiled mode only")
def test_a_registered_runner_runs_in_the_worker_without_python(two_threads, monkeypatch):
    kind = jobs.register(_mark)
    threads._get_workers()      # (two_threads: the caller leaves the worker its block)
    monkeypatch.setattr(threads, "_spins", 1 << 60)     # the worker must be spinning, not asleep
    threads.parallel_for(lambda a, b: None, 2)
    out, python_blocks = array("q", [0] * 4), []
    threads.parallel_for(lambda a, b: python_blocks.append((a, b)), 2,
                         job=(kind, _post_mark, (out.buffer_info()[0],)))
    assert python_blocks == [(0, 1)]                    # the caller's block: a Python call
    assert list(out) == [0, 7, 0, 0]                    # the worker's: the runner, from numbers


@pytest.mark.parametrize("bad,message", [(0, "a positive integer, got 0"),
                                         (-3, "a positive integer, got -3"),
                                         (2.5, "an int, but got float"), ("2", "an int, but got str"),
                                         (True, "an int, but got bool"),
                                         (None, "an int, but got NoneType")])
def test_set_num_threads_refuses_what_pytorch_refuses(bad, message):
    import tinyattn as ta
    old = ta.get_num_threads()
    with pytest.raises(RuntimeError, match=f"set_num_threads expects {message}"):
        ta.set_num_threads(bad)
    assert ta.get_num_threads() == old   # nothing changed


@pytest.mark.skipif(__import__("numba").config.DISABLE_JIT, reason="compiled only")
@pytest.mark.parametrize("typecode", ["f", "d"])
def test_a_buffer_written_down_as_a_number_is_the_same_buffer(typecode):
    """buffers.address and buffers.buffer_at, which carry a block's buffers to a worker in its
    job words (fast/jobs.py): the rebuilt buffer reads and writes the original's memory."""
    from array import array

    import numba

    from tinyattn.fast.buffers import address, buffer_at

    dtype = numba.float32 if typecode == "f" else numba.float64

    @numba.njit
    def round_trip(words, buf):
        words[0] = address(buf, 2)
        words[1] = len(buf) - 2
        view = buffer_at(words[0], words[1], dtype)
        view[0] = 7.0
        total = 0.0
        for i in range(len(view)):
            total += view[i]
        return total, len(view)

    buf = array(typecode, [1.0, 2.0, 3.0, 4.0, 5.0])
    words = array("q", [0, 0])
    assert round_trip(words, buf) == (16.0, 3)
    assert list(buf) == [1.0, 2.0, 7.0, 4.0, 5.0]
    assert words[0] == buf.buffer_info()[0] + 2 * buf.itemsize


def test_run_two_runs_both_once_and_reraises(two_threads):
    """run_two: first on this thread, second on a worker; an exception from either is raised
    after both finished; inside a parallel_for block (workers busy) both run here, in order."""
    here = threading.get_ident()
    ran = []
    threads.run_two(lambda a, b: ran.append(("first", (a, b), threading.get_ident())),
                    lambda a, b: ran.append(("second", (a, b), threading.get_ident())))
    assert sorted((name, span) for name, span, _ in ran) == [("first", (0, 1)), ("second", (0, 1))]
    assert {name: tid for name, _, tid in ran}["first"] == here
    done = []

    def fail(a, b):
        raise ValueError("from a block")

    def slow(a, b):
        import time
        time.sleep(0.01)
        done.append(1)
    for first, second in ((fail, slow), (slow, fail)):
        with pytest.raises(ValueError, match="from a block"):
            threads.run_two(first, second)
    assert done == [1, 1]
    inner = []
    threads.parallel_for(lambda a, b: threads.run_two(
        lambda *_: inner.append((a, "first")), lambda *_: inner.append((a, "second"))), 2)
    assert sorted(inner) == [(0, "first"), (0, "second"), (1, "first"), (1, "second")]


@pytest.mark.parametrize("v2,v1,want", [
    ("max 100000", None, None),                         # v2, no limit
    ("150000 100000", None, 1.5),                       # v2: docker --cpus 1.5
    (None, ("200000", "100000"), 2.0),                  # v1 quota / period
    (None, ("-1", "100000"), None),                     # v1, no limit
    (None, None, None)])                                # no cgroup files at all
def test_cgroup_cpu_quota_is_read_from_either_version(tmp_path, monkeypatch, v2, v1, want):
    from tinyattn import backend
    paths = [tmp_path / "cpu.max", tmp_path / "quota", tmp_path / "period"]
    for path, text in zip(paths, [v2] + list(v1 or (None, None))):
        if text is not None:
            path.write_text(text + "\n")
    monkeypatch.setattr(backend, "CGROUP_CPU_MAX", str(paths[0]))
    monkeypatch.setattr(backend, "CGROUP_V1_QUOTA", (str(paths[1]), str(paths[2])))
    assert backend.cgroup_cpu_quota() == want


def test_the_default_thread_count_is_what_the_process_may_use(monkeypatch):
    """Affinity (taskset) and whole CPUs of the cgroup quota, not the machine's CPU count."""
    from tinyattn import backend
    monkeypatch.setattr(backend.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(backend, "cgroup_cpu_quota", lambda: None)
    assert backend.usable_cpus() == 4
    monkeypatch.setattr(backend, "cgroup_cpu_quota", lambda: 1.5)
    assert backend.usable_cpus() == 1
    monkeypatch.setattr(backend, "cgroup_cpu_quota", lambda: 0.5)   # still one thread
    assert backend.usable_cpus() == 1
    monkeypatch.setattr(backend, "cgroup_cpu_quota", lambda: 3.0)
    monkeypatch.setattr(backend.os, "sched_getaffinity", lambda pid: {5}, raising=False)
    assert backend.usable_cpus() == 1
    monkeypatch.setattr(backend, "_usable", 3)
    monkeypatch.delenv("TINYATTN_NUM_THREADS", raising=False)
    assert backend._default_num_threads() == 3
    monkeypatch.setenv("TINYATTN_NUM_THREADS", "2")                # the variable still wins
    assert backend._default_num_threads() == 2
