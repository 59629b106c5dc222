"""Reverse-mode automatic differentiation: the `Function` node, `backward` (grad mode, which
says whether the ops record the graph: grad_mode.py).

The graph. Every differentiable op is a `Function` subclass with two static methods::

    forward(ctx, *inputs)  -> output Tensor       (and ctx.save_for_backward(...) what backward needs)
    backward(ctx, grad)    -> one gradient per input (None where an input needs none)

`Function.apply` runs `forward` and, when some input requires grad, keeps the `ctx` object as the
output's `grad_fn`: a node that remembers its `inputs`. Nodes point only backwards (output -> node
-> inputs), never from a node to its own output, so the graph holds no reference cycles and memory
is freed by reference counting as soon as a graph goes out of scope.

Backward. `backward(root)` orders the nodes reachable from the root so that a node is processed
only after every node that uses its output -- a reverse topological order, found with an explicit
stack (not recursion: an RNN unrolled over thousands of steps would exceed Python's recursion
limit). Each node's incoming gradients are summed before its own `backward` runs, because a tensor
used twice receives one contribution per use (d(x*x)/dx = x + x). Leaves accumulate into `.grad`
with `+=` across calls, which is why training loops call `zero_grad()` before each step. (Within
one pass, a sum the engine allocated itself takes further contributions in place: nothing else
can see it, and a tensor used at every step of a long loop would otherwise cost a new buffer per
step. A `.grad` from an earlier call is never changed in place.)

Second backward. As in PyTorch, `backward()` frees the tensors saved for backward as it goes; a
second `backward()` through the same nodes raises unless the first passed `retain_graph=True`.
(tinyattn raises on any second pass through a freed node, even one that saved nothing: simpler to
reason about, and never silently wrong.)

In-place changes and versions. A node is bound to its inputs' grad_fn when it is made
(`_next`), as PyTorch's edges are: if `x` is later changed in place and so gets a new grad_fn,
the ops that read the old `x` still send their gradients to the old one. Every buffer has a
version, bumped by each in-place write (`bump_version`); a node remembers when it was made, and
backward raises PyTorch's error when a tensor the node's backward reads was written since: the
values it would use are no longer the ones the forward pass saw.

Chapter 1 of the tour (docs/01-autograd.md) walks through this file.
"""
import weakref
from array import array

from . import storage as _storage
from .grad_mode import (_mode, _set, enable_grad, inference_mode,  # noqa: F401 (re-exported)
                        is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled)
from .storage import TensorBase as Tensor, _make


class _NoGraph:
    """The ctx handed to `forward` when no graph is built: saving is a no-op, attributes vanish."""

    __slots__ = ()
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        pass

    def __setattr__(self, name, value):
        pass


_NO_GRAPH = _NoGraph()
_FREED = "freed"

# In-place writes. _CLOCK counts them all; _WRITES: id(buffer) -> [clock of its last write, its
# version (number of writes)], an entry made at a buffer's first write and dropped when the buffer
# is freed (so a reused id starts again at 0). _REBOUND: id(buffer) -> clock of the last write
# recorded in the graph (which gave the tensor a new grad_fn). A node keeps the clock when it was
# made: a tensor it reads was changed since iff its buffer's last write is later.
_CLOCK = 0
_WRITES = {}
_REBOUND = {}


def version(t):
    """How many times t's buffer has been changed in place (PyTorch's `t._version`)."""
    w = _WRITES.get(id(t._data))
    return w[1] if w is not None else 0


def _forget(key):
    _WRITES.pop(key, None)
    _REBOUND.pop(key, None)


def _forget_buffer(buf):
    _forget(id(buf))


# A dead output's buffer may be handed to a new output without being freed (the fast backend's
# pool, fast/recycle.py): its writes are forgotten then, as when a buffer is freed.
_storage.on_reuse = _forget_buffer


