"""Ctrl-C in a demo's training saves where it was, and `--resume` continues it to the very same
numbers as a run never stopped (demos/common.py, `Training`).

The interruption is the test hook TINYATTN_DEMO_INTERRUPT_AT=N: at the end of training step N the
demo sends itself the SIGINT of a Ctrl-C, which takes the path of a key press."""
import json
import os
import pathlib
import random
import runpy
import subprocess
import sys

import pytest

import tinyattn as ta

DEMOS = pathlib.Path(__file__).resolve().parents[2] / "demos"
# demos/transformer.py, 2 epochs of 10 steps of 64 sequences; weights averaged every 2 steps of
# the last epoch, so that the average too crosses the interruption
SMALL = ["--quick", "--epochs", "2", "--train-size", "640", "--valid-size", "20",
         "--test-size", "20", "--beam-size", "2", "--average-every", "2"]


def common_module():
    if str(DEMOS) not in sys.path:
        sys.path.insert(0, str(DEMOS))
    import common
    return common


def transformer(*argv):
    common_module()
    module = runpy.run_path(str(DEMOS / "transformer.py"), run_name="demo_transformer")
    return module["main"](list(argv))


def outcome(result, out):
    """Everything a run computes: the loss of every step, its metrics (not its timings), and
    the bits of the saved weights."""
    metrics = json.loads((out / "metrics.json").read_text())
    weights = ta.load(out / "checkpoint.safetensors")["model"]
    return (result["step_losses"], result["losses"],
            {k: v for k, v in metrics.items() if "second" not in k},
            {k: v.tolist() for k, v in weights.items()})


@pytest.mark.jit_only
def test_transformer_interrupted_and_resumed_ends_as_if_never_stopped(tmp_path, monkeypatch,
                                                                       capsys):
    common = common_module()
    stop_at = 13                                 # in the middle of epoch 2
    straight = outcome(transformer(*SMALL, "--out", str(tmp_path / "a")), tmp_path / "a")
    assert len(straight[0]) == 20 and len(set(straight[0])) == 20

    out = tmp_path / "b"
    monkeypatch.setenv(common.INTERRUPT_AT, str(stop_at))
    with pytest.raises(common.Stopped) as stopped:
        transformer(*SMALL, "--out", str(out))
    assert f"step {stop_at} saved to {out / common.RESUME_FILE}" in str(stopped.value)
    assert (out / common.RESUME_FILE).exists() and not (out / "metrics.json").exists()
    saved = ta.load(out / common.RESUME_FILE)
    assert saved["counters"]["step"] == stop_at
    assert saved["state"]["losses"] == straight[0][:stop_at]

    monkeypatch.delenv(common.INTERRUPT_AT)
    resumed = outcome(transformer(*SMALL, "--out", str(out), "--resume"), out)
    assert f"resuming from {out / common.RESUME_FILE}: epoch 2, step {stop_at}" in \
        capsys.readouterr().out
    assert resumed == straight                   # every loss, metric and weight, bit for bit
    assert not (out / common.RESUME_FILE).exists()   # finished: nothing left to resume


def test_resume_refuses_a_checkpoint_of_other_settings(tmp_path, monkeypatch):
    common = common_module()
    model = ta.nn.Linear(2, 2)
    opt = ta.optim.SGD(model.parameters(), lr=0.1)
    args = common.parser("x", "", resumable=True).parse_args(["--seed", "1"])
    run = common.Training(args, tmp_path, model=model, optimizer=opt)
    run.save()
    args = common.parser("x", "", resumable=True).parse_args(["--seed", "2", "--resume"])
    with pytest.raises(SystemExit, match=r"other settings \(seed\)"):
        common.Training(args, tmp_path, model=model, optimizer=opt)
    args = common.parser("x", "", resumable=True).parse_args(
        ["--seed", "2", "--resume", str(tmp_path / "no")])
    with pytest.raises(SystemExit, match="no checkpoint at"):
        common.Training(args, tmp_path, model=model, optimizer=opt)
    # a demo that does not train through Training has no --resume to ignore silently
    with pytest.raises(SystemExit):
        common.parser("x", "").parse_args(["--resume"])


