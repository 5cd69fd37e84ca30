"""Samplers: the order in which a DataLoader visits a map-style dataset (as
``torch.utils.data.sampler``), plus resumable state.

Beyond PyTorch, every sampler here has ``state_dict()``/``load_state_dict()``:
the state taken part-way through an epoch, loaded into a sampler built the
same way, makes its next iterator yield exactly the rest of that epoch (and the
epochs after it follow as they would have).  See Note [Resumable samplers].

>>> s = RandomSampler(range(5), generator=np.random.default_rng(0))
>>> it = iter(s); first = [next(it), next(it)]
>>> state = s.state_dict()
>>> t = RandomSampler(range(5), generator=np.random.default_rng(0))
>>> t.load_state_dict(state)
>>> first + list(t) == list(RandomSampler(range(5), generator=np.random.default_rng(0)))
True
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from ember_data import _rng

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` over dataset keys (and usually
    ``__len__``)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        if data_source is not None:
            warnings.warn(
                "`data_source` argument is not used and will be removed in 2.2.0."
                "You may still have custom implementation that utilizes it.",
                stacklevel=2,
            )

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


# Note [Resumable samplers]
# An epoch is a pure function of an "epoch state" captured when iteration starts:
# the seed drawn for it (generator=None) or the generator's state at that moment.
# __iter__ captures that state eagerly (it is a plain method returning a
# generator, so iter(sampler) alone fixes the epoch) and the iterator counts what
# it yields.  state_dict() = {"epoch": epoch state, "yielded": count}.  Loading it
# makes the next __iter__ rebuild that epoch from the epoch state, skip `yielded`
# items and go on; a generator passed by the user is left exactly where the
# uninterrupted epoch would have left it.  The DataLoader uses the same states
# (taken right after iter(), count 0) and skips whole batches itself.


class _ResumableSampler(Sampler[Any]):
    """Shared machinery of Note [Resumable samplers].  Subclasses define
    ``_epoch(state)`` -> (epoch state, iterator of this epoch's items), where
    ``state`` is None for a fresh epoch or a previously returned epoch state."""

    _epoch_state: dict[str, Any] | None = None
    _yielded = 0
    _resume: dict[str, Any] | None = None

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[Any]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        resume, self._resume = self._resume, None
        if resume is not None and resume.get("epoch") is not None:
            self._epoch_state, items = self._epoch(resume["epoch"])
            skip = int(resume.get("yielded", 0))
            rest = itertools.islice(items, skip, None)
            try:
                head = next(rest)
            except StopIteration:
                pass  # that epoch was finished: start the next one
            else:
                self._yielded = skip
                return self._counting(itertools.chain((head,), rest))
        self._epoch_state, items = self._epoch(None)
        self._yielded = 0
        return self._counting(items)

    def _counting(self, items: Iterable[Any]) -> Iterator[Any]:
        for item in items:
            self._yielded += 1
            yield item

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch stands: load it into a sampler built the same
        way and iterate to get the rest of the epoch."""
        return {"epoch": self._epoch_state, "yielded": self._yielded}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not isinstance(state_dict, dict) or "yielded" not in state_dict:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: expected a dict from state_dict(), "
                f"got {state_dict!r}"
            )
        self._resume = dict(state_dict)


class _RandomSource:
    """Epoch states for samplers with a ``generator`` attribute: a fresh seed from
    the default source when it is None, else the generator's state."""

    generator: Any

    def _epoch_generator(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Any]:
        if self.generator is None:
            seed = _rng.random_seed(None) if state is None else state["seed"]
            return {"seed": seed}, _rng.new_generator(seed)
        if state is not None:
            _rng.set_state(self.generator, state["generator"])
        return {"generator": _rng.get_state(self.generator)}, self.generator


