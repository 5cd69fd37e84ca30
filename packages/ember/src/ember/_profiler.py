"""ember.autograd.profiler: the recording core of ember's profiler, and
PyTorch's legacy API over it (``record_function``, ``profile``).

Note [Profiler]
A running profiler registers a dispatch handler with ember_core (DESIGN.md:
"handlers ... register with ember_core and see each op call"), so it sees every
public op, the ones the autograd engine runs in backward included.  The handler
is registered only while a trace records: with no profiler running, the only
cost anywhere is ``record_function`` reading one module global (``_active``).
Each op call or ``record_function`` range becomes a ``FunctionEvent`` with
wall-clock start and end (``time.perf_counter_ns``), its parent (the innermost
range open on the same thread) and, on request, input shapes, the net bytes
the host allocator handed out during the call (``profile_memory``: requested
bytes, as PyTorch counts them) and the Python stack of the call (``with_stack``).
Op events are named ``aten::<op>`` as PyTorch names its operators, so scripts
that look for ``aten::mm`` find it.
"""

import contextlib
import functools
import os
import threading
import time
import traceback

from ember._profiler_events import EventList, FunctionEvent

__all__ = ["EventList", "FunctionEvent", "profile", "record_function"]

_now_ns = time.perf_counter_ns

# The recorder of the running trace, or None: the one check record_function makes.
_active = None
_lock = threading.Lock()


def _ember_dirs():
    """The source folders of ember's packages (frames there are not the caller's)."""
    import importlib

    dirs = []
    for name in ("ember", "ember_core", "ember_autograd", "ember_nn", "ember_data"):
        with contextlib.suppress(ImportError):
            dirs.append(os.path.dirname(importlib.import_module(name).__file__) + os.sep)
    return tuple(dirs)


def _shape_of(value):
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return list(shape)
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape") for v in value):
        return [list(v.shape) for v in value]
    return []


def _memory_reader():
    """A cheap reader of the bytes the host allocator has handed out (requested
    sizes, as PyTorch's memory profiler reports them)."""
    import ember_allocator

    allocator = ember_allocator.host_allocator()
    try:
        from ember_allocator._lib import ffi, lib

        stats = ffi.new("ea_stats*")
        handle = allocator._handle
        get = lib.ea_get_stats

        def read():
            get(handle, stats)
            return stats.requested_bytes[0].current

        read()
        return read
    except (ImportError, AttributeError):  # another allocator build: the public stats
        return lambda: allocator.memory_stats()["requested_bytes.all.current"]


