"""DistributedSampler: each of ``num_replicas`` processes sees its own share of
the dataset (as ``torch.utils.data.distributed``)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sized
from typing import Any

from ember_data import _rng
from ember_data.sampler import _ResumableSampler

__all__ = ["DistributedSampler"]


def _from_process_group(what: str) -> int | None:
    """The default process group's world size or rank, where ember_distributed is
    installed and initialised (as PyTorch's sampler asks torch.distributed)."""
    try:
        import ember_distributed as dist
    except ImportError:
        return None
    if not dist.is_initialized():
        return None
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


def _from_environment(name: str, what: str) -> int:
    value = _from_process_group(what)
    if value is not None:
        return value
    text = os.environ.get(name)
    if text is None:
        raise RuntimeError(
            f"DistributedSampler: {what} was not given and no distributed process group is "
            f"running (environment variable {name} is not set); pass {what}= explicitly"
        )
    return int(text)


class DistributedSampler(_ResumableSampler):
    """Replica ``rank`` of ``num_replicas`` gets every ``num_replicas``-th index of
    one (optionally shuffled) order, padded by repeating indices so that every
    replica gets ``num_samples`` of them (or trimmed with ``drop_last``).  The
    shuffle depends only on ``seed + epoch``, so every replica agrees: call
    ``set_epoch(epoch)`` before each epoch for a new order.

    ``num_replicas`` and ``rank`` default to the default process group's (when
    ember_distributed is installed and initialised), else to the environment's
    ``WORLD_SIZE`` and ``RANK`` (as set by launchers).
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _from_environment("WORLD_SIZE", "num_replicas")
        if rank is None:
            rank = _from_environment("RANK", "rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # drop the tail so that every replica gets the same amount
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def _epoch(self, state: dict[str, Any] | None) -> tuple[dict[str, Any], Iterator[int]]:
        if state is not None:
            self.epoch = state["epoch"]
        n = len(self.dataset)
        if self.shuffle:
            indices = _rng.randperm(n, _rng.new_generator(self.seed + self.epoch))
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(
                f"DistributedSampler: dataset length changed ({len(indices)} != {self.total_size})"
            )
        return {"epoch": self.epoch}, iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch of the shuffle (call it before each epoch's iterator)."""
        self.epoch = epoch
