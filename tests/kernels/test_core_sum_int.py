"""Regression: integer / bool sums over the last dim also work in the interpreted kernel mode."""
import os
import subprocess
import sys

import tinyattn as ta

CODE = ("import tinyattn as ta; "
        "print(ta.tensor([[True, False, True], [False, False, True]]).sum(1).tolist(), "
        "ta.tensor([[3, -4], [5, 6]]).sum(1).tolist(), ta.tensor([[3, -4], [5, 6]]).sum(0).tolist())")


def test_int_sums_compiled():
    assert ta.tensor([[True, False, True], [False, False, True]]).sum(1).tolist() == [2, 1]
    assert ta.tensor([[3, -4], [5, 6]]).sum(1).dtype is ta.int64


def test_int_sums_interpreted():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2, 1] [-1, 11] [8, 2]"
