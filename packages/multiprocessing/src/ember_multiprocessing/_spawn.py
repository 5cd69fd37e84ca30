"""spawn(fn, args, nprocs): run fn(i, *args) in nprocs processes; an exception in
any of them is re-raised in the parent with that child's traceback, and the
others are stopped (as torch.multiprocessing.spawn).

A child reports its traceback in a file of its own rather than through a pipe:
a pipe would block a child with a long traceback until the parent read it, and
the parent reads only after the child has exited.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child raised an exception; the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero status or was killed by a signal."""

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable[..., Any], i: int, args: Sequence[Any], error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping us
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by start_processes(join=False)."""

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for a process to end.  Returns True when
        all have ended well, False while some still run.  When one failed, the
        others are stopped (SIGTERM, then after ``grace_period`` seconds SIGKILL)
        and its failure is raised: ProcessRaisedException with its traceback, or
        ProcessExitedException with its exit code or signal."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            if not self.sentinels:
                self._remove_error_files()
            return not self.sentinels
        self._stop_others(grace_period)
        failed = self.processes[error_index]
        try:
            with open(self.error_files[error_index]) as f:
                original = f.read()
        except OSError:
            original = ""
        self._remove_error_files()
        if not original:
            code = failed.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}",
                    error_index,
                    failed.pid,
                    code,
                    name,
                )
            raise ProcessExitedException(
                f"process {error_index} terminated with exit code {code}",
                error_index,
                failed.pid,
                code,
            )
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, error_index, failed.pid)

    def _stop_others(self, grace_period: float | None) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + (grace_period or 0)
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()) if grace_period else None)
            if p.is_alive():
                p.kill()
                p.join()

    def _remove_error_files(self) -> None:
        for path in self.error_files:
            with contextlib.suppress(OSError):
                os.unlink(path)


def start_processes(
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start nprocs processes running fn(i, *args) with the given start method;
    with join=True wait for all of them (re-raising the first failure), else
    return their ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    try:
        for i in range(nprocs):
            fd, path = tempfile.mkstemp(prefix="ember-spawn-error-")
            os.close(fd)
            error_files.append(path)
            p = ctx.Process(  # type: ignore[attr-defined] # a context has Process
                target=_wrap, args=(fn, i, args, path), daemon=daemon
            )
            p.start()
            processes.append(p)
    except BaseException:
        for p in processes:
            p.terminate()
            p.join()
        for path in error_files:
            os.unlink(path)
        raise
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Run fn(i, *args) for i in range(nprocs), each in a new process (as
    torch.multiprocessing.spawn).

    >>> spawn(train, args=(model,), nprocs=4)   # train(rank, model) in 4 processes
    """
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " ember_multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method)
