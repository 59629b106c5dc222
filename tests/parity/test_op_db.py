"""PyTorch's own operator samples, through tinyattn (tests/parity/_op_db.py does the walking).

Every OpInfo of torch's op_db whose function tinyattn has (about 175 names) is run on every one of
PyTorch's sample inputs (generated from a fixed seed, so a failure repeats) for float32, float64,
int64, int32, uint8 and bool, contiguous and as strided views; results must match PyTorch's
values, shapes and dtypes (a float32 result may differ from PyTorch's by rounding if it is as
close to the float64 result as PyTorch's is); float64 gradients must match; PyTorch's error
inputs must raise. What does not match is listed in KNOWN with the reason; the test fails on
anything new, and on a KNOWN entry that no longer happens (so the list stays true).

Needs torch and expecttest (which torch.testing._internal imports); .ci/run installs both.
"""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

import _op_db as D  # noqa: E402

KNOWN = {
    ("nn.functional.embedding", "error"):
        "sparse=True asks for a sparse gradient; tinyattn has no sparse tensors and says so",
    ("norm", "error"): "the nuclear norm (p='nuc') raises NotImplementedError: no SVD",
    ("norm", "grad error"): "the same p='nuc' samples",
}


@pytest.fixture(scope="module")
def report():
    found = []
    ops = [o for o in op_db if D.tinyattn_function(o.name) is not None]
    for op in ops:
        torch.manual_seed(0)     # sample inputs are random: the same ones every run
        D.check_op(op, found)
        D.check_inplace(op, found)
        D.check_error_inputs(op, found)
    return ops, found


def test_op_db_walk_covers_the_ops_tinyattn_offers(report):
    ops, _ = report
    names = {o.name for o in ops}
    assert len(names) >= 170, len(names)
    for name in ("add", "matmul", "softmax", "nn.functional.cross_entropy", "einsum", "topk",
                 "nn.functional.scaled_dot_product_attention", "cumsum", "where", "scatter",
                 "scatter_add", "scatter_reduce", "index_add", "index_fill", "unique",
                 "unique_consecutive", "atan", "atan2"):
        assert name in names


def test_every_op_matches_pytorch_or_is_a_known_deviation(report):
    new = D.new_differences(report[1], KNOWN)
    assert not new, "new differences from PyTorch:\n" + new


def test_known_deviations_still_occur(report):
    stale = D.stale_known(report[1], KNOWN)
    assert not stale, f"these no longer differ from PyTorch; remove them from KNOWN: {stale}"