def bump_version(t, rebound=False):
    """t's elements were just changed in place (rebound: and t got a new grad_fn for it)."""
    global _CLOCK
    _CLOCK += 1
    key = id(t._data)
    w = _WRITES.get(key)
    if w is None:
        weakref.finalize(t._data, _forget, key)
        _WRITES[key] = [_CLOCK, 1]
    else:
        w[0] = _CLOCK
        w[1] += 1
    if rebound:
        _REBOUND[key] = _CLOCK


class Function:
    """A primitive differentiable op; an instance is one node of the graph (PyTorch's `ctx`)."""

    # inputs: the arguments of forward (Tensors and plain values); saved_tensors: what backward needs
    inputs = ()
    saved_tensors = ()
    needs_input_grad = ()
    _retained = None  # weak reference to the output, only when the user asked `retain_grad()`
    _next = None      # the inputs' grad_fn when this node was made (None: read them from inputs)
    _clock = 0        # _CLOCK when this node was made
    # Does backward read the values of the Tensor inputs? Ops whose gradient does not depend on
    # them (add, views, sums, ...) set False, so changing such an input in place is allowed.
    reads_inputs = True
    # Under create_graph=True: True if backward is then written with recorded ops; a function
    # f(ctx, g) of recorded ops to run instead of backward (a fused kernel's); False: a Function
    # met while differentiating a backward pass raises instead of giving a wrong 2nd derivative.
    differentiable_backward = False

    @classmethod
    def apply(cls, *args):
        # This runs for every op, so it is written for speed: a plain loop that stops at the first
        # input needing a gradient (most ops in evaluation and in optimizers find none), and only
        # then reads this thread's grad mode (a thread-local read costs more than the loop).
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad:
                if _mode.record:
                    return cls._apply_recording(args)
                break
        return cls.forward(_NO_GRAPH, *args)

    @classmethod
    def _apply_recording(cls, args):
        """forward, keeping this node (ctx) as the output's grad_fn."""
        ctx = cls.__new__(cls)
        ctx.inputs = args
        ctx.needs_input_grad = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
        ctx._next = tuple([a.grad_fn if isinstance(a, Tensor) else None for a in args])
        if _CLOCK:
            ctx._clock = _CLOCK
            if _REBOUND:
                _check_views(args)
        out = cls.forward(ctx, *args)
        out._requires_grad = True
        out.grad_fn = ctx
        return out

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    def name(self):
        """`MulBackward`, as PyTorch shows it in `grad_fn=<MulBackward0>`."""
        return getattr(self, "op_name", type(self).__name__) + "Backward"

    def __repr__(self):
        return f"<{self.name()}>"


class BinaryFunction(Function):
    """A Function of exactly two Tensors (add, mul, matmul, ...: most ops of a training step).

    Same behaviour as Function.apply, without its general loop over arguments: packing and
    unpacking `*args` and testing each one costs about as much as a small op's kernel."""

    @classmethod
    def apply(cls, a, b):
        if (a._requires_grad or b._requires_grad) and _mode.record:
            ctx = cls.__new__(cls)
            ctx.inputs = (a, b)
            ctx.needs_input_grad = (a._requires_grad, b._requires_grad)
            ctx._next = (a.grad_fn, b.grad_fn)
            if _CLOCK:
                ctx._clock = _CLOCK
                if _REBOUND:
                    _check_views((a, b))
            out = cls.forward(ctx, a, b)
            out._requires_grad = True
            out.grad_fn = ctx
            return out
        return cls.forward(_NO_GRAPH, a, b)


class UnaryFunction(Function):
    """A Function of one Tensor followed by plain values (softmax's dim, a view's shape, a
    scalar): the unary ops, views, reductions. Same behaviour as Function.apply, without its loop
    over arguments, which costs a small op a noticeable part of its time (measured:
    benchmarks/RESULTS.md, autograd.py: UnaryFunction). The values after the Tensor must not be
    Tensors: they get no gradient and are not checked."""

    @classmethod
    def apply(cls, x, *rest):
        if x._requires_grad and _mode.record:
            ctx = cls.__new__(cls)
            ctx.inputs = (x,) + rest
            ctx.needs_input_grad = (True,) + (False,) * len(rest)
            ctx._next = (x.grad_fn,) + (None,) * len(rest)
            if _CLOCK:
                ctx._clock = _CLOCK
                if _REBOUND:
                    _check_views((x,))
            out = cls.forward(ctx, x, *rest)
            out._requires_grad = True
            out.grad_fn = ctx
            return out
        return cls.forward(_NO_GRAPH, x, *rest)


