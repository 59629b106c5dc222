"""The demos' --quick runs: each must train for real (the loss falls), not just exit 0."""
import pathlib
import runpy
import sys

DEMOS = pathlib.Path(__file__).resolve().parent.parent / "demos"


def _run_demo(name, argv):
    module = runpy.run_path(str(DEMOS / f"{name}.py"), run_name=f"demo_{name}")
    old = sys.argv
    try:
        return module["main"](argv)
    finally:
        sys.argv = old


def test_two_moons_quick_learns(capsys):
    losses, acc = _run_demo("two_moons", ["--quick"])
    assert losses[-1] < 0.6 * losses[0]
    assert acc > 0.8
    out = capsys.readouterr().out
    assert "final: loss" in out and "#" in out and "." in out
