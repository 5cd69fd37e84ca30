"""Leaving a multi-process DataLoader loop early (break, an iterator dropped
half-way, persistent workers) must leave no shared-memory descriptor or mapping
in the main process once the iterator is gone and its batches are dropped --
as PyTorch.  ember_multiprocessing kept up to 32 idle 2 MiB segments of dead
workers mapped (issue 20); the built-in NumPy transport maps nothing for longer
than its arrays live.  Runs over NumPy batches, and over ember tensors where
ember_core is installed (the data-ember tox env)."""

import gc
import os

import numpy as np
import pytest
from conftest import wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember_data import DataLoader, Dataset

try:
    import ember_core
except ImportError:
    ember_core = None

KINDS = ["numpy"] + (["ember"] if ember_core is not None else [])


class Items(Dataset):
    def __init__(self, kind, side, n=400):
        self.kind, self.side, self.n = kind, side, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        a = np.full((self.side, self.side), float(i), dtype=np.float32)
        return ember_core.from_numpy(a) if self.kind == "ember" else a


def _shared_inodes():
    """Inodes of shared memory this process holds: descriptors of memfd or
    /dev/shm files, and mappings of them."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "memfd:" in target or target.startswith("/dev/shm/"):
                held.add(("fd", os.stat(f"/proc/self/fd/{fd}").st_ino))
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor, say)
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and ("memfd:" in parts[5] or parts[5].startswith("/dev/shm/")):
                held.add(("map", int(parts[4])))
    return held


def _settle(before):
    gc.collect()
    return wait_until(lambda: not (_shared_inodes() - before), timeout=3.0)


def _early_exit(kind, side, workers, stop, persistent, batch_size=16):
    loader = DataLoader(
        Items(kind, side),
        batch_size=batch_size,
        num_workers=workers,
        persistent_workers=persistent,
    )
    last = None
    for i, batch in enumerate(loader):
        last = batch
        if i == stop:
            break
    return loader, last


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_break_then_drop_leaves_no_shared_memory(kind, persistent, no_children_left):
    before = _shared_inodes()
    loader, last = _early_exit(kind, 16, 2, 20, persistent)
    del loader, last
    assert _settle(before), f"left: {_shared_inodes() - before}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_kept_after_the_loader_stays_valid_then_goes(kind, no_children_left):
    before = _shared_inodes()
    loader, last = _early_exit(kind, 64, 2, 5, False)
    del loader
    gc.collect()
    # its memory is still mapped while it lives: the values are intact
    values = np.asarray(last)[:, 0, 0]
    np.testing.assert_array_equal(values, np.arange(80.0, 96.0))
    del last, values
    assert _settle(before), f"left: {_shared_inodes() - before}"


@pytest.mark.parametrize("kind", KINDS)
def test_an_iterator_dropped_half_way_leaves_nothing(kind, no_children_left):
    before = _shared_inodes()
    loader = DataLoader(Items(kind, 32), batch_size=8, num_workers=2)
    it = iter(loader)
    for _ in range(7):
        next(it)
    del it
    assert _settle(before), f"left: {_shared_inodes() - before}"
    # the loader itself still works, and its next loop leaves nothing either
    assert sum(1 for _ in loader) == 50
    assert _settle(before), f"left: {_shared_inodes() - before}"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(KINDS),
    st.sampled_from([4, 32, 96]),
    st.integers(1, 2),
    st.integers(0, 30),
    st.booleans(),
    st.booleans(),
)
def test_early_exits_leave_no_shared_memory(kind, side, workers, stop, persistent, keep):
    before = _shared_inodes()
    loader, last = _early_exit(kind, side, workers, stop, persistent, batch_size=8)
    del loader
    if keep:
        gc.collect()
        assert float(np.asarray(last)[-1, 0, 0]) == 8 * stop + 7
    del last
    assert _settle(before), f"left: {_shared_inodes() - before}"
