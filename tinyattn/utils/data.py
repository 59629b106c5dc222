"""Datasets and the DataLoader, with PyTorch's names and behaviour (torch.utils.data).

    from tinyattn.utils.data import DataLoader, TensorDataset, random_split
    ds = TensorDataset(x, y)                         # ds[i] = (x[i], y[i])
    train, valid = random_split(ds, [0.9, 0.1], generator=tinyattn.Generator(0))
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True, drop_last=True):
        ...

A DataLoader draws indices from a sampler (in order, or a random permutation from tinyattn's
generator, so `tinyattn.manual_seed(n)` makes the order repeatable), groups them into batches
and builds each batch with `collate_fn` (default: `default_collate`, which stacks tensors and
turns numbers into tensors, through tuples, lists and dicts).

Workers. Deliberate difference: batches are made in the calling process (tinyattn's ops use the
cores already), but `num_workers=n` still acts as PyTorch's n workers where a program can see
them: `worker_init_fn(i)` is called for each worker i when an epoch's iterator starts (once in
all with `persistent_workers=True`; never with `num_workers=0`, as in PyTorch), and
`get_worker_info()` returns worker k % n's WorkerInfo while batch k is made (None otherwise),
so an IterableDataset that splits its stream by worker id yields each part once, interleaved
worker by worker in PyTorch's order. Not done: each worker's copy of the dataset and its own
seeded random state (worker_init_fn and the dataset run in the caller's process and change its
state), and `timeout`. The options PyTorch checks are checked as it does (persistent_workers,
prefetch_factor and multiprocessing_context need num_workers > 0).
"""
import bisect
import math
import threading
from collections.abc import Mapping, Sequence

from .. import dtypes as _dt
from ..creation import randint, randperm, tensor
from ..ops.layout import stack
from ..tensor import Tensor


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 (PyTorch's name)
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


_worker = threading.local()
_DONE = object()


def get_worker_info():
    """The WorkerInfo of the DataLoader worker this code runs for, or None in the main process
    (see the module docstring: tinyattn runs each worker's share in the calling process)."""
    return getattr(_worker, "info", None)


class _AsWorker:
    def __init__(self, info):
        self.info = info

    def __enter__(self):
        self.prev, _worker.info = get_worker_info(), self.info

    def __exit__(self, *exc):
        _worker.info = self.prev


class Dataset:
    """A map-style dataset: __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: __iter__ yields samples (no indices, no shuffling)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are (t[i] for t in tensors); all tensors have the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        for t in tensors:
            if not isinstance(t, Tensor) or t.ndim == 0:
                raise ValueError("TensorDataset: every argument must be a tensor with a first "
                                 "dimension")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: size mismatch between tensors: first dimensions "
                             f"{sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, i):
        if isinstance(i, list):
            return self.dataset[[self.indices[j] for j in i]]
        return self.dataset[self.indices[i]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes, total = [], 0
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, i):
        if i < 0:
            if -i > len(self):
                raise IndexError(f"ConcatDataset: index {i} out of range for length {len(self)}")
            i += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, i)
        if k == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {i} out of range for length {len(self)}")
        return self.datasets[k][i - (self.cumulative_sizes[k - 1] if k else 0)]


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (ints adding up to len(dataset),
    or fractions adding up to 1, the remainder handed out one by one as PyTorch does)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1) \
            and sum(lengths) != n:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths {lengths} do not add up to the length of "
                         f"the dataset ({n})")
    order = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, order[start:start + k]))
        start += k
    return out


# -------------------------------------------------------------------------------- samplers

class Sampler:
    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh random permutation at every pass (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples should be a positive integer, got "
                             f"{num_samples!r}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        # lazily, in chunks: num_samples may be huge (minGPT asks for 1e10 draws and stops early)
        n, left = len(self.data_source), self.num_samples
        while left > 0:
            if self.replacement:
                chunk = randint(0, n, (min(left, 1024),), generator=self.generator).tolist()
            else:
                chunk = randperm(n, generator=self.generator).tolist()[:left]
            left -= len(chunk)
            yield from chunk

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler` (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer, got "
                             f"{batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# -------------------------------------------------------------------------------- collating

def default_collate(batch):
    """A list of samples -> one batch: tensors stacked (a new first dim); Python ints, floats and
    bools -> int64 / float64 / bool tensors; strings kept as a list; tuples, lists and dicts
    collated field by field (a namedtuple keeps its type)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, bool):
        return tensor(list(batch), dtype=_dt.bool)
    if isinstance(elem, int):
        return tensor(list(batch), dtype=_dt.int64)
    if isinstance(elem, float):
        return tensor(list(batch), dtype=_dt.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):      # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("default_collate: each element in the list of a batch should be "
                               "of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numbers, strings, dicts or "
                    f"lists; found {type(elem).__name__}")


