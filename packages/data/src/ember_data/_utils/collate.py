"""Collation: turning a list of samples into a batch (as
``torch.utils.data._utils.collate``).

The rules follow PyTorch's ``default_collate`` exactly: arrays and tensors are
stacked along a new first dimension, Python floats become a float64 batch and
ints an int64 one (bools a bool one), strings and bytes stay a list, mappings,
named tuples and sequences are collated field by field (tuples come back as
lists).

Note [Collate choice]
What a batch's arrays become is chosen by the collate function, never silently by
what else is installed:
- ``default_collate``: ember tensors when ember_core is installed (ember's
  DataLoader feeds ember models), NumPy arrays without it; PyTorch tensors in the
  samples are stacked into a PyTorch tensor.
- ``numpy_collate``: always NumPy arrays (tensors in the samples too), for a
  NumPy-only pipeline whatever is installed.
- ``torch_collate``: always PyTorch tensors (needs torch), so a PyTorch training
  loop can use ember_data's DataLoader on purpose.

Inside a DataLoader worker, large stacked batches are written straight into
shared memory (``set_shared_allocator``), so handing them to the main process
copies nothing more.
"""

import collections
import copy
import re
import sys
from typing import Any

import numpy as np

from ember_data import _rng

__all__ = [
    "collate",
    "collate_float_fn",
    "collate_int_fn",
    "collate_numpy_array_fn",
    "collate_numpy_scalar_fn",
    "collate_str_fn",
    "collate_tensor_fn",
    "default_collate",
    "default_collate_err_msg_format",
    "default_collate_fn_map",
    "default_convert",
    "np_str_obj_array_pattern",
    "numpy_collate",
    "numpy_collate_fn_map",
    "torch_collate",
    "torch_collate_fn_map",
]

_ec = _rng.ember_core()

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

# Set in DataLoader workers: (shape, numpy dtype) -> an uninitialised array in
# shared memory, or None when the array is too small to be worth it.
_shared_allocator = None


def set_shared_allocator(allocator):
    """Install (or with None remove) the allocator stacked batches are written
    into; DataLoader workers install their shared-memory allocator here."""
    global _shared_allocator
    _shared_allocator = allocator


# Set in DataLoader workers when ember_multiprocessing's transport is in use
# (Note [Transport hook]): stacked batches are then ember tensors made in its
# shared memory, so they arrive in the main process shared (is_shared() True),
# as PyTorch's workers collate into shared storages.
_ember_shared_batches = False


def set_shared_tensors(enabled):
    """Stack tensor batches into new ember tensors (True), which a worker makes in
    shared memory, rather than into ember_data's own segments (False)."""
    global _ember_shared_batches
    _ember_shared_batches = bool(enabled) and _ec is not None


def _as_tensor(array):
    """An ember tensor over a NumPy array (zero-copy; in workers with shared tensor
    batches, a copy in shared memory), or the array itself without ember."""
    if _ec is None:
        return array
    if _ember_shared_batches and not array.dtype.hasobject:
        t = _ec.empty(array.shape, dtype=_ec.from_numpy(np.empty(0, array.dtype)).dtype)
        t.numpy()[...] = array  # a copy, in shared memory (set_shared_tensors)
        return t
    return _ec.as_tensor(array)


def _stack_shape(arrays):
    shape = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(a.shape)} at entry {i}"
            )
    dtype = np.result_type(*arrays) if len({a.dtype for a in arrays}) > 1 else arrays[0].dtype
    return (len(arrays), *shape), dtype


def _stack_arrays(arrays):
    """np.stack(arrays) into a fresh array (in shared memory inside workers),
    with PyTorch's error for unequal shapes."""
    out_shape, dtype = _stack_shape(arrays)
    out = _shared_allocator(out_shape, dtype) if _shared_allocator is not None else None
    if out is None:
        out = np.empty(out_shape, dtype)
    for i, a in enumerate(arrays):
        out[i] = a
    return out


def _stack_to_tensor(arrays):
    """_stack_arrays as a tensor (an array without ember); in workers with shared
    tensor batches (set_shared_tensors), a new ember tensor in shared memory."""
    if not _ember_shared_batches:
        return _as_tensor(_stack_arrays(arrays))
    out_shape, dtype = _stack_shape(arrays)
    if dtype.hasobject:
        return _as_tensor(_stack_arrays(arrays))
    t = _ec.empty(out_shape, dtype=_ec.from_numpy(np.empty(0, dtype)).dtype)
    out = t.numpy()
    for i, a in enumerate(arrays):
        out[i] = a
    return t


