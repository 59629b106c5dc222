"""tinyattn keeps freed tensor memory for reuse on glibc (see tinyattn/fast/malloc.py): without it a
training step spends a large part of its time outside matmul in page faults (measured:
benchmarks/RESULTS.md, fast/malloc.py: the page faults). The tuning is on by default and
TINYATTN_MALLOC_TUNING=0 turns it off."""
import os
import platform
import subprocess
import sys

import pytest

import tinyattn.fast.malloc as m

glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not glibc, reason="malloc tuning applies to glibc only")
def test_malloc_is_tuned_on_import():
    assert m.TUNED is True


@pytest.mark.skipif(not glibc, reason="malloc tuning applies to glibc only")
def test_malloc_tuning_can_be_turned_off():
    env = dict(os.environ, TINYATTN_MALLOC_TUNING="0")
    out = subprocess.run([sys.executable, "-c", "import tinyattn.fast.malloc as m; print(m.TUNED)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
