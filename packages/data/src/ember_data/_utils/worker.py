"""What runs in a DataLoader worker process, and how randomness is seeded (as
``torch.utils.data._utils.worker``).

Note [Seeding]
Every iterator draws one ``base_seed`` from the loader's generator (or the
default source).  A worker ``i`` seeds Python's ``random``, NumPy's global
RandomState and ember's default generator from ``base_seed + i`` when it
starts -- ``get_worker_info().seed``, as in PyTorch -- before
``worker_init_fn`` runs.  For a map-style dataset, each batch is then fetched
with all three seeded from ``(base_seed, batch index)``, in a worker or, with
num_workers=0, in the main process (whose own random states are saved before
and restored after, so the user's streams are not disturbed).  The batch index
is the batch's position in the epoch, so random transforms give the same
batches for any num_workers and after resuming from a state_dict.  An
IterableDataset's workers are seeded once, as in PyTorch.
"""

import contextlib
import os
import random
import signal
import threading
import time

import numpy as np

from ember_data import _rng
from ember_data._utils import collate, shm, transport
from ember_data._utils.exceptions import ExceptionWrapper

_M64 = (1 << 64) - 1

_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and
    its copy of ``dataset``."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info():
    """In a DataLoader worker: its WorkerInfo (id, num_workers, seed, dataset);
    in the main process: None.  An IterableDataset uses it to split the work:

    >>> info = get_worker_info()
    >>> mine = range(start, end) if info is None else range(start + info.id, end, info.num_workers)
    """
    return _worker_info


class _IterableDatasetStopIteration:
    """A worker's answer once its iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


# ------------------------------------------------------------------- seeding


def _mix(*words):
    """A well-mixed 64-bit value of the given integers (splitmix64 steps)."""
    x = 0x9E3779B97F4A7C15
    for w in words:
        x = (x ^ (w & _M64)) * 0xBF58476D1CE4E5B9 & _M64
        x ^= x >> 31
        x = (x + 0x9E3779B97F4A7C15) * 0x94D049BB133111EB & _M64
        x ^= x >> 29
    return x


def seed_all(seed):
    """Seed Python's random, NumPy's global RandomState and ember's default
    generator (when ember_core is installed) from one integer."""
    random.seed(seed)
    h = _mix(seed, 0x5EED)
    np.random.seed([h & 0xFFFFFFFF, h >> 32])
    ec = _rng.ember_core()
    if ec is not None:
        ec.manual_seed(seed & _M64)


def batch_seed(base_seed, batch_index):
    """The seed a map-style batch is fetched under (Note [Seeding])."""
    return _mix(base_seed, batch_index) >> 1  # 63 bits: fits every consumer


def save_rng_states():
    ec = _rng.ember_core()
    return (
        random.getstate(),
        np.random.get_state(),
        ec.default_generator.get_state() if ec is not None else None,
    )


def restore_rng_states(states):
    random.setstate(states[0])
    np.random.set_state(states[1])
    if states[2] is not None:
        _rng.ember_core().default_generator.set_state(states[2])


# --------------------------------------------------------------- the worker


def _watch_parent(parent_pid, interval=0.5):
    """Exit this worker once its parent is gone (Note [Worker shutdown protocol],
    step 3), even when the main thread is stuck in the dataset."""
    while True:
        time.sleep(interval)
        if os.getppid() != parent_pid:
            os._exit(0)


# Messages from the main process (tuples):
#   (TASK, epoch, batch index, sampler indices)  fetch and reply (epoch, batch index, data)
#   (RESET, epoch, base_seed)                    a new epoch of persistent workers
TASK = "task"
RESET = "reset"


def _worker_loop(
    dataset_kind,
    dataset,
    channel,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    persistent_workers,
    parent_pid,
):
    from ember_data.dataloader import _DatasetKind

    global _worker_info
    try:
        # Ctrl-C is the main process's to handle; it shuts us down.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()

        seed = base_seed + worker_id
        seed_all(seed)
        ec = _rng.ember_core()
        if ec is not None:
            ec.set_num_threads(1)
        hook = transport.transport_hook()
        if hook is not None:
            hook.worker_setup()
            collate.set_shared_tensors(True)
        collate.set_shared_allocator(shm.empty)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        per_batch_seed = dataset_kind == _DatasetKind.Map

        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(
                dataset_kind, dataset, auto_collation, collate_fn, drop_last
            )
        except Exception:
            init_exception = ExceptionWrapper(where=where)

        iteration_end = False
        while True:
            try:
                msg = channel.recv()
            except (EOFError, OSError):
                break  # the main process closed our socket (or is gone): stop
            if msg[0] == RESET:
                base_seed = msg[2]
                iteration_end = False
                if init_exception is None and dataset_kind == _DatasetKind.Iterable:
                    try:
                        fetcher = _DatasetKind.create_fetcher(
                            dataset_kind, dataset, auto_collation, collate_fn, drop_last
                        )
                    except Exception:
                        init_exception = ExceptionWrapper(where=where)
                continue
            _, epoch, idx, index = msg
            if init_exception is not None:
                data = init_exception
            elif iteration_end:
                data = _IterableDatasetStopIteration(worker_id)
            else:
                try:
                    if per_batch_seed:
                        seed_all(batch_seed(base_seed, idx))
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=where)
            try:
                channel.send((epoch, idx, data))
            except (BrokenPipeError, ConnectionError):
                break
            except Exception:
                # the batch does not pickle, or shared memory ran out: tell the main process
                try:
                    channel.send((epoch, idx, ExceptionWrapper(where=where)))
                except (BrokenPipeError, ConnectionError):
                    break
            del data
    except KeyboardInterrupt:
        pass
    finally:
        with contextlib.suppress(OSError):
            channel.close()
