"""The package surface: the standard API, shared-memory creation, and the hook
ember_data's DataLoader uses."""

import io
import multiprocessing
import pickle

import numpy as np

import ember_core as ec
import ember_multiprocessing as mp


def test_the_standard_api_is_re_exported():
    for name in (
        "Process",
        "Queue",
        "SimpleQueue",
        "Pipe",
        "Pool",
        "get_context",
        "set_start_method",
        "get_start_method",
        "cpu_count",
        "Event",
        "Lock",
        "Manager",
    ):
        assert name in mp.__all__ and hasattr(mp, name)
    assert set(mp.get_all_start_methods()) == set(multiprocessing.get_all_start_methods())
    for method in ("fork", "spawn", "forkserver"):
        assert mp.get_context(method).get_start_method() == method


def test_use_shared_memory_switches_the_allocator(no_leaks):
    mp.use_shared_memory()
    try:
        t = ec.ones(5)
    finally:
        mp.use_shared_memory(False)
    assert t.is_shared() and not ec.ones(5).is_shared()


def _pickle_with(hook, obj):
    class Pickler(pickle.Pickler):  # as ember_data's transport pickles
        def reducer_override(self, obj):
            return hook.reducer_override(obj)

    f = io.BytesIO()
    Pickler(f, protocol=5).dump(obj)
    return f.getvalue()


def test_dataloader_transport(no_leaks):
    hook = mp.dataloader_transport()
    hook.worker_setup()  # what a DataLoader worker does first
    try:
        batch = ec.arange(6.0).reshape(2, 3) * 2  # made in shared memory
    finally:
        mp.use_shared_memory(False)
    assert batch.is_shared()
    ptr = batch.data_ptr()
    back = pickle.loads(_pickle_with(hook, {"x": batch, "n": 3}))
    assert back["x"].untyped_storage() is batch.untyped_storage() and back["x"].data_ptr() == ptr
    assert back["n"] == 3
    # a tensor over NumPy memory is left to the DataLoader's own transport
    foreign = ec.from_numpy(np.arange(3.0))
    assert hook.reducer_override(foreign) is NotImplemented
    assert hook.reducer_override([1, 2]) is NotImplemented
