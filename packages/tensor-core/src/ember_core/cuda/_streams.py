"""CUDA streams and events, as in PyTorch.

Note [Streams]
Every op queues its kernels on the current stream of its device (per thread;
the default stream unless ``with ember.cuda.stream(s):`` chose another) and
returns at once.  Memory a tensor frees goes back to the caching allocator's
pool of the stream it was allocated on; using it on another stream needs
``Tensor.record_stream`` so the block is not reused before that stream is done.
"""

from ember_core._base.lib import ffi, lib
from ember_core._cuda import runtime as _cuda
from ember_core._tensor.device import device
from ember_core.cuda._devices import _index, current_device


class Stream:
    """A CUDA stream: ``Stream(device=None, priority=0)`` creates one (lower
    priority numbers run first); ``cuda_stream`` is its handle."""

    def __new__(cls, device=None, priority=0, **kwargs):
        index = _index(device, "Stream")
        if "stream_ptr" in kwargs:  # an existing stream (ExternalStream, current_stream)
            self = object.__new__(cls)
            self.cuda_stream = int(kwargs["stream_ptr"])
            self.device_index = index
            self.priority = 0
            self._owned = False
            return self
        least, greatest = ffi.new("int*"), ffi.new("int*")
        _cuda.check(lib.ecu_stream_priority_range(least, greatest), "Stream")
        prio = max(greatest[0], min(least[0], int(priority)))
        handle = ffi.new("uint64_t*")
        _cuda.check(lib.ecu_stream_create(index, prio, handle), "Stream")
        self = object.__new__(cls)
        self.cuda_stream = handle[0]
        self.device_index = index
        self.priority = prio
        self._owned = True
        return self

    def __init__(self, device=None, priority=0, **kwargs):
        pass

    @property
    def device(self):
        return device("cuda", self.device_index)

    def query(self):
        """Whether all work queued on the stream has finished."""
        done = ffi.new("int*")
        _cuda.check(lib.ecu_stream_query(self.cuda_stream, done), "Stream.query")
        return bool(done[0])

    def synchronize(self):
        """Wait for the stream's work; raises errors its kernels reported."""
        _cuda.check(lib.ecu_stream_synchronize(self.cuda_stream), "Stream.synchronize")

    def wait_event(self, event):
        """Make later work on this stream wait for ``event``."""
        event._ensure(self.device_index)
        _cuda.check(lib.ecu_stream_wait_event(self.cuda_stream, event._handle), "wait_event")

    def wait_stream(self, stream):
        """Make later work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return (
            isinstance(other, Stream)
            and self.cuda_stream == other.cuda_stream
            and self.device_index == other.device_index
        )

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (
            f"<ember.cuda.Stream device=cuda:{self.device_index} "
            f"cuda_stream=0x{self.cuda_stream:x}>"
        )

    def __del__(self):
        if getattr(self, "_owned", False) and self.cuda_stream:
            lib.ecu_stream_destroy(self.cuda_stream)


class ExternalStream(Stream):
    """A stream created elsewhere (CuPy, PyTorch), by its handle; not destroyed here."""

    def __new__(cls, stream_ptr, device=None):
        return Stream.__new__(cls, device, stream_ptr=stream_ptr)


def current_stream(device=None):
    """The stream ops on ``device`` are queued on, in this thread."""
    index = _index(device, "current_stream")
    return Stream(index, stream_ptr=lib.ecu_current_stream(index))


def default_stream(device=None):
    return Stream(_index(device, "default_stream"), stream_ptr=0)


def set_stream(stream):
    """Make ``stream`` the current stream of its device in this thread."""
    if stream is not None:
        lib.ecu_set_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """``with ember.cuda.stream(s):`` -- ops inside queue their work on ``s`` (and
    ``s``'s device is current)."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return self
        self._prev_device = current_device()
        if s.device_index != self._prev_device:
            _cuda.set_device(s.device_index)
        self._prev = lib.ecu_current_stream(s.device_index)
        lib.ecu_set_stream(s.device_index, s.cuda_stream)
        return self

    def __exit__(self, *exc):
        s = self.stream
        if s is None:
            return False
        lib.ecu_set_stream(s.device_index, self._prev)
        if s.device_index != self._prev_device:
            _cuda.set_device(self._prev_device)
        return False


def stream(stream):
    return StreamContext(stream)


class Event:
    """A CUDA event: ``record`` it on a stream, then ``wait`` for it on another,
    ``synchronize`` on it, or measure ``elapsed_time`` between two (with
    ``enable_timing=True``).  Created lazily on the device of its first record."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("Event(interprocess=True): IPC events are not supported")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self._handle = 0
        self.device_index = None

    def _ensure(self, index):
        if not self._handle:
            prev = current_device()
            if prev != index:
                _cuda.set_device(index)
            try:
                h = ffi.new("uint64_t*")
                _cuda.check(lib.ecu_event_create(1 if self.enable_timing else 0, h), "Event")
            finally:
                if prev != index:
                    _cuda.set_device(prev)
            self._handle = h[0]
            self.device_index = index

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._ensure(stream.device_index)
        _cuda.check(lib.ecu_event_record(self._handle, stream.cuda_stream), "Event.record")

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self):
        if not self._handle:
            return True
        done = ffi.new("int*")
        _cuda.check(lib.ecu_event_query(self._handle, done), "Event.query")
        return bool(done[0])

    def synchronize(self):
        if self._handle:
            _cuda.check(lib.ecu_event_synchronize(self._handle), "Event.synchronize")

    def elapsed_time(self, end_event):
        """Milliseconds between this event and ``end_event`` (both recorded, timing on)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'")
        if not (self._handle and end_event._handle):
            raise RuntimeError("Both events must be recorded before calculating elapsed time")
        ms = ffi.new("float*")
        _cuda.check(
            lib.ecu_event_elapsed(self._handle, end_event._handle, ms), "Event.elapsed_time"
        )
        return ms[0]

    @property
    def cuda_event(self):
        return self._handle

    def __repr__(self):
        return (
            f"<ember.cuda.Event 0x{self._handle:x}>"
            if self._handle
            else "<ember.cuda.Event uninitialized>"
        )

    def __del__(self):
        if getattr(self, "_handle", 0):
            lib.ecu_event_destroy(self._handle)
