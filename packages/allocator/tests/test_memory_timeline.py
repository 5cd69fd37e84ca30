"""tools/memory_timeline.py: series rebuilt from histories, snapshots and
PyTorch-style traces agree with the allocator's own statistics; the PNG is
written (matplotlib, Agg)."""

import importlib.util
import json
import pathlib
import struct
import subprocess
import sys

import pytest
from helpers import MiB

import ember_allocator

TOOL = pathlib.Path(__file__).resolve().parents[3] / "tools" / "memory_timeline.py"
if not TOOL.exists():
    pytest.skip("tools/memory_timeline.py is not next to this package", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("memory_timeline", TOOL)
memory_timeline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(memory_timeline)


def _workload(allocator):
    live = []
    for step in range(4):
        live.append(allocator.allocate((step + 1) * 3 * MiB))
        tmp = allocator.allocate(500_000)
        del tmp
    del live[1:]
    allocator.empty_cache()
    return live


def test_timeline_from_history_follows_the_stats():
    a = ember_allocator.CachingAllocator("host", history=10_000)
    keep = _workload(a)
    series = memory_timeline.timeline(a.history())
    stats = a.memory_stats()
    assert series.allocated[-1] == stats["allocated_bytes.all.current"] == 3 * MiB
    assert series.reserved[-1] == stats["reserved_bytes.all.current"]
    assert max(series.allocated) == stats["allocated_bytes.all.peak"]
    assert max(series.reserved) == stats["reserved_bytes.all.peak"]
    assert series.times[0] == 0.0 and series.times == sorted(series.times)
    assert [label for _, label in series.marks] == ["empty_cache"]
    del keep


def test_timeline_rebuilt_from_actions_alone_matches():
    # PyTorch's traces carry no running totals: rebuild them from the actions.
    a = ember_allocator.CachingAllocator("host", history=10_000)
    keep = _workload(a)
    events = a.history()
    bare = [
        {"action": e["action"], "size": e["size"], "time_us": e["time_ns"] / 1e3} for e in events
    ]
    rebuilt = memory_timeline.timeline({"device_traces": [bare]})
    direct = memory_timeline.timeline(events)
    assert rebuilt.allocated == direct.allocated
    assert rebuilt.reserved == direct.reserved
    del keep


def test_timeline_from_snapshots():
    a = ember_allocator.CachingAllocator("host")
    snaps, expected = [], []
    live = []
    for i in range(5):
        live.append(a.allocate((i + 1) * MiB + 1))
        snaps.append({"time": float(i), "segments": a.memory_snapshot()})
        expected.append((a.memory_allocated(), a.memory_reserved()))
    series = memory_timeline.timeline({"snapshots": snaps})
    assert list(zip(series.allocated, series.reserved)) == expected
    assert series.times == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert memory_timeline.timeline([s["segments"] for s in snaps]).allocated == series.allocated


def test_timeline_rejects_what_it_cannot_read():
    with pytest.raises(ValueError, match="'events', 'snapshots' or 'device_traces'"):
        memory_timeline.timeline({"frames": []})
    with pytest.raises(TypeError, match="list of events or snapshots"):
        memory_timeline.timeline(42)
    assert memory_timeline.timeline([]).times == []


def _png_size(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_plot_and_cli(tmp_path):
    pytest.importorskip("matplotlib")
    a = ember_allocator.CachingAllocator("host", memory_limit=40 * MiB, history=10_000)
    keep = _workload(a)
    with pytest.raises(ember_allocator.OutOfMemoryError):
        a.allocate(64 * MiB)
    events = a.history()
    out = memory_timeline.plot_timeline(events, tmp_path / "sub" / "t.png", title="test")
    assert _png_size(out) == (900, 450)
    assert memory_timeline.timeline(events).marks[-1][1] == "out of memory"

    record = tmp_path / "events.json"
    record.write_text(json.dumps({"events": events}))
    png = tmp_path / "cli.png"
    result = subprocess.run(
        [sys.executable, str(TOOL), str(record), "-o", str(png), "--title", "cli"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert f"{len(events)} records" in result.stdout
    assert _png_size(png) == (900, 450)

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = subprocess.run([sys.executable, str(TOOL), str(bad)], capture_output=True, text=True)
    assert result.returncode == 2 and "cannot read" in result.stderr
    del keep
