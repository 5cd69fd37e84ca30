"""What a profiler trace holds and how it is read: ``FunctionEvent`` (one op
call or range), ``FunctionEventAvg`` (events grouped by name, and optionally
by input shapes), ``EventList`` with ``key_averages``, ``table`` (PyTorch's
column layout) and ``export_chrome_trace`` (Chrome trace JSON, which
chrome://tracing, Perfetto and TensorBoard's profiler plugin read).
Times are microseconds (floats), memory is bytes, as in PyTorch."""

import json
import os
import socket
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024**2, 1024**3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


class Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _Times:
    """Formatted-time properties shared by events and their averages."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    # A CPU-only build: device columns are always zero.
    device_time_total = 0.0
    self_device_time_total = 0.0
    device_memory_usage = 0
    self_device_memory_usage = 0
    cuda_time_total = 0.0
    self_cuda_time_total = 0.0
    cuda_memory_usage = 0
    self_cuda_memory_usage = 0
    flops = 0
    node_id = -1
    is_async = False
    is_remote = False
    is_legacy = False
    overload_name = ""
    use_device = None

    @property
    def device_time(self):
        return 0.0


class FunctionEvent(_Times):
    """One op call or ``record_function`` range of a trace."""

    def __init__(self, id, name, thread, parent, kind):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.cpu_parent = parent
        self.cpu_children = []
        self.kind = kind  # "cpu_op" or "user_annotation"
        self.is_user_annotation = kind == "user_annotation"
        self.input_shapes = []
        self.stack = []
        self.count = 1
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.time_range = None
        self.device_type = "CPU"
        self.sequence_nr = -1
        self.scope = 0
        self._start_ns = None
        self._end_ns = None
        self._mem_start = 0

    def finish(self, base_ns):
        self.time_range = Interval((self._start_ns - base_ns) / 1e3, (self._end_ns - base_ns) / 1e3)
        self.cpu_time_total = self.time_range.elapsed_us()

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} "
            f"cpu_time={self.cpu_time_total_str} self_cpu_time={self.self_cpu_time_total_str} "
            f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>"
        )


class FunctionEventAvg(_Times):
    """The sum of the events that share a key (and input shapes / stack when grouped)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None
        self.cpu_children = None
        self.is_user_annotation = False
        self.device_type = "CPU"

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: keys differ ({other.key} vs {self.key})")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
            f"cpu_memory_usage={self.cpu_memory_usage}>"
        )


class EventList(list):
    """A list of events with PyTorch's summaries over it."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        stats = defaultdict(FunctionEventAvg)
        for e in self:
            key = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            stats[key].add(e)
        out = EventList(stats.values(), profile_memory=self._profile_memory)
        for avg in out:
            avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return out

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
            total.count += e.count
        total.key = "Total"
        return total

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
        time_unit=None,
    ):
        return _build_table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            profile_memory=self._profile_memory,
            top_level_events_only=top_level_events_only,
            time_unit=time_unit,
        )

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON (complete "X" events, microseconds)."""
        pid = os.getpid()
        trace = []
        for e in self:
            if e.time_range is None:
                continue
            args = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            if e.kind == "cpu_op" and self._profile_memory:
                args["Memory usage"] = e.cpu_memory_usage
            trace.append(
                {
                    "ph": "X",
                    "cat": e.kind,
                    "name": e.name,
                    "pid": pid,
                    "tid": e.thread,
                    "ts": round(e.time_range.start, 3),
                    "dur": round(e.time_range.elapsed_us(), 3),
                    "args": args,
                }
            )
        document = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "host_name": socket.gethostname(),
            "displayTimeUnit": "ms",
            "traceEvents": [
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": pid,
                    "tid": 0,
                    "args": {"name": "python"},
                },
                *trace,
            ],
        }
        with open(path, "w") as f:
            json.dump(document, f)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Collapsed stacks (``frame;frame;op value`` lines) for flame graph tools."""
        with open(path, "w") as f:
            for e in self:
                if e.stack:
                    frames = ";".join(reversed(e.stack)).replace(" ", "_")
                    f.write(f"{frames};{e.name} {int(getattr(e, metric))}\n")


def _build_table(
    events,
    sort_by=None,
    header=None,
    row_limit=100,
    max_src_column_width=75,
    max_name_column_width=55,
    max_shapes_column_width=80,
    profile_memory=False,
    top_level_events_only=False,
    time_unit=None,
):
    """PyTorch's summary table (CPU columns) over events or averages."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    header_sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt_time(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    def trim_path(path):
        if len(path) > src_width:
            path = path[len(path) - src_width :]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        row = [
            name,
            _format_time_share(e.self_cpu_time_total, total),
            fmt_time(e.self_cpu_time_total),
            _format_time_share(e.cpu_time_total, total),
            fmt_time(e.cpu_time_total),
            fmt_time(e.cpu_time),
        ]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim_path(e.stack[0]) if e.stack else "")
        lines.append(row_format.format(*row))
        if stacks:
            blanks = [""] * (len(headers) - 1)
            for entry in (e.stack or [])[1:]:
                lines.append(row_format.format(*blanks, trim_path(entry)))
            lines.append(row_format.format(*blanks, ""))
    lines += [header_sep, f"Self CPU time total: {fmt_time(total)}"]
    return "".join(line + "\n" for line in lines)
