"""The fast kernel backend: the reference kernels' functions, tiled, vectorised and threaded.

Compiled kernels are cached on disk (`cache=True`), but numba only notices when the file of the
kernel itself changes, not a helper it calls from another file (an edit to `exp.py` would leave
`softmax.py`'s cached machine code stale). Kernels are meant to be read and edited, so the cache is
kept honest here: a fingerprint of every kernel source is compared with the one the cache was built
from, and when they differ the cached machine code of this folder is dropped and rebuilt.
"""
import hashlib
import os
from pathlib import Path


def _drop_stale_cache():
    here = Path(__file__).resolve().parent
    cache = here / "__pycache__"
    digest = hashlib.sha256()
    # The fast kernels call formulas of the reference files too (kernels/elementwise.py).
    for src in sorted(here.glob("*.py")) + sorted((here.parent / "kernels").glob("*.py")):
        digest.update(src.parent.name.encode() + src.name.encode() + b"\0" + src.read_bytes())
    stamp = cache / "tinyattn-kernels.sha256"
    fingerprint = digest.hexdigest()
    try:
        if stamp.read_text() == fingerprint:
            return
    except OSError:  # no stamp yet (a fresh checkout, or a cache built before this check)
        pass
    try:
        cache.mkdir(exist_ok=True)
        for f in cache.iterdir():
            if f.suffix in (".nbi", ".nbc"):
                f.unlink(missing_ok=True)
        tmp = cache / f"tinyattn-kernels.sha256.{os.getpid()}"
        tmp.write_text(fingerprint)
        os.replace(tmp, stamp)
    except OSError:  # a read-only install: numba then keeps its cache elsewhere or not at all
        pass


_drop_stale_cache()

from . import ahead, jit  # noqa: E402

# The first kernel this process compiles starts the compile-ahead process (ahead.py), which
# compiles what a training step will need meanwhile; jit.py itself knows nothing of ahead.py.
jit.on_first_compile = ahead.start
