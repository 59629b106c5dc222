"""Run an unchanged PyTorch program on tinyattn.

    python -m tinyattn.as_torch train.py --epochs 1      # as `python train.py --epochs 1`
    python -m tinyattn.as_torch -m pytest test_engine.py # a module, as `python -m ...`

    import tinyattn; tinyattn.as_torch()                 # in a notebook, before `import torch`
    import torch                                         # ... is now tinyattn

What it is for: take a program you already know (a GPT, a seq2seq tutorial, a textbook's
attention code), run it here, and step into the kernels that actually ran: every op ends in a
readable numba loop (`NUMBA_DISABLE_JIT=1` and a breakpoint stop inside it). It installs
tinyattn's modules under PyTorch's names in `sys.modules` (torch, torch.nn, torch.nn.functional,
torch.nn.init, torch.nn.utils, torch.optim, torch.optim.lr_scheduler, torch.autograd,
torch.utils.data, torch.cuda, torch.backends, ...), so `import torch` and
`from torch.utils.data import DataLoader` find them. A program that uses something tinyattn does
not have stops with an AttributeError or ImportError naming it; README.md lists the programs
tried and what they gave.
"""
import os
import runpy
import sys

from ._torch_names import ALIASES, as_torch  # noqa: F401  (ALIASES: the names it installs)


_USAGE = ("usage: python -m tinyattn.as_torch SCRIPT.py [ARGS...]\n"
          "       python -m tinyattn.as_torch -m MODULE [ARGS...]\n"
          "Runs a PyTorch program unchanged, with `import torch` giving tinyattn.")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        return 0 if argv else 2
    as_torch()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.isfile(script):
        print(f"as_torch: no such file: {script!r}\n{_USAGE}", file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
