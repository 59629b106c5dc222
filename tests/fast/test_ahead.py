"""The compile-ahead process (tinyattn/fast/ahead.py) and the lock on the kernel cache's writes.

The helper must compile what a training step asks for (or its work is lost), leave a cache that a
later process loads instead of compiling, and never outlive the process that started it."""
import ast
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from tinyattn.fast import ahead

ROOT = Path(__file__).resolve().parents[2]
jit_only = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="nothing compiles without the JIT")
two_cpus = pytest.mark.skipif(ahead._cpus() < 2, reason="the helper runs only with two CPUs")


def _env(**extra):
    env = dict(os.environ)
    env.pop("TINYATTN_COMPILE_AHEAD", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def test_every_entry_of_the_list_names_a_kernel():
    tables = list(ahead.tables())
    assert len(tables) == len(ahead.STEP)
    for table, key in tables:
        assert callable(table.fn)
        if not numba.config.DISABLE_JIT:
            assert len(table.signature(key)) == len(table.spec)


# Every kernel that benchmarks/run.py's start-up child (the demo transformer's first step) asks
# numba for, top level only (not the helpers compiled inside another kernel), in order; printed
# at exit, after the child's own output.
_RECORD = r'''
import atexit, json
from numba.core.dispatcher import Dispatcher
asked, depth, _compile = [], [0], Dispatcher.compile
def compile(self, sig):
    depth[0] += 1
    try:
        return _compile(self, sig)
    finally:
        depth[0] -= 1
        entry = (self, tuple(sig))
        if depth[0] == 0 and self.py_func.__module__.startswith("tinyattn") and entry not in asked:
            asked.append(entry)
Dispatcher.compile = compile
def report():
    from tinyattn.fast import ahead
    name = lambda d, sig: f"{d.py_func.__module__}.{d.py_func.__name__}{tuple(map(str, sig))}"
    print(json.dumps({"asked": [name(d, s) for d, s in asked],
                      "listed": [name(t.fn, t.signature(k)) for t, k in ahead.tables()]}))
atexit.register(report)
'''


def _startup_child():
    tree = ast.parse((ROOT / "benchmarks" / "run.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "STARTUP_CHILD":
            return node.value.value
    raise AssertionError("benchmarks/run.py has no STARTUP_CHILD")


@jit_only
def test_the_list_is_what_the_start_up_step_compiles_in_that_order():
    out = subprocess.run([sys.executable, "-c", _RECORD + _startup_child(), "tinyattn"],
                         capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["listed"] == got["asked"], (
        "update ahead.STEP: missing " + repr([k for k in got["asked"] if k not in got["listed"]])
        + ", not asked for " + repr([k for k in got["listed"] if k not in got["asked"]]))


_WAIT_FOR_HELPER = r'''
import json
from numba.core import event
from tinyattn.fast import ahead
helper = ahead.start()
code = helper.wait(timeout=600)
compiled = []
class Listener(event.Listener):
    def on_start(self, e): compiled.append(e.data["dispatcher"].py_func.__name__)
    def on_end(self, e): pass
event.register("numba:compile", Listener())
for table, key in ahead.tables():
    table[key]
print(json.dumps({"helper_exit": code, "compiled_here": compiled}))
'''


@jit_only
@two_cpus
def test_what_the_helper_compiled_a_later_process_loads(tmp_path):
    out = subprocess.run([sys.executable, "-c", _WAIT_FOR_HELPER], capture_output=True, text=True,
                         env=_env(NUMBA_CACHE_DIR=str(tmp_path)), cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"helper_exit": 0, "compiled_here": []}


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"   # exited, not reaped yet
    except FileNotFoundError:
        return True


@jit_only
@two_cpus
@pytest.mark.parametrize("how", ["exits", "is killed"])
def test_the_helper_does_not_outlive_its_parent(tmp_path, how):
    # The parent waits for a line before it exits (or sleeps): exiting at once, its atexit would
    # stop the helper before this test has looked at it, and the check below would fail whenever
    # the test process is slow to run.
    code = ("import sys, time, tinyattn as ta\n"
            "from tinyattn.fast import ahead\n"
            "ta.randn(3)\n"                            # a first compile: the helper starts
            "print(ahead._helper.pid, flush=True)\n"
            "sys.stdin.readline()\n"
            "if sys.argv[1] == 'is killed': time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", code, how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=_env(NUMBA_CACHE_DIR=str(tmp_path)), cwd=ROOT)
    pid = int(parent.stdout.readline())
    assert not _gone(pid)      # it is still compiling: the list takes many seconds
    parent.stdin.write("go\n")
    parent.stdin.flush()
    if how == "is killed":
        parent.send_signal(signal.SIGKILL)   # no atexit: the helper sees its pipe close
    parent.wait(timeout=60)
    deadline = time.monotonic() + 20
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_no_helper_when_turned_off():
    code = "from tinyattn.fast import ahead; print(ahead.start())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(TINYATTN_COMPILE_AHEAD="0"), cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "None", out.stderr[-2000:]


_SAVE_AFTER_A_LINE = r'''
import sys
import tinyattn as ta
from tinyattn.kernels import random   # a reference file the fast backend runs (jit.adopt)
print(random.normal._cache._impl.locator.get_cache_path(), flush=True)
sys.stdin.readline()
ta.randn(3)                # compiles random.normal and saves it in the cache
print("saved", flush=True)
'''


@jit_only
def test_a_save_to_the_kernel_cache_waits_for_the_lock(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", _SAVE_AFTER_A_LINE], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=_env(NUMBA_CACHE_DIR=str(tmp_path), TINYATTN_COMPILE_AHEAD="0"),
                             cwd=ROOT)
    try:
        cache = Path(child.stdout.readline().strip())
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / "tinyattn-cache.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            child.stdin.write("go\n")
            child.stdin.flush()
            # compiling normal takes a while; the save must then wait for us
            ready, _, _ = select.select([child.stdout], [], [], 5)
            assert not ready, child.stdout.readline()
            assert not list(cache.glob("random.normal-*.nbi"))
        assert child.stdout.readline().strip() == "saved"
        assert list(cache.glob("random.normal-*.nbi"))
    finally:
        child.kill()
        child.wait()
