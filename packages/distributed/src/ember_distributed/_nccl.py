"""The NCCL backend: collectives on CUDA tensors through NVIDIA's libnccl.

Note [NCCL backend]
libnccl is loaded with dlopen (cffi's ABI mode: NCCL's C API is a handful of
functions taking pointers, sizes and a stream): from $EMBER_NCCL_LIBRARY,
else the ``nvidia-nccl-cu13`` wheel found by cuda-pathfinder, else the system's
``libnccl.so.2``.  One communicator per (process group, device) is made at the
group's first CUDA collective; rank 0's ``ncclUniqueId`` reaches the others
through the group's MPI communicator, or through the rendezvous store where MPI
is not installed.  Nothing here depends on the number of GPUs: a world of one
process on one GPU runs the same code as many processes on many machines.

Streams, as PyTorch's ProcessGroupNCCL: each communicator has its own ember
CUDA stream.  A collective first makes that stream wait for the caller's
current stream (the kernels that produced the input), queues the NCCL call,
and records an event.  ``Work.wait()`` makes the caller's current stream wait
for that event -- the host does not block (set TORCH_NCCL_BLOCKING_WAIT=1 to
block the host, with the group's timeout, ncclCommAbort and a
DistBackendError when it runs out).  A synchronous collective (async_op=False)
is the same followed by that wait.  The tensors stay referenced until their
collective's event completed.
"""

import os
import time

import ember_autograd
import ember_core as ec
from ember_distributed._types import DistBackendError, ReduceOp
from ember_distributed._work import Work

_CDEF = """
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
int ncclGetVersion(int* version);
int ncclGetUniqueId(ncclUniqueId* uniqueId);
int ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
int ncclCommDestroy(ncclComm_t comm);
int ncclCommAbort(ncclComm_t comm);
int ncclCommGetAsyncError(ncclComm_t comm, int* asyncError);
const char* ncclGetErrorString(int result);
const char* ncclGetLastError(ncclComm_t comm);
int ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                  ncclComm_t comm, void* stream);
int ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                  ncclComm_t comm, void* stream);
int ncclReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
               int root, ncclComm_t comm, void* stream);
int ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, int datatype,
                  ncclComm_t comm, void* stream);
int ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, int datatype,
                      int op, ncclComm_t comm, void* stream);
int ncclSend(const void* sendbuff, size_t count, int datatype, int peer, ncclComm_t comm,
             void* stream);
int ncclRecv(void* recvbuff, size_t count, int datatype, int peer, ncclComm_t comm,
             void* stream);
int ncclGroupStart(void);
int ncclGroupEnd(void);
"""

