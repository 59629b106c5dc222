"""Every fenced ```python block in README.md and docs/*.md runs, in order, file by file.

Blocks of one file share a namespace (later blocks use earlier names), as a reader running the
chapter top to bottom would. A block can opt out with a first line `# not run`: pseudo code, or
lines quoted from a demo that another test runs (docs/00-afternoon.md's training step)."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path):
    return [b for b in BLOCK.findall(path.read_text()) if not b.startswith("# not run")]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_markdown_snippets_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    namespace = {"__name__": "__docs__"}
    for i, block in enumerate(python_blocks(path)):
        try:
            exec(compile(block, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{path.name}, python block {i} failed: {e!r}\n{block}") from e


def test_the_harness_finds_blocks():
    assert python_blocks(ROOT / "README.md"), "the README's example is not a python block"
