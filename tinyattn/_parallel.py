"""`set_num_threads` and `get_num_threads`, PyTorch's names for how many threads the kernels that
split their work use (matmul, softmax, the fused attention, ...), the calling thread included.
The count is kept by tinyattn/backend.py, which hands it to the fast backend's thread pool; its
default is ``TINYATTN_NUM_THREADS``, or the CPUs this process may use (its affinity and cgroup
CPU quota, backend.usable_cpus; at most 8). The reference backend runs on the calling thread
alone."""
from . import backend

__all__ = ["get_num_threads", "set_num_threads"]


def set_num_threads(nthreads):
    """Use `nthreads` (>= 1) threads from now on. As in PyTorch, anything but a positive int
    (a bool, a float, a string) raises RuntimeError."""
    if not isinstance(nthreads, int) or isinstance(nthreads, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(nthreads).__name__}")
    if nthreads < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {nthreads}")
    backend.set_num_threads(nthreads)


def get_num_threads():
    """How many threads the kernels use (the calling thread included)."""
    return backend.num_threads()
