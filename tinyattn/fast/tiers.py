"""The two kernel tiers, and the switch between them.

Every kernel family (a file of this folder) is written twice behind one interface:

- the **reference** tier: the plainest correct loops over flat buffers, the text a student reads,
  with the equation in the docstring;
- the **fast** tier: the same results, computed with tiling, packing, a vectorisable exp, threads.

A kernel file defines both and then names its interface, the names the ops call::

    register(globals(), reference={"softmax_rows": softmax_rows_reference, ...},
                        fast={"softmax_rows": softmax_rows_fast, ...})

`register` binds each name in the file's namespace to the current tier's function. Ops look kernels
up as module attributes at call time (``K.softmax_rows(...)``, never ``from kernels.softmax import
softmax_rows``), so switching tiers re-binds what every op calls:

    TINYATTN_KERNELS=reference python demo.py     # the whole library on the reference tier
    tinyattn.kernels.use("reference")              # the same from Python
    with tinyattn.kernels.use("reference"): ...    # for one block, then back

The reference tier runs compiled or, with ``NUMBA_DISABLE_JIT=1``, as plain Python: a breakpoint
in its loop stops in the loop that actually ran. The test suite holds the two tiers equal.

Chapter 2 of the tour (docs/02-kernels.md) walks through this file.
"""
import os

TIERS = ("reference", "fast")

_registered = []   # (namespace, {tier: {name: function}}) per kernel file


def _checked(tier, where):
    if tier not in TIERS:
        raise ValueError(f"{where}: the kernel tier must be one of {TIERS}, got {tier!r}")
    return tier


_current = _checked(os.environ.get("TINYATTN_KERNELS", "fast") or "fast",
                    "TINYATTN_KERNELS")


def register(namespace, *, reference, fast):
    """Bind a kernel file's interface (the names in `reference` and `fast`, which must be the same)
    to the current tier, and remember both for `use`."""
    if reference.keys() != fast.keys():
        raise ValueError(f"{namespace.get('__name__')}: the tiers name different kernels: "
                         f"{sorted(reference.keys() ^ fast.keys())}")
    tiers = {"reference": dict(reference), "fast": dict(fast)}
    _registered.append((namespace, tiers))
    namespace.update(tiers[_current])


def active():
    """The tier the combined kernel files are bound to now: 'reference' or 'fast'."""
    return _current


def _use(tier):
    """Re-bind every combined kernel file's interface to `tier` (tinyattn/backend.py calls this)."""
    global _current
    _current = _checked(tier, "backend.use")
    for namespace, tiers in _registered:
        namespace.update(tiers[_current])
