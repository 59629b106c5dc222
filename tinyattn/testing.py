"""Tools for testing ops and layers: `gradcheck` (gradients against central finite differences).

Chapter 1 of the tour (docs/01-autograd.md) explains the check.
"""
from .autograd import gradcheck  # noqa: F401  (its implementation moves here with the ops/ layout)