def default_convert(data):
    """Convert NumPy arrays (and NumPy scalars) inside ``data`` to ember tensors,
    keeping the structure; everything else is returned unchanged.  It is the
    collate_fn of a DataLoader without automatic batching.  Without ember_core,
    arrays stay arrays."""
    elem_type = type(data)
    if _ec is not None and isinstance(data, _ec.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "bytes_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # the mapping type may carry extra state: clone and update it
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # as PyTorch: tuples become lists
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples), using ``collate_fn_map`` (type ->
    function(batch, *, collate_fn_map)) for the element types it names and
    recursing through mappings, named tuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(
                    {
                        key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                        for key in elem
                    }
                )
                return clone
            return elem_type(
                {
                    key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem
                }
            )
        except TypeError:
            return {
                key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
            }
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(
            *(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch))
        )
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type(
                [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
            )
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack ember tensors along a new first dimension."""
    ts = batch
    if all(
        not t.requires_grad and t.device.type == "cpu" and t.dtype.name != "bfloat16" for t in ts
    ):
        # through NumPy: one pass, and into shared memory inside workers
        return _stack_to_tensor([t.numpy() for t in ts])
    return _ec.stack(list(ts), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """Stack NumPy arrays (refusing strings and objects, as PyTorch does)."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return _stack_to_tensor([np.asarray(b) for b in batch])


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return _as_tensor(np.array(batch, dtype=np.float64))


def collate_int_fn(batch, *, collate_fn_map=None):
    # ints give int64; a batch of bools (ints too) stays bool, as torch.tensor does
    a = np.array(batch)
    if a.dtype != np.bool_:
        a = a.astype(np.int64, copy=False)
    return _as_tensor(a)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {}
if _ec is not None:
    default_collate_fn_map[_ec.Tensor] = collate_tensor_fn
default_collate_fn_map[np.ndarray] = collate_numpy_array_fn  # memmap too (a subclass)
default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def _torch():
    """The torch module when it is already imported (a torch tensor in a sample means
    it is), else None: ember_data never imports torch on its own."""
    return sys.modules.get("torch")


def collate_torch_tensor_fn(batch, *, collate_fn_map=None):
    """Stack PyTorch tensors into a PyTorch tensor (as torch's default_collate)."""
    return _torch().stack(list(batch), 0)


def _with_torch_tensors(fn_map):
    """fn_map, with torch.Tensor collated by torch.stack once torch is imported."""
    torch = _torch()
    if torch is not None and getattr(torch, "Tensor", None) is not None:
        fn_map.setdefault(torch.Tensor, collate_torch_tensor_fn)
    return fn_map


def default_collate(batch):
    """Put each field of a list of samples into a batch with a new first
    dimension (the DataLoader's collate_fn when batching): ember tensors with
    ember_core installed, NumPy arrays without it; PyTorch tensors stay PyTorch
    tensors (Note [Collate choice]).

    >>> default_collate([(np.zeros(2), 1), (np.ones(2), 2)])  # doctest: +SKIP
    [tensor([[0., 0.], [1., 1.]], dtype=ember.float64), tensor([1, 2])]
    """
    return collate(batch, collate_fn_map=_with_torch_tensors(default_collate_fn_map))


# ---------------------------------------------------------------- NumPy batches


def _tensor_to_numpy(t):
    if _ec is not None and isinstance(t, _ec.Tensor):
        t = t.detach()
        if t.dtype.name == "bfloat16":
            raise TypeError("numpy_collate: NumPy has no bfloat16; convert the samples first")
        return t.cpu().numpy()
    return t.detach().cpu().numpy()  # a PyTorch tensor


def _numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return _stack_arrays([np.asarray(b) for b in batch])


def _numpy_tensor_fn(batch, *, collate_fn_map=None):
    return _stack_arrays([_tensor_to_numpy(t) for t in batch])


def _numpy_int_fn(batch, *, collate_fn_map=None):
    a = np.array(batch)
    return a if a.dtype == np.bool_ else a.astype(np.int64, copy=False)


def _numpy_scalar_fn(batch, *, collate_fn_map=None):
    return np.array(batch)


def _numpy_float_fn(batch, *, collate_fn_map=None):
    return np.array(batch, dtype=np.float64)


numpy_collate_fn_map = {
    np.ndarray: _numpy_array_fn,
    (np.bool_, np.number, np.object_): _numpy_scalar_fn,
    float: _numpy_float_fn,
    int: _numpy_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}
if _ec is not None:
    numpy_collate_fn_map[_ec.Tensor] = _numpy_tensor_fn


def numpy_collate(batch):
    """default_collate's rules, with every batch a NumPy array whatever is installed
    (ember and PyTorch tensors in the samples too).

    >>> numpy_collate([(np.zeros(2), 1), (np.ones(2), 2)])
    [array([[0., 0.],
           [1., 1.]]), array([1, 2])]
    """
    torch = _torch()
    if torch is not None and torch.Tensor not in numpy_collate_fn_map:
        numpy_collate_fn_map[torch.Tensor] = _numpy_tensor_fn
    return collate(batch, collate_fn_map=numpy_collate_fn_map)


# ---------------------------------------------------------------- PyTorch batches


def _import_torch():
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            "torch_collate makes PyTorch tensors: install torch, or use default_collate "
            "(ember tensors) or numpy_collate (NumPy arrays)"
        ) from exc
    return torch


def torch_collate(batch):
    """default_collate's rules, with every batch a PyTorch tensor (needs torch): for a
    PyTorch pipeline that uses ember_data's DataLoader.  NumPy and ember batches
    become PyTorch tensors over the same memory (torch.from_numpy).

    >>> torch_collate([(np.zeros(2), 1), (np.ones(2), 2)])  # doctest: +SKIP
    [tensor([[0., 0.], [1., 1.]], dtype=torch.float64), tensor([1, 2])]
    """
    torch = _import_torch()
    if not torch_collate_fn_map:
        for kind, fn in numpy_collate_fn_map.items():
            if fn is not collate_str_fn:
                torch_collate_fn_map[kind] = _to_torch(fn)
            else:
                torch_collate_fn_map[kind] = fn
        torch_collate_fn_map[torch.Tensor] = collate_torch_tensor_fn
    return collate(batch, collate_fn_map=torch_collate_fn_map)


torch_collate_fn_map: dict[Any, Any] = {}  # filled on first use: torch is imported only then


def _to_torch(numpy_fn):
    def fn(batch, *, collate_fn_map=None):
        return sys.modules["torch"].from_numpy(np.asarray(numpy_fn(batch)))

    return fn
