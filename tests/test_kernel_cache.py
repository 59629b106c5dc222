"""The on-disk kernel cache is dropped when any kernel source changes (numba alone would only
notice a change to the kernel's own file, not to a helper it calls from another file)."""
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.jit_only
def test_editing_a_helper_file_drops_the_cache(tmp_path):
    copy = tmp_path / "tinyattn"
    shutil.copytree(ROOT / "tinyattn", copy, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    run = [sys.executable, "-c", "import tinyattn as ta; print((ta.ones(3) * 2).exp().sum().item())"]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    cache = copy / "kernels" / "__pycache__"
    assert list(cache.glob("*.nbi")), ("kernels were not cached", first.stderr, sorted(p.name for p in cache.iterdir()))
    stamp = (cache / "tinyattn-kernels.sha256").read_text()
    # a no-op edit to a helper file that no kernel file of the test's ops lives in
    with open(copy / "kernels" / "exp.py", "a") as f:
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
