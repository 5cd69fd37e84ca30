"""Capture and replay of kernel calls: what ``ember.compile`` is built on.

Note [Capture and replay]
Every op reaches its kernels through the device's kernel namespace ``dev._k``
/ ``dev._kn`` (Note [Kernel interface per device]).  ``capture()`` swaps the
CPU's namespaces for recording proxies and runs a region eagerly: each kernel
call runs as usual and is appended to a ``Graph`` as (function, arguments).
``Graph.replay()`` runs that list again -- in C (``ec_graph_run`` in
csrc/cpu/runtime/graph_replay.c), with no Python between the calls -- so a replay does
exactly what the region's kernels did, on the same memory:

- Memory.  While recording, CPU tensors get their memory from the graph's
  private pool (``GraphPool``, installed with ``set_allocator``), as CUDA
  graphs do: a block freed during the capture may be reused by a later tensor
  of the same capture (the replay repeats the same order), but no block goes
  back to the process's allocator while the graph lives, so nothing outside the
  graph is ever handed memory that a replay writes.  Host arrays passed by
  pointer (shapes, strides, address lists) are copied and owned by the graph.
  A replay allocates nothing: ``memory_allocated`` stays flat.
- Arguments.  Python numbers and addresses become 64-bit words; a trampoline
  per C signature (generated from ember_core.h by csrc/graph_gen.py) makes each
  call a well-typed C call.  A kernel of another extension whose signature has
  no trampoline (ember_nn's optimizer steps) is replayed from Python, between
  two C runs.
- Random numbers.  ``Generator.take`` hands out (seed, offset) during a
  capture as tagged ints; the kernel argument slots that receive them are
  remembered, and each replay takes fresh counters from the same generator and
  writes them there, so replays draw new numbers exactly as eager calls would.
- What cannot be replayed is detected, never replayed wrongly: a value read on
  the host (``item``, ``tolist``, ``bool(t)``, ``numpy()``, printing -- through
  ``host_read``), a kernel that writes into a host array (a count the host then
  reads), a random draw that reaches no kernel argument, a kernel call from
  another thread, or an op tagged ``nondeterministic-output-shape``: each makes
  the capture fail with ``CaptureError`` saying why, after the region has run
  eagerly to its end (its results are those of an eager call).

The policy above this -- guards, warm-up, the cache of graphs, static inputs
and outputs -- is ``ember.compile``'s (ember/_compile.py).
"""

import bisect
import struct
import threading

from ember_core._base import dispatch as _dispatch
from ember_core._base.lib import ffi, lib, nogil
from ember_core._tensor import device as _device
from ember_core._tensor import storage as _storage


class CaptureError(RuntimeError):
    """The captured region did something a replay cannot repeat (said why)."""


_active = None  # the Recorder now capturing (one capture at a time)
_lock = threading.Lock()


def capturing():
    return _active is not None


def host_read(what):
    """Called where tensor memory is read or written on the host; inside a
    capture this makes the capture fail (the value would be frozen)."""
    rec = _active
    if rec is not None:
        rec.fail(f"{what} reads or writes tensor memory on the host")


# ------------------------------------------------------------------ memory


class _Block:
    __slots__ = ("ptr", "nbytes", "foreign")

    def __init__(self, ptr, nbytes, foreign=False):
        self.ptr = ptr
        self.nbytes = nbytes
        self.foreign = foreign  # another thread's: not the graph's memory


