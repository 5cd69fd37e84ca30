"""Key-value stores for rendezvous: TCPStore, FileStore, HashStore, PrefixStore.

They carry only small control data -- which processes exist, an MPI port name,
an NCCL unique id -- never tensors (collectives run on MPI or NCCL).  Values are
bytes (a str is stored UTF-8 encoded), as in PyTorch.  The TCP protocol is a
length-prefixed list of byte strings: nothing received is unpickled.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import IO, TypeVar

from ember_distributed._types import DistNetworkError, DistStoreError

__all__ = ["FileStore", "HashStore", "PrefixStore", "Store", "TCPStore"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)

# what a store takes as a value (kept as bytes; a str is UTF-8 encoded)
Value = bytes | bytearray | memoryview | str
Timeout = timedelta | float | None
_T = TypeVar("_T")


def _seconds(timeout: Timeout) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _bytes(value: Value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"store values are bytes or str, got {type(value).__name__}")


class Store:
    """The store interface (PyTorch's ``torch.distributed.Store``)."""

    def __init__(self, timeout: Timeout = _DEFAULT_TIMEOUT) -> None:
        self._timeout = _seconds(timeout)

    @property
    def timeout(self) -> timedelta:
        return timedelta.max if self._timeout is None else timedelta(seconds=self._timeout)

    def set_timeout(self, timeout: Timeout) -> None:
        self._timeout = _seconds(timeout)

    # The operations every store has (each subclass defines them).
    def set(self, key: str, value: Value) -> None:
        """Store ``value`` (bytes; a str is encoded) under ``key``."""
        raise NotImplementedError

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting (within the timeout) until it is set."""
        raise NotImplementedError

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer counter ``key`` (0 if unset); the new value."""
        raise NotImplementedError

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is
        unset and ``expected_value`` is empty); the value it holds afterwards."""
        raise NotImplementedError

    def check(self, keys: list[str]) -> bool:
        """Whether every key is set (without waiting)."""
        raise NotImplementedError

    def wait(self, keys: list[str], timeout: Timeout = None) -> None:
        """Block until every key is set, or raise DistStoreError after the timeout."""
        raise NotImplementedError

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it was set."""
        raise NotImplementedError

    def num_keys(self) -> int:
        """How many keys are set."""
        raise NotImplementedError

    def _timeout_error(self, keys: Iterable[str], limit: float | None = None) -> DistStoreError:
        limit = self._timeout if limit is None else limit
        return DistStoreError(
            f"{type(self).__name__}: timed out after {limit or 0:g} s waiting for keys "
            f"{list(keys)} (a process that should have set them did not start, died or hung)"
        )


class HashStore(Store):
    """A store inside one process (threads share it)."""

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._cond = threading.Condition()

    def set(self, key: str, value: Value) -> None:
        with self._cond:
            self._data[key] = _bytes(value)
            self._cond.notify_all()

    def get(self, key: str) -> bytes:
        self.wait([key])
        with self._cond:
            return self._data[key]

    def add(self, key: str, amount: int) -> int:
        with self._cond:
            value = int(self._data.get(key, b"0")) + int(amount)
            self._data[key] = str(value).encode()
            self._cond.notify_all()
            return value

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        with self._cond:
            cur = self._data.get(key)
            exp = _bytes(expected_value)
            if (cur is None and exp == b"") or cur == exp:
                self._data[key] = _bytes(desired_value)
                self._cond.notify_all()
                return _bytes(desired_value)
            return exp if cur is None else cur

    def check(self, keys: list[str]) -> bool:
        with self._cond:
            return all(k in self._data for k in keys)

    def wait(self, keys: list[str], timeout: Timeout = None) -> None:
        limit = self._timeout if timeout is None else _seconds(timeout)
        deadline = None if limit is None else time.monotonic() + limit
        with self._cond:
            while not all(k in self._data for k in keys):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise self._timeout_error(keys, limit)
                self._cond.wait(left)

    def delete_key(self, key: str) -> bool:
        with self._cond:
            return self._data.pop(key, None) is not None

    def num_keys(self) -> int:
        with self._cond:
            return len(self._data)


# ------------------------------------------------------------------ TCPStore


