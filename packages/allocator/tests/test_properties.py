"""Randomised alloc/free sequences checked against a simple Python model of the
caching policy (hypothesis).

The model is the policy written plainly: lists of blocks per segment, best fit
by scanning, merging by looking at neighbours, pending frees as lists of
(stream, event number).  After every step the allocator's snapshot must equal
the model's block for block, and its counters the model's counters.  Only the
addresses of new segments come from the allocator (the system picks them)."""

import ctypes
import itertools

from helpers import MiB, round512
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import ember_allocator
from ember_allocator import (
    LARGE_BUFFER,
    MIN_BLOCK_SIZE,
    MIN_LARGE_ALLOC,
    ROUND_LARGE,
    SMALL_BUFFER,
    SMALL_SIZE,
)

STREAMS = (0, 1, 2)
SIZES = st.one_of(
    st.integers(0, 8192),
    st.integers(8193, SMALL_SIZE),
    st.integers(SMALL_SIZE + 1, 12 * MiB),
    st.integers(12 * MiB, 30 * MiB),
)
STATE_NAMES = {"free": "inactive", "alloc": "active_allocated", "pending": "active_pending_free"}


def segment_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class Block:
    def __init__(self, addr, size, stream, state="free"):
        self.addr, self.size, self.stream, self.state = addr, size, stream, state
        self.requested = 0
        self.uses = set()
        self.events = []


class Segment:
    def __init__(self, base, size, stream, small):
        self.base, self.size, self.stream, self.small = base, size, stream, small
        self.blocks = [Block(base, size, stream)]


class PoolModel:
    """The policy of pool.c, for one allocator over a device with streams."""

    def __init__(self, max_split, limit):
        self.max_split, self.limit = max_split, limit
        self.segments = {}
        self.live = {}  # ptr -> (segment, block)
        self.pending = []  # (segment, block)
        self.recorded = dict.fromkeys(STREAMS, 0)
        self.completed = dict.fromkeys(STREAMS, 0)
        self.counts = dict.fromkeys(
            [
                "num_device_alloc",
                "num_device_free",
                "cache_hits",
                "cache_misses",
                "num_alloc_retries",
                "num_ooms",
                "num_sync_all_streams",
            ],
            0,
        )

    @property
    def reserved(self):
        return sum(s.size for s in self.segments.values())

    @property
    def allocated(self):
        return sum(b.size for _, b in self.live.values())

    # -- pieces of the policy

    def free_block(self, seg, block):
        block.state = "free"
        block.requested = 0
        i = seg.blocks.index(block)
        if i + 1 < len(seg.blocks) and seg.blocks[i + 1].state == "free":
            block.size += seg.blocks.pop(i + 1).size
        if i > 0 and seg.blocks[i - 1].state == "free":
            seg.blocks[i - 1].size += seg.blocks.pop(i).size

    def process_events(self):
        still = []
        for seg, block in self.pending:
            if all(self.completed[s] >= n for s, n in block.events):
                self.free_block(seg, block)
            else:
                still.append((seg, block))
        self.pending = still

    def synchronize(self):
        self.counts["num_sync_all_streams"] += 1
        self.completed.update(self.recorded)
        self.process_events()

    def release_cached(self):
        self.synchronize()
        for base, seg in list(self.segments.items()):
            if len(seg.blocks) == 1 and seg.blocks[0].state == "free":
                del self.segments[base]
                self.counts["num_device_free"] += 1

    def find_free(self, size, stream, small):
        fits = [
            (b.size, b.addr, seg, b)
            for seg in self.segments.values()
            if seg.stream == stream and seg.small == small
            for b in seg.blocks
            if b.state == "free" and b.size >= size
        ]
        if not fits:
            return None
        bsize, _, seg, block = min(fits, key=lambda f: f[:2])
        if self.max_split:
            if size < self.max_split and bsize >= self.max_split:
                return None
            if size >= self.max_split and bsize >= size + LARGE_BUFFER:
                return None
        return seg, block

    def should_split(self, seg, block, size):
        remaining = block.size - size
        if seg.small:
            return remaining >= MIN_BLOCK_SIZE
        if self.max_split and size >= self.max_split:
            return False
        return remaining > SMALL_SIZE

    # -- operations

    def plan_alloc(self, nbytes, stream):
        """What allocate() must do: ('hit', seg, block), ('new', size) or ('oom',)."""
        if self.pending:
            self.process_events()
        size = round512(nbytes)
        small = size <= SMALL_SIZE
        found = self.find_free(size, stream, small)
        if found:
            self.counts["cache_hits"] += 1
            return ("hit", *found)
        self.counts["cache_misses"] += 1
        seg_size = segment_size(size)
        if self.limit and self.reserved + seg_size > self.limit:
            self.release_cached()
            self.counts["num_alloc_retries"] += 1
            if self.reserved + seg_size > self.limit:
                self.counts["num_ooms"] += 1
                return ("oom",)
        self.counts["num_device_alloc"] += 1
        return ("new", seg_size)

    def add_segment(self, base, size, stream, small):
        seg = Segment(base, size, stream, small)
        self.segments[base] = seg
        return seg, seg.blocks[0]

    def take(self, seg, block, nbytes, stream):
        size = round512(nbytes)
        if self.should_split(seg, block, size):
            rest = Block(block.addr + size, block.size - size, seg.stream)
            block.size = size
            seg.blocks.insert(seg.blocks.index(block) + 1, rest)
        block.state = "alloc"
        block.requested = nbytes
        block.stream = stream
        block.uses = set()
        self.live[block.addr] = (seg, block)

    def free(self, ptr):
        seg, block = self.live.pop(ptr)
        if block.uses:
            block.events = []
            for s in sorted(block.uses):
                self.recorded[s] += 1
                block.events.append((s, self.recorded[s]))
            block.state = "pending"
            self.pending.append((seg, block))
        else:
            self.free_block(seg, block)

    def record_stream(self, ptr, stream):
        _, block = self.live[ptr]
        if stream != block.stream:
            block.uses.add(stream)

    def layout(self):
        return [
            (seg.base, seg.stream, "small" if seg.small else "large")
            + tuple((b.addr, b.size, STATE_NAMES[b.state]) for b in seg.blocks)
            for seg in sorted(self.segments.values(), key=lambda s: s.base)
        ]


