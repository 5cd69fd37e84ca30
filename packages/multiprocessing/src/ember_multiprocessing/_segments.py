"""Segments travel once per receiving process.

Note [Segment sharing]
The default strategy ("segments") sends a tensor as a small handle: the
address of the sender's segment server (an abstract Unix socket, so nothing
appears on disk), the segment's key, and offsets.  A receiver that has not
mapped that segment yet asks the server for its descriptor (SCM_RIGHTS), maps
it and caches the mapping; every later tensor in the same segment needs no
descriptor at all.  So the number of open descriptors is bounded by the number
of segments (each holds hundreds of small tensors), never by the number of
tensors or messages in flight.
"""

import os
import socket
import struct
import threading
import uuid

from ember_multiprocessing._C import lib


class SegmentServer:
    """Serves this process's segment descriptors to other processes."""

    def __init__(self):
        self.pid = os.getpid()
        self.address = f"\0ember-mp-{self.pid}-{uuid.uuid4().hex}"
        self.segments = {}  # key -> (fd, size)
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.address)
        self.sock.listen(64)
        self.thread = threading.Thread(target=self._serve, name="ember-segment-server", daemon=True)
        self.thread.start()

    def register(self, key, fd, size):
        st = os.fstat(fd)
        with self.lock:
            self.segments[key] = (fd, size, (st.st_dev, st.st_ino))

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with conn:
                    raw = _recv_exact(conn, 8)
                    (key,) = struct.unpack("<Q", raw)
                    with self.lock:
                        entry = self.segments.get(key)
                    if entry is not None and not _same_file(entry[0], entry[2]):
                        entry = None  # the segment was released; its descriptor number reused
                    if entry is None:
                        conn.sendall(b"0")
                    else:
                        socket.send_fds(conn, [b"1"], [entry[0]])
            except OSError:
                continue

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _same_file(fd, ident):
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == ident


def _recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("segment server: connection closed early")
        data += chunk
    return data


_server = [None]
_server_lock = threading.Lock()


def server():
    s = _server[0]
    if s is None or s.pid != os.getpid():
        with _server_lock:
            s = _server[0]
            if s is None or s.pid != os.getpid():
                s = _server[0] = SegmentServer()
    return s


def _after_fork_in_child():
    # The inherited listening socket belongs to the parent's server thread.
    s = _server[0]
    if s is not None:
        try:
            s.sock.detach()
        except OSError:
            pass
    _server[0] = None


os.register_at_fork(after_in_child=_after_fork_in_child)


class Mapping:
    """A segment of another process mapped here, with the count of storages over
    it.  Note [Mapping lifetime]: counts are explicit, under one lock, rather than
    weak references with finalisers: a finaliser can run while another thread
    still finds the object through a weak reference, and would unmap memory that
    thread is about to use."""

    __slots__ = ("key", "addr", "size", "fd", "users")

    def __init__(self, key, fd, size):
        addr = lib.emp_map(fd, size)
        if not addr:
            err = lib.emp_last_errno()
            os.close(fd)
            raise OSError(err, f"cannot map a shared segment of {size} bytes: {os.strerror(err)}")
        self.key = key
        self.addr = addr
        self.size = size
        self.fd = fd  # kept, so this process can pass the segment on
        self.users = 0


_mappings = {}
_mappings_lock = threading.RLock()


def _acquire(cache_key, make):
    with _mappings_lock:
        m = _mappings.get(cache_key)
        if m is None:
            m = _mappings[cache_key] = make()
        m.users += 1
        return m


def release(m):
    """A storage over m died: unmap m when it was the last one."""
    with _mappings_lock:
        m.users -= 1
        if m.users > 0:
            return
        _mappings.pop(m.key, None)
        addr, m.addr = m.addr, 0
    lib.emp_unmap(addr, m.size)
    try:
        os.close(m.fd)
    except OSError:
        pass


def fetch(address, key, size):
    """Acquire the Mapping of segment `key` served at `address` (one per process;
    pair with release)."""

    def make():
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(address)
        except (ConnectionRefusedError, FileNotFoundError):
            conn.close()
            raise RuntimeError(
                "ember_multiprocessing: the process that sent this tensor has exited before it "
                "was received, so its shared memory can no longer be reached"
            ) from None
        with conn:
            conn.sendall(struct.pack("<Q", key))
            msg, fds, _, _ = socket.recv_fds(conn, 1, 1)
        if msg != b"1" or not fds:
            raise RuntimeError("ember_multiprocessing: the sender no longer has the segment of this tensor")
        return Mapping((address, key), fds[0], size)

    return _acquire((address, key), make)


def fd_mapping(fd, size):
    """Acquire the Mapping of a received descriptor, deduplicated by inode."""
    st = os.fstat(fd)
    cache_key = ("inode", st.st_dev, st.st_ino)
    with _mappings_lock:
        if cache_key in _mappings:
            os.close(fd)
            return _acquire(cache_key, None)
        return _acquire(cache_key, lambda: Mapping(cache_key, fd, size))
