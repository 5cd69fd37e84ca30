"""Segments travel once per receiving process (the file_descriptor strategy).

Note [Segment sharing]
A tensor in a memfd segment is pickled as a small handle: the segment's inode
(its identity), size, the offsets of the data and of its reference count (Note
[Shared blocks]), and the addresses of segment servers that can hand out a
descriptor of it.  Every process that shares or receives segments runs one
server: a daemon thread on an abstract Unix socket (nothing appears on disk)
that answers "inode?" with the descriptor (SCM_RIGHTS).  A receiver that has
not mapped the segment yet asks the servers in order, checks that the
descriptor it got is that inode, maps the segment and caches the mapping by
inode; every later tensor in the segment needs no descriptor at all.  So the
number of open descriptors is bounded by the number of segments (one segment
holds many small tensors), never by the number of tensors or messages in
flight.  A small segment no storage uses any more stays mapped for a while
(at most IDLE_MAX of them, least recently used first out): a receiver that
drops each tensor before the next arrives would otherwise fetch and map the
same segment again for every tensor.  Large segments are unmapped at once.
When the processes that allocated segments are known to be done (a
DataLoader's workers, once its iterator shuts down), retire() unmaps their idle
segments and keeps no more of theirs idle: nothing will send them again.

Servers listed: first the process that allocated the segment (it keeps the
segment while any handle to it is unreceived, because the handle holds a
reference to the block), then the processes that forwarded it.  As with
PyTorch's descriptor passing, a tensor must be received while one of them is
alive.  An inode cannot be reused while a process still maps its segment, so a
cached mapping is never confused with a newer segment.
"""

import collections
import contextlib
import os
import socket
import struct
import threading
import uuid
from typing import Any

from ember_multiprocessing import _lib

_KEY = struct.Struct("<Q")


class Mapping:
    """A segment of another process mapped here, with the number of storages
    over it (counted under _lock rather than with finalisers: a finaliser could
    unmap memory another thread has just found through the cache)."""

    __slots__ = ("ino", "addr", "size", "fd", "users", "origin")

    def __init__(self, ino, fd, size, origin=None):
        self.addr = _lib.map_fd(fd, size, "a shared segment")
        self.ino = ino
        self.size = size
        self.fd = fd  # kept: this process serves the segment to others in turn
        self.users = 0
        self.origin = origin  # pid of the process that allocated the segment


IDLE_MAX = 32  # unused small segments kept mapped
IDLE_SEGMENT_MAX = 2 << 20  # ember_allocator's small-block segments

_local: dict[int, Any] = {}  # inode -> (base, size, fd): this process's own segments it has sent
_mapped: dict[
    int, Any
] = {}  # inode -> Mapping: other processes' segments mapped here (idle ones too)
_idle: collections.OrderedDict[int, Any] = (
    collections.OrderedDict()
)  # inode -> Mapping without users, oldest first
_retired: set[int] = set()  # pids whose segments are not kept idle (retire())
_lock = threading.Lock()


def _same_file(fd, ino):
    try:
        return os.fstat(fd).st_ino == ino
    except OSError:
        return False


def _descriptor(ino):
    """A descriptor this process can serve for segment ``ino``, or None."""
    with _lock:
        m = _mapped.get(ino)
        if m is not None:
            return m.fd
        entry = _local.get(ino)
    if entry is not None and _same_file(entry[2], ino):
        return entry[2]
    return None


# ---------------------------------------------------------------- server


class SegmentServer:
    """Hands this process's segment descriptors to processes that ask."""

    def __init__(self):
        self.pid = os.getpid()
        self.address = f"\0ember-mp-{self.pid}-{uuid.uuid4().hex[:16]}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.address)
        self.sock.listen(128)
        thread = threading.Thread(target=self._serve, name="ember-segment-server", daemon=True)
        thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            try:
                with conn:
                    while True:  # one connection may ask for several segments
                        raw = _recv_exact(conn, _KEY.size)
                        if raw is None:
                            break
                        fd = _descriptor(_KEY.unpack(raw)[0])
                        if fd is None:
                            conn.sendall(b"0")
                        else:
                            socket.send_fds(conn, [b"1"], [fd])
            except OSError:
                continue


def _recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


_server = [None]
_server_lock = threading.Lock()


def server_address():
    """This process's server address (the server starts on first use)."""
    s = _server[0]
    if s is None:
        with _server_lock:
            s = _server[0]
            if s is None:
                s = _server[0] = SegmentServer()
    return s.address


