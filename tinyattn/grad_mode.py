"""Grad mode, per thread as in PyTorch: whether the ops record the graph.

Each thread has its own switches (a `threading.local`; a new thread starts with grad enabled
and inference mode off): `no_grad` in one thread leaves another thread's forward pass building
its graph, and backward, which turns grad mode off while it runs its formulas, turns it off
only in its own thread.

    no_grad(), enable_grad()     grad mode off / on inside (context managers and decorators,
                                 with or without parentheses: `@no_grad` and `@no_grad()`)
    set_grad_enabled(mode)       sets it at once (a function call), or for a `with` block, or
                                 for a decorated function (the mode is set when it runs, not
                                 when it is defined)
    inference_mode(mode=True)    no graph at all inside, even under enable_grad(); as in
                                 PyTorch, inference_mode(True) turns grad mode off and
                                 inference_mode(False) turns it on (and inference mode off)
    is_grad_enabled(), is_inference_mode_enabled()

The ops read one flag, `_mode.record` (grad mode on and inference mode off), kept up to date by
every switch. Where tinyattn differs: a tensor made in inference mode is an ordinary tensor
(PyTorch marks it `is_inference()` and refuses to save it for backward or to change it in place
outside inference mode; tinyattn has no `is_inference()` and lets both happen), and a decorated
generator function runs in the mode only until its first `yield`.
"""
import functools
import threading


class _Mode(threading.local):
    """This thread's switches; the class attributes are every new thread's starting values."""

    grad = True        # is_grad_enabled()
    inference = False  # is_inference_mode_enabled()
    record = True      # grad and not inference: do the ops record the graph?


_mode = _Mode()


def _set(grad, inference):
    _mode.grad = grad
    _mode.inference = inference
    _mode.record = grad and not inference


def is_grad_enabled():
    return _mode.grad


def is_inference_mode_enabled():
    return _mode.inference


class _Switch:
    """A context manager that is also a decorator, with or without parentheses."""

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:  # @no_grad, no parentheses
            return cls()(args[0])
        return super().__new__(cls)

    def _target(self):
        raise NotImplementedError

    def __enter__(self):
        self.prev = (_mode.grad, _mode.inference)
        _set(*self._target())
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def clone(self):
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_Switch):
    """Build no graph inside: `with tinyattn.no_grad(): ...`, `@tinyattn.no_grad()` or
    `@tinyattn.no_grad`. Used for evaluation and for parameter updates, which must not become
    part of the graph."""

    def _target(self):
        return False, _mode.inference


class enable_grad(_Switch):
    """Build the graph again inside a `no_grad` region (not inside inference_mode)."""

    def _target(self):
        return True, _mode.inference


class set_grad_enabled(_Switch):
    """set_grad_enabled(False) turns grad mode off at once; as a context manager it is restored
    on exit; as a decorator the mode is set while the function runs (defining it changes
    nothing)."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = (_mode.grad, _mode.inference)
        _set(self.mode, _mode.inference)

    def _target(self):
        return self.mode, _mode.inference

    def __enter__(self):
        return self

    def clone(self):
        return type(self)(self.mode)

    def __call__(self, fn):
        _set(*self.prev)  # decorating: the mode the call to set_grad_enabled() changed comes back
        return super().__call__(fn)


class inference_mode(_Switch):
    """Inside, the ops record no graph at all, even under enable_grad() (PyTorch's faster
    no_grad); `@inference_mode`, `@inference_mode()`, `with inference_mode(False):`."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def _target(self):
        return not self.mode, self.mode

    def clone(self):
        return type(self)(self.mode)
