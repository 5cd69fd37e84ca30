"""Work: the handle an ``async_op=True`` collective (or isend/irecv) returns.

``wait(timeout=None)`` blocks until the operation finished (raising what it
raised; a timeout raises DistBackendError), ``is_completed()`` asks without
blocking, ``is_success()``/``exception()`` report the outcome.  The tensors an
operation reads or writes are kept alive until it finished.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ember_distributed._types import DistBackendError

__all__ = ["Work"]


def _seconds(timeout: timedelta | float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Work:
    """The handle of an asynchronous operation (PyTorch's ``torch.distributed.Work``)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._exc: BaseException | None = None

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Block until the operation finished (True), raising what it raised."""
        raise NotImplementedError

    def is_completed(self) -> bool:
        """Whether the operation finished (without blocking)."""
        raise NotImplementedError

    def is_success(self) -> bool:
        """Whether the finished operation succeeded (raises if it has not finished)."""
        if not self.is_completed():
            raise RuntimeError(f"{self.what}: is_success() asked before the operation completed")
        return self._exc is None

    def exception(self) -> BaseException | None:
        """What the operation raised, or None."""
        return self._exc

    def source_rank(self) -> int:
        """The sender's group rank of a recv/irecv from any source (``src=None``)."""
        raise RuntimeError(
            f"{self.what}: source_rank() is only available for recv and irecv with src=None"
        )

    def result(self) -> list[Any]:
        """The output tensors (empty: ember's collectives write into their arguments)."""
        return []

    def synchronize(self) -> None:
        """Wait for the operation (PyTorch's older name for ``wait``)."""
        self.wait()

    def __repr__(self) -> str:
        state = "completed" if self.is_completed() else "pending"
        return f"<ember.distributed.Work {self.what} ({state})>"


class CompletedWork(Work):
    """An operation that already finished when its handle was made."""

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


class ThreadWork(Work):
    """A collective run by a process group's worker thread (MPI, Note [MPI backend])."""

    def __init__(self, pg: Any, what: str, refs: Any) -> None:
        super().__init__(what)
        self._pg = pg
        self._refs = refs
        self._event = threading.Event()

    def _finish(self, exc: BaseException | None) -> None:
        self._exc = exc
        self._refs = None
        self._event.set()

    def is_completed(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        limit = _seconds(timeout)
        if limit is None:
            limit = self._pg.timeout
        if not self._event.wait(limit):
            self._pg.broken = f"{self.what} did not finish within {limit:g} s"
            from ember_distributed import _mpi

            _mpi._broken_groups.append(self._pg)
            raise DistBackendError(
                f"ember.distributed (MPI): {self.what} on {self._pg.describe} did not finish "
                f"within {limit:g} s. A peer process probably died, hung, or called a different "
                "collective; the process group is no longer usable"
            )
        if self._exc is not None:
            raise self._exc
        return True


class RequestWork(Work):
    """A nonblocking MPI request (send/recv), polled by whoever waits on it."""

    def __init__(
        self,
        pg: Any,
        what: str,
        req: Any,
        refs: Any,
        status: Any = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(what)
        self._pg = pg
        self._req = req
        self._refs = refs
        self._status = status
        self._after = after
        self._done = False

    def _complete(self) -> None:
        self._done = True
        self._refs = None
        if self._after is not None:
            self._after()
            self._after = None

    def is_completed(self) -> bool:
        if not self._done:
            try:
                flag = self._req.Test(self._status)
            except self._pg.MPI.Exception as e:
                self._exc = DistBackendError(
                    f"ember.distributed (MPI): {self.what} failed: {e.Get_error_string()}"
                )
                self._done = True
                return True
            if flag:
                self._complete()
        return self._done

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        if not self._done:
            limit = _seconds(timeout)
            try:
                self._pg.poll(self._req_with_status(), self.what, limit)
            except DistBackendError as e:
                self._exc = e
                raise
            self._complete()
        if self._exc is not None:
            raise self._exc
        return True

    def _req_with_status(self) -> Any:
        status, req = self._status, self._req
        if status is None:
            return req

        class _R:  # Test() that fills the status (who sent it, for recv(src=None))
            def Test(self) -> bool:  # noqa: N802 - MPI's name
                return req.Test(status)

        return _R()

    def source_rank(self) -> int:
        if self._status is None:
            return super().source_rank()
        self.wait()
        return int(self._status.Get_source())
