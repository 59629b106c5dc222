"""torch.utils for tinyattn: `tinyattn.utils.data` (datasets, samplers and the DataLoader)."""
from . import data  # noqa: F401
