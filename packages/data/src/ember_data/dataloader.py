"""DataLoader: batches from a dataset, in the main process or in worker
processes (as ``torch.utils.data.dataloader``).

>>> import numpy as np
>>> ds = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
>>> for x, y in DataLoader(ds, batch_size=2, shuffle=True, num_workers=2):
...     pass

Two iterators do the work: ``_SingleProcessDataLoaderIter`` (num_workers=0)
and ``_MultiProcessingDataLoaderIter``.  Seeding is Note [Seeding] in
_utils/worker.py; the transport between processes is _utils/transport.py.

Note [Worker shutdown protocol]
1. The main process closes its end of every worker's socket (dropping tasks not
   yet sent).  A worker waiting for its next task sees end-of-file; one busy on
   a task finishes it and meets the broken pipe when it replies; either way it
   leaves its loop and exits.  Whatever a worker had sent that was not read
   goes with the socket: shared memory travels as file descriptors, which the
   kernel closes, so nothing leaks.
2. The main process then joins every worker, within a grace period
   (_SHUTDOWN_GRACE seconds for all of them, _FAILURE_GRACE after a failure);
   one still running after it (stuck in __getitem__, say) is terminated
   (SIGTERM), then killed (SIGKILL), and joined.  Every worker is joined, so none is left a zombie.
3. A worker never outlives the main process: besides end-of-file, a watchdog
   thread in each worker exits it within a second of its parent's death (a
   SIGKILLed main process), even while the dataset code hangs.  Workers ignore
   SIGINT, so Ctrl-C interrupts only the main process, whose iterator then
   shuts its workers down.
4. Shutdown is idempotent.  It runs at the end of an epoch (unless
   persistent_workers), when a worker dies or the timeout expires, when the
   iterator is garbage collected (__del__), and at interpreter exit (atexit,
   for iterators still alive then).  A dead worker is seen as end-of-file on
   its socket at once, and reported with its id, pid and exit code or signal.
   An exception raised by the dataset in a worker does not shut anything down:
   it is re-raised in the main process and the iterator goes on, as PyTorch's.
5. Once its workers are joined, the iterator tells the transport hook
   (workers_exited, Note [Transport hook]): ember_multiprocessing keeps idle
   segments mapped for the next batches, and now releases those of these
   workers at once (and the others as their last tensor dies).  Leaving a loop
   early (break) and dropping the iterator leaves no shared-memory descriptor.
"""

import atexit
import contextlib
import itertools
import math
import multiprocessing
import os
import selectors
import signal
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ember_data import _rng
from ember_data._utils import pin_memory as _pin
from ember_data._utils import worker as _worker
from ember_data._utils.collate import default_collate, default_convert
from ember_data._utils.exceptions import ExceptionWrapper
from ember_data._utils.fetch import _IterableDatasetFetcher, _MapDatasetFetcher
from ember_data._utils.transport import Channel, transport_hook
from ember_data._utils.worker import get_worker_info
from ember_data.dataset import IterableDataset
from ember_data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_SHUTDOWN_GRACE = 1.0  # seconds for all workers to exit on their own
_FAILURE_GRACE = 0.1  # the same after a timeout or a dead worker
_POLL_INTERVAL = 1.0  # seconds between checks while waiting for a batch
_STATE_VERSION = 1


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the 'indices' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


