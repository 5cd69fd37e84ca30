"""The MPI backend: collectives on CPU tensors through mpi4py.

Note [MPI backend]
Every collective is one MPI call on the tensor's own memory: a contiguous CPU
tensor is handed to MPI as a buffer at its data pointer (zero copy); a
non-contiguous one is packed into a contiguous copy once and written back after.
MPI does all the communication and all the reductions -- ember only chooses the
MPI call, the datatype and the op.

Three duplicates of the group's communicator keep the three kinds of traffic
apart, each in the same order on every rank:
- ``comm``: synchronous collectives (``async_op=False``), issued from the
  calling thread as nonblocking MPI calls and polled to completion, so that a
  peer that died or hung turns into a DistBackendError after the group's
  timeout instead of an endless wait;
- ``acomm``: asynchronous collectives (``async_op=True``, DDP's buckets), run
  in FIFO order by one worker thread per group as blocking MPI calls.  mpi4py
  releases the GIL inside MPI, so they progress while Python computes (the
  overlap of communication with backward), which MPI's nonblocking calls would
  not do without someone polling them.  ``Work.wait(timeout)`` bounds the wait;
- ``p2p``: send/recv/isend/irecv, nonblocking calls from the calling thread.
MPI is initialised with MPI_THREAD_MULTIPLE (mpi4py's default) for this.

Note [MPI fast path]
A synchronous all_reduce of a contiguous tensor (the common case: small
all-reduces in training loops, metrics) skips mpi4py: one C function
(csrc/mpi_fast.c, through _lib.py) calls MPI_Iallreduce and polls MPI_Test
without the GIL until it completes -- or for 0.1 s, after which Python polls on
in such slices up to the group's timeout, so that Ctrl-C is seen while a peer is
late.  What mpi4py costs around the MPI call (buffer objects, argument parsing,
a Python loop of Test calls) is about as much as a 4 KB all-reduce itself on one
machine.  Building this needs no MPI
header: the functions are looked up at run time in the loaded objects, the one
found must report the same MPI_Get_library_version as mpi4py's library, and
MPI's handles (MPICH's ints, Open MPI's and the MPI ABI's pointers) come from
mpi4py (``MPI._handleof``) and are cast in C to the width ``MPI._sizeof``
reports.  Where any of this fails (no C compiler at build time, an MPI whose
handle types differ in width) every call goes through mpi4py as before.

After a timeout the group is broken: later calls raise at once, and at exit the
process leaves with ``os._exit`` rather than hang in MPI_Finalize on
communication that will never complete.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import sys
import threading
import time

import ember_autograd
import ember_core as ec
from ember_distributed import _lib
from ember_distributed._types import DistBackendError, ReduceOp
from ember_distributed._work import CompletedWork, ThreadWork

_MPI = None
_broken_groups: list[ProcessGroupMPI] = []  # groups whose collective timed out


def mpi():
    """mpi4py's MPI module (initialising MPI on first use), or a clear error."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py

            mpi4py.rc.thread_level = "multiple"
            from mpi4py import MPI
        except (ImportError, RuntimeError, OSError) as e:  # no mpi4py, or no libmpi
            raise RuntimeError(
                "ember.distributed: the MPI backend needs mpi4py and an MPI library: "
                "pip install 'ember-distributed[mpi]' (mpi4py and the mpich wheel), or mpi4py "
                f"built against a system MPI ({e})"
            ) from None
        _MPI = MPI
        atexit.register(_exit_if_broken)
    return _MPI


def is_available():
    try:
        import mpi4py  # noqa: F401 - only whether it is installed; MPI is not started
    except ImportError:
        return False
    return True


