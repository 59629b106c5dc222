"""Differentiable ops: the `Function`s (forward + backward) of tinyattn, one file per kernel family.

`ops/X.py` sits beside `kernels/X.py`: a reader who wants softmax opens `ops/softmax.py` (the
Function, its equation and its gradient) and `kernels/softmax.py` (the loops) and nothing else.
Only this package calls kernels; `nn/` and `optim/` compose the ops defined here.
"""
