"""Snapshots of segments and blocks, block lookup, and the event history as
plain dicts (the layout PyTorch's memory_snapshot uses, so tools carry over)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember_allocator import _lib
from ember_allocator._lib import ffi, lib

if TYPE_CHECKING:
    from ember_allocator._allocator import CachingAllocator


def _segment_dict(s: Any, allocator: CachingAllocator) -> dict[str, Any]:
    return {
        "device": allocator.device,
        "address": s.address,
        "total_size": s.size,
        "mapped_size": s.mapped,
        "allocated_size": s.allocated,
        "active_size": s.active,
        "requested_size": s.requested,
        "stream": s.stream,
        "segment_type": "small" if s.is_small else "large",
        "is_expandable": bool(s.expandable),
        "handle": s.handle,
        "blocks": [],
    }


def _block_dict(b: Any) -> dict[str, Any]:
    return {
        "address": b.address,
        "size": b.size,
        "requested_size": b.requested,
        "state": _lib.BLOCK_STATES[b.state],
        "stream": b.stream,
    }


def _mapped_ranges(segment: dict[str, Any]) -> list[dict[str, Any]]:
    """An expandable segment as PyTorch reports one: a segment per contiguous
    mapped range, without the unmapped address space, so that the segments'
    total sizes add up to the reserved bytes."""
    out, current = [], None
    for block in segment["blocks"]:
        if block["state"] == "unmapped":
            current = None
            continue
        if current is None:
            current = dict(segment, address=block["address"], total_size=0, blocks=[])
            current.update(allocated_size=0, active_size=0, requested_size=0)
            out.append(current)
        current["blocks"].append(block)
        current["total_size"] += block["size"]
        if block["state"] == "active_allocated":
            current["allocated_size"] += block["size"]
            current["requested_size"] += block["requested_size"]
        if block["state"] != "inactive":
            current["active_size"] += block["size"]
    for seg in out:
        seg["mapped_size"] = seg["total_size"]
    return out


def snapshot(allocator: CachingAllocator) -> list[dict[str, Any]]:
    n_seg, n_blk = ffi.new("int64_t*"), ffi.new("int64_t*")
    cap_seg, cap_blk = 64, 1024
    while True:
        segs = ffi.new("ea_segment_info[]", cap_seg)
        blks = ffi.new("ea_block_info[]", cap_blk)
        lib.ea_snapshot(allocator._handle, segs, cap_seg, n_seg, blks, cap_blk, n_blk)
        if n_seg[0] <= cap_seg and n_blk[0] <= cap_blk:
            break
        cap_seg, cap_blk = 2 * max(cap_seg, n_seg[0]), 2 * max(cap_blk, n_blk[0])
    raw = [_segment_dict(segs[i], allocator) for i in range(n_seg[0])]
    for i in range(n_blk[0]):
        raw[blks[i].segment]["blocks"].append(_block_dict(blks[i]))
    out = []
    for seg in raw:
        out.extend(_mapped_ranges(seg) if seg["is_expandable"] else [seg])
    out.sort(key=lambda seg: seg["address"])
    return out


def block_info(allocator: CachingAllocator, ptr: int) -> tuple[dict[str, Any], dict[str, Any]]:
    blk = ffi.new("ea_block_info*")
    seg = ffi.new("ea_segment_info*")
    _lib.ensure(lib.ea_block_of(allocator._handle, int(ptr), blk, seg), allocator.name)
    segment = _segment_dict(seg, allocator)
    del segment["blocks"]
    return _block_dict(blk), segment


def history(allocator: CachingAllocator) -> list[dict[str, Any]]:
    cap = 1 << 16
    while True:
        events = ffi.new("ea_event[]", cap)
        n = lib.ea_history(allocator._handle, events, cap)
        if n < cap:
            break
        cap *= 4
    return [
        {
            "action": _lib.EVENT_KINDS[e.kind],
            "address": e.address,
            "size": e.size,
            "stream": e.stream,
            "time_ns": e.time_ns,
            "allocated_bytes": e.allocated_bytes,
            "reserved_bytes": e.reserved_bytes,
        }
        for e in events[0:n]
    ]