def _check_views(args):
    """A view taken before its base got a new history in place holds the new values but the old
    history; PyTorch rebuilds its grad_fn, tinyattn asks for the view to be taken again."""
    for a in args:
        if isinstance(a, Tensor) and a._base is not None and a._requires_grad \
                and _REBOUND.get(id(a._data), 0) > a._view_clock:
            raise RuntimeError(
                f"a view of shape {list(a.shape)} was taken before its base tensor was changed in "
                f"place, and is used after: take the view again after the change (tinyattn does "
                f"not rebuild a stale view's history as PyTorch does)")


def next_functions(node):
    """The grad_fn of each input of `node` as it was when the node was made (None for a leaf or
    a non-tensor argument)."""
    if node._next is not None:
        return node._next
    return tuple([t.grad_fn if isinstance(t, Tensor) else None for t in node.inputs])


def _check_versions(node):
    """Raise, as PyTorch does, when a tensor this node's backward reads was changed in place
    after the node was made."""
    for group in (node.inputs if node.reads_inputs else (), node.saved_tensors):
        for t in group:
            if not isinstance(t, Tensor):
                continue
            w = _WRITES.get(id(t._data))
            if w is not None and w[0] > node._clock:
                raise RuntimeError(
                    f"backward: one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: a {t.dtype.name} tensor of shape "
                    f"{list(t.shape)} used by {node.name()} was changed after {node.name()} "
                    f"read it (it is now at version {w[1]}). Compute it out of place (or "
                    f"clone() it) before changing it")


def _topological_order(root):
    """Nodes reachable from `root`, each after every node that consumes its output.

    Iterative depth-first search: a node is emitted (post-order) once all of its inputs' nodes have
    been emitted; reversing that list puts consumers before producers, the order backward needs."""
    post = []
    seen = {root}
    stack = [(root, iter(next_functions(root)))]
    while stack:
        node, it = stack[-1]
        for child in it:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append((child, iter(next_functions(child))))
                break
        else:
            stack.pop()
            post.append(node)
    post.reverse()
    return post


def backward(root, gradient=None, retain_graph=False):
    """Accumulate d(root)/d(leaf) into `leaf.grad` for every leaf that requires grad.

    `gradient` is d(loss)/d(root); it may be omitted only when root holds a single element."""
    _run(root, _seed("backward", root, gradient), retain_graph)


def _seed(op, root, gradient):
    """The gradient the backward pass starts from at `root`, checked."""
    if not root._requires_grad:
        raise RuntimeError(
            f"{op}: this tensor does not require grad and has no grad_fn, so there is nothing to "
            f"differentiate; create the inputs with requires_grad=True (and not under no_grad())")
    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError(
                f"{op}: grad can be implicitly created only for a tensor with one element, "
                f"but this one has shape {tuple(root.shape)}; pass gradient= of the same shape")
        return _ones_like(root)
    if not isinstance(gradient, Tensor):
        raise TypeError(f"{op}: gradient must be a Tensor, got {type(gradient).__name__}")
    if gradient.shape != root.shape:
        raise RuntimeError(f"{op}: gradient has shape {tuple(gradient.shape)} but the tensor "
                           f"has shape {tuple(root.shape)}")
    return gradient if gradient.dtype is root.dtype else gradient.to(root.dtype)


