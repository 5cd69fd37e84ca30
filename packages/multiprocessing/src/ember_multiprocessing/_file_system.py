"""The "file_system" strategy: each shared storage is a named file in /dev/shm.

Receivers open it by name (no descriptor passing, nothing kept open).  The
file's first HEADER bytes hold the reference count of Note [Shared blocks]:
whichever process drops the last reference unlinks the name.

Note [Cleanup process]
Processes can die without dropping anything (SIGKILL, os._exit), so names are
also reported to a cleanup process (see _cleanup.py), started with the first
named file, through a pipe: "+name" when created, "-name" when unlinked.  The
pipe's write end is inherited by forked children, which report to the same
process; it sees end-of-file only when every process of the tree holding the
pipe has exited, however it exited, and then unlinks every name still listed.
So nothing is left in /dev/shm, and a name stays while any process that might
still hand it on is alive.  (A spawned child starts its own.)  A line is one
write() shorter than PIPE_BUF, so lines from several processes never mix.
"""

import contextlib
import itertools
import os
import secrets
import shutil
import sys
import threading

from ember_multiprocessing import _lib
from ember_multiprocessing._shared_memory import HEADER

SHM_DIR = "/dev/shm"
PREFIX = "ember_"
_counter = itertools.count()
_cleanup = {"fd": None}  # the pipe to the cleanup process
_lock = threading.Lock()


def _report(line):
    """Tell the cleanup process (started on first use) about a name."""
    fd = _cleanup["fd"]
    if fd is None:
        with _lock:
            fd = _cleanup["fd"]
            if fd is None:
                r, w = os.pipe()  # both close-on-exec: only forked children inherit w
                try:
                    os.posix_spawn(
                        sys.executable,
                        [sys.executable, "-m", "ember_multiprocessing._cleanup"],
                        os.environ,
                        file_actions=[
                            (os.POSIX_SPAWN_DUP2, r, 0),
                            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                        ],
                        setsid=True,  # a Ctrl-C to our process group must not stop it
                    )
                finally:
                    os.close(r)
                fd = _cleanup["fd"] = w
    # (if the cleanup process is gone, the reference counts still unlink)
    with contextlib.suppress(OSError):
        os.write(fd, (line + "\n").encode())


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()  # the pipe itself is shared on purpose


os.register_at_fork(after_in_child=_after_fork_in_child)


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
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT | os.O_EXCL if create else 0), 0o600)
    try:
        if create:
            try:
                os.posix_fallocate(fd, 0, size)  # exhaustion is an error now, not a SIGBUS later
            except OSError as exc:
                os.unlink(path)
                raise MemoryError(
                    f"ember_multiprocessing: cannot allocate {size} bytes in {SHM_DIR} "
                    f"({_free_space()} bytes free): {os.strerror(exc.errno)}"
                ) from None
        try:
            return _lib.map_fd(fd, size, path)
        except OSError:
            if create:
                os.unlink(path)
            raise
    finally:
        os.close(fd)


class FileSystemAllocator:
    """Allocator protocol over one named /dev/shm file per block."""

    kind = "shm"

    def allocate(self, nbytes, device=None, stream=None):
        name = f"{PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}"
        size = nbytes + HEADER
        _report("+" + name)  # before it exists: a crash right after still cleans up
        try:
            base = _map_name(name, size, create=True)
        except BaseException:
            _report("-" + name)
            raise
        _lib.ref_store(base, 1)
        return NamedBlock(name, base, size, nbytes)

    def free(self, block):
        if block.freed:
            return
        block.freed = True
        if block.pid == os.getpid():  # a fork-inherited copy holds no reference
            release(block.name, block.base, block.size)


def release(name, base, size):
    """Drop one reference and the mapping; the last reference unlinks the name."""
    if _lib.ref_add(base, -1) <= 0:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(SHM_DIR, name))
        _report("-" + name)
    _lib.unmap(base, size)


def open_block(name, size):
    """Map a named block another process created (for a received tensor)."""
    try:
        return _map_name(name, size, create=False)
    except FileNotFoundError:
        raise RuntimeError(
            f"ember_multiprocessing: cannot receive a tensor: its shared file {SHM_DIR}/{name} is "
            "gone (every process that held it has exited)"
        ) from None


_allocator = FileSystemAllocator()


def allocator():
    return _allocator
