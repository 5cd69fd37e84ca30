"""Datasets and functions for worker tests: at module level so that spawned
workers can import them."""

import os
import random
import signal
import time

import numpy as np

from ember_data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i, i * i], dtype=np.int64), i


class RandomAugment(Dataset):
    """Each sample draws from Python's random and NumPy's global state."""

    def __init__(self, n=24):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"i": i, "py": random.random(), "np": np.random.rand(3)}


class RaiseAt(Dataset):
    def __init__(self, bad, exc=ValueError, n=20):
        self.bad, self.exc, self.n = bad, exc, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc(f"bad index {i}")
        return i


class SignalAt(Dataset):
    """Kills its own process with ``sig`` at index ``bad``."""

    def __init__(self, bad, sig=signal.SIGKILL, n=20):
        self.bad, self.sig, self.n = bad, sig, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.sig == signal.SIGSEGV:
                import ctypes

                ctypes.string_at(0)  # a real segmentation fault
            os.kill(os.getpid(), self.sig)
            time.sleep(10)
        return i


class Slow(Dataset):
    def __init__(self, delay, n=20):
        self.delay, self.n = delay, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return i


class Big(Dataset):
    """Large samples (they travel through shared memory)."""

    def __init__(self, n=16, shape=(3, 64, 64)):
        self.n, self.shape = n, shape

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full(self.shape, i, dtype=np.float32)


class Range(IterableDataset):
    """range(start, end), each value once across workers."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        return iter(range(self.start + info.id, self.end, info.num_workers))

    def __len__(self):
        return self.end - self.start


class WorkerIds(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return -1 if info is None else info.id


def record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    os.environ["EMBER_TEST_INIT"] = str(worker_id)


class InitSeen(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return int(os.environ.get("EMBER_TEST_INIT", "-1"))


def slow_init(worker_id):
    time.sleep(0.5)


def failing_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


class Unpicklable(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return lambda: i


def identity_collate(batch):
    return batch