def default_convert(data):
    return data


class DataLoader:
    """Batches of a dataset (see the module docstring). len() is the number of batches."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative, got "
                             f"{num_workers!r}")
        for bad, message in (
                (persistent_workers and not num_workers,
                 "persistent_workers option needs num_workers > 0"),
                (prefetch_factor is not None and not num_workers,
                 "prefetch_factor option could only be specified in multiprocessing: let "
                 "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to "
                 "None"),
                (multiprocessing_context is not None and not num_workers,
                 f"multiprocessing_context can only be used with multi-process loading "
                 f"(num_workers > 0), but got num_workers={num_workers}"),
                (timeout < 0, f"timeout option should be non-negative, got {timeout!r}")):
            if bad:
                raise ValueError(f"DataLoader: {message}")
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self._workers = None  # the WorkerInfo of each worker, kept with persistent_workers
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self.drop_last, self.pin_memory, self.timeout = drop_last, pin_memory, timeout
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                             "sampler and batch_sampler options")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.sampler, self.batch_sampler = batch_size, sampler, batch_sampler

    def __iter__(self):
        if self.num_workers:
            return self._iter_workers(self._start_workers())
        if self._iterable:
            return self._iter_stream()
        if self.batch_sampler is None:                 # batch_size=None: samples one by one
            return (self.collate_fn(self.dataset[i]) if self.collate_fn is not default_collate
                    else self.dataset[i] for i in self.sampler)
        return (self.collate_fn([self.dataset[i] for i in idx]) for idx in self.batch_sampler)

    def _start_workers(self):
        """Each worker's WorkerInfo, its worker_init_fn called (see the module docstring)."""
        if self.persistent_workers and self._workers is not None:
            return self._workers
        seed = randint(0, 2**62, (1,), generator=self.generator).item()
        workers = [WorkerInfo(i, self.num_workers, seed + i, self.dataset)
                   for i in range(self.num_workers)]
        if self.worker_init_fn is not None:
            for info in workers:
                with _AsWorker(info):
                    self.worker_init_fn(info.id)
        self._workers = workers
        return workers

    def _iter_workers(self, workers):
        """Batch k made as worker k % n (map-style); or each worker's own pass over an
        IterableDataset, their batches interleaved as PyTorch's in_order loader yields them."""
        if self._iterable:
            streams = [self._iter_stream() for _ in workers]
        else:
            batches = iter(self.batch_sampler if self.batch_sampler is not None else self.sampler)
            streams = [batches] * len(workers)
        live = list(range(len(workers)))
        while live:
            for i in list(live):
                with _AsWorker(workers[i]):
                    item = next(streams[i], _DONE)
                    if item is not _DONE:
                        batch = item if self._iterable else self._make(item)
                if item is not _DONE:
                    yield batch
                elif self._iterable:
                    live.remove(i)       # this worker's stream ended; the others go on
                else:
                    return               # the sampler is shared: every worker is done

    def _make(self, idx):
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[idx]) if self.collate_fn is not default_collate
                    else self.dataset[idx])
        return self.collate_fn([self.dataset[i] for i in idx])

    def _iter_stream(self):
        if self.batch_size is None:
            yield from self.dataset
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)