class SequentialSampler(_ResumableSampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[Any]]:
        return {}, iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(_RandomSource, _ResumableSampler):
    """A random order of the dataset's indices: a permutation, or with
    ``replacement=True`` ``num_samples`` independent draws.  With ``num_samples``
    larger than the dataset and no replacement, whole permutations follow each
    other.  ``generator=None`` draws one seed per epoch from the default source
    (``ember.manual_seed`` governs it; NumPy's global state without ember)."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Any = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _rng.check_generator(generator, "RandomSampler")
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={n}"
            )

    @property
    def num_samples(self) -> int:
        # the dataset may change size after construction
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[Any]]:
        state, generator = self._epoch_generator(state)
        return state, self._draws(len(self.data_source), self.num_samples, generator)

    def _draws(self, n: int, num_samples: int, generator: Any) -> Iterator[int]:
        # Drawn lazily, chunk by chunk, as PyTorch does (a shared generator sees
        # the same sequence of calls).
        if self.replacement:
            for _ in range(num_samples // 32):
                yield from _rng.randint(n, 32, generator)
            yield from _rng.randint(n, num_samples % 32, generator)
        else:
            for _ in range(num_samples // n):
                yield from _rng.randperm(n, generator)
            if num_samples % n:
                yield from _rng.randperm(n, generator)[: num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_RandomSource, _ResumableSampler):
    """The given indices in a random order (a new permutation each epoch)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = _rng.check_generator(generator, "SubsetRandomSampler")

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[Any]]:
        state, generator = self._epoch_generator(state)

        def items() -> Iterator[Any]:
            indices = self.indices
            for i in _rng.randperm(len(indices), generator):
                yield indices[i]

        return state, items()

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_RandomSource, _ResumableSampler):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities
    proportional to ``weights`` (with or without replacement)."""

    def __init__(
        self,
        weights: Sequence[float] | Any,
        num_samples: int,
        replacement: bool = True,
        generator: Any = None,
    ) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}"
            )
        ec = _rng.ember_core()
        self._weights = np.array(w)
        self.weights = ec.from_numpy(self._weights) if ec is not None else self._weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = _rng.check_generator(generator, "WeightedRandomSampler")

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[Any]]:
        state, generator = self._epoch_generator(state)

        def items() -> Iterator[Any]:
            yield from _rng.multinomial(
                self._weights, self.num_samples, self.replacement, generator
            )

        return state, items()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[Any]]):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one
    shorter unless ``drop_last``).

    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(
        self, sampler: Sampler[Any] | Iterable[Any], batch_size: int, drop_last: bool
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler: Any = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._yielded = 0
        self._resume: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[list[Any]]:
        resume, self._resume = self._resume, None
        inner_stateful = callable(getattr(self.sampler, "load_state_dict", None))
        done = skip = 0
        if resume is not None:
            done = int(resume.get("yielded", 0))
            if inner_stateful and resume.get("sampler") is not None:
                self.sampler.load_state_dict(resume["sampler"])
            else:
                skip = done
        batches = self._batches(iter(self.sampler))
        if skip:
            batches = itertools.islice(batches, skip, None)
        self._yielded = done
        return self._counting(batches)

    def _batches(self, sampler_iter: Iterator[Any]) -> Iterator[list[Any]]:
        if self.drop_last:
            for group in zip(*[sampler_iter] * self.batch_size):
                yield [*group]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def _counting(self, batches: Iterable[list[Any]]) -> Iterator[list[Any]]:
        for batch in batches:
            self._yielded += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """The inner sampler's state when it has one (it is then at a batch
        boundary), else the number of batches yielded (enough for a
        deterministic inner sampler)."""
        state = getattr(self.sampler, "state_dict", None)
        return {"sampler": state() if callable(state) else None, "yielded": self._yielded}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not isinstance(state_dict, dict) or "yielded" not in state_dict:
            raise ValueError(
                "BatchSampler.load_state_dict: expected a dict from state_dict(), "
                f"got {state_dict!r}"
            )
        self._resume = dict(state_dict)

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
