"""Datasets: the map-style ``Dataset`` and the stream-style ``IterableDataset``,
and the ways of combining them (as ``torch.utils.data.dataset``).

>>> import numpy as np
>>> ds = TensorDataset(np.arange(10.0), np.arange(10))
>>> train, test = random_split(ds, [0.8, 0.2])
>>> len(train), len(test)
(8, 2)
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ember_data import _rng

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len-1``) to samples.  Subclasses define
    ``__getitem__`` and usually ``__len__`` (samplers and the DataLoader need it);
    ``__getitems__(indices)`` may be added to fetch a whole batch at once."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[Any]) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples: subclasses define ``__iter__``.  With DataLoader
    workers each worker iterates its own copy; use ``get_worker_info()`` inside
    ``__iter__`` to give each worker its own share, or every sample is seen once
    per worker."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[Any]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


def _first_dim(x: Any) -> int:
    """Length of the first dimension of a tensor or array."""
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) == 0:
        raise TypeError(
            f"TensorDataset: every input needs a first dimension, got {type(x).__name__} "
            f"with shape {tuple(shape) if shape is not None else None}"
        )
    return int(shape[0])


class TensorDataset(Dataset[tuple[Any, ...]]):
    """Samples are ``tuple(t[i] for t in tensors)``: tensors (or NumPy arrays)
    indexed along their first dimension, which must be of one length."""

    def __init__(self, *tensors: Any) -> None:
        sizes = [_first_dim(t) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise AssertionError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return _first_dim(self.tensors[0])


class StackDataset(Dataset[Any]):
    """Datasets of one length side by side: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])`` and ``StackDataset(x=a, y=b)[i]`` is ``{"x": a[i], "y": b[i]}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        datasets: tuple[Any, ...] | dict[str, Any]
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                    "input/output, but both types are given."
                )
            datasets = args
        elif kwargs:
            datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")
        members = list(datasets.values()) if isinstance(datasets, dict) else list(datasets)
        self._length = len(members[0])
        if any(self._length != len(d) for d in members):
            raise ValueError(f"Size mismatch between datasets: lengths {[len(d) for d in members]}")
        self.datasets = datasets

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        def fetch(dataset: Any) -> Any:
            getitems = getattr(dataset, "__getitems__", None)
            if callable(getitems):
                items = getitems(indices)
                if len(items) != len(indices):
                    raise ValueError(
                        "Nested dataset's output size mismatch. "
                        f"Expected {len(indices)}, got {len(items)}"
                    )
                return items
            return [dataset[i] for i in indices]

        if isinstance(self.datasets, dict):
            columns = {k: fetch(d) for k, d in self.datasets.items()}
            return [{k: col[i] for k, col in columns.items()} for i in range(len(indices))]
        parts = [fetch(d) for d in self.datasets]
        return [tuple(col[i] for col in parts) for i in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[Any]):
    """Map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        if dataset_idx == len(self.datasets):
            raise IndexError(f"ConcatDataset index {idx} out of range for length {len(self)}")
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset[Any]):
    """Iterable datasets one after the other (chained lazily)."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(
                    f"ChainDataset only supports IterableDataset, got {type(d).__name__}"
                )
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(
                    f"ChainDataset only supports IterableDataset, got {type(d).__name__}"
                )
            total += len(d)  # type: ignore[arg-type] # TypeError if it has no length
        return total


class Subset(Dataset[Any]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: int | list[int]) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Any, lengths: Sequence[int | float], generator: Any = None
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths,
    or of the given fractions of its length (which must sum to 1; the remainder
    of the rounding goes one by one to the first splits).  ``generator`` (an
    ember Generator, or a NumPy Generator/RandomState) fixes the split.

    >>> a, b = random_split(range(10), [3, 7], generator=np.random.default_rng(0))
    >>> sorted(list(a) + list(b)) == list(range(10))
    True
    """
    _rng.check_generator(generator, "random_split")
    lengths = list(lengths)
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(int(math.floor(n * frac)))
        remainder = n - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.",
                    stacklevel=2,
                )
    try:
        lengths = [operator.index(x) for x in lengths]  # type: ignore[arg-type] # raises
    except TypeError:
        raise ValueError(
            f"random_split: lengths must be integers or fractions summing to 1, got {lengths}"
        ) from None
    if any(x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must not be negative, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset! "
            f"(lengths {lengths} sum to {sum(lengths)}, dataset has {n})"
        )
    indices = _rng.randperm(sum(lengths), generator)
    return [
        Subset(dataset, indices[offset - length : offset])
        for offset, length in zip(itertools.accumulate(lengths), lengths)
    ]
