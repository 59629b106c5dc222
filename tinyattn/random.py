"""The global random generator: `manual_seed(n)` makes every random op of a run repeatable.

Each draw (a call to `rand`, `randn`, dropout, ...) takes a fresh 64-bit key made from the seed and a
call counter; the kernels of the random family (kernels/random.py) turn (element index, key) into
a number. The state is just (seed, counter), so `get_rng_state()` / `set_rng_state()` make
checkpoints resume exactly. tinyattn's stream is not PyTorch's: the same seed gives different numbers in the two libraries
(move weights between them with `state_dict`, not with seeds).
"""
from array import array

from . import dtypes as _dt
from .storage import _make


def _hash32(x):
    """kernels/random.py's 32-bit integer hash, of x's low 32 bits, in Python: the generator sits
    below the kernels (tests/kernels/test_kernels.py holds the two equal)."""
    x &= 0xFFFFFFFF
    x = (((x >> 16) ^ x) * 0x45D9F3B) & 0xFFFFFFFF
    x = (((x >> 16) ^ x) * 0x45D9F3B) & 0xFFFFFFFF
    return (x >> 16) ^ x


class Generator:
    __slots__ = ("_seed", "_calls")

    def __init__(self, seed=0):
        self.manual_seed(seed)

    def manual_seed(self, seed):
        if not isinstance(seed, int):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
        self._calls = 0
        return self

    def initial_seed(self):
        return self._seed

    def next_keys(self):
        """Two 32-bit keys for the next draw; every call gives a new, unrelated stream."""
        c = self._calls
        self._calls = c + 1
        lo, hi = self._seed & 0xFFFFFFFF, self._seed >> 32
        k1 = _hash32(lo ^ _hash32(c ^ 0x9E3779B9))
        k2 = _hash32(_hash32(hi ^ 0x85EBCA6B) + _hash32(c + k1))
        return k1, k2

    def get_state(self):
        return (self._seed, self._calls)

    def set_state(self, state):
        seed, calls = (int(v) for v in state)
        self._seed, self._calls = seed, calls


default_generator = Generator(0)


def manual_seed(seed):
    """Seed the global generator (as `torch.manual_seed`); returns it."""
    return default_generator.manual_seed(seed)


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    """The generator state as a 2-element int64 tensor (seed, draws so far)."""
    return _make(array("q", default_generator.get_state()), (2,), _dt.int64)


def set_rng_state(state):
    default_generator.set_state(state.tolist() if hasattr(state, "tolist") else state)
