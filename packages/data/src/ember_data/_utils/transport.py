"""How tasks and batches travel between the DataLoader's main process and its
workers.

Each worker has one Unix SOCK_SEQPACKET socket pair with the main process:
tasks go one way, results the other, each message whole.  The main process
learns of a dead worker as end-of-file on its socket, at once.

A message is pickled with protocol 5: the structure in band, every large
contiguous buffer (NumPy arrays, ember tensors' memory) out of band:

- a buffer already inside a shared-memory segment (default_collate wrote the
  batch there, Note [Shared-memory segments] in shm.py) is sent as that
  segment's file descriptor: nothing is copied;
- other large buffers are copied once into one new segment;
- small ones (< shm.MIN_SEGMENT_BYTES) ride inside the message.

The receiver maps the segments and rebuilds the arrays as views of them
(writable, as PyTorch's batches are).  A message too large for one packet goes
into a segment of its own.

Note [Transport hook]
ember_multiprocessing, when installed, can take over how ember tensors cross:
if it defines ``dataloader_transport()`` returning an object with

- ``worker_setup()``: run once in each worker before the dataset is used (for
  instance to make new tensors live in its shared memory), and
- ``reducer_override(obj)``: as ``pickle.Pickler.reducer_override``: a reduce
  tuple for the objects it moves itself, ``NotImplemented`` for the rest,
- optionally ``workers_exited(pids)``: called in the main process once an
  iterator's workers are gone (Note [Worker shutdown protocol]), so that memory
  it keeps mapped for their next batches is released,

then workers call ``worker_setup()`` and every message is pickled with its
``reducer_override`` consulted first.  Without it (or without that function),
the built-in path above is used.  ``transport_hook()`` is the one place that
looks it up.
"""

import io
import os
import pickle
import socket
import struct
from typing import Any

import numpy as np

from ember_data import _rng
from ember_data._utils import shm

_ec = _rng.ember_core()

FRAME_MAX = 64 * 1024  # larger frames go into a segment
RECV_MAX = FRAME_MAX + 64
MAX_FDS = 64  # descriptors per message; further buffers are copied instead

_INLINE_FRAME = b"F"
_SEGMENT_FRAME = b"S"
_LEN = struct.Struct("<Q")
_HLEN = struct.Struct("<I")

_hook: list[Any] = []


def transport_hook():
    """ember_multiprocessing's DataLoader transport (Note [Transport hook]), or None."""
    if not _hook:
        try:
            import ember_multiprocessing
        except ImportError:
            ember_multiprocessing = None
        factory = getattr(ember_multiprocessing, "dataloader_transport", None)
        _hook.append(factory() if callable(factory) else None)
    return _hook[0]


