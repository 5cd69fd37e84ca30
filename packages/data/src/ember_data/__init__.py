"""ember_data: datasets, samplers and a multi-process DataLoader with the API of
``torch.utils.data`` -- over NumPy arrays alone, or ember tensors when
ember_core is installed (``ember.utils.data`` is this package).

>>> import numpy as np
>>> from ember_data import DataLoader, TensorDataset
>>> ds = TensorDataset(np.random.rand(100, 3).astype(np.float32), np.arange(100))
>>> for x, y in DataLoader(ds, batch_size=32, shuffle=True, num_workers=2):
...     pass
"""

from importlib import metadata as _metadata

from ember_data import _utils, dataloader, dataset, distributed, sampler  # noqa: F401
from ember_data._utils.collate import numpy_collate, torch_collate
from ember_data.dataloader import (
    DataLoader,
    _DatasetKind,
    default_collate,
    default_convert,
    get_worker_info,
)
from ember_data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember_data.distributed import DistributedSampler
from ember_data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

# the installed distribution's version (Note [One version], VERSION)
__version__ = _metadata.version("ember-data")

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "_DatasetKind",
    "default_collate",
    "default_convert",
    "numpy_collate",
    "torch_collate",
    "get_worker_info",
    "random_split",
]


def _alias(prefix):
    """Make this package and every module of it importable under ``prefix`` too,
    as the same module objects: the ember umbrella calls
    ``ember_data._alias("ember.utils.data")``, so that ``import
    ember.utils.data.sampler`` gives ember_data.sampler itself rather than a
    second copy with its own classes."""
    import importlib
    import sys

    importlib.import_module("ember_data.datasets")
    for name, module in list(sys.modules.items()):
        if name == "ember_data" or name.startswith("ember_data."):
            sys.modules[prefix + name[len("ember_data") :]] = module


def __getattr__(name):
    # ember_data.datasets (and its transforms) load on first use
    if name == "datasets":
        import importlib

        return importlib.import_module("ember_data.datasets")
    raise AttributeError(f"module 'ember_data' has no attribute {name!r}")