def publish(ino, base, size, fd):
    """Make one of this process's own segments available to receivers."""
    _local[ino] = (base, size, fd)
    return server_address()


def _after_fork_in_child():
    # The server thread did not survive the fork, and its socket is the
    # parent's; locks held by the parent's threads at the fork are reset.
    global _lock, _server_lock
    s = _server[0]
    _server[0] = None
    if s is not None:
        s.sock.close()
    _lock = threading.Lock()
    _server_lock = threading.Lock()
    _local.clear()
    _idle.clear()  # (still mapped here, but never unmapped: cheap, and fork-safe)
    _retired.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


# -------------------------------------------------------------- receiving


def own_segment(ino):
    """The base address of ``ino`` when it is one of this process's own segments."""
    entry = _local.get(ino)
    if entry is not None and _same_file(entry[2], ino):
        return entry[0]
    return None


def acquire(ino, size, servers):
    """The Mapping of segment ``ino`` (mapping it on first use); one user more.
    Pair with release()."""
    with _lock:
        m = _mapped.get(ino)
        if m is not None:
            if not m.users:
                _idle.pop(ino, None)
            m.users += 1
            return m
    fd = _fetch(ino, servers)
    try:
        fresh = Mapping(ino, fd, size, _server_pid(servers[0]))
    except OSError:
        os.close(fd)
        raise
    with _lock:
        m = _mapped.get(ino)
        if m is None:  # no other thread mapped it meanwhile
            m = _mapped[ino] = fresh
            fresh = None
        m.users += 1
    if fresh is not None:
        _lib.unmap(fresh.addr, fresh.size)
        os.close(fresh.fd)
    return m


def release(m):
    """A storage over ``m`` died: when it was the last, unmap m (or keep it idle)."""
    with _lock:
        m.users -= 1
        if m.users > 0:
            return
        if m.size <= IDLE_SEGMENT_MAX and _mapped.get(m.ino) is m and m.origin not in _retired:
            _idle[m.ino] = m
            if len(_idle) <= IDLE_MAX:
                return
            _, m = _idle.popitem(last=False)
        if _mapped.get(m.ino) is m:
            del _mapped[m.ino]
        _forget_retired()
    _unmap(m)


def retire(pids):
    """The processes ``pids`` will send nothing more (they exited): unmap their
    segments that no storage uses, and unmap the others as their last storage
    dies instead of keeping them idle."""
    with _lock:
        _retired.update(pids)
        idle = [m for m in _idle.values() if m.origin in _retired]
        for m in idle:
            del _idle[m.ino]
            del _mapped[m.ino]
        _forget_retired()
    for m in idle:
        _unmap(m)


def _forget_retired():
    # (under _lock) a retired pid none of whose segments is mapped any more needs
    # no entry: the set stays as small as the mappings, and a reused pid is free
    if _retired:
        _retired.intersection_update(m.origin for m in _mapped.values())


def _server_pid(address):
    """The pid in a server address (Note [Segment sharing]), or None."""
    try:
        return int(address.split("-")[2])
    except (IndexError, ValueError):
        return None


def drop_idle():
    """Unmap every segment no storage uses (and close its descriptor)."""
    with _lock:
        idle = list(_idle.values())
        _idle.clear()
        for m in idle:
            del _mapped[m.ino]
    for m in idle:
        _unmap(m)


def _unmap(m):
    addr, m.addr = m.addr, 0
    _lib.unmap(addr, m.size)
    with contextlib.suppress(OSError):
        os.close(m.fd)


def _fetch(ino, servers):
    """A descriptor of segment ``ino`` from the first server that has it."""
    for address in servers:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            conn.connect(address)
            conn.sendall(_KEY.pack(ino))
            msg, fds, _, _ = socket.recv_fds(conn, 1, 1)
        except OSError:
            continue  # that process has exited
        finally:
            conn.close()
        if msg == b"1" and fds:
            if _same_file(fds[0], ino):
                return fds[0]
            for fd in fds:
                os.close(fd)
    pids = sorted({a.split("-")[2] for a in servers if a.count("-") >= 3})
    raise RuntimeError(
        "ember_multiprocessing: cannot receive a tensor: the processes that shared its memory "
        f"(pids {', '.join(pids)}) have exited or no longer hold it.  Keep the sending process "
        "alive until what it sent has been received."
    )
