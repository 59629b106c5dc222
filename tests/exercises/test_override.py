"""backend.override: one function replaced for a `with` block, and put back on leaving it, by
an exception too; the kernel files themselves are never changed."""
import pytest

import tinyattn as ta
from tinyattn import backend
from tinyattn.kernels import softmax as reference_softmax
from tinyattn.nn import positional


def halves(x, out, O, R, I, log):
    for i in range(O * R * I):
        out[i] = 0.5


def test_a_kernel_override_reaches_every_op_and_ends_with_the_block():
    x = ta.tensor([1.0, 2.0, 3.0])
    before = backend.softmax
    with backend.override("softmax", "softmax_forward", halves):
        assert ta.softmax(x, 0).tolist() == [0.5, 0.5, 0.5]
        assert backend.softmax.softmax_backward is before.softmax_backward   # the rest stays
    assert backend.softmax is before
    assert ta.softmax(x, 0).tolist() == pytest.approx([0.0900306, 0.2447285, 0.6652409])


def test_the_kernel_files_are_not_changed():
    reference = reference_softmax.softmax_forward
    with backend.override("softmax", "softmax_forward", halves):
        assert reference_softmax.softmax_forward is reference
        with backend.use("reference"):          # binding a backend inside: its own kernels
            assert backend.softmax.softmax_forward is reference
    assert reference_softmax.softmax_forward is reference


def test_an_exception_in_the_block_restores_the_function():
    before = backend.softmax
    with pytest.raises(ZeroDivisionError):
        with backend.override("softmax", "softmax_forward", halves):
            1 / 0
    assert backend.softmax is before


def test_overrides_nest_and_unwind_in_order():
    x = ta.tensor([[1.0, 2.0]])

    def quarters(x, out, O, R, I, log):
        for i in range(O * R * I):
            out[i] = 0.25
    with backend.override("softmax", "softmax_forward", halves):
        with backend.override("softmax", "softmax_forward", quarters):
            assert ta.softmax(x, 1).tolist() == [[0.25, 0.25]]
        assert ta.softmax(x, 1).tolist() == [[0.5, 0.5]]
    assert ta.softmax(x, 1).sum().item() == pytest.approx(1.0)


def test_an_op_level_override_on_a_module_and_on_a_class():
    def ones(max_len, d_model, dtype=None):
        return ta.ones(max_len, d_model, dtype=dtype or ta.float32)
    library = positional.sinusoidal_table
    with backend.override(positional, "sinusoidal_table", ones):
        assert ta.nn.PositionalEncoding(4, max_len=3).pe.sum().item() == 12.0
    assert positional.sinusoidal_table is library
    assert ta.nn.PositionalEncoding(4, max_len=3).pe[0, 0].tolist() == [0.0, 1.0, 0.0, 1.0]

    # an inherited method is shadowed on the class for the block, then the base's is seen again
    layer = ta.nn.Linear(2, 2)
    assert "extra_repr" in vars(ta.nn.Linear)
    with backend.override(ta.nn.Sequential, "extra_repr", lambda self: "swapped"):
        assert ta.nn.Sequential(layer).extra_repr() == "swapped"
    assert "extra_repr" not in vars(ta.nn.Sequential)
    assert ta.nn.Sequential(layer).extra_repr() == ""


def test_bad_arguments_are_errors_naming_them():
    with pytest.raises(ValueError, match="'nope' is not a kernel family"):
        backend.override("nope", "f", halves)
    with pytest.raises(AttributeError, match="no function 'softmax_rows'"):
        backend.override("softmax", "softmax_rows", halves)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        backend.override(positional, "nope", halves)
    with pytest.raises(TypeError, match="must be callable"):
        backend.override("softmax", "softmax_forward", 3)
