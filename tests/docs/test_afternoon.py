"""The afternoon path (docs/00-afternoon.md) explains one training step of the demo transformer.

The chapter names, in reading order, the code a student reads: whole files, or the functions,
classes and methods of a file. These tests hold it to two promises:

- it is short: the named code, with each file's docstring, is at most 4,000 lines;
- it is complete: every function of tinyattn that runs during one training step of
  demos/transformer.py on the reference backend (forward, loss, backward, Adam, the learning-rate
  schedule) lies inside the named code, or in a file the chapter lists as skipped plumbing.

The step is traced with the kernels interpreted (NUMBA_DISABLE_JIT=1), so the reference kernels'
loops count as code that ran, as they would under a debugger."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "docs" / "00-afternoon.md"
BUDGET = 4000

ENTRY = re.compile(r"^\d+\. `(?P<path>(?:tinyattn|demos)/[\w/]+\.py)`(?P<names>:[^—]*)?\s*—")
SKIPPED = re.compile(r"^- `(?P<path>tinyattn/[\w/]+\.py)`(?P<names>:[^—]*)?\s*—")
SKIP_BUDGET = 400   # the plumbing a first reading may skip: argument checks, lookups

# One training step, written as demos/transformer.py's train_epoch writes it.
STEP = r"""
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "demos"))
import tinyattn as ta
from tinyattn import optim
import tinyattn.nn.functional as F
import transformer as T

cfg = T.Config(**T.QUICK)
gen = ta.Generator(0)
ta.manual_seed(0)
train, valid, test = T.make_data(cfg, gen)
model = T.SortTransformer(cfg)
opt = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
sched = optim.lr_scheduler.NoamLR(opt, cfg.d_model, cfg.warmup, cfg.lr_factor)
src, tgt_in, tgt_out, lengths = T.batch_tensors(train[:8])
model.train()

root = os.path.dirname(ta.__file__)
ran = {}
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(root):
        f = os.path.relpath(frame.f_code.co_filename, os.path.dirname(root))
        ran.setdefault(f, set()).add(frame.f_code.co_firstlineno)
sys.setprofile(profile)
logits = model(src, tgt_in, lengths)                                  # (B, T, V)
loss = F.cross_entropy(logits.reshape(-1, T.VOCAB), tgt_out.reshape(-1),
                       ignore_index=T.PAD, label_smoothing=cfg.label_smoothing)
opt.zero_grad()
loss.backward()
opt.step()
sched.step()
sys.setprofile(None)
print(json.dumps({f: sorted(lines) for f, lines in ran.items()}))
"""


def _chapter():
    """The reading list and the skipped plumbing, each as [(path, [names] or None)]: None for
    a whole file."""
    entries, skipped = [], []
    for line in CHAPTER.read_text().splitlines():
        for pattern, found in ((ENTRY, entries), (SKIPPED, skipped)):
            m = pattern.match(line)
            if m:
                names = re.findall(r"`([\w.]+)`", m.group("names") or "")
                found.append((m.group("path"), names or None))
    return entries, skipped


def _definitions(path):
    """{name: (first line, last line)} of a file's top-level functions and classes, and of each
    class's methods as 'Class.method'; plus the module docstring's lines as '__doc__'."""
    tree = ast.parse((ROOT / path).read_text())
    spans = {}
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        spans["__doc__"] = (body[0].lineno, body[0].end_lineno)
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans[node.name] = (first, node.end_lineno)
        if isinstance(node, ast.ClassDef):
            # the class line, its docstring and class attributes: up to the first method
            methods = [i for i in node.body if isinstance(i, ast.FunctionDef)]
            head_end = (min([methods[0].lineno] + [d.lineno for d in methods[0].decorator_list]) - 1
                        if methods else node.end_lineno)
            spans[node.name + ".__head__"] = (node.lineno, head_end)
            for item in node.body:
                if isinstance(item, ast.FunctionDef):      # a property's getter and setter: one
                    first = min([item.lineno] + [d.lineno for d in item.decorator_list])
                    start, _ = spans.get(f"{node.name}.{item.name}", (first, None))
                    spans[f"{node.name}.{item.name}"] = (start, item.end_lineno)
    return spans


def _named_lines(path, names, docstring=True):
    """The set of line numbers of `path` that the chapter names (with the file's docstring)."""
    if names is None:
        return set(range(1, len((ROOT / path).read_text().splitlines()) + 1))
    spans = _definitions(path)
    lines = set()
    if docstring and "__doc__" in spans:
        lines = set(range(spans["__doc__"][0], spans["__doc__"][1] + 1))
    for name in names:
        assert name in spans, f"docs/00-afternoon.md names {path}: `{name}`, which it does not define"
        first, last = spans[name]
        lines |= set(range(first, last + 1))
        if "." in name:                                    # a method: its class line too
            first, last = spans[name.split(".")[0] + ".__head__"]
            lines |= set(range(first, last + 1))
    return lines


def test_the_afternoon_path_is_at_most_4000_lines():
    entries, _ = _chapter()
    assert len(entries) >= 20, "docs/00-afternoon.md: the reading list was not found"
    paths = [p for p, _ in entries]
    assert len(paths) == len(set(paths)), "a file appears twice in the reading list"
    for path, _ in entries:
        assert (ROOT / path).exists(), f"docs/00-afternoon.md names {path}, which does not exist"
    total = sum(len(_named_lines(p, names)) for p, names in entries)
    assert total <= BUDGET, f"the afternoon path is {total} lines, more than {BUDGET}"


def test_the_skipped_plumbing_is_small():
    _, skipped = _chapter()
    total = sum(len(_named_lines(p, names, docstring=False)) for p, names in skipped)
    assert total <= SKIP_BUDGET, f"the path skips {total} lines, more than {SKIP_BUDGET}"


@pytest.fixture(scope="module")
def ran():
    # the library as a student runs it: no poisoned buffers (a test-only mode with code of its own)
    env = {k: v for k, v in os.environ.items() if k not in ("TINYATTN_POISON", "TINYATTN_RECYCLE")}
    env.update(TINYATTN_KERNELS="reference", NUMBA_DISABLE_JIT="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", STEP, str(ROOT)], capture_output=True,
                         text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_function_the_training_step_runs_is_on_the_path_or_skipped(ran):
    entries, skipped = _chapter()
    covered = {}
    for path, names in entries + skipped:
        covered.setdefault(path, set()).update(_named_lines(path, names))
    missing = []
    for path, firsts in sorted(ran.items()):
        for line in firsts:
            if line not in covered.get(path, ()):
                spans = _definitions(path)
                where = [n for n, (a, b) in spans.items() if a <= line <= b and n != "__doc__"]
                missing.append(f"{path}:{line} ({', '.join(where) or 'module level'})")
    assert not missing, ("code that runs in the step but is neither on docs/00-afternoon.md's "
                         "path nor skipped:\n  " + "\n  ".join(missing))


def test_the_skipped_plumbing_really_runs_in_the_step(ran):
    _, skipped = _chapter()
    for path, names in skipped:
        lines = _named_lines(path, names, docstring=False)
        assert lines & set(ran.get(path, ())), f"the path skips {path} {names}, which never runs"
