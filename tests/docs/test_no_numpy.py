"""tinyattn is NumPy-free: no file of the project's own code imports numpy (numba may, internally),
but one: the boundary module, tinyattn/_numpy.py, whose `to_numpy` (behind `Tensor.numpy()` and
`__array__`) imports it inside the function, so only a program asking for a NumPy array loads it.
Tests make NumPy arrays without importing it, through `Tensor.numpy()` (tinyattn's or torch's)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRS = ("tinyattn", "tests", "demos", "benchmarks")
BOUNDARY = pathlib.Path("tinyattn/_numpy.py")


def _numpy_imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(
                node.func, "attr", None)) in ("__import__", "import_module"):
            names = [a.value for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str)]
        for n in names:
            if n == "numpy" or n.startswith("numpy."):
                yield node.lineno


def test_no_file_imports_numpy_but_the_boundary_module():
    files = [p for d in DIRS for p in (ROOT / d).rglob("*.py")]
    assert any(p.name == "tensor.py" for p in files)
    offenders = [f"{p.relative_to(ROOT)}:{line}" for p in files for line in _numpy_imports(p)
                 if p.relative_to(ROOT) != BOUNDARY]
    assert not offenders, "these lines import numpy: " + ", ".join(offenders)


def test_the_boundary_module_imports_numpy_once_inside_a_function():
    path = ROOT / BOUNDARY
    tree = ast.parse(path.read_text())
    local = {node.lineno for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
             for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))}
    lines = list(_numpy_imports(path))
    assert len(lines) == 1 and lines[0] in local, (
        f"{BOUNDARY} must import numpy exactly once, inside the function that hands out an "
        f"array; found it on lines {lines}")


def test_the_check_itself_catches_an_import(tmp_path):
    for src in ("import numpy as np\n", "from numpy import array\n", "import numpy.linalg\n",
                "x = __import__('numpy')\n", "import importlib\nimportlib.import_module('numpy')\n"):
        f = tmp_path / "bad.py"
        f.write_text(src)
        assert list(_numpy_imports(f)), src
    f = tmp_path / "ok.py"
    f.write_text("import numba\nfrom array import array\n# import numpy in a comment\n")
    assert not list(_numpy_imports(f))
