"""Every demo's --quick run: it must train for real (the loss falls), write metrics.json with
accuracies in [0, 1] and `seconds`, draw SVG pictures that parse as XML, and save a checkpoint."""
import json
import pathlib
import runpy
import sys
import xml.etree.ElementTree as ET

import pytest

DEMOS = pathlib.Path(__file__).resolve().parent.parent / "demos"
TRAINING_DEMOS = ["two_moons", "dates", "long_sequences"]


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


# a few steps each: enough to compare numbers, not to learn
SMALL_RUNS = {"dates": ["--epochs", "1", "--per-epoch", "128", "--test-size", "40"],
              "long_sequences": ["--epochs", "1", "--train-size", "128"]}


@pytest.mark.jit_only
@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_seq2seq_demos_same_seed_same_numbers(name, tmp_path):
    runs = {}
    for label, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        out = tmp_path / label
        result = run_demo(name, "--quick", *SMALL_RUNS[name], "--seed", seed, "--out", str(out))
        metrics = json.loads((out / "metrics.json").read_text())
        runs[label] = (result["losses"], {k: v for k, v in metrics.items() if "seconds" not in k})
    assert runs["a"] == runs["b"]
    assert runs["a"][0] != runs["c"][0]
