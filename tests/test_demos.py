"""Every demo's --quick run: it must train for real (the loss falls), write metrics.json with
accuracies in [0, 1] and `seconds`, draw SVG pictures that parse as XML, and save a checkpoint."""
import json
import math
import pathlib
import runpy
import sys
import xml.etree.ElementTree as ET

import pytest

DEMOS = pathlib.Path(__file__).resolve().parent.parent / "demos"
TRAINING_DEMOS = ["two_moons"]


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


# ---------------------------------------------------------------------------- positional_encoding


def test_positional_encoding_draws_the_table_and_its_dot_products(tmp_path, capsys):
    result = run_demo("positional_encoding", "--quick", "--out", str(tmp_path))
    pe, dots = result["table"].tolist(), result["dots"].tolist()
    T, d = len(pe), len(pe[0])
    assert (T, d) == (32, 32)
    for p, j in [(0, 0), (0, 1), (1, 0), (1, 1), (7, 4), (7, 5), (31, 30), (31, 31)]:
        angle = p / 10000 ** (2 * (j // 2) / d)
        want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
        assert pe[p][j] == pytest.approx(want, abs=1e-12), (p, j)
    for p in range(T):
        assert dots[p][p] == pytest.approx(d / 2, abs=1e-9)  # sin^2 + cos^2 = 1 per pair
    # PE(p) . PE(p + 3) = sum_i cos(3 w_i) for every p, worked out here from the definition
    want = sum(math.cos(3 / 10000 ** (2 * i / d)) for i in range(d // 2))
    for p in range(T - 3):
        assert dots[p][p + 3] == pytest.approx(want, abs=1e-9)
    assert result["rotation_error"] < 1e-9 and result["distance_error"] < 1e-9
    names = {svg.name for svg in tmp_path.glob("*.svg")}
    assert names == {"encoding.svg", "waves.svg", "dot_products.svg", "dot_by_distance.svg"}
    for svg in tmp_path.glob("*.svg"):
        assert ET.parse(svg).getroot().tag.endswith("svg")
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["seconds"] > 0 and metrics["d_model"] == 32
    assert "====" in capsys.readouterr().out