def real_layout(snapshot):
    return [
        (seg["address"], seg["stream"], seg["segment_type"])
        + tuple((b["address"], b["size"], b["state"]) for b in seg["blocks"])
        for seg in snapshot
    ]


class CachingPolicy(RuleBasedStateMachine):
    @initialize(
        max_split=st.sampled_from([None, 4 * MiB, 12 * MiB]),
        limit=st.sampled_from([None, 48 * MiB, 96 * MiB]),
    )
    def setup(self, max_split, limit):
        self.alloc = ember_allocator.CachingAllocator(
            "sim", max_split_size=max_split, memory_limit=limit
        )
        self.model = PoolModel(max_split, limit)
        self.blocks = []

    @rule(nbytes=SIZES, stream=st.sampled_from(STREAMS))
    def allocate(self, nbytes, stream):
        plan = self.model.plan_alloc(nbytes, stream)
        if plan[0] == "oom":
            try:
                self.alloc.allocate(nbytes, stream=stream)
            except ember_allocator.OutOfMemoryError:
                return
            raise AssertionError(f"allocate({nbytes}) should have run out of memory")
        known = set(self.model.segments)
        block = self.alloc.allocate(nbytes, stream=stream)
        if plan[0] == "hit":
            _, seg, mblock = plan
            assert block.ptr == mblock.addr  # best fit from the cache
        else:
            (new,) = [s for s in self.alloc.memory_snapshot() if s["address"] not in known]
            assert new["total_size"] == plan[1]
            seg, mblock = self.model.add_segment(
                new["address"], plan[1], stream, round512(nbytes) <= SMALL_SIZE
            )
            assert block.ptr == new["address"]
        self.model.take(seg, mblock, nbytes, stream)
        self.blocks.append(block)

    @precondition(lambda self: self.blocks)
    @rule(data=st.data())
    def free(self, data):
        block = self.blocks.pop(data.draw(st.integers(0, len(self.blocks) - 1)))
        self.model.free(block.ptr)
        block.free()

    @precondition(lambda self: self.blocks)
    @rule(data=st.data(), stream=st.sampled_from(STREAMS))
    def record_stream(self, data, stream):
        block = self.blocks[data.draw(st.integers(0, len(self.blocks) - 1))]
        self.model.record_stream(block.ptr, stream)
        block.record_stream(stream)

    @rule(stream=st.sampled_from(STREAMS))
    def complete(self, stream):
        self.model.completed[stream] = self.model.recorded[stream]
        self.alloc.sim_complete(stream)

    @rule()
    def empty_cache(self):
        self.model.release_cached()
        self.alloc.empty_cache()

    @rule()
    def synchronize(self):
        self.model.synchronize()
        self.alloc.synchronize()

    @invariant()
    def matches_the_model(self):
        if not hasattr(self, "model"):
            return
        assert real_layout(self.alloc.memory_snapshot()) == self.model.layout()
        stats = self.alloc.memory_stats()
        assert stats["allocated_bytes.all.current"] == self.model.allocated
        assert stats["reserved_bytes.all.current"] == self.model.reserved
        assert stats["segment.all.current"] == len(self.model.segments)
        assert stats["allocation.all.current"] == len(self.model.live)
        for key, value in self.model.counts.items():
            assert stats[key] == value, key
        segs = self.model.segments.values()
        active = [b for s in segs for b in s.blocks if b.state != "free"]
        split_free = [b for s in segs if len(s.blocks) > 1 for b in s.blocks if b.state == "free"]
        assert stats["active_bytes.all.current"] == sum(b.size for b in active)
        assert stats["inactive_split.all.current"] == len(split_free)
        assert stats["inactive_split_bytes.all.current"] == sum(b.size for b in split_free)
        assert stats["requested_bytes.all.current"] == sum(
            b.requested for _, b in self.model.live.values()
        )