def launched_by_mpi():
    """Whether an MPI launcher (mpiexec/mpirun/srun) started this process, read from
    the environment variables the common process managers set."""
    return any(
        k in os.environ
        for k in ("PMI_RANK", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID")
    )


def _exit_if_broken():
    """atexit: a group whose collective timed out has MPI calls that will never
    finish; MPI_Finalize would wait for them forever, so leave now."""
    if _broken_groups:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


# ------------------------------------------------------------------ datatypes


def _mpi_types(MPI):
    t = {
        ec.bool_: MPI.C_BOOL,
        ec.uint8: MPI.UINT8_T,
        ec.int8: MPI.INT8_T,
        ec.int16: MPI.INT16_T,
        ec.int32: MPI.INT32_T,
        ec.int64: MPI.INT64_T,
        ec.float32: MPI.FLOAT,
        ec.float64: MPI.DOUBLE,
    }
    # Half types: MPI's own where the library has them (MPICH does for float16);
    # otherwise they move as 16-bit words and reduce in float32 (see _reduce_type).
    for dt, name in ((ec.float16, "FLOAT16_T"), (ec.bfloat16, "BFLOAT16_T")):
        mt = getattr(MPI, name, MPI.DATATYPE_NULL)
        t[dt] = None if mt == MPI.DATATYPE_NULL else mt
    return t


_OP_NAMES = {
    ReduceOp.SUM: "SUM",
    ReduceOp.AVG: "SUM",
    ReduceOp.PRODUCT: "PROD",
    ReduceOp.MIN: "MIN",
    ReduceOp.MAX: "MAX",
    ReduceOp.BAND: "BAND",
    ReduceOp.BOR: "BOR",
    ReduceOp.BXOR: "BXOR",
}
# bool tensors reduce with the logical ops (PyTorch: SUM/MAX are "any", PRODUCT/MIN "all")
_BOOL_OPS = {
    ReduceOp.SUM: "LOR",
    ReduceOp.MAX: "LOR",
    ReduceOp.BOR: "LOR",
    ReduceOp.PRODUCT: "LAND",
    ReduceOp.MIN: "LAND",
    ReduceOp.BAND: "LAND",
    ReduceOp.BXOR: "LXOR",
}


def _torch_dtype_name(dt):
    return {
        "float32": "Float",
        "float64": "Double",
        "float16": "Half",
        "bfloat16": "BFloat16",
        "int64": "Long",
        "int32": "Int",
        "int16": "Short",
        "int8": "Char",
        "uint8": "Byte",
        "bool": "Bool",
    }[dt.name]


def check_op(op, dtype, what):
    """PyTorch's errors for a reduce op the dtype cannot take."""
    if op is ReduceOp.SUM or op is ReduceOp.MAX or op is ReduceOp.MIN:
        return  # every dtype takes them (identity tests: this runs every collective)
    if op not in _OP_NAMES:
        if op is ReduceOp.PREMUL_SUM:
            raise ValueError(f"{what}: ReduceOp.PREMUL_SUM is only available with NCCL")
        raise TypeError(f"{what}: op must be a ember.distributed.ReduceOp, got {op!r}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.is_floating_point:
        raise RuntimeError(
            f"Cannot use {op} with non-integral dtype".replace("RedOpType", "ReduceOp")
        )
    if op is ReduceOp.AVG and not dtype.is_floating_point:
        raise RuntimeError(
            f"{what}: ReduceOp.AVG on a {dtype} tensor: result type Float can't be cast to the "
            f"desired output type {_torch_dtype_name(dtype)}"
        )


# ------------------------------------------------------------------ buffers


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


def _write_back(dst, src):
    if dst is not src:
        with ember_autograd.no_grad():
            dst.copy_(src)


class _Ref:
    """Keeps tensors alive while MPI reads or writes their memory."""

    __slots__ = ("tensors",)


class ProcessGroupMPI:
    """One MPI communicator (and its duplicates, Note [MPI backend]) for a group."""

    name = "mpi"

    def __init__(self, comm, timeout, describe):
        MPI = mpi()
        self.MPI = MPI
        self.comm = comm
        self.acomm = comm.Dup()
        self.p2p = comm.Dup()
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.describe = describe  # "rank R of group G (size N)" for messages
        self.types = _mpi_types(MPI)
        self._queue = None
        self._worker = None
        self.broken = None
        self.multiple = MPI.Query_thread() >= MPI.THREAD_MULTIPLE
        # Note [MPI fast path]: handles for the C all-reduce, or None
        self._c_types = None
        if _lib.bind(MPI):
            h = _lib.handle
            self._c_comm = h(MPI, comm)
            # the request of the running all-reduce: one slot, as MPI runs one
            # collective at a time on a communicator (calls from several threads at
            # once on one group are an error in MPI and PyTorch alike)
            self._c_req = _lib.new_request()
            self._c_in_place = _lib.in_place(MPI)
            # dtype -> (datatype handle, [op handle by ReduceOp value]): lists indexed by
            # the op's value, as hashing an Enum member runs Python code every call
            n_ops = max(op.value for op in ReduceOp.RedOpType) + 1
            ops = [None] * n_ops
            bool_ops = [None] * n_ops
            for op, name in _OP_NAMES.items():
                ops[op.value] = h(MPI, getattr(MPI, name))
            for op, name in _BOOL_OPS.items():
                bool_ops[op.value] = h(MPI, getattr(MPI, name))
            self._c_types = {
                dt: (h(MPI, mt), bool_ops if dt is ec.bool_ else ops)
                for dt, mt in self.types.items()
                if mt is not None
            }

    # -------------------------------------------------------------- helpers

    def _check(self):
        if self.broken is not None:
            raise DistBackendError(
                f"ember.distributed: the process group is unusable since an earlier failure "
                f"({self.broken})"
            )

    def dtype_check(self, t, what):
        if t.device.type != "cpu":
            raise RuntimeError(
                f"{what}: the MPI backend takes CPU tensors, got a tensor on {t.device}; "
                "use backend='nccl' (or backend=None, which picks NCCL for CUDA) for CUDA tensors"
            )

    def spec(self, t, count=None):
        """[buffer, count, datatype] of a contiguous CPU tensor, zero copy."""
        dtype = t.dtype
        mt = self.types[dtype]
        if mt is None:  # a half type MPI lacks: moved as 16-bit words
            mt = self.MPI.UINT16_T
        numel = t.numel()
        n = numel if count is None else count
        return [self.MPI.buffer.fromaddress(t.data_ptr(), numel * dtype.itemsize), n, mt]

    def blocks(self, t):
        """[buffer, datatype] of a buffer of ``size`` equal blocks (MPI's count is per
        block: mpi4py divides the buffer by the group size)."""
        spec = self.spec(t)
        return [spec[0], spec[2]]

    def reduce_spec(self, t, op):
        """(staged tensor, spec, mpi op) for a reduction of t: half types without an
        MPI datatype are reduced in float32 (a copy), written back after."""
        MPI = self.MPI
        if t.dtype is ec.bool_:
            return t, self.spec(t), getattr(MPI, _BOOL_OPS[op])
        mop = getattr(MPI, _OP_NAMES[op])
        if self.types[t.dtype] is None:
            staged = t.to(ec.float32)
            return staged, self.spec(staged), mop
        return t, self.spec(t), mop

    def _fail(self, what, detail):
        msg = (
            f"ember.distributed (MPI): {what} on {self.describe} {detail}. A peer process "
            "probably died, hung, or called a different collective; the process group is no "
            "longer usable"
        )
        self.broken = f"{what} {detail}"
        _broken_groups.append(self)
        raise DistBackendError(msg)

    def poll(self, req, what, timeout=None):
        """Drive a nonblocking MPI request to completion within the timeout."""
        try:
            if req.Test():
                return
            limit = self.timeout if timeout is None else timeout
            deadline = time.monotonic() + limit
            n = 0
            while not req.Test():
                n += 1
                if not n & 255:
                    if time.monotonic() > deadline:
                        self._fail(what, f"did not finish within {limit:g} s")
                    if not n & 4095:
                        time.sleep(0)
        except self.MPI.Exception as e:
            self._fail(what, f"failed in MPI: {e.Get_error_string()}")

    # -------------------------------------------------------------- running

    def run(self, what, calls, finish, async_op, refs):
        """Run MPI calls [(name, args)] then finish(): now (polled, on ``comm``)
        or, with async_op, on the group's worker thread (blocking, on ``acomm``).
        Returns a Work."""
        self._check()
        if not async_op or not self.multiple:
            for name, args in calls:
                if name == "Barrier":
                    req = self.comm.Ibarrier()
                else:
                    req = getattr(self.comm, "I" + name.lower())(*args)
                self.poll(req, what)
            if finish is not None:
                finish()
            return CompletedWork(what) if async_op else None
        work = ThreadWork(self, what, refs)

        def task():
            for name, args in calls:
                getattr(self.acomm, name)(*args)
            if finish is not None:
                with ember_autograd.no_grad():
                    finish()

        self._submit(work, task)
        return work

    def _submit(self, work, task):
        if self._worker is None:
            self._queue = queue.SimpleQueue()
            self._worker = threading.Thread(
                target=self._work_loop, name="ember-mpi-worker", daemon=True
            )
            self._worker.start()
        self._queue.put((work, task))

    def _work_loop(self):
        q = self._queue
        while True:
            item = q.get()
            if item is None:
                return
            work, task = item
            try:
                task()
            except self.MPI.Exception as e:
                work._finish(
                    DistBackendError(
                        f"ember.distributed (MPI): {work.what} on {self.describe} failed in "
                        f"MPI: {e.Get_error_string()}"
                    )
                )
                continue
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                work._finish(e)
                continue
            work._finish(None)

    def shutdown(self):
        if self._worker is not None and self.broken is None:
            self._queue.put(None)
            self._worker.join(timeout=5)
        self._worker = None
        if self.broken is None:
            for c in (self.acomm, self.p2p, self.comm):
                if c != self.MPI.COMM_WORLD and c != self.MPI.COMM_NULL:
                    with contextlib.suppress(self.MPI.Exception):
                        c.Free()

    # -------------------------------------------------------------- collectives
    # Every method takes tensors already checked by distributed_c10d and group ranks.

    def allreduce(self, t, op, async_op):
        if self.size == 1:  # every op of one process leaves t as it is (AVG: t / 1)
            self._check()
            return CompletedWork("all_reduce") if async_op else None
        if not async_op and self._c_types is not None:
            c = self._c_types.get(t.dtype)
            if c is not None and t.is_contiguous():
                n = t.numel()
                if n <= _lib.INT_MAX:
                    return self._allreduce_now(t, n, c[0], c[1][op._value_], op)
        c = _contig(t)
        staged, spec, mop = self.reduce_spec(c, op)
        n = self.size

        def finish():
            with ember_autograd.no_grad():
                if op is ReduceOp.AVG:
                    staged.div_(n)
                if staged is not c:
                    c.copy_(staged)
                _write_back(t, c)

        # the common case (a contiguous tensor of an MPI type, not AVG) needs no finish:
        # small all-reduces are dominated by what runs around the MPI call
        simple = op is not ReduceOp.AVG and staged is c and c is t
        return self.run(
            "all_reduce",
            [("Allreduce", (self.MPI.IN_PLACE, spec, mop))],
            None if simple else finish,
            async_op,
            (t, c),
        )

    def _allreduce_now(self, t, n, ctype, cop, op):
        """Note [MPI fast path]: a synchronous all-reduce of a contiguous tensor."""
        if self.broken is not None:
            self._check()
        req = self._c_req
        rc = _lib.allreduce(
            t.data_ptr(), n, ctype, cop, self._c_comm, self._c_in_place, _lib.SLICE, req
        )
        if rc != _lib.OK:
            self._c_finish(rc, req, t)
        if op is ReduceOp.AVG:
            with ember_autograd.no_grad():
                t.div_(self.size)
        return None

    def _c_finish(self, rc, req, t):
        """The rest of a fast-path all-reduce that did not finish in the first slice:
        back in Python between slices (Ctrl-C is seen), up to the group's timeout."""
        deadline = time.monotonic() + self.timeout - _lib.SLICE
        try:
            while rc == _lib.PENDING:
                if time.monotonic() > deadline:
                    self._fail("all_reduce", f"did not finish within {self.timeout:g} s")
                rc = _lib.wait(req, _lib.SLICE)
        except BaseException:  # a timeout, or Ctrl-C while a peer is late
            if self.broken is None:
                self.broken = "all_reduce interrupted"
                _broken_groups.append(self)
            self._pending_buffer = t  # MPI may still write into it: keep it alive
            raise
        if rc != _lib.OK:
            self._fail("all_reduce", f"failed in MPI: {self.MPI.Exception(rc).Get_error_string()}")

    def broadcast(self, t, root, async_op):
        if self.size == 1:  # the root is this process: nothing moves
            self._check()
            return CompletedWork("broadcast") if async_op else None
        c = _contig(t)
        return self.run(
            "broadcast",
            [("Bcast", (self.spec(c), root))],
            (lambda: _write_back(t, c)) if c is not t else None,
            async_op,
            (t, c),
        )

    def reduce(self, t, root, op, async_op):
        c = _contig(t)
        staged, spec, mop = self.reduce_spec(c, op)
        mine = self.rank == root
        send = self.MPI.IN_PLACE if mine else spec
        recv = spec if mine else None
        n = self.size

        def finish():
            if not mine:
                return
            with ember_autograd.no_grad():
                if op is ReduceOp.AVG:
                    staged.div_(n)
                if staged is not c:
                    c.copy_(staged)
                _write_back(t, c)

        return self.run("reduce", [("Reduce", (send, recv, mop, root))], finish, async_op, (t, c))

    def allgather_flat(self, out, t, async_op, what, after=None):
        """all_gather into the contiguous ``out`` (size * t.numel() elements)."""
        c = _contig(t)
        return self.run(
            what,
            [("Allgather", (self.spec(c), self.blocks(out)))],
            after,
            async_op,
            (t, c, out),
        )

    def gather_flat(self, out, t, root, async_op, after=None):
        c = _contig(t)
        recv = self.blocks(out) if self.rank == root else None
        return self.run(
            "gather", [("Gather", (self.spec(c), recv, root))], after, async_op, (t, c, out)
        )

    def scatter_flat(self, out, inp, root, async_op, after=None):
        c = _contig(out)
        send = self.blocks(inp) if self.rank == root else None

        def finish():
            _write_back(out, c)
            if after is not None:
                after()

        return self.run(
            "scatter", [("Scatter", (send, self.spec(c), root))], finish, async_op, (out, c, inp)
        )

    def reduce_scatter_flat(self, out, inp, op, async_op, what):
        """``inp`` holds size blocks of out.numel() elements, contiguous."""
        c = _contig(out)
        staged_in, in_spec, mop = self.reduce_spec(inp, op)
        staged_out = c if staged_in is inp else c.to(ec.float32)
        n = self.size

        def finish():
            with ember_autograd.no_grad():
                if op is ReduceOp.AVG:
                    staged_out.div_(n)
                if staged_out is not c:
                    c.copy_(staged_out)
                _write_back(out, c)

        return self.run(
            what,
            [("Reduce_scatter_block", ([in_spec[0], in_spec[2]], self.spec(staged_out), mop))],
            finish,
            async_op,
            (out, c, inp, staged_in, staged_out),
        )

    def alltoallv_flat(self, out, out_counts, inp, in_counts, async_op, what, after=None):
        """all_to_all on flat contiguous buffers, counts in elements per peer."""
        c = _contig(out)
        ci = _contig(inp)

        def displs(counts):
            d, s = [], 0
            for k in counts:
                d.append(s)
                s += k
            return d

        send = self.spec(ci)
        recv = self.spec(c)
        send = [send[0], (list(in_counts), displs(in_counts)), send[2]]
        recv = [recv[0], (list(out_counts), displs(out_counts)), recv[2]]

        def finish():
            _write_back(out, c)
            if after is not None:
                after()

        return self.run(what, [("Alltoallv", (send, recv))], finish, async_op, (out, c, inp, ci))

    def barrier(self, async_op):
        return self.run("barrier", [("Barrier", ())], None, async_op, ())

    # -------------------------------------------------------------- point to point

    def isend(self, t, dst, tag):
        from ember_distributed._work import RequestWork

        self._check()
        c = _contig(t)
        req = self.p2p.Isend(self.spec(c), dst, tag)
        return RequestWork(self, "send", req, (t, c))

    def irecv(self, t, src, tag):
        from ember_distributed._work import RequestWork

        self._check()
        c = _contig(t)
        source = self.MPI.ANY_SOURCE if src is None else src
        status = self.MPI.Status()
        req = self.p2p.Irecv(self.spec(c), source, self.MPI.ANY_TAG if tag is None else tag)
        return RequestWork(
            self, "recv", req, (t, c), status=status, after=lambda: _write_back(t, c)
        )
