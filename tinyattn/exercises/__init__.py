"""Exercises: rebuild a piece of tinyattn, have it graded, and watch it train the real demo.

    python -m tinyattn.exercises list                 # the exercises, in the tour's order
    python -m tinyattn.exercises start softmax        # writes exercises/softmax.py: fill the TODOs
    python -m tinyattn.exercises check softmax        # grades it; when it passes, trains a demo on it
    python -m tinyattn.exercises hint softmax         # one more hint each time

Each exercise is one module here: the starting file's text (`SKELETON`: signature, docstring with
the equation and the shapes, TODOs), a reference solution (a thin wrapper of the library's own
function, so the two cannot drift), its checks, its hints, and how the student's function is
plugged into the library (`plug`: `backend.override`, the hook that replaces one function for a
`with` block) with the demo that then runs on it. `check NAME --reference` grades the reference
(it must pass) and `check NAME --skeleton` the untouched starting file (it must fail): the test
suite runs both for every exercise, so a grader that cannot fail is caught. docs/exercises.md
is the student's page.
"""
import json
import sys
from pathlib import Path

from . import (adam, bahdanau, flash, grid_attention, kv_cache, layer_norm, log_softmax, luong,
               matmul_backward, multi_head, positional, sdpa, softmax, sum_to_size)
from . import _demo
from ._grader import Failed, functions, load_file, load_text, run_checks

# The tour's order: chapter 1 (autograd) to chapter 10 (flash attention).
EXERCISES = {m.NAME: m for m in (sum_to_size, matmul_backward, softmax, log_softmax, sdpa,
                                 multi_head, positional, bahdanau, luong, layer_norm, adam,
                                 kv_cache, grid_attention, flash)}

HINTS_FILE = ".hints.json"


def get(name):
    """The exercise module called `name`; an unknown name is a ValueError listing the names."""
    if name not in EXERCISES:
        raise ValueError(f"no exercise {name!r}; the exercises are: {', '.join(EXERCISES)}")
    return EXERCISES[name]


def lines():
    """`list`: one line per exercise, its name first, then the chapter and what it is."""
    width = max(map(len, EXERCISES))
    return [f"{name:{width}}  chapter {m.CHAPTER:>2}  {m.TITLE}" for name, m in EXERCISES.items()]


def start(name, directory="exercises"):
    """Write the exercise's starting file into `directory`; return its path. An existing file is
    kept (it may hold the student's work): the message says so."""
    ex = get(name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    if path.exists():
        print(f"{path} exists already; left as it is (delete it to start again)")
    else:
        path.write_text(ex.SKELETON)
        print(f"wrote {path}")
    print(f"next: fill in the TODOs of {path}, then run\n"
          f"    python -m tinyattn.exercises check {name}{_dir_arg(directory, path)}\n"
          f"(`python -m tinyattn.exercises hint {name}` gives a hint, one more each time)")
    return path


def _dir_arg(directory, path):
    return "" if directory == Path("exercises") else f" {path}"


def hint(name, directory="exercises"):
    """The next hint of `name` (the count is kept in DIRECTORY/.hints.json); returns its text."""
    ex = get(name)
    directory = Path(directory)
    state_file = directory / HINTS_FILE
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    k = state.get(name, 0)
    text = ex.HINTS[min(k, len(ex.HINTS) - 1)]
    head = f"hint {min(k, len(ex.HINTS) - 1) + 1} of {len(ex.HINTS)} for {name}:"
    if k >= len(ex.HINTS):
        head = f"that was the last hint for {name} (hint {len(ex.HINTS)} again):"
    state[name] = k + 1
    directory.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    return f"{head}\n  {text}"


def student(name, source=None, *, reference=False, skeleton=False, text=None):
    """The functions to grade: the library's reference, the untouched skeleton, source text, or
    the student's file (default exercises/NAME.py). Raises Failed when they cannot be loaded."""
    ex = get(name)
    if reference:
        return functions_of(ex.reference(), ex.FUNCTIONS)
    if skeleton or text is not None:
        module = load_text(ex.SKELETON if text is None else text, name)
    else:
        path = Path(source) if source is not None else Path("exercises") / f"{name}.py"
        if not path.exists():
            raise Failed(f"no file {path}", hint=f"run `python -m tinyattn.exercises start "
                                                  f"{name}` first, or give the file's path")
        try:
            module = load_file(path, name)
        except Exception as e:  # noqa: BLE001 - a syntax or import error in the student's file
            raise Failed(f"{path} does not load: {type(e).__name__}: {e}",
                         hint="run `python FILE` to see the error") from None
    return functions(module, ex.FUNCTIONS)


def functions_of(mapping, names):
    return functions(type("reference", (), {n: staticmethod(mapping[n]) for n in names}), names)


def check(name, source=None, *, reference=False, skeleton=False, text=None, demo=True,
          out=None, demo_dir=None):
    """Grade an exercise (see `student` for what is graded); with `demo`, when every check
    passes, plug the functions into the library and run the exercise's demo (--quick) on them.
    Prints the verdicts; returns True when every check passed (and the demo reached its target)."""
    out = out or sys.stdout
    ex = get(name)
    what = "the reference solution" if reference else "the untouched starting file" \
        if skeleton else "your code" if text is None else "the given code"
    print(f"checking {what} for {name} ({ex.TITLE})", file=out)
    try:
        ns = student(name, source, reference=reference, skeleton=skeleton, text=text)
    except Failed as f:
        print(f"FAIL  loading\n{f.report()}", file=out)
        return False
    ok = run_checks(ex.CHECKS, ns, out)
    if not ok:
        print(f"{name}: not yet; fix the first FAIL above (`python -m tinyattn.exercises hint "
              f"{name}` for a hint)", file=out)
        return False
    print(f"{name}: every check passes", file=out)
    if not demo or ex.DEMO is None:
        if ex.DEMO is None:
            print(f"({name} has no demo of its own)", file=out)
        return True
    # A student's kernels are compiled by numba for the demo; the reference's already are.
    with ex.plug(ns, compiled=not reference):
        return _demo.run(ex.DEMO, out, demo_dir)
