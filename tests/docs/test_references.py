"""The README and the tour name code that exists: docs that cannot drift.

Every code reference in README.md and docs/*.md must resolve:
- a backticked path (`tinyattn/ops/softmax.py`, `ops/softmax.py`, `demos/gpt.py`, `tests/nn/`) to an
  existing file or folder of the repository (paths inside the package may drop `tinyattn/`);
- `file.py:name` to a `def`, `class` or assignment of `name` in that file;
- "`name` in `file.py`" (or "`name()` in `file.py`") likewise.
And every chapter of the tour appears in the README's list of chapters."""
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md"] + DOCS

PATH = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|md|js|json|svg|png|html|toml)|(?:[\w.-]+/)+)(?::(\w+))?`")
NAME_IN = re.compile(r"`(\w+)(?:\(\))?` in `((?:[\w.-]+/)*[\w.-]+\.py)`")


# The repository's own folders (and the package's, which a path may name without `tinyattn/`).
OWN = {"tinyattn", "tests", "demos", "docs", "benchmarks", ".ci", "ops", "kernels", "fast", "nn",
       "optim", "utils", "viz"}
# Files of other projects that the pages name when they compare (micrograd, nanoGPT, ...).
EXTERNAL = {"test/test_engine.py", "bigram.py", "model.py", "regression/main.py", "engine.py",
            "tensor_data.py", "fast_ops.py", "tensor_functions.py", "tensor.py", "mlops.py",
            "util.py"}
_FILES = None


def _everywhere(name):
    """Whether a file of this name exists anywhere in the repository."""
    global _FILES
    if _FILES is None:
        _FILES = {p.name for d in ("tinyattn", "tests", "demos", "benchmarks", "docs")
                  for p in (ROOT / d).rglob("*")}
    return name in _FILES


def _checked(path):
    """Whether the pages' reference `path` names this repository's code (not another project's,
    not a placeholder like `ops/X.py`, not an output such as `runs/NAME/`)."""
    parts = path.rstrip("/").split("/")
    if path in EXTERNAL or any(p.split(".")[0].isupper() for p in parts):
        return False
    if len(parts) == 1:
        return path.endswith(".py")
    return parts[0] in OWN


def _resolve(path):
    """The file or folder a reference names, or None."""
    for base in (ROOT, ROOT / "tinyattn"):
        p = base / path
        if p.exists():
            return p
    if "/" not in path and _everywhere(path):
        return next(p for d in ("tinyattn", "demos", "tests", "benchmarks")
                    for p in (ROOT / d).rglob(path))
    return None


def _defines(path, name):
    """Whether the Python file at `path` defines `name` (def, class, or a top-level assignment)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id == name:
                        return True
    return False


def _code_free(text):
    """The page without its fenced code blocks (code there is run by test_docs.py)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_and_name_the_page_mentions_exists(page):
    text = _code_free(page.read_text())
    missing = []
    for m in PATH.finditer(text):
        path, name = m.group(1), m.group(2)
        if not _checked(path):
            continue
        found = _resolve(path)
        if found is None:
            missing.append(f"`{m.group(0).strip('`')}`: no such file or folder")
        elif name and not _defines(found, name):
            missing.append(f"`{path}:{name}`: {path} defines no {name}")
    for m in NAME_IN.finditer(text):
        name, path = m.group(1), m.group(2)
        if not _checked(path):
            continue
        found = _resolve(path)
        if found is not None and found.is_file() and not _defines(found, name):
            missing.append(f"`{name}` in `{path}`: not defined there")
    assert not missing, f"{page.name}:\n" + "\n".join(missing)


def test_every_chapter_of_the_tour_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    chapters = [p.name for p in DOCS if re.match(r"\d\d-", p.name)]
    absent = [c for c in chapters if f"docs/{c}" not in readme]
    assert not absent, f"chapters missing from the README's tour: {absent}"
