"""Every demo's --quick run: it must train for real (the loss falls), write metrics.json with
accuracies in [0, 1] and `seconds`, draw SVG pictures that parse as XML, save a checkpoint, and
(every demo with attention) write the attention explorer with training snapshots."""
import collections
import json
import math
import pathlib
import runpy
import sys
import xml.etree.ElementTree as ET

import pytest

from tinyattn import viz

DEMOS = pathlib.Path(__file__).resolve().parents[2] / "demos"
NO_ATTENTION = {"two_moons"}   # an MLP on 2-d points: nothing for the attention explorer to show
TRAINING_DEMOS = ["two_moons", "dates", "long_sequences", "order_matters", "transformer", "gpt",
                  "show_attend_tell"]


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
    if name not in NO_ATTENTION:
        # the attention explorer, with snapshots from before and during training
        doc = json.loads((tmp_path / "explorer.json").read_text())
        assert doc["groups"] and len(doc["snapshots"]) >= 3
        assert doc["snapshots"][0]["step"] == 0
        html = (tmp_path / "explorer.html").read_text()
        assert html == viz.Explorer(doc).html()
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


# ---------------------------------------------------------------------------- attention_by_hand


def printed_matrix(text, title, n_rows=3):
    """The numbers of the matrix printed under the line `title` (skipping its column header)."""
    lines = text.splitlines()
    at = lines.index(title)
    rows = []
    for line in lines[at + 2:at + 2 + n_rows]:
        rows.append([float(v) for v in line.split()[1:]])
    return rows


def test_attention_by_hand_prints_the_numbers_worked_out_by_hand(tmp_path, capsys):
    run_demo("attention_by_hand", "--out", str(tmp_path))
    text = capsys.readouterr().out
    # Worked out with pencil and paper from X and the 0/1 weights in the demo's docstring:
    # a row of X picks rows of W and adds them.
    Q = [[1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 2]]
    K = [[2, 1, 0, 1], [0, 1, 1, 0], [1, 2, 1, 0]]
    V = [[0, 2, 1, 1], [1, 0, 1, 1], [1, 1, 1, 2]]
    S = [[3, 1, 2], [2, 2, 3], [5, 2, 4]]
    assert printed_matrix(text, "Q = X W_Q") == Q
    assert printed_matrix(text, "K = X W_K") == K
    assert printed_matrix(text, "V = X W_V") == V
    assert printed_matrix(text, "S = Q K^T (row: query token, column: key token)") == S
    scaled = [[s / 2 for s in row] for row in S]  # sqrt(d_k) = sqrt(4) = 2
    assert printed_matrix(text, "S / sqrt(d_k)") == scaled

    def softmax(row):
        e = [math.exp(s) for s in row]
        return [x / sum(e) for x in e]

    def weighted_values(weights):
        return [[sum(a * V[j][c] for j, a in enumerate(row)) for c in range(4)] for row in weights]

    A = [softmax(row) for row in scaled]
    assert A[2] == pytest.approx([0.5465, 0.1220, 0.3315], abs=1e-4)  # e^2.5, e^1, e^2 / 22.29
    close = {"abs": 6e-5}
    for got, want in zip(printed_matrix(text, "A = softmax(S / sqrt(d_k))"), A):
        assert got == pytest.approx(want, **close)
    for got, want in zip(printed_matrix(text, "H = A V"), weighted_values(A)):
        assert got == pytest.approx(want, **close)
    # causal: I sees only itself, "am" sees two equal scores (1, 1), "hungry" is unchanged
    causal = [[1, 0, 0], [0.5, 0.5, 0], A[2]]
    for got, want in zip(printed_matrix(text, "A = softmax(S / sqrt(d_k) + mask)"), causal):
        assert got == pytest.approx(want, **close)
    for got, want in zip(printed_matrix(text, "H = A V (masked)"), weighted_values(causal)):
        assert got == pytest.approx(want, **close)
    assert "gradcheck" in text and "====" in text
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["layer_vs_by_hand_max_diff"] < 1e-12
    assert {p.name for p in tmp_path.glob("*.svg")} == {"weights.svg", "causal_weights.svg"}
    for svg in tmp_path.glob("*.svg"):
        assert ET.parse(svg).getroot().tag.endswith("svg")


# ---------------------------------------------------------------------------- order_matters


def load_demo(name):
    if str(DEMOS) not in sys.path:
        sys.path.insert(0, str(DEMOS))
    return runpy.run_path(str(DEMOS / f"{name}.py"), run_name=f"demo_{name}")


def test_order_matters_pairs_are_bags_of_the_same_words_with_opposite_labels():
    om = load_demo("order_matters")
    rng = om["random"].Random(3)
    train_pairs, test_pairs = om["split_pairs"](rng)
    for combos in (train_pairs, test_pairs):
        data = om["make_pairs"](combos, 200, rng)
        for (a, label_a), (b, label_b) in zip(data[0::2], data[1::2]):
            assert collections.Counter(a) == collections.Counter(b) and a != b, (a, b)
            assert {label_a, label_b} == {0, 1}


def test_order_matters_held_out_combinations_are_unseen_but_their_words_are_seen():
    om = load_demo("order_matters")
    for seed in range(4):
        train_pairs, test_pairs = om["split_pairs"](om["random"].Random(seed))
        assert not set(train_pairs) & set(test_pairs)
        assert len(train_pairs) + len(test_pairs) == 12 * 12 and len(test_pairs) == 36
        seen = {w for pair in train_pairs for w in pair}
        assert seen == set(om["POSITIVE"]) | set(om["NEGATIVE"])


@pytest.mark.jit_only
def test_order_matters_bag_models_are_exactly_at_chance_and_runs_repeat(tmp_path):
    a = run_demo("order_matters", "--quick", "--epochs", "1", "--out", str(tmp_path / "a"))
    b = run_demo("order_matters", "--quick", "--epochs", "1", "--out", str(tmp_path / "b"))
    c = run_demo("order_matters", "--quick", "--epochs", "1", "--seed", "1", "--out",
                 str(tmp_path / "c"))
    # Both sentences of a pair are one bag of words, so (a) and (b) answer them alike whatever
    # their weights, and are right on exactly half of the pairs' sentences.
    for key in ("bag_of_words", "no_positions"):
        assert a[f"{key}_same_answer_pairs"] == 1.0
        assert a[f"{key}_test_acc"] == 0.5 and a[f"{key}_train_acc"] == 0.5
    assert a["no_positions_shuffle_gap"] < 1e-5 and a["no_positions_map_gap"] < 1e-5
    assert a["curves"] == b["curves"] and a["curves"] != c["curves"]


@pytest.mark.jit_only
def test_transformer_same_seed_same_numbers(tmp_path):
    tiny = ["--quick", "--epochs", "2", "--train-size", "256", "--valid-size", "16",
            "--test-size", "16"]
    a = run_demo("transformer", *tiny, "--out", str(tmp_path / "a"))
    b = run_demo("transformer", *tiny, "--out", str(tmp_path / "b"))
    c = run_demo("transformer", *tiny, "--seed", "1", "--out", str(tmp_path / "c"))
    assert a == b and a["losses"] != c["losses"]
