"""Tests of the shared thread pool helper tinyattn.kernels.threads."""

import threading

import pytest

from tinyattn.kernels import threads


@pytest.fixture
def two_threads():
    old = threads.num_threads()
    threads.set_num_threads(2)
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


def test_env_var_sets_thread_count(monkeypatch):
    old = threads.num_threads()
    monkeypatch.setenv("TINYATTN_NUM_THREADS", "1")
    threads.set_num_threads(None)
    try:
        assert threads.num_threads() == 1
        calls = []
        threads.parallel_for(lambda a, b: calls.append((a, b)), 10)
        assert calls == [(0, 10)]    # one thread: everything inline, in one block
    finally:
        monkeypatch.delenv("TINYATTN_NUM_THREADS")
        threads.set_num_threads(old)


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
