"""Packed sequences, as torch.nn.utils.rnn: a batch of sequences of different lengths, stored
without padding, for nn.RNN, nn.GRU and nn.LSTM to read.

A batch of B sequences, sorted longest first, lengths L_0 >= L_1 >= ... : at time step t only
the first batch_sizes[t] = #{b : L_b > t} of them are still going. A PackedSequence keeps their
rows time step after time step, each step's live rows only:

    data         (sum(L), *)   rows of step 0 (batch_sizes[0] of them), then of step 1, ...
    batch_sizes  (T,) int64    how many sequences are still going at each step
    sorted_indices             sorted position j holds the caller's sequence sorted_indices[j]
    unsorted_indices           its inverse: the caller's sequence b is at unsorted_indices[b]
                               (both None when the caller's batch was already sorted)

Packing and padding are each ONE `index_select`: every row of the result reads one row of the
source (padding reads an extra row filled with padding_value), so the gradient of each is that of
index_select, each row's gradient added back into the row it was read from.

Where we differ from PyTorch: a length larger than the padded input's time dimension raises
(PyTorch 2.13 reads past the end of the tensor); the device arguments accept only the CPU.
"""
from collections import namedtuple

from ... import dtypes as _dt
from ...creation import full, tensor
from ...ops.indexing import index_select
from ...ops.layout import cat, reshape, unbind
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _ints(t):
    return None if t is None else [int(v) for v in (t.tolist() if isinstance(t, Tensor) else t)]


def _index(values):
    return tensor(values, dtype=_dt.int64)


def invert_permutation(permutation):
    """The inverse of a permutation given as a 1-D int64 tensor (None stays None)."""
    if permutation is None:
        return None
    perm = _ints(permutation)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _index(inverse)


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                    "unsorted_indices"])):
    """PackedSequence(data, batch_sizes, sorted_indices=None, unsorted_indices=None): see the
    module docstring. Built by pack_padded_sequence or pack_sequence, not by hand; as in PyTorch,
    PackedSequence((data, batch_sizes)) also works. unsorted_indices defaults to the inverse of
    sorted_indices. Beyond PyTorch: batch_sizes may be a list of ints."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = _index(_ints(batch_sizes))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """A PackedSequence whose data is data.to(...) (self when nothing changes)."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        return self._with_data(self.data.cuda(*args, **kwargs))

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def long(self):
        return self.to(_dt.int64)

    def int(self):
        return self.to(_dt.int32)

    def byte(self):
        return self.to(_dt.uint8)

    def bool(self):
        return self.to(_dt.bool)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D cpu Long tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _sort_order(lengths):
    """The sorted_indices of PyTorch's `torch.sort(lengths, descending=True)` (stable)."""
    return sorted(range(len(lengths)), key=lambda b: -lengths[b])


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Packs a padded batch input (T, B, *) (batch_first: (B, T, *)) of sequences with the given
    lengths (a list of ints or a 1-D int64 tensor, each in [1, T]).

    enforce_sorted=True: lengths must be in decreasing order (sorted_indices is then None);
    False: the batch is sorted here and sorted_indices / unsorted_indices remember the order."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor, got "
                        f"{type(input).__name__}")
    lens = _lengths_list(lengths)
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    T, B = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        order, sorted_indices = list(range(len(lens))), None
    else:
        order = _sort_order(lens)
        sorted_indices = _index(order)
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={B})")
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if max(lens) > T:
        raise RuntimeError(f"pack_padded_sequence: a length of {max(lens)} is longer than the "
                           f"padded input's {T} time steps (input shape {tuple(input.shape)}, "
                           f"batch_first={batch_first})")
    sorted_lens = [lens[b] for b in order]
    batch_sizes = [sum(1 for n in sorted_lens if n > t) for t in range(sorted_lens[0])]
    # Row (t, b) of the padded input is row t*B + b of its (T*B, *) view (batch_first: b*T + t).
    rows = [order[j] * T + t if batch_first else t * B + order[j]
            for t, n in enumerate(batch_sizes) for j in range(n)]
    data = index_select(reshape(input, (T * B,) + tuple(input.shape[2:])), 0, _index(rows))
    return PackedSequence(data, _index(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded, lengths), padded (T, B, *) (batch_first:
    (B, T, *)) in the caller's batch order, T = total_length or the longest length; lengths an
    int64 tensor of the sequence lengths, in the caller's order too."""
    data, batch_sizes = sequence.data, _ints(sequence.batch_sizes)
    T_max, B = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < T_max:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T_max}")
        T = total_length
    else:
        T = T_max
    unsorted = _ints(sequence.unsorted_indices) or list(range(B))
    sorted_lens = [sum(1 for n in batch_sizes if n > j) for j in range(B)]
    starts = [0] * (T_max + 1)
    for t, n in enumerate(batch_sizes):
        starts[t + 1] = starts[t] + n
    pad_row = starts[T_max]  # the extra row of padding_value after the data

    def row(t, b):
        j = unsorted[b]
        return starts[t] + j if t < T_max and j < batch_sizes[t] else pad_row
    if batch_first:
        rows = [row(t, b) for b in range(B) for t in range(T)]
    else:
        rows = [row(t, b) for t in range(T) for b in range(B)]
    trail = tuple(data.shape[1:])
    source = cat([data, full((1,) + trail, padding_value, dtype=data.dtype)], 0)
    padded = index_select(source, 0, _index(rows))
    shape = (B, T) if batch_first else (T, B)
    lengths = _index([sorted_lens[unsorted[b]] for b in range(B)])
    return reshape(padded, shape + trail), lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences of shapes (L_i, *) into (T, B, *) (batch_first: (B, T, *)), T = max L_i,
    filling with padding_value after each sequence (padding_side='left': before it). A tensor is
    taken as the sequence of its rows along dim 0, as PyTorch does."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = unbind(sequences, 0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences:
        if not isinstance(s, Tensor) or s.ndim == 0:
            raise RuntimeError(f"pad_sequence: every sequence must be a tensor of at least one "
                               f"dimension, got {s!r}")
        if tuple(s.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise RuntimeError(f"pad_sequence: every sequence must have the same trailing "
                               f"dimensions, got shapes {tuple(sequences[0].shape)} and "
                               f"{tuple(s.shape)}")
    dtype = sequences[0].dtype
    lens = [s.shape[0] for s in sequences]
    T, B = max(lens), len(sequences)
    trail = tuple(sequences[0].shape[1:])
    starts = [0] * (B + 1)
    for b, n in enumerate(lens):
        starts[b + 1] = starts[b] + n
    pad_row = starts[B]

    def row(t, b):
        s = t - (T - lens[b]) if padding_side == "left" else t
        return starts[b] + s if 0 <= s < lens[b] else pad_row
    rows = ([row(t, b) for b in range(B) for t in range(T)] if batch_first
            else [row(t, b) for t in range(T) for b in range(B)])
    source = cat([s.to(dtype) for s in sequences] + [full((1,) + trail, padding_value,
                                                          dtype=dtype)], 0)
    out = index_select(source, 0, _index(rows))
    return reshape(out, ((B, T) if batch_first else (T, B)) + trail)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of pad_sequence: the list of each sequence's first lengths[b] rows."""
    lens = _lengths_list(lengths)
    if batch_first:
        return [padded_sequences[b, :n] for b, n in enumerate(lens)]
    return [padded_sequences[:n, b] for b, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The inverse of pack_sequence: the list of sequences, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
