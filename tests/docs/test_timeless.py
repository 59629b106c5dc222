"""The code and the tour are a textbook, not a lab notebook.

Source, docstrings and docs say *why* the code is as it is, in words that stay true: no dates,
clock times, CPU model names or histories ("used to", "before the change"). The measurements that
justify a choice live in benchmarks/RESULTS.md, with the machine they came from; the README keeps
one performance table, which names its CPU once. In the package's Python files, measured timings
(microseconds, GFLOP/s, ...) belong in RESULTS.md too."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DATE = r"\b20\d\d-[01]\d-[0-3]\d\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* 20\d\d\b"
CLOCK = r"\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?\s*UTC\b|\bat [0-2]?\d:[0-5]\d\b"
CPU = (r"\bZen ?[1-9]\b|\bEPYC\b|\bXeon\b|\bHaswell\b|\bSkylake\b|\bIce ?Lake\b|\bCascade ?Lake\b"
       r"|\b(?:Sapphire|Emerald|Granite) Rapids\b|\bznver\d\b|\bRyzen\b|\bCore i[3579]\b")
# "used to" as history ("it used to return x"), not the passive "is used to compute".
HISTORY = (r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bwas )(?<!\bwere )(?<!\bbeen )(?<!\bbeing )"
           r"\bused to\b|\bpreviously\b|\bbefore (?:today|the last \w+ changes?|this change)\b"
           r"|\bissue \d+\b|\bstop \d+\b")
TIMING = (r"\b\d[\d.,]*\s*(?:us|µs|ns)\b|\b\d[\d.,]*\s*GFLOP/s\b|\b\d[\d.,]*\s*GB/s\b"
          r"|\b\d[\d.,]*\s*ms\b")

RULES = {"a date": DATE, "a clock time": CLOCK, "a CPU model": CPU, "a history": HISTORY}
# Where a rule's pattern is the subject matter: the dates demo reads dates.
DATA = {"demos/dates.py": {"a date"}, "tests/demos/test_demos.py": {"a date"}}


def _files():
    for d in ("tinyattn", "demos", "tests", "docs"):
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".py", ".md", ".js") and "__pycache__" not in p.parts:
                yield p
    yield ROOT / "README.md"


def _text(path):
    """The text the rules apply to. The README's performance table, which names its CPU and the
    run it came from, is the one allowed exception."""
    text = path.read_text()
    if path.name == "README.md":
        text = re.sub(r"<!-- performance table -->.*?<!-- end of performance table -->", "",
                      text, flags=re.S)
    return text


def _offences(path):
    text = _text(path)
    rules = {k: v for k, v in RULES.items()
             if k not in DATA.get(str(path.relative_to(ROOT)), ())}
    if path.suffix == ".py" and ROOT / "tinyattn" in path.parents:
        rules["a measured timing"] = TIMING
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in rules.items():
            m = re.search(pattern, line, flags=re.I if what == "a history" else 0)
            if m:
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {what} ({m.group(0)!r}): "
                             f"{line.strip()[:100]}")
    return found


THIS = Path(__file__).resolve()


@pytest.mark.parametrize("path", [p for p in _files() if p.resolve() != THIS],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_source_and_docs_are_timeless(path):
    found = _offences(path)
    assert not found, "measurements and history belong in benchmarks/RESULTS.md:\n" + \
        "\n".join(found)