class GraphPool:
    """The CPU allocator while a graph records, and the owner of its memory
    afterwards (Note [Capture and replay])."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.blocks = []  # every block handed out, in order
        self._reusable = {}  # nbytes -> blocks freed during the capture
        self._dead = []  # blocks freed after the capture
        self.recording = True
        self.closed = False

    def allocate(self, nbytes, device=None, stream=None):
        if threading.get_ident() != self.thread:
            # another thread's tensor: ordinary memory, never reused by the graph
            ptr = _storage._host_malloc(max(nbytes, 1))
            if not ptr:
                raise _storage._host_allocator.allocation_error(nbytes)
            return _Block(ptr, nbytes, True)
        if self.recording:
            free = self._reusable.get(nbytes)
            if free:
                return free.pop()
        ptr = _storage._host_malloc(max(nbytes, 1))
        if not ptr:
            raise _storage._host_allocator.allocation_error(nbytes)
        block = _Block(ptr, nbytes)
        self.blocks.append(block)
        return block

    def free(self, block):
        if self.closed or block.foreign:
            _storage._host_free(block.ptr)
        elif self.recording:
            self._reusable.setdefault(block.nbytes, []).append(block)
        else:
            self._dead.append(block)

    def close(self):
        """The graph is gone: memory no tensor holds goes back to the allocator
        now, the rest when its tensors go."""
        if self.closed:
            return
        self.closed = True
        for blocks in self._reusable.values():
            for b in blocks:
                _storage._host_free(b.ptr)
        for b in self._dead:
            _storage._host_free(b.ptr)
        self._reusable.clear()
        self._dead.clear()

    def locate(self, value):
        """(block index, offset) when ``value`` is an address inside a block."""
        starts = self._starts
        i = bisect.bisect_right(starts, value) - 1
        if i >= 0:
            ptr, idx, nbytes = self._sorted[i]
            if value < ptr + max(nbytes, 1):
                return idx, value - ptr
        return None

    def freeze(self):
        self.recording = False
        order = sorted((b.ptr, i, b.nbytes) for i, b in enumerate(self.blocks))
        self._sorted = order
        self._starts = [o[0] for o in order]


# ------------------------------------------------------------------ recording


class _RngWord(int):
    """A seed or offset from Generator.take during a capture: the kernel argument
    it lands in is remembered (Note [Capture and replay], random numbers)."""

    __slots__ = ()


class _Take:
    __slots__ = ("generator", "counters", "seed", "offset", "slots")

    def __init__(self, generator, counters, seed, offset):
        self.generator, self.counters = generator, counters
        self.seed, self.offset = seed, offset
        self.slots = []  # (call index, argument index, 'seed' | 'offset')


_signature_cache = {}
_FLOATS = ("double", "float")


def signature(ctype):
    """The trampoline letters of a cffi function type (see csrc/graph_gen.py),
    or None when a parameter has no letter."""
    sig = _signature_cache.get(ctype, False)
    if sig is not False:
        return sig
    letters = []
    for a in ctype.args:
        if a.kind == "pointer":
            letters.append("p")
        elif a.kind == "primitive" and a.cname in ("double", "float"):
            letters.append("d" if a.cname == "double" else None)
        elif a.kind == "primitive" and ffi.sizeof(a) == 8:
            letters.append("l")
        elif a.kind == "primitive" and ffi.sizeof(a) == 4 and a.cname != "float":
            letters.append("i")
        else:
            letters.append(None)
    sig = None if None in letters or ctype.result.cname != "int" else "".join(letters)
    _signature_cache[ctype] = sig
    return sig


class _Call:
    """One recorded kernel call: what the replay needs and what comparing two
    recordings needs."""

    __slots__ = ("name", "fn", "address", "ctype", "args", "words", "arrays")

    def __init__(self, name, fn, address, ctype, args, words, arrays):
        self.name, self.fn, self.address, self.ctype = name, fn, address, ctype
        self.args, self.words, self.arrays = args, words, arrays


class _Proxy:
    """Stands in for a kernel namespace (a cffi ``lib``, ``nogil`` or an
    extension's lib) while a capture runs: ``proxy.ec_unary(...)`` runs the
    kernel and records the call."""

    def __init__(self, real, ext_ffi, rec):
        self._real, self._ffi, self._rec = real, ext_ffi, rec

    def __getattr__(self, name):
        fn = getattr(self._real, name)
        if not callable(fn) or name.startswith("ecu_"):
            return fn
        rec, ext_ffi, real = self._rec, self._ffi, self._real

        def call(*args):
            return rec.call(ext_ffi, real, name, fn, args)

        return call


class Recorder:
    """The state of one capture: calls, random draws, pool, failures."""

    def __init__(self, pool):
        self.pool = pool
        self.calls = []
        self.takes = []
        self.failure = None
        self.thread = threading.get_ident()
        self.seen = {}  # id(tensor) -> tensor: the tensors from outside the pool ops received
        self.paused = False  # calls run without being recorded (static input copies)

    def fail(self, why):
        if self.failure is None:
            self.failure = why

    def call(self, ext_ffi, namespace, name, fn, args):
        if self.failure is not None or self.paused:
            return fn(*args)
        if threading.get_ident() != self.thread:
            self.fail(f"another thread ran kernel {name} during the capture")
            return fn(*args)
        ctype = ext_ffi.typeof(fn)
        params = ctype.args
        words, arrays, kept = [], [], []
        for k, a in enumerate(args):
            if k < len(params) and params[k].kind == "primitive" and params[k].cname in _FLOATS:
                # a number for a floating-point parameter: its word is the double's bits
                if type(a) is _RngWord:
                    self.fail(f"a random seed reached floating-point argument {k} of {name}")
                    return fn(*args)
                kept.append(float(a))
                words.append(int.from_bytes(_dbl(float(a)), "little"))
            elif type(a) is _RngWord:
                self._mark_rng(a, len(self.calls), k)
                words.append(int(a) & 0xFFFFFFFFFFFFFFFF)
                kept.append(int(a))
            elif isinstance(a, int):  # bool too
                words.append(int(a) & 0xFFFFFFFFFFFFFFFF)
                kept.append(int(a))
            elif isinstance(a, ffi.CData):
                t = ext_ffi.typeof(a)
                if t.kind == "array":
                    n = ext_ffi.sizeof(a)
                    copy = ffi.new("char[]", max(n, 1))
                    ffi.memmove(copy, ext_ffi.cast("char*", a), n)
                    arrays.append((a, copy, n, t, k))
                    cast = ext_ffi.cast(t.item.cname + "*", ffi.cast("uintptr_t", copy))
                    kept.append(cast)
                    words.append(int(ffi.cast("uintptr_t", copy)))
                elif t.kind == "pointer" and a == ext_ffi.NULL:
                    kept.append(a)
                    words.append(0)
                else:
                    self.fail(f"kernel {name} received a host pointer of unknown size ({t.cname})")
                    return fn(*args)
            elif a is None:
                kept.append(a)
                words.append(0)
            else:
                self.fail(f"kernel {name} received an argument of type {type(a).__name__}")
                return fn(*args)
        status = fn(*args)
        for orig, copy, n, _t, _k in arrays:
            if ffi.buffer(copy, n)[:] != ext_ffi.buffer(orig, n)[:]:
                self.fail(f"kernel {name} wrote values into a host array (a result the host reads)")
                return status
        if status == 0:
            self.calls.append(
                _Call(
                    name,
                    fn,
                    _address(ext_ffi, namespace, name, fn),
                    ctype,
                    tuple(kept),
                    words,
                    arrays,
                )
            )
        return status

    def _mark_rng(self, word, call, arg):
        for take in reversed(self.takes):
            if word is take.seed:
                take.slots.append((call, arg, "seed"))
                return
            if word is take.offset:
                take.slots.append((call, arg, "offset"))
                return
        self.fail("a random seed reached a kernel from an earlier capture")


def _dbl(x):
    return struct.pack("<d", x)


def _recording_take(self, counters):
    seed, offset = _real["take"](self, counters)
    rec = _active
    if rec is None or threading.get_ident() != rec.thread:
        return seed, offset
    t = _Take(self, counters, _RngWord(seed), _RngWord(offset))
    rec.takes.append(t)
    return t.seed, t.offset


_RESEEDS = ("manual_seed", "seed", "set_state", "__setstate__")
_real = {}  # the Generator methods a capture wraps, found at the first capture


def _generator_class():
    from ember_core._ops.random.random import Generator  # an op family: imported late

    if not _real:
        _real["take"] = Generator.take
        for name in _RESEEDS:
            _real[name] = getattr(Generator, name)
    return Generator


def _reseed_watch(name):
    def reseed(self, *args, **kwargs):
        rec = _active
        if rec is not None and threading.get_ident() == rec.thread:
            # a replay takes the generator's counters as it finds them
            rec.fail(f"Generator.{name}() runs inside it (a replay would not reseed)")
        return _real[name](self, *args, **kwargs)

    return reseed


_reseed_watches = {name: _reseed_watch(name) for name in _RESEEDS}


def _handler(op, args, kwargs, call):
    """Sees every op during a capture: keeps the tensors it touches alive (the
    replay reads their memory) and refuses ops whose output shape is data."""
    rec = _active
    if rec is not None and threading.get_ident() == rec.thread:
        if "nondeterministic-output-shape" in op.tags:
            rec.fail(f"{op.name}'s output shape depends on the values of its input")
        for a in args:
            if isinstance(a, (list, tuple)):
                for b in a:
                    _see(rec, b)
            else:
                _see(rec, a)
    return call(args, kwargs)


def _see(rec, t):
    storage = getattr(t, "_storage", None)
    if storage is None:
        return
    if storage._device.type != "cpu":
        rec.fail(
            f"it runs ops on {storage._device} tensors (replay covers the CPU's kernels; "
            "CUDA graphs are not implemented yet)"
        )
        return
    owner = storage._owner
    if type(owner) is tuple and owner and owner[0] is rec.pool:
        return  # the graph's own memory
    rec.seen[id(t)] = t


class capture:
    """``with capture(extra_namespaces) as rec:`` records the CPU kernels the
    block runs (and those of ``extra_namespaces``: ``[(module, attribute,
    ffi)]`` whose attribute is a kernel lib, swapped for a proxy meanwhile)."""

    def __init__(self, extra=()):
        self.extra = extra
        self.pool = GraphPool()
        self.rec = Recorder(self.pool)

    def __enter__(self):
        global _active
        if not _lock.acquire(blocking=False):
            raise CaptureError("a capture is already running (captures do not nest)")
        cpu = _device.CPU
        self._saved = (cpu._k, cpu._kn)
        self._saved_alloc = _storage._allocators.get(cpu)
        rec = self.rec
        object.__setattr__(cpu, "_k", _Proxy(lib, ffi, rec))
        object.__setattr__(cpu, "_kn", _Proxy(nogil, ffi, rec))
        self._saved_extra = []
        for module, attr, ext_ffi in self.extra:
            real = getattr(module, attr)
            self._saved_extra.append((module, attr, real))
            setattr(module, attr, _Proxy(real, ext_ffi, rec))
        _storage.set_allocator(self.pool, "cpu")
        gen = self._generator = _generator_class()
        gen.take = _recording_take
        for name, watch in _reseed_watches.items():
            setattr(gen, name, watch)
        _dispatch.register_handler(_handler)
        _active = rec
        return rec

    def __exit__(self, *exc):
        global _active
        _active = None
        try:
            _dispatch.remove_handler(_handler)
            for name, real in _real.items():
                setattr(self._generator, name, real)
            cpu = _device.CPU
            object.__setattr__(cpu, "_k", self._saved[0])
            object.__setattr__(cpu, "_kn", self._saved[1])
            for module, attr, real in self._saved_extra:
                setattr(module, attr, real)
            _storage.set_allocator(self._saved_alloc, "cpu")
            self.pool.freeze()
            for t in self.rec.takes:
                if not t.slots:
                    self.rec.fail("a random draw reached no kernel argument")
        finally:
            _lock.release()
        return False


# ------------------------------------------------------------------ replay


class Graph:
    """Recorded kernel calls, ready to replay (Note [Capture and replay])."""

    def __init__(self, rec):
        if rec.failure is not None:
            raise CaptureError(rec.failure)
        self.pool = rec.pool
        self.calls = rec.calls
        self.takes = rec.takes
        self._c = ffi.gc(lib.ec_graph_new(), lib.ec_graph_free)
        # segments: (first, last) runs in C, or a call index replayed from Python
        self.segments = []
        start = 0
        for i, c in enumerate(self.calls):
            sig = signature(c.ctype)
            sid = lib.ec_graph_signature(sig.encode()) if sig is not None else -1
            addr = c.address if sid >= 0 else 0
            if sid < 0 or not addr:
                if start < i:
                    self.segments.append((start, i))
                self.segments.append(i)
                start = i + 1
                lib.ec_graph_append(self._c, 0, -1, 0, ffi.NULL)
                continue
            words = ffi.new("uint64_t[]", c.words or [0])
            if lib.ec_graph_append(self._c, addr, sid, len(c.words), words) < 0:
                raise MemoryError("ember.compile: out of memory recording a graph")
        if start < len(self.calls):
            self.segments.append((start, len(self.calls)))
        self._failed = ffi.new("int64_t*")

    def replay(self):
        if self.pool.closed:
            raise RuntimeError("replay of a released graph (its memory is gone)")
        for t in self.takes:
            seed, offset = _real["take"](t.generator, t.counters)
            for call, arg, which in t.slots:
                word = (seed if which == "seed" else offset) & 0xFFFFFFFFFFFFFFFF
                lib.ec_graph_set_word(self._c, call, arg, word)
                c = self.calls[call]
                args = list(c.args)
                args[arg] = word
                c.args = tuple(args)
        run = nogil.ec_graph_run
        for seg in self.segments:
            if type(seg) is tuple:
                status = run(self._c, seg[0], seg[1], self._failed)
                if status:
                    from ember_core._lib import error

                    raise error(status, f"replay of {self.calls[self._failed[0]].name}")
            else:
                c = self.calls[seg]
                status = c.fn(*c.args)
                if status:
                    raise RuntimeError(f"replay of {c.name}: kernel status {status}")

    def release(self):
        self.pool.close()

    def __del__(self):
        pool = getattr(self, "pool", None)
        if pool is not None:
            pool.close()

    def words_sorted(self):
        """Every argument word and host-array value, sorted (for ``references``)."""
        vals = []
        for c in self.calls:
            vals.extend(c.words)
            for _orig, copy, n, t, _k in c.arrays:
                if ffi.sizeof(t.item) == 8 and t.item.kind == "primitive":
                    vals.extend(ffi.cast("uint64_t*", copy)[0 : n // 8])
        vals.sort()
        return vals

    def references(self, ptr, nbytes, words):
        """Whether some recorded argument is an address in [ptr, ptr + nbytes)."""
        i = bisect.bisect_left(words, ptr)
        return i < len(words) and words[i] < ptr + max(nbytes, 1)

    def canonical(self, other_pools=()):
        """The calls as they would be written again by another recording of the
        same computation: addresses inside the pool become "pool" (another
        recording's buffers are elsewhere), random counters "rng", host arrays
        their contents.  Copies between the graph's own buffers are left out:
        autograd copies or reuses a gradient depending on what else refers to
        it, which changes from call to call without changing any value."""
        pools = (self.pool, *other_pools)

        def where(value):  # which pool holds the address, if one does
            for k, p in enumerate(pools):
                if p.locate(value) is not None:
                    return f"pool{k}"
            return None

        rng = {(call, arg) for t in self.takes for call, arg, _ in t.slots}
        out = []
        for i, c in enumerate(self.calls):
            args = []
            owned = {a[4] for a in c.arrays}
            internal = True
            params = c.ctype.args
            for k, w in enumerate(c.words):
                if k < len(params) and params[k].cname in _FLOATS:
                    args.append(struct.unpack("<d", w.to_bytes(8, "little"))[0])
                elif k in owned:
                    args.append("array")
                elif (i, k) in rng:
                    args.append("rng")
                elif w >= _MIN_ADDRESS and where(w) is not None:
                    args.append(where(w))
                else:
                    args.append(w)
                    internal = internal and w < _MIN_ADDRESS
            if c.name in _COPIES and internal:
                continue
            arrays = []
            for _orig, copy, n, t, _k in c.arrays:
                if ffi.sizeof(t.item) == 8 and t.item.kind == "primitive":
                    vals = ffi.cast("uint64_t*", copy)[0 : n // 8]
                    arrays.append(tuple(where(v) or v for v in vals))
                else:
                    arrays.append(bytes(ffi.buffer(copy, n)))
            out.append((c.name, tuple(args), tuple(arrays)))
        return out


_COPIES = ("ec_copy", "ec_copy_contig")
_MIN_ADDRESS = 1 << 16  # smaller words are sizes, codes and flags, never addresses


def _address(ext_ffi, namespace, name, fn):
    """The C address of a kernel: a cffi lib's function or a function pointer
    (a GIL-releasing twin); 0 when it has none (a Python wrapper)."""
    try:
        if isinstance(fn, ext_ffi.CData):
            return int(ext_ffi.cast("uintptr_t", fn))
        return int(ext_ffi.cast("uintptr_t", ext_ffi.addressof(namespace, name)))
    except (TypeError, AttributeError, ext_ffi.error):
        return 0
