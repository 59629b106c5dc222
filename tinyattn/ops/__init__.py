"""Differentiable ops: the `Function`s (forward + backward) of tinyattn, one file per kernel family.

`ops/X.py` sits beside `kernels/X.py`: a reader who wants softmax opens `ops/softmax.py` (the
Function, its equation and its gradient) and `kernels/softmax.py` (the loops) and nothing else.
Only this package calls kernels; `nn/` and `optim/` compose the ops defined here.

The ops sit below tinyattn.Tensor (tensor.py), whose methods call them: they see a tensor as its
data (`storage.TensorBase`, imported as `Tensor`) and make new ones with `storage._make` and
`_empty`. Within the package, files import one way, the primitives first (`_launch`, `convert`,
`reduce`, `layout`, `elementwise`) and the ops composed of them after; tests/core/test_imports.py
checks that no two files import each other.
"""
from .. import autograd
from .arithmetic import add_into

# The autograd engine sums the gradients it owns in place, with a kernel (autograd.py, `backward`);
# it sits below the ops and cannot import them, so the ops hand it their sum.
autograd.add_into = add_into
