"""DataLoader workers as a program sees them: worker_init_fn, get_worker_info, and PyTorch's
checks of the worker options. tinyattn makes the batches in the calling process, as each worker
would make its share (tinyattn/utils/data.py's docstring)."""
import pytest

import tinyattn as ta
from tinyattn.utils.data import DataLoader, IterableDataset, get_worker_info


def _classes(base):
    class Shards(base):
        """0..9, split among the workers by id, as PyTorch's docs show for IterableDataset."""

        def __iter__(self):
            info = self.info()
            n, i = (1, 0) if info is None else (info.num_workers, info.id)
            return iter([v for v in range(10) if v % n == i])

    class Ids:
        """Item k is (k, the id of the worker that made it, or -1 in the main process)."""

        def __init__(self, info):
            self.info = info

        def __len__(self):
            return 7

        def __getitem__(self, k):
            info = self.info()
            return (k, -1 if info is None else info.id)
    return Shards, Ids


def _batches(DL, Shards, Ids, nw, info, log=None, persistent=False):
    Shards.info = staticmethod(info)
    init = None if log is None else (lambda i: open(log, "a").write(f"{i}\n"))
    shards = [b.tolist() for b in DL(Shards(), batch_size=2, num_workers=nw, worker_init_fn=init)]
    dl = DL(Ids(info), batch_size=2, num_workers=nw, worker_init_fn=init,
            persistent_workers=persistent)
    ids = [[x.tolist() for x in b] for b in dl] + [[x.tolist() for x in b] for b in dl]
    return shards, ids


# by hand: 2 workers share 0..9 as evens and odds, batches interleaved worker by worker; batch k
# of a map-style dataset is made by worker k % 2
SHARDS_2 = [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
IDS_2 = [[[0, 1], [0, 0]], [[2, 3], [1, 1]], [[4, 5], [0, 0]], [[6], [1]]] * 2


def test_workers_by_hand(tmp_path):
    Shards, Ids = _classes(IterableDataset)
    log = tmp_path / "calls"
    assert _batches(DataLoader, Shards, Ids, 2, get_worker_info, log) == (SHARDS_2, IDS_2)
    # once per worker for each iterator: the stream, then two epochs of the map-style loader
    assert sorted(log.read_text().split()) == ["0", "0", "0", "1", "1", "1"]
    log.unlink()
    _batches(DataLoader, Shards, Ids, 2, get_worker_info, log, persistent=True)
    assert sorted(log.read_text().split()) == ["0", "0", "1", "1"]  # the stream's, then once
    assert get_worker_info() is None


def test_without_workers_worker_init_fn_is_never_called(tmp_path):
    Shards, Ids = _classes(IterableDataset)
    log = tmp_path / "calls"
    shards, ids = _batches(DataLoader, Shards, Ids, 0, get_worker_info, log)
    assert shards == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert ids[0] == [[0, 1], [-1, -1]] and not log.exists()


@pytest.mark.parametrize("nw", [0, 2, 3])
def test_workers_match_pytorch(nw, tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils import data as tdata  # noqa: E402 (only with torch)
    results = []
    for DL, base, info in ((DataLoader, IterableDataset, get_worker_info),
                           (tdata.DataLoader, tdata.IterableDataset, tdata.get_worker_info)):
        log = tmp_path / f"{DL.__module__}.calls"
        Shards, Ids = _classes(base)
        results.append((_batches(DL, Shards, Ids, nw, info, log),
                        sorted(log.read_text().split()) if log.exists() else []))
    assert results[0] == results[1]


@pytest.mark.parametrize("kwargs, message", [
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in "
                              "multiprocessing"),
    (dict(multiprocessing_context="fork"), "multiprocessing_context can only be used with "
                                           "multi-process loading"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
])
def test_worker_options_are_checked_as_pytorch_checks_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(list(range(4)), **kwargs)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=message.split(" option")[0]):
        torch.utils.data.DataLoader(list(range(4)), **kwargs)


def test_get_worker_info_is_none_in_the_main_process_and_names_the_worker_inside():
    seen = []
    dl = DataLoader(ta.arange(4), batch_size=1, num_workers=2,
                    worker_init_fn=lambda i: seen.append(get_worker_info()))
    assert [b.tolist() for b in dl] == [[0], [1], [2], [3]]
    assert [(w.id, w.num_workers) for w in seen] == [(0, 2), (1, 2)]
    assert seen[1].seed == seen[0].seed + 1 and "WorkerInfo(id=0" in repr(seen[0])
    assert get_worker_info() is None