def _run(root, gradient, retain_graph, capture=None, create_graph=False):
    """The backward pass from `root` (a tensor, or an `_Outputs` of several with `gradient` a
    {node: gradient} dict). Without `capture` the leaves' gradients go into `.grad`; with it
    (grad()) only the gradients of the tensors in `capture` ({id: tensor}) are collected and
    returned as {id: gradient}, and no `.grad` changes. With create_graph the backward formulas
    are recorded too, so the gradients can be differentiated again."""
    prev = (_mode.grad, _mode.inference)
    _set(create_graph, prev[1])  # backward formulas build no graph (in this thread only)
    found = {}
    try:
        if isinstance(root, Tensor) and root.grad_fn is None:   # a leaf: d(root)/d(root)
            if capture is None:
                _accumulate_leaf(root, gradient, gradient)
            elif id(root) in capture:
                found[id(root)] = gradient
            return found
        grads = gradient if isinstance(root, _Outputs) else {root.grad_fn: gradient}
        order = _topological_order(root if isinstance(root, _Outputs) else root.grad_fn)
        if capture is not None:
            order, at = _needed(order, capture), {id(t.grad_fn): t for t in capture.values()}
        # Sums this pass allocated itself (id -> tensor): nothing else refers to them, so a third
        # contribution can be added into them in place instead of allocating a new sum each time
        # (the encoder outputs of a seq2seq model get one contribution per decoder step).
        owned = {}
        in_place = not create_graph      # a recorded sum must stay a new tensor, never `+=`
        for node in order:
            g = grads.pop(node, None)
            if g is None:  # no path from root carries a gradient here
                continue
            owned.pop(id(g), None)  # handed to backward: it may pass g on to several inputs
            if capture is not None and id(node) in at:   # the gradient of a non-leaf asked for
                found[id(at[id(node)])] = g
            if node.saved_tensors is _FREED:
                raise RuntimeError(
                    f"backward: trying to backward through the graph a second time ({node.name()} "
                    f"was already used and its saved tensors freed); call the first backward() with "
                    f"retain_graph=True if you need to backward twice")
            if node._retained is not None and capture is None:
                out = node._retained()
                if out is not None:
                    out.grad = g if out.grad is None else out.grad + g
            if _CLOCK != node._clock:    # something was written in place since node was made
                _check_versions(node)
            if create_graph and node.differentiable_backward is not True:
                in_grads = _recorded_backward(node, g)
            else:
                in_grads = node.backward(node, g)
            if not isinstance(in_grads, tuple):
                in_grads = (in_grads,)
            if not retain_graph:
                node.saved_tensors = _FREED
            for inp, child, gi, need in zip(node.inputs, next_functions(node), in_grads,
                                            node.needs_input_grad):
                if not need or gi is None:
                    continue
                if gi.shape != inp.shape or gi.dtype is not inp.dtype:
                    raise RuntimeError(
                        f"backward: {node.name()} returned a gradient of shape {tuple(gi.shape)} "
                        f"({gi.dtype}) for an input of shape {tuple(inp.shape)} ({inp.dtype})")
                if child is None:
                    if capture is None:
                        _accumulate_leaf(inp, gi, g, owned if in_place else None, add_into)
                    elif id(inp) in capture:
                        before = found.get(id(inp))
                        found[id(inp)] = gi if before is None else before + gi
                else:
                    prev_g = grads.get(child)
                    if prev_g is None:
                        grads[child] = gi
                    elif id(prev_g) in owned:
                        add_into(prev_g, gi)
                    else:
                        total = prev_g + gi
                        if in_place:
                            owned[id(total)] = total
                        grads[child] = total
        return found
    finally:
        _set(*prev)


def _recorded_backward(node, g):
    """create_graph=True through a node whose backward is a kernel: its recorded backward."""
    if not node.differentiable_backward:
        raise NotImplementedError(f"create_graph=True: the backward of {node.name()} is not "
                                  f"differentiable (its Function sets no differentiable_backward)")
    return node.differentiable_backward(g)


