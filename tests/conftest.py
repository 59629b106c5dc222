"""Suite-wide settings.

`@pytest.mark.jit_only` marks tests that train for hundreds of steps: compiled they take seconds,
interpreted (NUMBA_DISABLE_JIT=1, which CI also runs) minutes, and the interpreted run adds nothing
the smaller tests do not already check."""
import numba
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "jit_only: too slow with NUMBA_DISABLE_JIT=1; skipped there")


def pytest_collection_modifyitems(config, items):
    if not numba.config.DISABLE_JIT:
        return
    skip = pytest.mark.skip(reason="trains for many steps; skipped with NUMBA_DISABLE_JIT=1")
    for item in items:
        if "jit_only" in item.keywords:
            item.add_marker(skip)
