"""Memory timeline: allocated vs reserved bytes over time, drawn as a PNG.

The picture the PyTorch paper uses to show a caching allocator at work: the
reserved line stays flat while allocated memory rises and falls under it.

    python tools/memory_timeline.py RECORD.json -o timeline.png [--title TEXT]

RECORD.json is one of:
  - a list of events as ``CachingAllocator.history()`` returns them (each with
    ``time_ns``, ``action``, ``size`` and the running ``allocated_bytes`` and
    ``reserved_bytes``), or ``{"events": [...]}``;
  - ``{"snapshots": [{"time": seconds, "segments": memory_snapshot()}, ...]}``;
  - PyTorch's trace layout, ``{"device_traces": [[{"action", "size",
    "time_us"}, ...]]}``, whose running totals are rebuilt from the actions.

As a library::

    import memory_timeline                       # with tools/ on sys.path
    allocator.record_history(100_000)
    ...                                          # the work to look at
    series = memory_timeline.timeline(allocator.history())
    memory_timeline.plot_timeline(series, "timeline.png", title="training")
"""

import argparse
import collections
import json
import pathlib
import sys

Timeline = collections.namedtuple("Timeline", "times allocated reserved marks")
Timeline.__doc__ = """Seconds since the first record, allocated and reserved bytes
after each record, and [(seconds, label)] of notable events (OOMs, empty_cache)."""

# How each action moves the totals, for records that do not carry them.
_DELTAS = {
    "alloc": (1, 0),
    "free_requested": (-1, 0),
    "free": (-1, 0),
    "segment_alloc": (0, 1),
    "segment_map": (0, 1),
    "segment_free": (0, -1),
    "segment_unmap": (0, -1),
}
_MARKED = {"oom": "out of memory", "empty_cache": "empty_cache"}


def _time_of(record, index):
    if "time_ns" in record:
        return record["time_ns"] / 1e9
    if "time_us" in record:
        return record["time_us"] / 1e6
    if "time" in record:
        return float(record["time"])
    return float(index)  # no clock: one step per record


def _from_events(events):
    times, allocated, reserved, marks = [], [], [], []
    running_allocated = running_reserved = 0
    for i, e in enumerate(events):
        action = e.get("action")
        if "allocated_bytes" in e and "reserved_bytes" in e:
            running_allocated, running_reserved = e["allocated_bytes"], e["reserved_bytes"]
        elif action in _DELTAS:
            da, dr = _DELTAS[action]
            running_allocated += da * e["size"]
            running_reserved += dr * e["size"]
        t = _time_of(e, i)
        times.append(t)
        allocated.append(running_allocated)
        reserved.append(running_reserved)
        if action in _MARKED:
            marks.append((t, _MARKED[action]))
    return times, allocated, reserved, marks


def _from_snapshots(snapshots):
    times, allocated, reserved = [], [], []
    for i, snap in enumerate(snapshots):
        segments = snap["segments"] if isinstance(snap, dict) else snap
        times.append(_time_of(snap, i) if isinstance(snap, dict) else float(i))
        allocated.append(sum(seg["allocated_size"] for seg in segments))
        reserved.append(sum(seg["total_size"] for seg in segments))
    return times, allocated, reserved, []


def timeline(record):
    """A Timeline from a history (list of events), a list of snapshots, or a dict
    holding either (keys ``events``, ``snapshots`` or PyTorch's ``device_traces``).

    >>> t = timeline([{"action": "segment_alloc", "size": 4096},
    ...               {"action": "alloc", "size": 512}])
    >>> t.allocated, t.reserved
    ([0, 512], [4096, 4096])
    """
    if isinstance(record, dict):
        if "events" in record:
            times, allocated, reserved, marks = _from_events(record["events"])
        elif "snapshots" in record:
            times, allocated, reserved, marks = _from_snapshots(record["snapshots"])
        elif "device_traces" in record:
            traces = [t for t in record["device_traces"] if t]
            if len(traces) > 1:
                raise ValueError("memory_timeline: traces of several devices; pass one")
            times, allocated, reserved, marks = _from_events(traces[0] if traces else [])
        else:
            raise ValueError(
                "memory_timeline: expected a dict with 'events', 'snapshots' or "
                f"'device_traces', got keys {sorted(record)}"
            )
    elif isinstance(record, list):
        is_snapshots = record and (
            isinstance(record[0], list) or (isinstance(record[0], dict) and "segments" in record[0])
        )
        if is_snapshots:
            times, allocated, reserved, marks = _from_snapshots(record)
        else:
            times, allocated, reserved, marks = _from_events(record)
    else:
        raise TypeError(
            f"memory_timeline: expected a list of events or snapshots, not {type(record).__name__}"
        )
    start = times[0] if times else 0.0
    return Timeline(
        [t - start for t in times], allocated, reserved, [(t - start, m) for t, m in marks]
    )


def _unit(peak):
    for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if peak >= size:
            return name, size
    return "bytes", 1


def _time_unit(span):
    for name, size in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if span >= size:
            return name, size
    return "ns", 1e-9


def plot_timeline(series, path, title=None):
    """Draw a Timeline (or anything timeline() accepts) into the PNG file ``path``."""
    if not isinstance(series, Timeline):
        series = timeline(series)
    from matplotlib.figure import Figure  # Agg canvas, no display or pyplot state

    unit, scale = _unit(max(series.reserved + series.allocated + [0]))
    time_unit, time_scale = _time_unit(max(series.times + [0.0]))
    fig = Figure(figsize=(9, 4.5), dpi=100)
    ax = fig.subplots()
    times = [t / time_scale for t in series.times]
    reserved = [r / scale for r in series.reserved]
    allocated = [a / scale for a in series.allocated]
    ax.fill_between(times, reserved, step="post", alpha=0.25, color="tab:orange")
    ax.step(times, reserved, where="post", color="tab:orange", label="reserved (cached)")
    ax.step(times, allocated, where="post", color="tab:blue", label="allocated")
    for t, label in series.marks:
        t /= time_scale
        color = "tab:red" if label == "out of memory" else "tab:gray"
        ax.axvline(t, color=color, linestyle="--", linewidth=0.8)
        ax.annotate(label, (t, 0), rotation=90, fontsize=7, color=color, va="bottom")
    if series.times:
        peak_a, peak_r = max(series.allocated), max(series.reserved)
        ax.set_title(
            f"{title + ': ' if title else ''}peak allocated {peak_a / scale:.1f} {unit}, "
            f"peak reserved {peak_r / scale:.1f} {unit}",
            fontsize=10,
        )
    elif title:
        ax.set_title(title)
    ax.set_xlabel(f"time ({time_unit})")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("record", help="JSON file: events, snapshots or PyTorch traces")
    parser.add_argument("-o", "--out", default="memory_timeline.png", help="PNG to write")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    try:
        record = json.loads(pathlib.Path(args.record).read_text())
        series = timeline(record)
    except (OSError, ValueError, TypeError, KeyError) as e:
        print(f"memory_timeline: cannot read {args.record}: {e}", file=sys.stderr)
        return 2
    out = plot_timeline(series, args.out, title=args.title)
    print(f"memory_timeline: {len(series.times)} records -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
