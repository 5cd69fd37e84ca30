"""pin_memory: page-locked host memory for faster copies to a GPU.  Used when a
GPU backend exists; otherwise the DataLoader's pin_memory=True is a no-op,
noted once per process."""

import collections
import copy
import warnings
from typing import Any

from ember_data import _rng

_noted: list[Any] = []


def available():
    """Whether pinning means anything here (ember_core with a CUDA device)."""
    ec = _rng.ember_core()
    if ec is None or not callable(getattr(ec.Tensor, "pin_memory", None)):
        return False
    cuda = getattr(ec, "cuda", None)
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:
        return False


def note_unavailable():
    """The one-time note for pin_memory=True without a GPU backend."""
    if not _noted:
        _noted.append(True)
        warnings.warn(
            "'pin_memory' argument is set as true but no accelerator is found, "
            "then device pinned memory won't be used.",
            stacklevel=4,
        )


def pin_memory(data):
    """Pin every tensor inside ``data`` (the structure is kept)."""
    ec = _rng.ember_core()
    if ec is not None and isinstance(data, ec.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(v) for k, v in data.items()})
                return clone
            return type(data)({k: pin_memory(v) for k, v in data.items()})
        except TypeError:
            return {k: pin_memory(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(x) for x in data))
    if isinstance(data, tuple):
        return [pin_memory(x) for x in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, x in enumerate(data):
                    clone[i] = pin_memory(x)
                return clone
            return type(data)([pin_memory(x) for x in data])
        except TypeError:
            return [pin_memory(x) for x in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
