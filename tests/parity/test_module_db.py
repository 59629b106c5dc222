"""PyTorch's own module samples, through tinyattn (tests/parity/_module_db.py does the walking).

Every ModuleInfo of torch's module_db whose class tinyattn.nn has is built from each of PyTorch's
constructor inputs, given PyTorch's weights through load_state_dict (so the parameter names and
shapes must be PyTorch's), and run on each of its forward inputs, float32 and float64, training
and eval where they differ: outputs must match, float64 gradients of the inputs and of every
parameter must match, and PyTorch's bad constructor or forward inputs must raise. What does not
match is listed in KNOWN with the reason; the test fails on anything new, and on a KNOWN entry
that no longer happens.

Needs torch and expecttest (which torch.testing._internal imports); .ci/run installs both.
"""
import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")

from torch.testing._internal.common_modules import module_db  # noqa: E402

import _module_db as M  # noqa: E402
import _op_db as D  # noqa: E402

KNOWN = {}


@pytest.fixture(scope="module")
def report():
    found = []
    infos = [i for i in module_db if M.tinyattn_module(i) is not None]
    for info in infos:
        M.check_module(info, found)
    return infos, found


def test_module_db_walk_covers_the_layers_tinyattn_offers(report):
    infos, _ = report
    names = {i.module_cls.__name__ for i in infos}
    assert len(names) >= 44, sorted(names)
    for name in ("Linear", "LayerNorm", "MultiheadAttention", "TransformerEncoderLayer", "GRU",
                 "LSTM", "Conv2d", "Embedding", "CrossEntropyLoss"):
        assert name in names


def test_every_module_matches_pytorch_or_is_a_known_deviation(report):
    new = D.new_differences(report[1], KNOWN)
    assert not new, "new differences from PyTorch:\n" + new


def test_known_module_deviations_still_occur(report):
    stale = D.stale_known(report[1], KNOWN)
    assert not stale, f"these no longer differ from PyTorch; remove them from KNOWN: {stale}"
