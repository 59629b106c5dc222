"""einsum: Einstein summation, composed of permute, sum and batched matmul.

    einsum("bhqd,bhkd->bhqk", q, k)      the attention scores, q @ k^T per batch and head
    einsum("ij,jk", a, b)                 a @ b (no "->": the output is the letters used once,
                                          in alphabetical order, after the ... dims)

How it runs: each operand first sums away the letters no other operand and not the output uses.
Then the operands are combined left to right, two at a time. For a pair, every letter is one of
    batch     in both, still needed (by the output or a later operand)
    contract  in both, not needed after: summed by the product
    left / right   in one of them only
so the pair is one `bmm` of (batch, left, contract) @ (batch, contract, right), with permutes and
reshapes around it. Its gradient is autograd's, through those ops. `...` stands for the same
broadcast dims in every operand (aligned from the right); a dim of size 1 broadcasts.
A letter repeated within one operand ("ii->i", "ii", "iji->j") takes that operand's diagonal
over those dims first: a view, so its gradient lands on the diagonal only.
"""
from .. import dtypes as _dt
from ..storage import TensorBase as Tensor
from .convert import to_dtype
from .layout import Diagonal, alias, expand, permute, reshape
from .matmul import bmm
from .reduce import sum  # noqa: A004

_ELLIPSIS_LETTERS = [chr(0x3B1 + i) for i in range(24)]   # Greek: never a user's subscript


def _parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(operands):
        raise ValueError(f"einsum: the equation {equation!r} has {len(specs)} operand(s) but "
                         f"{len(operands)} tensor(s) were given")
    n_ell = 0
    for spec, t in zip(specs, operands):
        if "..." in spec:
            n_ell = max(n_ell, t.ndim - (len(spec) - 3))
    ell = _ELLIPSIS_LETTERS[:n_ell]
    out_specs = []
    for spec, t in zip(specs, operands):
        for ch in spec.replace("...", ""):
            if not ch.isalpha():
                raise ValueError(f"einsum: invalid subscript {ch!r} in {equation!r} (letters "
                                 f"a-z, A-Z and ... only)")
        if "..." in spec:
            m = t.ndim - (len(spec) - 3)
            if m < 0:
                raise ValueError(f"einsum: {spec!r} has more subscripts than the operand has "
                                 f"dimensions ({t.ndim})")
            letters = list(spec.replace("...", "\0"))
            k = letters.index("\0")
            letters[k:k + 1] = ell[n_ell - m:]
        else:
            letters = list(spec)
            if len(letters) != t.ndim:
                raise ValueError(f"einsum: the subscripts {spec!r} have {len(letters)} letters "
                                 f"for an operand with {t.ndim} dimensions")
        out_specs.append(letters)
    if arrow:
        if "..." in rhs:
            out = list(rhs.replace("...", "\0"))
            k = out.index("\0")
            out[k:k + 1] = ell
        else:
            out = list(rhs)
        used = {ch for letters in out_specs for ch in letters}
        for ch in out:
            if ch not in used:
                raise ValueError(f"einsum: output subscript {ch!r} does not appear in the inputs")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscript repeated in {rhs!r}")
    else:
        counts = {}
        for letters in out_specs:
            for ch in letters:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell)
    return out_specs, out


def einsum(equation, *operands):
    """Einstein summation over `operands` as `equation` says (see the module docstring)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or not operands:
        raise ValueError("einsum: expected an equation string and at least one tensor")
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: operands must be tensors, got {type(t).__name__}")
    specs, out = _parse(equation, operands)
    operands, specs = zip(*(_diagonals(t, letters, k) for k, (t, letters) in
                            enumerate(zip(operands, specs))))
    size = {}
    for letters, t in zip(specs, operands):
        for ch, n in zip(letters, t.shape):
            if size.get(ch, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: subscript {ch!r} has size {n} in one operand and "
                                 f"{size[ch]} in another")
            size[ch] = n if size.get(ch, 1) == 1 else size[ch]
    terms = list(zip(operands, specs))

    def needed(k):
        """Letters used by the output or by operands after position k."""
        keep = set(out)
        for _, letters in terms[k + 1:]:
            keep |= set(letters)
        return keep

    def drop_unused(t, letters, keep, partner=()):
        gone = [i for i, ch in enumerate(letters) if ch not in keep and ch not in partner]
        if gone:
            t = sum(t, dim=tuple(gone))
            letters = [ch for ch in letters if ch in keep or ch in partner]
        return t, letters

    t, letters = terms[0]
    t, letters = drop_unused(t, letters, needed(0))
    for k in range(1, len(terms)):
        u, u_letters = terms[k]
        keep = needed(k)
        t, letters = drop_unused(t, letters, keep, u_letters)
        u, u_letters = drop_unused(u, u_letters, keep, letters)
        batch = [ch for ch in letters if ch in u_letters and ch in keep]
        contract = [ch for ch in letters if ch in u_letters and ch not in keep]
        left = [ch for ch in letters if ch not in u_letters]
        right = [ch for ch in u_letters if ch not in letters]
        if t.dtype is not u.dtype:   # a sum promoted int32 to int64: promote the pair as `*` does
            common = _dt.promote_types(t.dtype, u.dtype)
            t, u = to_dtype(t, common), to_dtype(u, common)
        a = _arrange(t, letters, batch + left + contract, size)
        b = _arrange(u, u_letters, batch + contract + right, size)
        nb, nl, nc, nr = (_prod(size[c] for c in g) for g in (batch, left, contract, right))
        prod = bmm(reshape(a, (nb, nl, nc)), reshape(b, (nb, nc, nr)))
        t = reshape(prod, tuple(size[c] for c in batch + left + right))
        letters = batch + left + right
    t, letters = drop_unused(t, letters, set(out))
    if letters != out or len(out) != t.ndim:
        t = _arrange(t, letters, out, size)
    return alias(t) if t is terms[0][0] else t  # "ij->ij": a view, as PyTorch, not the input


def _diagonals(t, letters, k):
    """An operand whose subscripts repeat a letter -> its diagonal over each repeated pair (the
    diagonal becomes the last dim, as `diagonal` puts it), and the letters without repeats."""
    letters = list(letters)
    for ch in dict.fromkeys(letters):
        while letters.count(ch) > 1:
            i = letters.index(ch)
            j = letters.index(ch, i + 1)
            if t.shape[i] != t.shape[j]:
                raise ValueError(f"einsum: subscript {ch!r} is repeated for operand {k} but the "
                                 f"sizes don't match, {t.shape[i]} != {t.shape[j]}")
            t = Diagonal.apply(t, 0, i, j)
            letters = [c for m, c in enumerate(letters) if m not in (i, j)] + [ch]
    return t, letters


def _prod(values):
    p = 1
    for v in values:
        p *= v
    return p


def _arrange(t, letters, order, size):
    """t (dims named `letters`) permuted to `order`, size-1 dims broadcast to the full size."""
    if letters != order:
        t = permute(t, tuple(letters.index(ch) for ch in order))
    full = tuple(size[ch] for ch in order)
    return expand(t, full) if t.shape != full else t
