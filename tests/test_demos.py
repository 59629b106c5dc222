"""Every demo's --quick run: it must train for real (the loss falls), write metrics.json with
accuracies in [0, 1] and `seconds`, draw SVG pictures that parse as XML, and save a checkpoint."""
import json
import pathlib
import runpy
import sys
import xml.etree.ElementTree as ET

import pytest

DEMOS = pathlib.Path(__file__).resolve().parent.parent / "demos"
TRAINING_DEMOS = ["two_moons", "transformer"]


def run_demo(name, *argv):
    if str(DEMOS) not in sys.path:
        sys.path.insert(0, str(DEMOS))
    module = runpy.run_path(str(DEMOS / f"{name}.py"), run_name=f"demo_{name}")
    return module["main"](list(argv))


@pytest.mark.jit_only
@pytest.mark.parametrize("name", TRAINING_DEMOS)
def test_quick_run_trains_and_writes_its_outputs(name, tmp_path, capsys):
    result = run_demo(name, "--quick", "--out", str(tmp_path))
    losses = result["losses"]
    assert len(losses) >= 2 and losses[-1] < 0.8 * losses[0], losses
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["seconds"] > 0
    for k, v in metrics.items():
        if "acc" in k or "exact" in k:
            assert 0.0 <= v <= 1.0, (k, v)
    svgs = sorted(tmp_path.glob("*.svg"))
    assert svgs, "the demo drew no pictures"
    for svg in svgs:
        assert ET.parse(svg).getroot().tag.endswith("svg")
    assert (tmp_path / "checkpoint.safetensors").stat().st_size > 0
    out = capsys.readouterr().out
    assert "====" in out  # the final summary line


@pytest.mark.parametrize("name", sorted(p.stem for p in DEMOS.glob("*.py") if p.stem != "common"))
def test_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_demo(name, "--help")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--seed" in out and "--out" in out


def test_same_seed_same_numbers(tmp_path):
    a = run_demo("two_moons", "--quick", "--steps", "15", "--out", str(tmp_path / "a"))
    b = run_demo("two_moons", "--quick", "--steps", "15", "--out", str(tmp_path / "b"))
    c = run_demo("two_moons", "--quick", "--steps", "15", "--seed", "1", "--out",
                 str(tmp_path / "c"))
    assert a["losses"] == b["losses"] and a["losses"] != c["losses"]


@pytest.mark.jit_only
def test_transformer_same_seed_same_numbers(tmp_path):
    tiny = ["--quick", "--epochs", "2", "--train-size", "256", "--valid-size", "16",
            "--test-size", "16"]
    a = run_demo("transformer", *tiny, "--out", str(tmp_path / "a"))
    b = run_demo("transformer", *tiny, "--out", str(tmp_path / "b"))
    c = run_demo("transformer", *tiny, "--seed", "1", "--out", str(tmp_path / "c"))
    assert a == b and a["losses"] != c["losses"]
