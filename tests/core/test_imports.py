"""tinyattn's modules import one way: the layer order written in tinyattn/__init__.py's docstring
holds for the import graph built from the source, so that a reader can take the files bottom to
top and never meet a name from a file they have not read.

The graph has an edge for every import of a tinyattn module, at the top of a file or inside a
function ("function-local"). What must hold:
- no cycle among the imports at the top of the files (the ones that run at import time);
- no import, of either kind, of a module from a higher layer;
- within the ops layer, no cycle even counting function-local imports (ops/ files import one way);
- at most MAX_LOCAL function-local imports in the package, each with a comment on its line that
  says why it cannot be at the top.
"""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tinyattn"
MAX_LOCAL = 10


def _modules():
    """Dotted name -> path of every module of the package."""
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("tinyattn",) + path.relative_to(PACKAGE).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


MODULES = _modules()


def _imports(name, path):
    """(target module, line number, function-local?) for each import of a tinyattn module."""
    tree = ast.parse(path.read_text(), str(path))
    functions = [fn for fn in ast.walk(tree)
                 if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    local = {id(node) for fn in functions for node in ast.walk(fn)
             if isinstance(node, (ast.Import, ast.ImportFrom))}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = {f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
                       for a in node.names}
        elif isinstance(node, ast.Import):
            targets = {a.name for a in node.names}
        else:
            continue
        for target in targets:
            if target in MODULES:
                found.append((target, node.lineno, id(node) in local))
    return found


EDGES = {name: _imports(name, path) for name, path in MODULES.items()}


def _layers():
    """The layer list of tinyattn/__init__.py's docstring: module or package -> its rank."""
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text()))
    block = doc.split("Layers, bottom to top.", 1)[1]
    rank, level = {}, 0
    for line in block.splitlines():
        m = re.match(r"    (\S.*?)(?:\s{2,}|$)", line)
        if not m or line.startswith("     "):
            continue           # prose, or the continuation of a description
        for entry in m.group(1).split(","):
            rank["tinyattn." + entry.strip().rstrip("/")] = level
        level += 1
    rank["tinyattn"] = level   # the package itself, on top of everything
    return rank


LAYERS = _layers()


def _layer(module):
    """The rank of module: its own entry, or its package's."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    raise KeyError(module)


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_every_module_has_a_layer():
    missing = []
    for name in MODULES:
        try:
            _layer(name)
        except KeyError:
            missing.append(name)
    assert missing == [], f"add these to the layer list in tinyattn/__init__.py: {missing}"


def test_the_imports_at_the_top_of_the_files_have_no_cycle():
    graph = {name: {t for t, _, local in found if not local and t != name}
             for name, found in EDGES.items()}
    assert _cycles(graph) == []


def test_no_module_imports_a_higher_layer():
    upward = [f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} imports {target}"
              for name, found in EDGES.items() for target, line, _ in found
              if _layer(target) > _layer(name)]
    assert upward == []


def test_the_ops_import_one_way_counting_function_local_imports():
    ops = {name for name in MODULES if _layer(name) == _layer("tinyattn.ops")}
    graph = {name: {t for t, _, _ in EDGES[name] if t in ops and t != name} for name in ops}
    assert _cycles(graph) == []


def test_function_local_imports_are_few_and_say_why():
    local = [(MODULES[name], line) for name, found in EDGES.items() for _, line, is_local in found
             if is_local]
    local = sorted(set(local))
    assert len(local) <= MAX_LOCAL, [f"{p.relative_to(PACKAGE.parent)}:{n}" for p, n in local]
    silent = []
    for path, line in local:
        text = path.read_text().splitlines()[line - 1]
        comment = text.split("#", 1)[1].strip() if "#" in text else ""
        if len(comment.split()) < 3:
            silent.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {text.strip()}")
    assert silent == [], "say on the line why this import cannot be at the top of the file"


def test_the_layer_list_names_existing_modules():
    stale = [name for name in LAYERS if name != "tinyattn" and name not in MODULES]
    assert stale == []


@pytest.mark.parametrize("kernels", ["reference", "fast"])
def test_import_loads_the_fast_memory_machinery_only_for_the_fast_backend(kernels):
    code = ("import sys, tinyattn; "
            "print(sorted(m for m in ('tinyattn.fast.recycle', 'tinyattn.fast.malloc') "
            "if m in sys.modules))")
    env = dict(os.environ, TINYATTN_KERNELS=kernels, PYTHONPATH=str(PACKAGE.parent))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    loaded = eval(out.stdout.strip())
    assert loaded == ([] if kernels == "reference" else ["tinyattn.fast.malloc",
                                                          "tinyattn.fast.recycle"])