CachingPolicy.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_caching_policy_matches_the_model = CachingPolicy.TestCase


# ------------------------------------------------------ expandable segments

PAGE = 2 * MiB  # the host granularity of expandable segments


class ExpandableSegments(RuleBasedStateMachine):
    """No model of the address layout here; instead the property that makes
    expandable segments worth having: after empty_cache, exactly the pages
    that live blocks touch stay mapped, and live memory stays usable."""

    def __init__(self):
        super().__init__()
        self.alloc = ember_allocator.CachingAllocator("host", expandable_segments=True)
        self.blocks = []
        self.tags = itertools.count(1)

    @rule(nbytes=st.integers(SMALL_SIZE + 1, 24 * MiB))
    def allocate(self, nbytes):
        block = self.alloc.allocate(nbytes)
        tag = next(self.tags) % 250 + 1
        for offset in (0, nbytes - 1):  # the first and last byte are mapped
            ctypes.c_ubyte.from_address(block.ptr + offset).value = tag
        self.blocks.append((block, tag))

    @precondition(lambda self: self.blocks)
    @rule(data=st.data())
    def free(self, data):
        block, tag = self.blocks.pop(data.draw(st.integers(0, len(self.blocks) - 1)))
        for offset in (0, block.nbytes - 1):
            assert ctypes.c_ubyte.from_address(block.ptr + offset).value == tag
        block.free()

    @rule()
    def empty_cache(self):
        self.alloc.empty_cache()
        pages = set()
        for seg in self.alloc.memory_snapshot():
            for b in seg["blocks"]:
                if b["state"] != "inactive":
                    pages.update(
                        range(b["address"] // PAGE, -(-(b["address"] + b["size"]) // PAGE))
                    )
        assert self.alloc.memory_reserved() == len(pages) * PAGE

    @invariant()
    def blocks_tile_the_mapped_ranges(self):
        snap = self.alloc.memory_snapshot()
        stats = self.alloc.memory_stats()
        assert sum(s["total_size"] for s in snap) == stats["reserved_bytes.all.current"]
        for seg in snap:
            address = seg["address"]
            for b in seg["blocks"]:
                assert b["address"] == address
                address += b["size"]
        live = sorted((b.ptr, b.ptr + b.nbytes) for b, _ in self.blocks)
        assert all(end <= start for (_, end), (start, _) in zip(live, live[1:]))  # disjoint
        assert stats["allocated_bytes.all.current"] >= sum(b.nbytes for b, _ in self.blocks)


ExpandableSegments.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None
)
test_expandable_segments_properties = ExpandableSegments.TestCase
