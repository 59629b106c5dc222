"""Running a demo (demos/NAME.py --quick) in this process, on a student's plugged-in function.

A demo spec is a dict: script (demos/SCRIPT.py), metric (a key of its metrics.json), target (the
least value that passes), what (the metric in words), explorer (True when the run writes an
explorer.html whose weights the student's code computed). The demos come with a checkout of the
repository (they are not part of the installed package); without them the demo is skipped.
"""
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

DEMOS = Path(__file__).resolve().parent.parent.parent / "demos"


def run(spec, out, directory=None):
    """Run the demo with --quick; True when its metric reaches the target."""
    script = DEMOS / f"{spec['script']}.py"
    if not script.exists():
        print(f"demo: {script} is not here (the demos come with a checkout of the repository); "
              f"skipped", file=out)
        return True
    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix=f"tinyattn-{spec['script']}-"))
    directory = Path(directory)
    print(f"demo: running demos/{script.name} --quick on your code (output in {directory}) ...",
          file=out, flush=True)
    if str(DEMOS) not in sys.path:      # the demos import their shared `common` module
        sys.path.insert(0, str(DEMOS))
    module_spec = importlib.util.spec_from_file_location(f"demo_{spec['script']}", script)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    module.main(["--quick", "--out", str(directory), *spec.get("args", ())])
    metrics = json.loads((directory / "metrics.json").read_text())
    value = metrics[spec["metric"]]
    reached = value >= spec["target"]
    print(f"demo: {spec['what']} {value:.4g} (target >= {spec['target']}): "
          f"{'reached' if reached else 'NOT reached'}", file=out)
    if spec.get("explorer") and (directory / "explorer.html").exists():
        print(f"demo: open {directory / 'explorer.html'} in a browser: the attention weights "
              f"there are the ones your code computed", file=out)
    return reached
