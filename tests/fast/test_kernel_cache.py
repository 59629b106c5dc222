"""The on-disk kernel cache is dropped when any kernel source changes (numba alone would only
notice a change to the kernel's own file, not to a helper it calls from another file)."""
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.jit_only
def test_editing_a_helper_file_drops_the_cache(tmp_path):
    copy = tmp_path / "tinyattn"
    shutil.copytree(ROOT / "tinyattn", copy, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    run = [sys.executable, "-c", "import tinyattn as ta; print((ta.ones(3) * 2).exp().sum().item())"]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    cache = copy / "fast" / "__pycache__"
    assert list(cache.glob("*.nbi")), ("kernels were not cached", first.stderr, sorted(p.name for p in cache.iterdir()))
    stamp = (cache / "tinyattn-kernels.sha256").read_text()
    # a no-op edit to a helper file that no kernel file of the test's ops lives in
    with open(copy / "fast" / "exp.py", "a") as f:
        f.write("\n# edited\n")
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert again.stdout == first.stdout
    assert (cache / "tinyattn-kernels.sha256").read_text() != stamp
    assert "compiling" in again.stderr  # the cache was rebuilt, not reused
    third = subprocess.run(run, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "compiling" not in third.stderr  # and reused once the sources are unchanged


WARM = r'''
import math, sys
import tinyattn as ta
print((ta.ones(3) * 2).exp().sum().item())
# what loading from the cache skipped: numba's refresh of its registries imports these
print(sorted(m for m in ("numba.np.arrayobj", "numba.np.linalg", "numba.typed.typeddict")
             if m in sys.modules))
print(ta.full((2,), 0.5).tanh().sum().item())      # a kernel the first run did not compile
print("numba.np.arrayobj" in sys.modules)
'''


@pytest.mark.jit_only
def test_a_warm_start_loads_kernels_without_refreshing_numbas_registries(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), TINYATTN_COMPILE_AHEAD="0")
    fill = [sys.executable, "-c", "import tinyattn as ta; (ta.ones(3) * 2).exp().sum().item()"]
    subprocess.run(fill, env=env, capture_output=True, text=True, check=True)
    warm = subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True, text=True,
                          check=True)
    total, skipped, tanh, refreshed = warm.stdout.split("\n")[:4]
    assert float(total) == pytest.approx(3 * math.exp(2), rel=1e-6)
    assert skipped == "[]", skipped     # numba's own load would have imported all three
    # a kernel compiled after the loads: numba's compiler refreshes the registries itself
    assert "compiling" in warm.stderr
    assert float(tanh) == pytest.approx(2 * math.tanh(0.5), rel=1e-6)
    assert refreshed == "True"


USER_KERNELS = '''
from tinyattn.fast.jit import kernel

@kernel
def string_hash(s):          # needs numba's hash secret, which a module numba imports lazily holds
    return hash(s)

@kernel
def checked(n):              # raises from compiled code
    if n > 3:
        raise ValueError("n is too big")
    return n * 2
'''

USE_USER_KERNELS = r'''
import sys
import user_kernels as k
try:
    k.checked(5)
except ValueError as e:
    print("raised:", e)
print(k.checked(2), k.string_hash("tinyattn") == hash("tinyattn"))
print("numba.np.arrayobj" in sys.modules)
'''


@pytest.mark.jit_only
def test_your_own_kernels_load_from_a_warm_cache_and_run(tmp_path):
    # Chapter 6 has users write kernels with the library's decorators: loading theirs without
    # numba's refresh must work too, including code that hashes a string or raises.
    (tmp_path / "user_kernels.py").write_text(USER_KERNELS)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), TINYATTN_COMPILE_AHEAD="0",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    runs = [subprocess.run([sys.executable, "-c", USE_USER_KERNELS], env=env, cwd=tmp_path,
                           capture_output=True, text=True) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.split("\n")[:2] == ["raised: n is too big", "4 True"], run.stdout
    # the first run compiled (numba's compiler refreshed its registries), the second only loaded
    assert [run.stdout.split("\n")[2] for run in runs] == ["True", "False"]


@pytest.mark.jit_only
def test_the_compile_message_appears_only_when_something_compiles(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), TINYATTN_COMPILE_AHEAD="0")
    env.pop("TINYATTN_QUIET_COMPILE", None)
    run = [sys.executable, "-c", "import tinyattn as ta; print((ta.ones(3) * 2).sum().item())"]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    lines = first.stderr.strip().splitlines()
    # one line when it starts, naming the kernel it compiles first; one at exit, with the count
    assert len(lines) == 2, first.stderr
    assert lines[0].startswith("tinyattn: compiling numba kernels for this CPU, first ")
    assert "elementwise._binary_scalar_packed" in lines[0]
    n, seconds = lines[1].split(" kernel")[0].split()[-1], lines[1].split(" in ")[1].split()[0]
    assert int(n) >= 2 and float(seconds) > 0, lines[1]
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert again.stdout == first.stdout and again.stderr == ""   # loaded: nothing to say