@pytest.mark.parametrize("stop_after, where", [(2, "epoch 2, step 3"),   # mid-epoch
                                               (1, "epoch 1, step 2")])  # an epoch's end
def test_checkpoint_restores_every_random_stream_and_the_epoch_position(stop_after, where,
                                                                         tmp_path):
    """A small loop by hand: the global generator, a ta.Generator, a random.Random, the data
    order, the position in it and the progress bar's sums all come back."""
    common = common_module()

    def build():
        ta.manual_seed(0)
        model = ta.nn.Linear(3, 1)
        return model, ta.optim.SGD(model.parameters(), lr=0.1), ta.Generator(7), random.Random(7)

    def train(args, stop_after=None):
        model, opt, gen, rng = build()
        losses = []
        with common.Training(args, tmp_path, model=model, optimizer=opt, generator=gen,
                             py_random=rng, state={"losses": losses}) as run:
            for epoch in run.epochs(2):
                order = run.order(lambda: ta.randperm(6, generator=gen).tolist())
                with run.progress(6, "") as bar:
                    for i in run.batches(6, 4):      # batches of 4 and 2
                        x = ta.randn(len(order[i:i + 4]), 3) + rng.random()
                        loss = ta.nn.functional.dropout(model(x), 0.5).pow(2).mean()
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                        losses.append(loss.item())
                        bar.update(x.shape[0], loss=loss.item())
                        if run.step == stop_after:
                            run._stop = True          # as the SIGINT handler does
                        run.step_done()
                losses.append(bar.means()["loss"])
        return losses, model.weight.tolist(), gen.get_state(), rng.random()

    parse = common.parser("x", "", resumable=True).parse_args
    straight = train(parse([]))
    with pytest.raises(common.Stopped, match=f"{where} saved"):
        train(parse([]), stop_after=stop_after)
    assert train(parse(["--resume"])) == straight


@pytest.mark.parametrize("stop_in, stop_after, where", [
    ("first", 3, "first, epoch 2, step 3"),     # a later stage not begun yet
    ("second", 1, "second, epoch 1, step 1")])  # a finished stage not run again
def test_stages_resume_in_the_stage_they_stopped_in(stop_in, stop_after, where, tmp_path):
    """Two models one after another, one run: each stage's own state (a list named like one
    of the run's) and the run's state come back; the stages before the saved one do not run."""
    common = common_module()
    ran = []

    def train(args, stop=None):
        weights, curves = {}, {}
        with common.Training(args, tmp_path, state={"weights": weights, "losses": curves}) as run:
            for name in run.stages(["first", "second"]):
                ran.append(name)
                ta.manual_seed(len(name))
                model = ta.nn.Linear(3, 1)
                opt = ta.optim.SGD(model.parameters(), lr=0.1)
                losses, rng = [], random.Random(len(name))
                run.begin(model=model, optimizer=opt, py_random=rng, state={"losses": losses})
                for epoch in run.epochs(2):
                    order = run.order(lambda: rng.sample(range(4), 4))
                    for i in run.batches(4, 2):
                        x = ta.tensor([[float(j), 1.0, -1.0] for j in order[i:i + 2]])
                        loss = model(x).pow(2).mean() + rng.random()
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                        losses.append(loss.item())
                        if stop == (name, run.step + 1):
                            run._stop = True          # as the SIGINT handler does
                        run.step_done()
                curves[name], weights[name] = losses, model.state_dict()
        return curves, {k: {n: t.tolist() for n, t in w.items()} for k, w in weights.items()}

    parse = common.parser("x", "", resumable=True).parse_args
    straight = train(parse([]))
    with pytest.raises(common.Stopped, match=f"{where} saved"):
        train(parse([]), stop=(stop_in, stop_after))
    del ran[:]
    assert train(parse(["--resume"])) == straight
    assert ran == ["first", "second"][["first", "second"].index(stop_in):]
    common.Training(parse([]), tmp_path, state={}).save()   # a stage this run has not got
    with pytest.raises(SystemExit, match="stopped in None, which this run does not train"):
        next(common.Training(parse(["--resume"]), tmp_path).stages(["first"]))