class _Recorder:
    """One trace: the events recorded between start() and stop()."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events = []
        self.local = threading.local()
        self.read_memory = _memory_reader() if profile_memory else None
        self.skip_dirs = _ember_dirs() if with_stack else ()
        self.started_ns = None
        self.stopped_ns = None
        self.next_id = 0

    # -- ranges and ops ------------------------------------------------------

    def _stack(self):
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def begin(self, name, kind, args=None):
        stack = self._stack()
        event = FunctionEvent(
            self.next_id,
            name,
            threading.get_ident(),
            stack[-1] if stack else None,
            kind,
        )
        self.next_id += 1
        if args is not None and self.record_shapes:
            event.input_shapes = args
        if self.with_stack:
            event.stack = self._python_stack()
        stack.append(event)
        self.events.append(event)
        if self.read_memory is not None:
            event._mem_start = self.read_memory()
        event._start_ns = _now_ns()
        return event

    def end(self, event):
        end = _now_ns()
        if self.read_memory is not None:
            event.cpu_memory_usage = self.read_memory() - event._mem_start
        event._end_ns = end
        stack = self._stack()
        if stack and stack[-1] is event:
            stack.pop()
        elif event in stack:  # ranges closed out of order (a generator, an early exit)
            stack.remove(event)

    def handle(self, op, args, kwargs, call):
        shapes = None
        if self.record_shapes:
            shapes = [
                _shape_of(a) for p, a in zip(op.params, args) if not (p == "out" and a is None)
            ]
        event = self.begin("aten::" + op.name, "cpu_op", shapes)
        try:
            return call(args, kwargs)
        finally:
            self.end(event)

    def _python_stack(self):
        entries = []
        for frame in reversed(traceback.extract_stack()[:-3]):
            path = frame.filename
            if path.startswith(self.skip_dirs) or path == __file__:
                continue
            entries.append(f"{path}({frame.lineno}): {frame.name}")
        return entries

    # -- the trace -----------------------------------------------------------

    def start(self):
        global _active
        import ember_core

        with _lock:
            if _active is not None:
                raise RuntimeError(
                    "profiler: a profiler is already running in this process; "
                    "ember records one trace at a time"
                )
            _active = self
            self.started_ns = _now_ns()
            ember_core.register_handler(self.handle)

    def stop(self):
        global _active
        import ember_core

        with _lock:
            if _active is not self:
                return
            ember_core._base.dispatch.remove_handler(self.handle)
            _active = None
            self.stopped_ns = _now_ns()
        for event in self.events:  # ranges still open when the trace stopped
            if event._end_ns is None:
                event._end_ns = self.stopped_ns

    def event_list(self):
        """The finished events, ordered by start time, with times and self
        times (total minus the children's totals) filled in."""
        base = self.started_ns or 0
        events = sorted(self.events, key=lambda e: e._start_ns)
        for e in events:
            e.finish(base)
        for e in events:
            if e.cpu_parent is not None:
                e.cpu_parent.cpu_children.append(e)
        for e in events:
            e.self_cpu_time_total = e.cpu_time_total - sum(c.cpu_time_total for c in e.cpu_children)
            e.self_cpu_memory_usage = e.cpu_memory_usage - sum(
                c.cpu_memory_usage for c in e.cpu_children
            )
        return EventList(events, profile_memory=self.profile_memory)


class record_function:
    """Label a block or a function: while a profiler records, the range is an
    event (a parent of the ops run inside it); otherwise it costs one check.

    >>> with record_function("forward"):
    ...     out = model(x)
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._event = None

    def __enter__(self):
        recorder = _active
        if recorder is not None:
            self._event = (recorder, recorder.begin(self.name, "user_annotation"))
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            recorder, event = self._event
            self._event = None
            recorder.end(event)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper


def _rewrite_name(name):
    # PyTorch reports every step range as one name so the table aggregates them.
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


class profile:
    """torch.autograd.profiler.profile: record the ops run inside the block.

    >>> with profile(record_shapes=True) as prof:
    ...     model(x)
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))
    """

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        self.enabled = enabled
        self.use_device = "cuda" if use_cuda else use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.entered = False
        self._recorder = None
        self._function_events = None

    # torch.profiler.profile drives these two in turn (prepare, then start).
    def _prepare_trace(self):
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack)

    def _start_trace(self):
        self.entered = True
        self._recorder.start()

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def __exit__(self, exc_type=None, exc_val=None, exc_tb=None):
        if not self.enabled or self._recorder is None:
            return False
        self._recorder.stop()
        events = self._recorder.event_list()
        for e in events:
            e.name = e.key = _rewrite_name(e.name)
        events._use_device = self.use_device
        if self.acc_events and self._function_events is not None:
            events = EventList(
                list(self._function_events) + list(events), profile_memory=self.profile_memory
            )
        self._function_events = events
        self.entered = False
        return False

    def _check_finish(self):
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    @property
    def function_events(self):
        return self._function_events

    def events(self):
        return self._function_events

    def table(self, sort_by=None, row_limit=100, header=None, top_level_events_only=False, **kw):
        self._check_finish()
        return self._function_events.table(
            sort_by=sort_by,
            row_limit=row_limit,
            header=header,
            top_level_events_only=top_level_events_only,
            **kw,
        )

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ):
        self._check_finish()
        return self._function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self._function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self._function_events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finish()
        return self._function_events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finish()
        return self._function_events.export_stacks(path, metric)

    def __str__(self):
        self._check_finish()
        return str(self._function_events)
