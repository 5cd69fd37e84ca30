"""The "file_system" strategy: each shared storage is a named file in /dev/shm.

Receivers open it by name (no descriptor passing).  The header's reference
count decides who unlinks it: whichever process drops the last reference.  A
cleanup process, started with the first named file, unlinks every name its
parent created that is still there when the parent exits, however it exits
(the cleanup process notices the closed pipe), so nothing is left in /dev/shm.
"""

import itertools
import os
import shutil
import subprocess
import sys
import threading
import uuid

from ember_multiprocessing._C import lib
from ember_multiprocessing._shared_memory import HEADER

SHM_DIR = "/dev/shm"
_counter = itertools.count()
_cleanup = [None, None]  # (pid, Popen)
_lock = threading.Lock()


def _cleanup_proc():
    pid, proc = _cleanup
    if proc is None or pid != os.getpid():
        proc = subprocess.Popen(
            [sys.executable, "-m", "ember_multiprocessing._cleanup"],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        _cleanup[0], _cleanup[1] = os.getpid(), proc
    return proc


def _tell(line):
    with _lock:
        proc = _cleanup_proc()
        try:
            proc.stdin.write((line + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass


def _free_space():
    try:
        return shutil.disk_usage(SHM_DIR).free
    except OSError:
        return None


class NamedBlock:
    """A named shared file mapped here; ``ptr`` is the data after the header."""

    __slots__ = ("name", "base", "size", "ptr", "nbytes", "freed", "pid", "__weakref__")

    def __init__(self, name, base, size, nbytes):
        self.name, self.base, self.size, self.nbytes = name, base, size, nbytes
        self.ptr = base + HEADER
        self.freed = False
        self.pid = os.getpid()


def _map_name(name, size, create):
    path = os.path.join(SHM_DIR, name)
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                os.unlink(path)
                free = _free_space()
                raise MemoryError(
                    f"ember_multiprocessing: cannot allocate {size} bytes in {SHM_DIR} "
                    f"({free} bytes free): {os.strerror(exc.errno)}"
                ) from None
        base = lib.emp_map(fd, size)
        if not base:
            raise OSError(lib.emp_last_errno(), f"cannot map {path}")
        return base
    finally:
        os.close(fd)


class FileSystemAllocator:
    """Allocator protocol over one named /dev/shm file per block."""

    kind = "shm"

    def allocate(self, nbytes, device=None, stream=None):
        name = f"ember_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"
        size = nbytes + HEADER
        base = _map_name(name, size, create=True)
        _tell(name)
        lib.emp_ref_add(base, 1)
        return NamedBlock(name, base, size, nbytes)

    def free(self, block):
        if block.freed:
            return
        block.freed = True
        if block.pid == os.getpid():  # a fork-inherited copy holds no reference
            release(block.name, block.base, block.size)


def release(name, base, size):
    """Drop one reference; the last one unlinks the name."""
    if lib.emp_ref_add(base, -1) <= 0:
        try:
            os.unlink(os.path.join(SHM_DIR, name))
        except FileNotFoundError:
            pass
        _tell("-" + name)
    lib.emp_unmap(base, size)


def open_block(name, size):
    """Map a named block another process created (for a received tensor)."""
    try:
        return _map_name(name, size, create=False)
    except FileNotFoundError:
        raise RuntimeError(
            f"ember_multiprocessing: the shared file {name} is gone: its owner exited before "
            "the tensor was received"
        ) from None


_allocator = FileSystemAllocator()


def allocator():
    return _allocator