def test_ctrl_c_prints_one_line_and_saves(tmp_path):
    """A real process: the first SIGINT lets the step finish, saves, and exits with status 130
    and one line on stderr (no traceback)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import common, tinyattn as ta\n"
            "def main():\n"
            "    args = common.parser('x', '').parse_args(['--out', sys.argv[2]])\n"
            "    m = ta.nn.Linear(2, 1); o = ta.optim.SGD(m.parameters(), lr=0.1)\n"
            "    with common.Training(args, args.out, model=m, optimizer=o) as run:\n"
            "        for epoch in run.epochs(3):\n"
            "            for i in run.batches(4, 1):\n"
            "                run.step_done()\n"
            "common.run(main)\n")
    env = {**os.environ, common_module().INTERRUPT_AT: "6",
           "TINYATTN_QUIET_COMPILE": "1"}     # stderr holds only the demo's own words
    done = subprocess.run([sys.executable, "-c", code, str(DEMOS), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"interrupted: epoch 2, step 6 saved to {tmp_path / 'resume.safetensors'}; "
        f"continue with --resume"]
    saved = ta.load(tmp_path / "resume.safetensors")["counters"]
    assert saved == {"epoch": 2, "position": 2, "step": 6}


@pytest.mark.jit_only
def test_dates_resumed_ends_as_if_never_stopped(tmp_path, monkeypatch):
    """demos/dates.py: its data order and batches come from a random.Random, saved with the
    rest; 2 epochs of 4 steps, stopped in the second."""
    common = common_module()
    small = ["--quick", "--epochs", "2", "--per-epoch", "256", "--test-size", "40"]

    def run(out, *more):
        module = runpy.run_path(str(DEMOS / "dates.py"), run_name="demo_dates")
        module["main"]([*small, "--out", str(out), *more])
        return (json.loads((out / "metrics.json").read_text()),
                json.loads((out / "explorer.json").read_text()))

    def timeless(metrics):
        return {k: v for k, v in metrics.items() if "second" not in k}

    straight = run(tmp_path / "a")
    monkeypatch.setenv(common.INTERRUPT_AT, "6")
    with pytest.raises(common.Stopped, match="epoch 2, step 6 saved"):
        run(tmp_path / "b")
    monkeypatch.delenv(common.INTERRUPT_AT)
    resumed = run(tmp_path / "b", "--resume")
    assert timeless(resumed[0]) == timeless(straight[0])
    assert resumed[1] == straight[1]     # the attention snapshots too, before and after the stop


def demo(name, *argv):
    common_module()
    module = runpy.run_path(str(DEMOS / f"{name}.py"), run_name=f"demo_{name}")
    return module["main"](list(argv))


def everything(result, out):
    """All a demo run leaves (but timings): what main returns, metrics.json, the explorer's
    snapshots and the bits of every saved weight."""
    def timeless(d):
        return {k: timeless(v) if isinstance(v, dict) else v for k, v in d.items()
                if "second" not in k}

    weights = ta.load(out / "checkpoint.safetensors")
    return (timeless(result), timeless(json.loads((out / "metrics.json").read_text())),
            json.loads((out / "explorer.json").read_text()),
            json.dumps(weights, default=lambda t: t.tolist(), sort_keys=True))


def stop_and_resume(name, small, stop_at, stopped_at, tmp_path, monkeypatch, capsys):
    """Demo `name` run straight, and run again stopped by Ctrl-C at `stop_at` (the test hook)
    then resumed: (straight, the checkpoint the stop saved, resumed, what the resumed run
    printed), each run as `everything` sees it."""
    common = common_module()
    straight = everything(demo(name, *small, "--out", str(tmp_path / "a")), tmp_path / "a")
    out = tmp_path / "b"
    monkeypatch.setenv(common.INTERRUPT_AT, stop_at)
    with pytest.raises(common.Stopped, match=f"{stopped_at} saved"):
        demo(name, *small, "--out", str(out))
    saved = ta.load(out / common.RESUME_FILE)
    capsys.readouterr()
    monkeypatch.delenv(common.INTERRUPT_AT)
    resumed = everything(demo(name, *small, "--out", str(out), "--resume"), out)
    assert not (out / common.RESUME_FILE).exists()   # finished: nothing left to resume
    return straight, saved, resumed, capsys.readouterr().out


@pytest.mark.jit_only
def test_order_matters_stopped_in_its_second_model_resumes_without_retraining_the_first(
        tmp_path, monkeypatch, capsys):
    """Three models, one run: stopped in the middle of model (b)'s first epoch, --resume
    trains (b) on from there (its second epoch's order drawn from the saved random stream),
    then (c); (a) comes back from the checkpoint, not trained again."""
    small = ["--quick", "--epochs", "2"]          # 188 steps of 32 sentences per epoch
    straight, saved, resumed, printed = stop_and_resume(
        "order_matters", small, "attention without positions:100",
        "attention without positions, epoch 1, step 100", tmp_path, monkeypatch, capsys)
    assert saved["stage"] == "attention without positions"
    assert list(saved["state"]["curves"]) == ["bag of words"]
    assert saved["counters"] == {"epoch": 1, "position": 3200, "step": 100}
    assert "attention without positions, epoch 1, step 100" in printed
    assert "(a) epoch" not in printed and "(c) epoch  1/2" in printed
    assert resumed == straight                   # every loss, metric, snapshot and weight


@pytest.mark.jit_only
def test_show_attend_tell_stopped_in_hard_attention_resumes_to_the_same_numbers(
        tmp_path, monkeypatch, capsys):
    """Stopped in the second of three models, hard attention, after it began to sample cells
    (Python's random module and tinyattn's generator) and to keep its REINFORCE baseline, in
    the middle of an evaluation period and of a pass over the shuffled scenes."""
    # 32 steps of 16 scenes: evaluations after 10, 20 and 30 (a last period of two steps without
    # one); a pass over the 100 scenes is 6 batches; hard attention samples cells from step 9
    # on, with a probability that grows to 1 at step 16
    small = ["--quick", "--steps", "32", "--batch", "16", "--train-size", "100",
             "--test-size", "20"]
    straight, saved, resumed, printed = stop_and_resume(
        "show_attend_tell", small, "hard:11", "hard, epoch 2, step 11", tmp_path, monkeypatch,
        capsys)
    assert saved["stage"] == "hard" and list(saved["state"]["weights"]) == ["soft"]
    assert set(saved["stage_state"]["reinforce"]) == {"baseline", "var"}
    assert "soft attention:" not in printed and "none attention:" in printed
    assert resumed == straight                   # every metric, snapshot and weight


@pytest.mark.jit_only
def test_long_sequences_stopped_in_bahdanau_resumes_to_the_same_numbers(tmp_path, monkeypatch,
                                                                        capsys):
    """Stopped in the first epoch of the second model: the fixed-context model comes back
    from the checkpoint (and is evaluated from its weights), Bahdanau's goes on with its
    second epoch's batches drawn from the saved random stream, then Luong's."""
    small = ["--quick", "--epochs", "2", "--train-size", "256"]   # 4 batches per epoch
    straight, _, resumed, printed = stop_and_resume(
        "long_sequences", small, "bahdanau:3", "bahdanau, epoch 1, step 3", tmp_path,
        monkeypatch, capsys)
    assert "none     epoch" not in printed and "luong    epoch 1/2" in printed
    assert resumed == straight