def backward_into(root, gradient, retain_graph, create_graph, inputs):
    """Tensor.backward(inputs=..., create_graph=...): accumulate into the `.grad` of `inputs`
    only, or of every leaf; with create_graph the gradients carry their own graph."""
    if inputs is None:           # backward(create_graph=True): every leaf, graph-carrying gradients
        _run(root, _seed("backward", root, gradient),
             bool(create_graph if retain_graph is None else retain_graph), None, create_graph)
        return
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if not inputs:
        raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
    grads = grad(root, inputs, gradient, retain_graph, create_graph, allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is not None:
            t.grad = g.clone() if t.grad is None else t.grad + g


class _Outputs:
    """A stand-in node whose inputs are the grad_fns of several outputs (grad() of a tuple)."""

    def __init__(self, nodes):
        self._next = tuple(nodes)


def _needed(order, capture):
    """The nodes of `order` that a gradient asked for flows through: grad() runs only these."""
    targets = {id(t.grad_fn) for t in capture.values() if t.grad_fn is not None}
    needed = set()
    for node in reversed(order):            # producers first
        if isinstance(node, _Outputs):
            continue
        if id(node) in targets or any(
                (child is None and id(inp) in capture) or id(child) in needed
                for inp, child in zip(node.inputs, next_functions(node)) if isinstance(inp, Tensor)):
            needed.add(id(node))
    return [node for node in order if id(node) in needed]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, returned, not accumulated in `.grad`
    (PyTorch's torch.autograd.grad).

    sum over outputs o of (d o / d input)^T grad_outputs[o]; grad_outputs may be omitted for
    outputs of one element. An input no output depends on raises, unless allow_unused (then its
    gradient is None, or zeros with materialize_grads). With create_graph=True the gradients are
    themselves differentiable (Hessian-vector products, gradient penalties), through every
    op (`differentiable_backward`; a Function without it raises). Differs from
    PyTorch: is_grads_batched is not implemented, and raises saying so."""
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True is not implemented in tinyattn")
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(outputs) if grad_outputs is None else (grad_outputs,)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError(f"grad: input {i} does not require grad (One of the "
                               f"differentiated Tensors does not require grad)")
    capture = {id(t): t for t in inputs}
    seeds = {}
    found = {}
    for i, (o, go) in enumerate(zip(outputs, grad_outputs)):
        g = _seed(f"grad (output {i})", o, go)
        if o.grad_fn is None:
            if id(o) in capture:
                found[id(o)] = g if id(o) not in found else found[id(o)] + g
        else:
            seeds[o.grad_fn] = g if o.grad_fn not in seeds else seeds[o.grad_fn] + g
    if seeds:
        retain = create_graph if retain_graph is None else retain_graph
        more = _run(_Outputs(seeds), seeds, bool(retain), capture, create_graph)
        for k, g in more.items():
            found[k] = g if k not in found else found[k] + g
    result = []
    for i, t in enumerate(inputs):
        g = found.get(id(t))
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(f"grad: input {i} (shape {tuple(t.shape)}) appears to not have "
                               f"been used in the graph. Set allow_unused=True if this is the "
                               f"desired behavior.")
        if g is None and materialize_grads:
            g = _make(array(t.dtype.typecode, [0]) * t.numel(), t.shape, t.dtype)
        result.append(g)
    return tuple(result)


def _accumulate_leaf(leaf, gi, upstream, owned=None, add_into=None):
    # A backward formula may hand the upstream gradient itself to several inputs (a + b passes g
    # to both). Stored as-is, two leaves would share one .grad buffer and an in-place update of
    # one (clipping, zero_()) would change the other, so shared buffers are copied first.
    if leaf.grad is None:
        leaf.grad = gi.clone() if gi._data is upstream._data else gi
    elif owned is not None and id(leaf.grad) in owned:  # a sum made earlier in this pass
        add_into(leaf.grad, gi)
    else:  # out of place: a .grad the user may hold from an earlier backward stays as it was
        leaf.grad = leaf.grad + gi
        if owned is not None:
            owned[id(leaf.grad)] = leaf.grad


# The engine sums the gradients it owns in place (acc += g) with a kernel, and the kernels are
# reached through the ops, which sit above this module: the ops layer hands its in-place sum
# over when it is imported (ops/__init__.py sets `add_into = ops.arithmetic.add_into`).
add_into = None


def _ones_like(t):
    return _make(array(t.dtype.typecode, [1]) * t.numel(), t.shape, t.dtype)