class DataLoader:
    """Batches (or single samples) from a dataset, optionally loaded by worker
    processes, with PyTorch's arguments and meaning:

    - ``batch_size`` (1; None turns batching off), ``shuffle``, ``sampler``,
      ``batch_sampler``, ``drop_last``, ``collate_fn`` (default_collate when
      batching, default_convert otherwise);
    - ``num_workers`` processes, each holding ``prefetch_factor`` (2) batches in
      flight; ``multiprocessing_context`` ("fork", "spawn", "forkserver" or a
      context; the platform's default otherwise), ``worker_init_fn(worker_id)``,
      ``timeout`` seconds to wait for a batch (0: forever),
      ``persistent_workers`` to keep the workers between epochs;
    - ``generator``: the source of the shuffle and of the workers' seeds
      (Note [Seeding]): the same generator state gives the same batches for
      any num_workers;
    - ``pin_memory`` (used with a GPU backend; otherwise a no-op, noted once),
      ``in_order`` (False: batches as soon as they are ready).

    Beyond PyTorch, ``state_dict()``/``load_state_dict()`` resume an epoch part
    way through with the same remaining batches.
    """

    __initialized = False

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                f"multiprocessing (got num_workers={num_workers!r})"
            )
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative (got timeout={timeout})")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError(
                f"prefetch_factor option should be non-negative (got {prefetch_factor})"
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        _rng.check_generator(generator, "DataLoader")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive "
                "with drop_last"
            )

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called: int | None = None
        self._iterator: Any = None
        self._progress = None  # the current epoch's, shared with its iterator
        self._pending_state = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self) -> Any:
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context: Any) -> None:
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method in "
                            f"{valid!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}"
                        )
                    multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
                if not callable(getattr(multiprocessing_context, "Process", None)):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={multiprocessing_context}"
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterators draw from: whole batches of indices, or one index
        if self._auto_collation:
            return self.batch_sampler
        return self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> Iterator[Any]:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than there are CPUs to run them."""
        if self.num_workers == 0:
            return
        cpus = _cpu_count()
        if cpus is not None and self.num_workers > cpus:
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. Our "
                f"suggested max number of worker in current system is {cpus}, which is smaller "
                "than what this DataLoader is going to create. Please be aware that excessive "
                "worker creation might get DataLoader running slow or even freeze, lower the "
                "worker number to avoid potential slowness/freeze if necessary.",
                stacklevel=3,
            )

    # ---------------------------------------------------- resumable state

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch stands.  A DataLoader built the same way that
        loads it (``load_state_dict``) continues that epoch with the same
        remaining batches -- the same data, and the same random transforms,
        (Note [Seeding]) -- whatever its num_workers.  Taken between epochs, it
        starts the next epoch afresh.  The sampler's own state is saved when it
        has ``state_dict`` (ember's samplers do); a custom sampler without one
        must be deterministic for the resumed order to match."""
        p = self._progress
        if p is None or p["finished"]:
            return {"_version": _STATE_VERSION, "epoch": None}
        return {
            "_version": _STATE_VERSION,
            "epoch": {
                "base_seed": p["base_seed"],
                "sampler": p["sampler"],
                "batches_yielded": p["batches_yielded"],
            },
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume from ``state_dict()``: the next ``iter(loader)`` continues the
        saved epoch."""
        if not isinstance(state_dict, dict) or state_dict.get("_version") != _STATE_VERSION:
            raise ValueError(
                f"DataLoader.load_state_dict: expected a dict from DataLoader.state_dict() "
                f"(version {_STATE_VERSION}), got {state_dict!r}"
            )
        self._pending_state = state_dict["epoch"]

    def _take_pending_state(self):
        state, self._pending_state = self._pending_state, None
        return state


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory = loader.pin_memory and _pin.available()
        if loader.pin_memory and not self._pin_memory:
            _pin.note_unavailable()
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._generator = loader.generator
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = None
        self._begin_epoch(loader)

    def _begin_epoch(self, loader):
        """Fresh epoch state, or the one from loader.load_state_dict."""
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        state = loader._take_pending_state()
        sampler = self._index_sampler
        stateful = callable(getattr(sampler, "state_dict", None))
        if state is not None:
            self._base_seed = state["base_seed"]
            if stateful and state["sampler"] is not None:
                sampler.load_state_dict(state["sampler"])
            skip = int(state["batches_yielded"])
        else:
            self._base_seed = _rng.random_seed(self._generator)
            skip = 0
        self._sampler_iter = iter(sampler)
        self._sampler_state = sampler.state_dict() if stateful else None
        # Map-style: skip the consumed batches' indices without fetching them.
        # Iterable: the consumed batches are fetched again and dropped.
        self._num_yielded = skip
        self._batch_index = 0
        self._discard = 0
        # what loader.state_dict() reports; it outlives this iterator
        self._progress = loader._progress = {
            "base_seed": self._base_seed,
            "sampler": self._sampler_state,
            "batches_yielded": skip,
            "finished": False,
        }
        if self._dataset_kind == _DatasetKind.Map:
            for _ in range(skip):
                if next(self._sampler_iter, None) is None:
                    break
            self._batch_index = skip
        else:
            self._discard = skip

    def __iter__(self):
        return self

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        while self._discard:
            self._discard -= 1
            self._next_data()
        try:
            data = self._next_data()
        except StopIteration:
            self._progress["finished"] = True
            raise
        self._num_yielded += 1
        self._progress["batches_yielded"] = self._num_yielded
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and self._IterableDataset_len_called is not None
            and self._num_yielded > self._IterableDataset_len_called
        ):
            msg = (
                f"Length of IterableDataset {self._dataset} was reported to be "
                f"{self._IterableDataset_len_called} (when accessing len(dataloader)), but "
                f"{self._num_yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                msg += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker "
                    "(use get_worker_info())."
                )
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind,
            self._dataset,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
        )
        self._shutdown = False

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        if self._dataset_kind == _DatasetKind.Map:
            # Note [Seeding]: the batch's own seed, the caller's random states kept
            saved = _worker.save_rng_states()
            try:
                _worker.seed_all(_worker.batch_seed(self._base_seed, self._batch_index))
                data = self._dataset_fetcher.fetch(index)
            finally:
                _worker.restore_rng_states(saved)
            self._batch_index += 1
        else:
            data = self._dataset_fetcher.fetch(index)
        if self._pin_memory:
            data = _pin.pin_memory(data)
        return data


# Iterators with live workers, shut down at interpreter exit (protocol step 4),
# and the main-process ends of their sockets, closed in any forked child so that
# a worker's end-of-file is not held open by its siblings.
_live_iterators: weakref.WeakSet[Any] = weakref.WeakSet()
_parent_sockets: weakref.WeakSet[Any] = weakref.WeakSet()


def _close_parent_sockets_in_child():
    for sock in list(_parent_sockets):
        with contextlib.suppress(OSError):
            sock.close()
    _parent_sockets.clear()
    _live_iterators.clear()


os.register_at_fork(after_in_child=_close_parent_sockets_in_child)


@atexit.register
def _shutdown_live_iterators():
    for it in list(_live_iterators):
        it._shutdown_workers()


def _describe_exit(exitcode):
    if exitcode is None:
        return "closed its connection while still running"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        text = f"killed by signal {name} ({-exitcode})"
        if -exitcode == signal.SIGBUS:
            text += " -- possibly out of shared memory (/dev/shm)"
        elif -exitcode == signal.SIGSEGV:
            text += " -- a crash in native code"
        return text
    return f"exit code {exitcode}"


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Workers fetch batches given by index; results are handed out in sampler
    order (or as ready, with in_order=False).  ``prefetch_factor`` batches per
    worker are in flight; tasks go to the workers in turn."""

    def __init__(self, loader):
        super().__init__(loader)
        self._shutdown = True  # until the workers exist
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._epoch = 0
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._workers = []
        self._channels = []
        self._selector = selectors.DefaultSelector()
        self._inbox = []
        self._shutdown = False
        _live_iterators.add(self)
        try:
            for i in range(self._num_workers):
                ours, theirs = Channel.pair()
                _parent_sockets.add(ours.sock)
                w = ctx.Process(
                    target=_worker._worker_loop,
                    args=(
                        self._dataset_kind,
                        self._dataset,
                        theirs,
                        self._auto_collation,
                        self._collate_fn,
                        self._drop_last,
                        self._base_seed,
                        loader.worker_init_fn,
                        i,
                        self._num_workers,
                        self._persistent_workers,
                        os.getpid(),
                    ),
                    daemon=True,
                )
                self._channels.append(ours)
                try:
                    w.start()
                finally:
                    theirs.close()
                self._workers.append(w)
                ours.sock.setblocking(False)
                self._selector.register(ours.sock, selectors.EVENT_READ, i)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        if not first_iter:
            self._begin_epoch(loader)
        self._epoch += 1
        self._send_idx = self._rcvd_idx = self._batch_index
        self._task_info = {}  # batch index -> (worker,) while pending, (worker, data) once here
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        self._inbox = [m for m in self._inbox if m[1][0] == self._epoch]
        if not first_iter:
            for i, _ch in enumerate(self._channels):
                self._post(i, (_worker.RESET, self._epoch, self._base_seed))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # ------------------------------------------------------------ sending

    def _post(self, worker_id, msg):
        ch = self._channels[worker_id]
        ch.post(msg)
        if ch.pending:
            self._selector.modify(ch.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (
                self._in_order
                or self._workers_num_tasks[worker_id] < max_tasks // self._num_workers
            ):
                break
        else:
            return  # no worker left (every iterable replica is exhausted)
        self._post(worker_id, (_worker.TASK, self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    # ---------------------------------------------------------- receiving

    def _get_data(self):
        """The next message from any worker: (worker id, (epoch, batch index, data)).
        Raises on timeout or a dead worker."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while not self._inbox:
            wait = _POLL_INTERVAL
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    self._shutdown_workers(_FAILURE_GRACE)
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            for key, mask in self._selector.select(min(wait, _POLL_INTERVAL)):
                worker_id = key.data
                if mask & selectors.EVENT_WRITE and self._channels[worker_id].flush():
                    self._selector.modify(key.fileobj, selectors.EVENT_READ, worker_id)
                if mask & selectors.EVENT_READ:
                    self._receive_from(worker_id)
        return self._inbox.pop(0)

    def _receive_from(self, worker_id):
        ch = self._channels[worker_id]
        while True:
            try:
                msg = ch.recv()
            except BlockingIOError:
                return
            except (EOFError, ConnectionError):
                self._worker_died(worker_id)
            except Exception:
                # a batch a worker sent just before dying may not be receivable
                # (memory shared by ember_multiprocessing is fetched from its
                # sender): the death is the error to report
                w = self._workers[worker_id]
                w.join(timeout=0.05)
                if w.exitcode is not None:
                    self._worker_died(worker_id)
                raise
            if msg[0] == self._epoch:
                self._inbox.append((worker_id, msg))

    def _worker_died(self, worker_id):
        w = self._workers[worker_id]
        w.join(timeout=_SHUTDOWN_GRACE)
        desc = _describe_exit(w.exitcode)
        pid = w.pid
        self._shutdown_workers(_FAILURE_GRACE)
        raise RuntimeError(
            f"DataLoader worker {worker_id} (pid {pid}) exited unexpectedly: {desc}. "
            "The worker processes have been shut down."
        )

    def _next_data(self):
        while True:
            # Move past batches already handed out (in_order=False) or whose
            # worker is gone (an exhausted iterable replica).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1])

            if self._shutdown:
                raise StopIteration
            worker_id, (_, idx, data) = self._get_data()
            self._tasks_outstanding -= 1
            self._workers_num_tasks[worker_id] -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)
            if self._in_order:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        if self._pin_memory:
            data = _pin.pin_memory(data)
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        # An exhausted iterable replica gets no more tasks; persistent workers
        # keep the process for the next epoch, others may stop now.
        self._workers_status[worker_id] = False

    # ----------------------------------------------------------- shutdown

    def _shutdown_workers(self, grace=_SHUTDOWN_GRACE):
        """Note [Worker shutdown protocol]."""
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        for ch in self._channels:  # step 1
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(ch.sock)
            ch.close()
        self._selector.close()
        self._inbox = []
        deadline = time.monotonic() + grace  # step 2
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in self._workers:
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
            if w.is_alive():
                w.kill()
                w.join()
        exited = getattr(transport_hook(), "workers_exited", None)  # step 5
        if exited is not None:
            exited([w.pid for w in self._workers if w.pid is not None])

    def __del__(self):
        with contextlib.suppress(Exception):
            self._shutdown_workers()