def _rebuild_tensor(array, requires_grad):
    t = _ec.from_numpy(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        hook = _hook[0] if _hook else None
        if hook is not None:
            reduced = hook.reducer_override(obj)
            if reduced is not NotImplemented:
                return reduced
        if (
            _ec is not None
            and type(obj) is _ec.Tensor
            and obj.device.type == "cpu"
            and obj.dtype.name != "bfloat16"
        ):
            # the memory as an array: out of band, zero-copy when in a segment
            return _rebuild_tensor, (obj.numpy(force=True), obj.requires_grad)
        return NotImplemented


def _address(raw):
    return np.frombuffer(raw, np.uint8).ctypes.data


def _aligned(n):
    return (n + shm.ALIGN - 1) // shm.ALIGN * shm.ALIGN


def encode(obj):
    """obj -> (message bytes, descriptors to send, segments to close after sending)."""
    buffers = []
    f = io.BytesIO()
    _Pickler(f, protocol=5, buffer_callback=buffers.append).dump(obj)
    payload = f.getvalue()

    specs = []  # per buffer: (descriptor index or -1 for the inline area, offset, nbytes)
    fds, sizes, fd_index = [], [], {}
    inline, area_len = [], 0
    to_copy = []
    for pb in buffers:
        raw = pb.raw()
        n = raw.nbytes
        seg = None
        if n >= shm.MIN_SEGMENT_BYTES and shm._registry:
            seg, offset = shm.find(_address(raw), n)
            if seg is not None and seg.fd not in fd_index and len(fds) >= MAX_FDS - 2:
                seg = None
        if seg is not None:
            if seg.fd not in fd_index:
                fd_index[seg.fd] = len(fds)
                fds.append(seg.fd)
                sizes.append(seg.nbytes)
            specs.append((fd_index[seg.fd], offset, n))
        elif n < shm.MIN_SEGMENT_BYTES:
            area_len = _aligned(area_len)
            specs.append((-1, area_len, n))
            inline.append((area_len, raw))
            area_len += n
        else:
            to_copy.append((len(specs), raw))
            specs.append(None)

    owned = []
    try:
        if to_copy:
            total = 0
            for _, raw in to_copy:
                total = _aligned(total) + raw.nbytes
            seg = shm.Segment(total)
            owned.append(seg)
            k = len(fds)
            fds.append(seg.fd)
            sizes.append(total)
            offset = 0
            for i, raw in to_copy:
                offset = _aligned(offset)
                seg.mapping[offset : offset + raw.nbytes] = raw
                specs[i] = (k, offset, raw.nbytes)
                offset += raw.nbytes

        header = pickle.dumps((payload, specs, sizes), protocol=5)
        frame_len = _HLEN.size + len(header) + area_len
        frame = bytearray(frame_len)
        _HLEN.pack_into(frame, 0, len(header))
        base = _HLEN.size + len(header)
        frame[_HLEN.size : base] = header
        for offset, raw in inline:
            frame[base + offset : base + offset + raw.nbytes] = raw
        if frame_len + 1 <= FRAME_MAX:
            return _INLINE_FRAME + frame, fds, owned
        seg = shm.Segment(frame_len)
        owned.append(seg)
        seg.mapping[:frame_len] = frame
        return _SEGMENT_FRAME + _LEN.pack(frame_len), [*fds, seg.fd], owned
    except BaseException:
        for seg in owned:
            seg.close()
        raise


def decode(msg, fds):
    """The inverse of encode; closes the received descriptors."""
    try:
        kind = msg[:1]
        if kind == _SEGMENT_FRAME:
            (frame_len,) = _LEN.unpack_from(msg, 1)
            frame = memoryview(shm.map_fd(fds[-1], frame_len))
            fds = fds[:-1]
        elif kind == _INLINE_FRAME:
            frame = memoryview(bytearray(memoryview(msg)[1:]))  # writable: arrays may view it
        else:
            raise RuntimeError(f"DataLoader: malformed message from a worker (kind {kind!r})")
        (hlen,) = _HLEN.unpack_from(frame, 0)
        base = _HLEN.size + hlen
        payload, specs, sizes = pickle.loads(frame[_HLEN.size : base])
        maps = [memoryview(shm.map_fd(fd, size)) for fd, size in zip(fds, sizes)]
    finally:
        for fd in fds:
            os.close(fd)
    buffers = [
        frame[base + off : base + off + n] if k < 0 else maps[k][off : off + n]
        for k, off, n in specs
    ]
    return pickle.loads(payload, buffers=buffers)


class Channel:
    """One end of a worker's socket pair: whole messages with descriptors."""

    def __init__(self, sock):
        self.sock = sock
        self._outbox = []  # encoded messages waiting for room (non-blocking senders)

    @staticmethod
    def pair():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        return Channel(a), Channel(b)

    def fileno(self):
        return self.sock.fileno()

    def send(self, obj):
        """Send obj, blocking until there is room."""
        msg, fds, owned = encode(obj)
        try:
            self._send_raw(msg, fds)
        finally:
            for seg in owned:
                seg.close()
            shm.release_registered()

    def _send_raw(self, msg, fds):
        if fds:
            socket.send_fds(self.sock, [msg], fds)
        else:
            self.sock.send(msg)

    def post(self, obj):
        """Queue obj and send what fits without blocking (see flush)."""
        self._outbox.append(encode(obj))
        self.flush()

    def flush(self):
        """Send queued messages until the socket is full; True when all are sent."""
        while self._outbox:
            msg, fds, owned = self._outbox[0]
            try:
                self._send_raw(msg, fds)
            except BlockingIOError:
                return False
            self._outbox.pop(0)
            for seg in owned:
                seg.close()
        return True

    @property
    def pending(self):
        return bool(self._outbox)

    def recv(self):
        """The next object (blocking, or BlockingIOError on a non-blocking socket);
        EOFError when the other end is closed."""
        msg, fds, flags, _ = socket.recv_fds(self.sock, RECV_MAX, MAX_FDS)
        if not msg:
            for fd in fds:
                os.close(fd)
            raise EOFError
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise RuntimeError("DataLoader: a message between processes was truncated")
        return decode(msg, fds)

    def close(self):
        for _, _, owned in self._outbox:
            for seg in owned:
                seg.close()
        self._outbox.clear()
        self.sock.close()
