"""demos/common.py's progress bar notices a run whose throughput collapses (a busy machine) and
says once what to try; a run at a steady speed, or one that only starts slowly (compiling), hears
nothing."""
import io
import pathlib
import sys

import pytest

import tinyattn as ta

DEMOS = pathlib.Path(__file__).resolve().parents[2] / "demos"
if str(DEMOS) not in sys.path:
    sys.path.insert(0, str(DEMOS))
import common  # noqa: E402


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(common.Slowdown, "best", {})
    monkeypatch.setattr(common.Slowdown, "warned", False)


def run(watch, clock, rates, seconds=3.0):
    """Feed `watch` windows of `seconds` at each rate (examples/s); returns what each said."""
    done, said = 0, []
    for rate in rates:
        clock.t += seconds
        done += int(rate * seconds)
        said.append(watch.update(done))
    return said


def test_a_collapse_to_a_quarter_of_the_best_speed_is_reported_once(fresh, monkeypatch):
    monkeypatch.setattr(ta, "get_num_threads", lambda: 2)
    clock, out = Clock(), io.StringIO()
    watch = common.Slowdown("epoch", out, clock)
    assert run(watch, clock, [1000, 1200, 400, 320, 100, 100]) == [False] * 4 + [True, False]
    text = out.getvalue()
    assert text.count("note:") == 1
    assert "slowed to 100 ex/s from 1,200 ex/s" in text
    assert "TINYATTN_NUM_THREADS=1" in text and "close other programs" in text


def test_steady_or_slow_starting_runs_hear_nothing(fresh):
    clock, out = Clock(), io.StringIO()
    watch = common.Slowdown("epoch", out, clock)
    # a first window slowed by compiling, then steady with noise
    assert not any(run(watch, clock, [50, 900, 1000, 800, 950, 700]))
    assert out.getvalue() == ""


def test_one_thread_is_not_told_to_use_one_thread(fresh, monkeypatch):
    monkeypatch.setattr(ta, "get_num_threads", lambda: 1)
    clock, out = Clock(), io.StringIO()
    assert run(common.Slowdown("steps", out, clock), clock, [1000, 100])[-1]
    assert "close other programs" in out.getvalue() and "TINYATTN_NUM_THREADS" not in out.getvalue()


def test_the_progress_bar_watches_its_own_kind_of_line(fresh, monkeypatch):
    """Windows are compared within one kind of line (the description's first word): a slower
    kind (evaluation, generation) is not a collapse of the training's speed."""
    clock, out = Clock(), io.StringIO()
    monkeypatch.setattr(common.time, "perf_counter", clock)
    with common.Progress(10 ** 6, "epoch 1/2", stream=out) as bar:
        for _ in range(3):
            clock.t += 3.0
            bar.update(3000)
    with common.Progress(10 ** 6, "sampling", stream=out) as bar:
        clock.t += 3.0
        bar.update(30)
    assert "note:" not in out.getvalue()
    with common.Progress(10 ** 6, "epoch 2/2", stream=out) as bar:
        clock.t += 3.0
        bar.update(30)
    assert out.getvalue().count("note:") == 1