def _send(sock: socket.socket, parts: list[bytes]) -> None:
    payload = b"".join(struct.pack("!I", len(p)) + p for p in parts)
    sock.sendall(struct.pack("!II", len(payload), len(parts)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the store connection was closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> list[bytes]:
    size, count = struct.unpack("!II", _recv_exact(sock, 8))
    payload = _recv_exact(sock, size)
    parts, pos = [], 0
    for _ in range(count):
        (n,) = struct.unpack_from("!I", payload, pos)
        parts.append(payload[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return parts


class _TCPServer:
    """The store's server: a thread per client over one HashStore."""

    def __init__(self, host: str, port: int) -> None:
        self.data = HashStore()
        self.data.set_timeout(None)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise DistNetworkError(
                f"TCPStore: the server could not listen on {host}:{port}: {e} (is another job "
                "using this MASTER_PORT?)"
            ) from None
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name="ember-tcpstore", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        d = self.data
        try:
            while True:
                cmd, *args = _recv(conn)
                if cmd == b"set":
                    d.set(args[0].decode(), args[1])
                    out = [b"ok"]
                elif cmd == b"get":
                    key, limit = args[0].decode(), float(args[1])
                    try:
                        d.wait([key], None if limit < 0 else limit)
                        out = [b"ok", d.get(key)]
                    except DistStoreError:
                        out = [b"timeout"]
                elif cmd == b"wait":
                    limit = float(args[0])
                    keys = [a.decode() for a in args[1:]]
                    try:
                        d.wait(keys, None if limit < 0 else limit)
                        out = [b"ok"]
                    except DistStoreError:
                        out = [b"timeout"]
                elif cmd == b"add":
                    out = [b"ok", str(d.add(args[0].decode(), int(args[1]))).encode()]
                elif cmd == b"cas":
                    out = [b"ok", d.compare_set(args[0].decode(), args[1], args[2])]
                elif cmd == b"check":
                    out = [b"ok", b"1" if d.check([a.decode() for a in args]) else b"0"]
                elif cmd == b"del":
                    out = [b"ok", b"1" if d.delete_key(args[0].decode()) else b"0"]
                elif cmd == b"num":
                    out = [b"ok", str(d.num_keys()).encode()]
                else:
                    out = [b"error", b"unknown command " + cmd]
                _send(conn, out)
        except (ConnectionError, OSError, struct.error):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


class TCPStore(Store):
    """``TCPStore(host_name, port, world_size=None, is_master=False, timeout=...)``:
    the master process runs the server (in a thread); every process, the master
    included, is a client.  ``port=0`` on the master picks a free port
    (``store.port``)."""

    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int | None = None,
        is_master: bool = False,
        timeout: Timeout = _DEFAULT_TIMEOUT,
        wait_for_workers: bool = True,
        multi_tenant: bool = False,
        master_listen_fd: int | None = None,
        use_libuv: bool = True,
    ) -> None:
        super().__init__(timeout)
        self.host = host_name
        self._server = _TCPServer(host_name, int(port)) if is_master else None
        self.port = self._server.port if self._server is not None else int(port)
        self.world_size = world_size
        self._lock = threading.Lock()
        self._sock = self._connect()
        if is_master and wait_for_workers and world_size:
            # the workers announce themselves (as PyTorch's does)
            self.add("__ember_store_workers__", 1)
            self.wait_value("__ember_store_workers__", int(world_size))
        elif wait_for_workers and world_size:
            self.add("__ember_store_workers__", 1)

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + (self._timeout or 300)
        delay, last = 0.01, None
        while time.monotonic() < deadline:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=5)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as e:
                last = e
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        waited = self._timeout or 300
        raise DistNetworkError(
            f"TCPStore: could not connect to {self.host}:{self.port} within {waited:g} s "
            f"({last}); is the master process (rank 0) running and MASTER_ADDR/MASTER_PORT right?"
        )

    def _call(self, *parts: bytes | str | int | float) -> list[bytes]:
        with self._lock:
            try:
                _send(self._sock, [p if isinstance(p, bytes) else str(p).encode() for p in parts])
                out = _recv(self._sock)
            except (ConnectionError, OSError) as e:
                raise DistNetworkError(
                    f"TCPStore: lost the connection to {self.host}:{self.port} ({e}): the master "
                    "process has probably exited"
                ) from None
        if out[0] == b"timeout":
            raise DistStoreError("timed out")
        if out[0] != b"ok":
            raise DistStoreError(out[1].decode())
        return out[1:]

    def _limit(self, timeout: Timeout = None) -> float:
        limit = self._timeout if timeout is None else _seconds(timeout)
        return -1 if limit is None else limit

    def set(self, key: str, value: Value) -> None:
        self._call(b"set", key, _bytes(value))

    def get(self, key: str) -> bytes:
        try:
            return self._call(b"get", key, self._limit())[0]
        except DistStoreError as e:
            if "timed out" in str(e):
                raise self._timeout_error([key]) from None
            raise

    def add(self, key: str, amount: int) -> int:
        return int(self._call(b"add", key, int(amount))[0])

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        return self._call(b"cas", key, _bytes(expected_value), _bytes(desired_value))[0]

    def check(self, keys: list[str]) -> bool:
        return self._call(b"check", *keys)[0] == b"1"

    def wait(self, keys: list[str], timeout: Timeout = None) -> None:
        try:
            self._call(b"wait", self._limit(timeout), *keys)
        except DistStoreError as e:
            if "timed out" in str(e):
                raise self._timeout_error(keys) from None
            raise

    def wait_value(self, key: str, value: int) -> None:
        """Block until the counter ``key`` reaches ``value`` (within the timeout)."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while self.add(key, 0) < value:
            if deadline is not None and time.monotonic() > deadline:
                raise self._timeout_error([f"{key} >= {value}"])
            time.sleep(0.005)

    def delete_key(self, key: str) -> bool:
        return self._call(b"del", key)[0] == b"1"

    def num_keys(self) -> int:
        return int(self._call(b"num")[0])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._server is not None:
            self._server.close()

    def __del__(self) -> None:
        if getattr(self, "_sock", None) is not None:
            self.close()


# ------------------------------------------------------------------ FileStore


class FileStore(Store):
    """A store in a file that every process can reach (a shared file system):
    an append-only log of records under an exclusive lock."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = file_name
        self.world_size = world_size
        open(file_name, "ab").close()

    def _locked(self, fn: Callable[[IO[bytes], dict[str, bytes]], _T]) -> _T:
        with open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.seek(0)
                return fn(f, self._parse(f.read()))
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    @staticmethod
    def _parse(raw: bytes) -> dict[str, bytes]:
        data: dict[str, bytes] = {}
        pos = 0
        while pos + 9 <= len(raw):
            op = raw[pos : pos + 1]
            klen, vlen = struct.unpack_from("!II", raw, pos + 1)
            key = raw[pos + 9 : pos + 9 + klen].decode()
            value = raw[pos + 9 + klen : pos + 9 + klen + vlen]
            pos += 9 + klen + vlen
            if op == b"s":
                data[key] = value
            else:
                data.pop(key, None)
        return data

    @staticmethod
    def _append(f: IO[bytes], op: bytes, key: str, value: bytes = b"") -> None:
        k = key.encode()
        f.seek(0, os.SEEK_END)
        f.write(op + struct.pack("!II", len(k), len(value)) + k + value)
        f.flush()

    def set(self, key: str, value: Value) -> None:
        self._locked(lambda f, d: self._append(f, b"s", key, _bytes(value)))

    def _peek(self, key: str) -> bytes | None:
        return self._locked(lambda f, d: d.get(key))

    def get(self, key: str) -> bytes:
        self.wait([key])
        value = self._peek(key)
        if value is None:  # deleted since the wait saw it
            raise self._timeout_error([key])
        return value

    def add(self, key: str, amount: int) -> int:
        def fn(f: IO[bytes], d: dict[str, bytes]) -> int:
            value = int(d.get(key, b"0")) + int(amount)
            self._append(f, b"s", key, str(value).encode())
            return value

        return self._locked(fn)

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        def fn(f: IO[bytes], d: dict[str, bytes]) -> bytes:
            cur, exp = d.get(key), _bytes(expected_value)
            if (cur is None and exp == b"") or cur == exp:
                self._append(f, b"s", key, _bytes(desired_value))
                return _bytes(desired_value)
            return exp if cur is None else cur

        return self._locked(fn)

    def check(self, keys: list[str]) -> bool:
        return self._locked(lambda f, d: all(k in d for k in keys))

    def wait(self, keys: list[str], timeout: Timeout = None) -> None:
        limit = self._timeout if timeout is None else _seconds(timeout)
        deadline = None if limit is None else time.monotonic() + limit
        delay = 0.002
        while not self.check(keys):
            if deadline is not None and time.monotonic() > deadline:
                raise self._timeout_error(keys, limit)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def delete_key(self, key: str) -> bool:
        def fn(f: IO[bytes], d: dict[str, bytes]) -> bool:
            if key not in d:
                return False
            self._append(f, b"d", key)
            return True

        return self._locked(fn)

    def num_keys(self) -> int:
        return self._locked(lambda f, d: len(d))


class PrefixStore(Store):
    """``PrefixStore(prefix, store)``: every key gets ``prefix + "/"``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key: str, value: Value) -> None:
        self.underlying_store.set(self._k(key), value)

    def get(self, key: str) -> bytes:
        return self.underlying_store.get(self._k(key))

    def add(self, key: str, amount: int) -> int:
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key: str, expected_value: Value, desired_value: Value) -> bytes:
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def check(self, keys: list[str]) -> bool:
        return self.underlying_store.check([self._k(k) for k in keys])

    def wait(self, keys: list[str], timeout: Timeout = None) -> None:
        return self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def delete_key(self, key: str) -> bool:
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()

    @property
    def timeout(self) -> timedelta:
        return self.underlying_store.timeout

    def set_timeout(self, timeout: Timeout) -> None:
        self.underlying_store.set_timeout(timeout)
