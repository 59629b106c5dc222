"""Every exercise: the library's reference passes its grader and the untouched starting file
fails it (a grader that cannot fail is caught here); list, start, hint and the CLI."""
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinyattn import exercises
from tinyattn.exercises import __main__ as cli

import solutions as S

ROOT = Path(__file__).resolve().parents[2]
NAMES = list(exercises.EXERCISES)


def test_list_names_at_least_twelve_exercises_in_the_tours_order():
    lines = exercises.lines()
    assert len(lines) == len(NAMES) >= 12
    assert [line.split()[0] for line in lines] == NAMES
    chapters = [int(line.split()[2]) for line in lines]
    assert chapters == sorted(chapters) and chapters[0] == 1 and chapters[-1] == 10


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes(name):
    out = io.StringIO()
    assert exercises.check(name, reference=True, demo=False, out=out), out.getvalue()
    assert "FAIL" not in out.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_the_untouched_skeleton_fails_and_says_what_to_do(name):
    out = io.StringIO()
    assert not exercises.check(name, skeleton=True, demo=False, out=out)
    assert "is not written yet" in out.getvalue() and "TODO" in out.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_the_skeleton_has_the_functions_todos_and_no_answer(name):
    ex = exercises.get(name)
    text = ex.SKELETON
    compile(text, name, "exec")
    assert "TODO" in text and f"python -m tinyattn.exercises check {name}" in text
    for fn in ex.FUNCTIONS:
        assert f"def {fn}(" in text and f'raise NotImplementedError("{fn}")' in text
    assert len(ex.HINTS) >= 2 and ex.CHECKS


def test_start_writes_the_skeleton_and_keeps_a_students_file(tmp_path, capsys):
    path = exercises.start("softmax", tmp_path)
    assert path.read_text() == exercises.get("softmax").SKELETON
    assert "check softmax" in capsys.readouterr().out
    path.write_text(S.SOFTMAX)
    exercises.start("softmax", tmp_path)
    assert path.read_text() == S.SOFTMAX and "exists already" in capsys.readouterr().out
    out = io.StringIO()
    assert exercises.check("softmax", path, demo=False, out=out), out.getvalue()


def test_hint_gives_one_more_each_call_and_remembers_in_the_exercise_dir(tmp_path):
    hints = exercises.get("sdpa").HINTS
    seen = [exercises.hint("sdpa", tmp_path) for _ in range(len(hints) + 1)]
    for k, text in enumerate(seen[:-1]):
        assert f"hint {k + 1} of {len(hints)}" in text and hints[k] in text
    assert "last hint" in seen[-1] and hints[-1] in seen[-1]
    assert (tmp_path / ".hints.json").exists()
    assert "hint 1 of" in exercises.hint("softmax", tmp_path)     # counted per exercise


def test_check_of_a_missing_file_or_unknown_name_says_so(tmp_path):
    out = io.StringIO()
    assert not exercises.check("softmax", tmp_path / "nope.py", demo=False, out=out)
    assert "no file" in out.getvalue() and "start softmax" in out.getvalue()
    with pytest.raises(ValueError, match="no exercise 'nope'"):
        exercises.get("nope")


def test_a_file_missing_a_function_fails_by_name(tmp_path):
    out = io.StringIO()
    assert not exercises.check("bahdanau", text="def additive_score(pk, q, v):\n    pass\n",
                               demo=False, out=out)
    assert "defines no function context" in out.getvalue()


def test_the_cli_lists_starts_and_hints(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["list"]) == 0
    assert capsys.readouterr().out.split()[0] == NAMES[0]
    assert cli.main(["start", "sum_to_size"]) == 0
    assert (tmp_path / "exercises" / "sum_to_size.py").exists()
    assert cli.main(["hint", "sum_to_size"]) == 0 and "hint 1 of" in capsys.readouterr().out
    assert cli.main(["check", "sum_to_size", "--skeleton", "--no-demo"]) == 1
    assert cli.main(["check", "sum_to_size", "--reference", "--no-demo"]) == 0


def test_the_cli_check_exits_1_then_0_once_the_file_is_right(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    (tmp_path / "exercises").mkdir()
    path = tmp_path / "exercises" / "sum_to_size.py"
    run = lambda: subprocess.run([sys.executable, "-m", "tinyattn.exercises", "check",  # noqa: E731
                                  "sum_to_size", "--no-demo"], capture_output=True, text=True,
                                 env=env, cwd=tmp_path)
    path.write_text(S.SUM_TO_NOT_SUMMED)
    failed = run()
    assert failed.returncode == 1 and "not summed back" in failed.stdout, failed.stderr
    path.write_text(S.SUM_TO)
    passed = run()
    assert passed.returncode == 0, passed.stdout + passed.stderr


@pytest.mark.jit_only
def test_a_correct_positional_encoding_trains_order_matters_to_its_target(tmp_path):
    out = io.StringIO()
    ok = exercises.check("positional", text=S.POSITIONAL, out=out, demo_dir=tmp_path)
    report = out.getvalue()
    assert ok, report
    assert "reached" in report and (tmp_path / "explorer.html").exists()


def test_the_docs_page_and_every_chapter_name_the_exercises():
    page = (ROOT / "docs" / "exercises.md").read_text()
    assert all(f"| `{name}` |" in page for name in NAMES)
    for name, ex in exercises.EXERCISES.items():
        chapter = next((ROOT / "docs").glob(f"{ex.CHAPTER:02d}-*.md")).read_text()
        assert "## Exercise" in chapter and "python -m tinyattn.exercises" in chapter
        assert f"`{name}`" in chapter or f"start {name}" in chapter, (name, ex.CHAPTER)