# ncclDataType_t
_TYPES = {
    "int8": 0,
    "uint8": 1,
    "bool": 1,
    "int32": 2,
    "int64": 4,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
# ncclRedOp_t
_OPS = {
    ReduceOp.SUM: 0,
    ReduceOp.PRODUCT: 1,
    ReduceOp.MAX: 2,
    ReduceOp.MIN: 3,
    ReduceOp.AVG: 4,
}
# bool tensors travel as uint8: "any" is MAX, "all" is MIN (as PyTorch does)
_BOOL_OPS = {
    ReduceOp.SUM: 2,
    ReduceOp.MAX: 2,
    ReduceOp.PRODUCT: 3,
    ReduceOp.MIN: 3,
}

_lib = None
_ffi = None
_why = None


def find_library():
    """The path (or soname) of libnccl, or None."""
    path = os.environ.get("EMBER_NCCL_LIBRARY")
    if path:
        return path
    try:
        from cuda import pathfinder

        return pathfinder.load_nvidia_dynamic_lib("nccl").abs_path
    except Exception:  # noqa: BLE001 - absent package or library: try the system's
        pass
    import ctypes.util

    name = ctypes.util.find_library("nccl")
    if name:
        return name
    for candidate in ("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/local/lib/libnccl.so.2"):
        if os.path.exists(candidate):
            return candidate
    return None


def lib():
    """(ffi, lib) of libnccl, loading it on first use; a clear error without it."""
    global _lib, _ffi, _why
    if _lib is not None:
        return _ffi, _lib
    import cffi

    path = find_library()
    if path is None:
        raise RuntimeError(
            "ember.distributed: the NCCL backend needs libnccl: pip install "
            "'ember-distributed[nccl]' (the nvidia-nccl-cu13 wheel and cuda-pathfinder), install "
            "NCCL on the system, or point EMBER_NCCL_LIBRARY at libnccl.so.2"
        )
    ffi = cffi.FFI()
    ffi.cdef(_CDEF)
    try:
        handle = ffi.dlopen(path)
    except OSError as e:
        raise RuntimeError(f"ember.distributed: could not load libnccl from {path}: {e}") from None
    _ffi, _lib = ffi, handle
    return ffi, handle


def version():
    """NCCL's version as (major, minor, patch)."""
    ffi, nccl = lib()
    v = ffi.new("int*")
    nccl.ncclGetVersion(v)
    code = v[0]
    if code >= 10000:
        return code // 10000, (code // 100) % 100, code % 100
    return code // 1000, (code // 100) % 10, code % 100


def _nccl_type(t, what):
    code = _TYPES.get(t.dtype.name)
    if code is None:
        raise RuntimeError(f"{what}: NCCL has no datatype for {t.dtype} tensors")
    return code


class NCCLWork(Work):
    """An NCCL collective queued on its communicator's stream."""

    def __init__(self, pg, what, event, refs, finish):
        super().__init__(what)
        self._pg = pg
        self._event = event
        self._refs = refs
        self._finish = finish
        self._waited = False

    def is_completed(self):
        return self._event.query()

    def wait(self, timeout=None):
        pg = self._pg
        if self._waited:
            return True
        if pg.blocking_wait:
            limit = pg.group._timeout if timeout is None else _seconds(timeout)
            deadline = time.monotonic() + limit
            while not self._event.query():
                if time.monotonic() > deadline:
                    pg.abort(f"{self.what} did not finish within {limit:g} s")
                time.sleep(0.0002)
        from ember_core import cuda

        cuda.current_stream(pg.device).wait_event(self._event)
        self._waited = True
        if self._finish is not None:
            with ember_autograd.no_grad():
                self._finish()
            self._finish = None
        pg.check_async_error(self.what)
        return True


def _seconds(timeout):
    from datetime import timedelta

    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


class ProcessGroupNCCL:
    """One NCCL communicator of a ProcessGroup on one device (Note [NCCL backend])."""

    name = "nccl"

    def __init__(self, group, device):
        from ember_core import cuda

        self.ffi, self.lib = lib()
        self.group = group
        self.device = device
        self.rank = group._rank
        self.size = group._size
        self.blocking_wait = os.environ.get(
            "TORCH_NCCL_BLOCKING_WAIT", os.environ.get("EMBER_NCCL_BLOCKING_WAIT", "0")
        ) not in ("0", "")
        self._pending = []  # (event, refs) of collectives not known to be complete
        ffi, nccl = self.ffi, self.lib
        uid = ffi.new("ncclUniqueId*")
        if self.rank == 0:
            self._check(nccl.ncclGetUniqueId(uid), "ncclGetUniqueId")
        raw = bytes(ffi.buffer(uid))
        raw = self._share_uid(raw)
        ffi.memmove(uid, raw, len(raw))
        prev = cuda.current_device()
        cuda.set_device(device)
        try:
            comm = ffi.new("ncclComm_t*")
            self._check(
                nccl.ncclCommInitRank(comm, self.size, uid[0], self.rank), "ncclCommInitRank"
            )
            self.comm = comm[0]
            self.stream = cuda.Stream(device=device)
        finally:
            cuda.set_device(prev)

    def _share_uid(self, raw):
        g = self.group
        if g._comm is not None:
            return g._comm.bcast(raw if self.rank == 0 else None, root=0)
        from ember_distributed._store import PrefixStore

        store = PrefixStore(f"ember/nccl/{g.group_name}/{self.device}", g._store_factory())
        if self.rank == 0:
            store.set("uid", raw)
            return raw
        return store.get("uid")

    def _check(self, status, what):
        if status != 0:
            detail = self.ffi.string(self.lib.ncclGetErrorString(status)).decode()
            comm = getattr(self, "comm", None)
            if comm is not None:
                last = self.lib.ncclGetLastError(comm)
                if last != self.ffi.NULL:
                    detail += f": {self.ffi.string(last).decode()}"
            raise DistBackendError(f"ember.distributed (NCCL): {what} failed: {detail}")

    def check_async_error(self, what):
        err = self.ffi.new("int*")
        self.lib.ncclCommGetAsyncError(self.comm, err)
        if err[0] != 0:
            self._check(err[0], what)

    def abort(self, reason):
        self.lib.ncclCommAbort(self.comm)
        self.comm = None
        raise DistBackendError(
            f"ember.distributed (NCCL): {reason} on {self.group._describe()}; the communicator "
            "was aborted"
        )

    def dtype_check(self, t, what):
        if t.device.type != "cuda":
            raise RuntimeError(f"{what}: the NCCL backend takes CUDA tensors, got {t.device}")

    def _launch(self, what, tensors, calls, finish, async_op):
        """Queue ``calls(stream)`` on the NCCL stream after the current stream's work."""
        from ember_core import cuda

        self._pending = [(e, r) for e, r in self._pending if not e.query()]
        current = cuda.current_stream(self.device)
        self.stream.wait_stream(current)
        handle = self.ffi.cast("void*", self.stream.cuda_stream)
        calls(handle)
        end = cuda.Event()
        end.record(self.stream)
        self._pending.append((end, tensors))
        work = NCCLWork(self, what, end, tensors, finish)
        if async_op:
            return work
        work.wait()
        return None

    def _grouped(self, fn):
        self._check(self.lib.ncclGroupStart(), "ncclGroupStart")
        try:
            fn()
        finally:
            self._check(self.lib.ncclGroupEnd(), "ncclGroupEnd")

    def _op(self, t, op, what):
        if t.dtype is ec.bool_:
            code = _BOOL_OPS.get(op)
        else:
            code = _OPS.get(op)
        if code is None:
            raise RuntimeError(f"Cannot use {str(op).replace('RedOpType', 'ReduceOp')} with NCCL")
        return code

    @staticmethod
    def _p(t):
        return t.data_ptr()

    # -------------------------------------------------------------- collectives

    def allreduce(self, t, op, async_op):
        c = _contig(t)
        dt, code = _nccl_type(c, "all_reduce"), self._op(c, op, "all_reduce")
        p = self._p(c)
        return self._launch(
            "all_reduce",
            (t, c),
            lambda s: self._check(
                self.lib.ncclAllReduce(
                    self.ffi.cast("void*", p),
                    self.ffi.cast("void*", p),
                    c.numel(),
                    dt,
                    code,
                    self.comm,
                    s,
                ),
                "ncclAllReduce",
            ),
            (lambda: t.copy_(c)) if c is not t else None,
            async_op,
        )

    def broadcast(self, t, root, async_op):
        c = _contig(t)
        dt, p = _nccl_type(c, "broadcast"), self._p(c)
        return self._launch(
            "broadcast",
            (t, c),
            lambda s: self._check(
                self.lib.ncclBroadcast(
                    self.ffi.cast("void*", p),
                    self.ffi.cast("void*", p),
                    c.numel(),
                    dt,
                    root,
                    self.comm,
                    s,
                ),
                "ncclBroadcast",
            ),
            (lambda: t.copy_(c)) if c is not t else None,
            async_op,
        )

    def reduce(self, t, root, op, async_op):
        c = _contig(t)
        dt, code, p = _nccl_type(c, "reduce"), self._op(c, op, "reduce"), self._p(c)
        return self._launch(
            "reduce",
            (t, c),
            lambda s: self._check(
                self.lib.ncclReduce(
                    self.ffi.cast("void*", p),
                    self.ffi.cast("void*", p),
                    c.numel(),
                    dt,
                    code,
                    root,
                    self.comm,
                    s,
                ),
                "ncclReduce",
            ),
            (lambda: t.copy_(c)) if c is not t and self.rank == root else None,
            async_op,
        )

    def allgather_flat(self, out, t, async_op, what, after=None):
        c = _contig(t)
        dt = _nccl_type(c, what)
        return self._launch(
            what,
            (t, c, out),
            lambda s: self._check(
                self.lib.ncclAllGather(
                    self.ffi.cast("void*", self._p(c)),
                    self.ffi.cast("void*", self._p(out)),
                    c.numel(),
                    dt,
                    self.comm,
                    s,
                ),
                "ncclAllGather",
            ),
            after,
            async_op,
        )

    def _send(self, t, count, offset, peer, s):
        ptr = self.ffi.cast("void*", t.data_ptr() + offset * t.element_size())
        self._check(
            self.lib.ncclSend(ptr, count, _nccl_type(t, "send"), peer, self.comm, s), "ncclSend"
        )

    def _recv(self, t, count, offset, peer, s):
        ptr = self.ffi.cast("void*", t.data_ptr() + offset * t.element_size())
        self._check(
            self.lib.ncclRecv(ptr, count, _nccl_type(t, "recv"), peer, self.comm, s), "ncclRecv"
        )

    def _local_copy(self, dst, dst_off, src, src_off, count):
        if count:
            dst[dst_off : dst_off + count].copy_(src.reshape(-1)[src_off : src_off + count])

    def gather_flat(self, out, t, root, async_op, after=None):
        c = _contig(t)
        n = c.numel()

        def calls(s):
            def fn():
                if self.rank == root:
                    for r in range(self.size):
                        if r != root:
                            self._recv(out, n, r * n, r, s)
                else:
                    self._send(c, n, 0, root, s)

            self._grouped(fn)

        def finish():
            if self.rank == root:
                self._local_copy(out, root * n, c, 0, n)
            if after is not None:
                after()

        return self._launch("gather", (t, c, out), calls, finish, async_op)

    def scatter_flat(self, out, inp, root, async_op, after=None):
        c = _contig(out)
        n = c.numel()

        def calls(s):
            def fn():
                if self.rank == root:
                    for r in range(self.size):
                        if r != root:
                            self._send(inp, n, r * n, r, s)
                else:
                    self._recv(c, n, 0, root, s)

            self._grouped(fn)

        def finish():
            if self.rank == root:
                c.reshape(-1).copy_(inp[root * n : (root + 1) * n])
            if c is not out:
                out.copy_(c)
            if after is not None:
                after()

        return self._launch("scatter", (out, c, inp), calls, finish, async_op)

    def reduce_scatter_flat(self, out, inp, op, async_op, what):
        c = _contig(out)
        dt, code = _nccl_type(c, what), self._op(c, op, what)
        return self._launch(
            what,
            (out, c, inp),
            lambda s: self._check(
                self.lib.ncclReduceScatter(
                    self.ffi.cast("void*", self._p(inp)),
                    self.ffi.cast("void*", self._p(c)),
                    c.numel(),
                    dt,
                    code,
                    self.comm,
                    s,
                ),
                "ncclReduceScatter",
            ),
            (lambda: out.copy_(c)) if c is not out else None,
            async_op,
        )

    def alltoallv_flat(self, out, out_counts, inp, in_counts, async_op, what, after=None):
        c, ci = _contig(out), _contig(inp)

        def displs(counts):
            d, s = [], 0
            for k in counts:
                d.append(s)
                s += k
            return d

        od, idd = displs(out_counts), displs(in_counts)

        def calls(s):
            def fn():
                for r in range(self.size):
                    if r == self.rank:
                        continue
                    if in_counts[r]:
                        self._send(ci, in_counts[r], idd[r], r, s)
                    if out_counts[r]:
                        self._recv(c, out_counts[r], od[r], r, s)

            self._grouped(fn)

        def finish():
            me = self.rank
            self._local_copy(c.reshape(-1), od[me], ci, idd[me], in_counts[me])
            if c is not out:
                out.copy_(c)
            if after is not None:
                after()

        return self._launch(what, (out, c, inp, ci), calls, finish, async_op)

    def barrier(self, async_op):
        t = ec.zeros(1, device=ec.device("cuda", self.device))
        return self.allreduce(t, ReduceOp.SUM, async_op)

    def isend(self, t, dst, tag):
        c = _contig(t)
        return self._launch(
            "send", (t, c), lambda s: self._send(c, c.numel(), 0, dst, s), None, True
        )

    def irecv(self, t, src, tag):
        if src is None:
            raise RuntimeError("recv: the NCCL backend needs src (it cannot receive from any rank)")
        c = _contig(t)
        return self._launch(
            "recv",
            (t, c),
            lambda s: self._recv(c, c.numel(), 0, src, s),
            (lambda: t.copy_(c)) if c is not t else None,
            True,
        )

    def shutdown(self):
        if self.comm is not None:
            self.stream.synchronize()
            self.lib.ncclCommDestroy(self.comm)
            self.comm = None
