"""DistributedDataParallel (``torch.nn.parallel.DistributedDataParallel``).

Note [DDP reducer]
The design of Li et al., "PyTorch Distributed" (VLDB 2020):
- At construction the model is checked to be the same on every rank (number,
  shapes and dtypes of the parameters), and rank 0's parameters and buffers are
  broadcast to all (coalesced into one flat tensor per dtype and device).
- Parameters that need gradients are put into buckets in reverse registration
  order (roughly the order backward produces their gradients): the first
  bucket holds up to 1 MiB, the others up to ``bucket_cap_mb`` (25 MiB).  Each
  bucket owns one flat gradient buffer.
- A post-accumulate-grad hook on each parameter copies its new .grad into its
  bucket's buffer; when a bucket's last gradient arrived, the bucket (and any
  full buckets after it, always in bucket order so that every rank launches the
  same all-reduces in the same order) is divided by the world size and
  all-reduced asynchronously (``async_op=True``: the MPI worker thread, or the
  NCCL stream), while backward goes on computing the earlier layers' gradients.
- A callback queued on the autograd engine runs when backward ends: it waits
  for every bucket and writes the averaged gradients back into .grad (or makes
  .grad a view of the bucket with ``gradient_as_bucket_view=True``).
- ``find_unused_parameters=True`` walks the autograd graph from forward's
  outputs and marks the parameters it cannot reach ready at once (their bucket
  slots hold zeros); a parameter no rank used keeps its .grad untouched (a
  small all-reduce of the used-parameter map).  ``static_graph=True`` walks the
  graph in the first iteration only and reuses what it found.
- ``no_sync()`` skips the hooks: gradients accumulate locally, and the next
  synchronised backward all-reduces the accumulated gradients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import ember_autograd
import ember_core as ec
from ember_autograd.variable import Variable
from ember_distributed import distributed_c10d as c10d
from ember_distributed._types import ReduceOp
from ember_nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024


class _Bucket:
    __slots__ = ("params", "indices", "offsets", "flat", "views", "ready", "work", "device")

    def __init__(self, params: list[ec.Tensor], indices: list[int]) -> None:
        self.params = params
        self.indices = indices
        p0 = params[0]
        total = sum(p.numel() for p in params)
        self.device = p0.device
        self.flat = ec.zeros(total, dtype=p0.dtype, device=p0.device)
        self.offsets: list[int] = []
        self.views: list[ec.Tensor] = []
        pos = 0
        for p in params:
            self.offsets.append(pos)
            self.views.append(self.flat[pos : pos + p.numel()].view(p.shape))
            pos += p.numel()
        self.ready: set[int] = set()  # slots whose gradient arrived
        self.work: Any = None  # the bucket's all-reduce Work while it runs


def _tensors_in(obj: object, out: list[ec.Tensor]) -> list[ec.Tensor]:
    if isinstance(obj, ec.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            _tensors_in(getattr(obj, name), out)
    return out


def _reachable_leaves(outputs: object) -> set[int]:
    """ids of the leaf tensors whose AccumulateGrad nodes backward from
    ``outputs`` can reach (the parameters forward used)."""
    seen: set[int] = set()
    leaves: set[int] = set()
    stack = [t.grad_fn for t in _tensors_in(outputs, []) if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append(child)
    return leaves


def _move(obj: Any, device: ec.device) -> Any:
    if isinstance(obj, ec.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple):
        return tuple(_move(o, device) for o in obj)
    if isinstance(obj, list):
        return [_move(o, device) for o in obj]
    if isinstance(obj, dict):
        return {k: _move(v, device) for k, v in obj.items()}
    return obj


def _post_accumulate_grad_hook(p: Any, hook: Callable[[ec.Tensor], None]) -> Any:
    # a Tensor method that ember_autograd adds (ember_core's stubs do not have it)
    return p.register_post_accumulate_grad_hook(hook)


class DistributedDataParallel(Module):
    """Data parallelism across processes: each process runs the module on its share
    of the batch, and backward averages the gradients over the process group
    (Note [DDP reducer]), so every replica takes the same optimizer step."""

    def __init__(
        self,
        module: Module,
        device_ids: list[int | str | ec.device] | None = None,
        output_device: int | str | ec.device | None = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group: c10d.ProcessGroup | None = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
    ) -> None:
        super().__init__()
        pg = c10d._group(process_group)
        if not isinstance(pg, c10d.ProcessGroup):  # NON_GROUP_MEMBER
            raise ValueError("DistributedDataParallel: this process is not in process_group")
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.world_size = pg.size()
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        params: list[ec.Tensor] = []
        names: list[str] = []
        seen: set[int] = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
                names.append(name)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        devices = {p.device for p in params}
        if device_ids:
            if len(device_ids) != 1:
                raise ValueError(
                    "device_ids can only be None or contain a single element (one device per "
                    "process)."
                )
            self.device_ids: list[Any] | None = [
                ec.device(device_ids[0])
                if not isinstance(device_ids[0], int)
                else ec.device("cuda", device_ids[0])
            ]
        else:
            self.device_ids = None
        self.output_device = output_device
        self.device = next(iter(devices)) if len(devices) == 1 else None
        self._params = params
        self._names = names
        self._verify_same_model()
        if init_sync:
            self._sync_module_states()
        self._build_buckets()
        self._hooks = [
            _post_accumulate_grad_hook(p, self._make_hook(i)) for i, p in enumerate(params)
        ]
        self._iteration = 0
        self._expect_backward = False
        self._queued = False
        self._unfinished: str | None = None  # the error the next forward raises
        self._static_unused: list[int] | None = None
        self._locally_used: ec.Tensor | None = None
        self._next_bucket = 0
        self._launch_log: list[
            tuple[int, int]
        ] = []  # (iteration, bucket index): the order buckets were launched

    # -------------------------------------------------------------- construction

    def _verify_same_model(self) -> None:
        mine = [(tuple(p.shape), p.dtype.name) for p in self._params]
        every: list[Any] = [None] * self.world_size
        c10d.all_gather_object(every, mine, group=self.process_group)
        me = self.process_group.rank()
        for r, other in enumerate(every):
            if len(other) != len(mine):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {me} has {len(mine)} "
                    f"params, while rank {r} has inconsistent {len(other)} params."
                )
            for i, (a, b) in enumerate(zip(mine, other)):
                if a != b:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but Rank {me} has parameter "
                        f"{self._names[i]!r} of shape {a[0]} and dtype {a[1]}, while rank {r} has "
                        f"shape {b[0]} and dtype {b[1]}."
                    )

    def _module_states(self) -> list[ec.Tensor]:
        states = [p for p in self.module.parameters()]
        states += [b for b in self.module.buffers() if b is not None]
        out: list[ec.Tensor] = []
        seen: set[int] = set()
        for t in states:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
        return out

    def _broadcast_coalesced(self, tensors: list[ec.Tensor]) -> None:
        """Rank 0's values into ``tensors``: one broadcast per dtype and device (up to
        250 MiB each)."""
        src = c10d.get_global_rank(self.process_group, 0)
        groups: dict[tuple[Any, Any], list[ec.Tensor]] = {}
        for t in tensors:
            groups.setdefault((t.dtype, t.device), []).append(t)
        with ember_autograd.no_grad():
            for chunk_list in groups.values():
                chunk: list[ec.Tensor] = []
                size = 0
                for u in [*chunk_list, None]:
                    full = u is None or size + u.nbytes > _BROADCAST_BUCKET_BYTES
                    if chunk and full:
                        flat = ec.cat([c.reshape(-1) for c in chunk])
                        c10d.broadcast(flat, src=src, group=self.process_group)
                        c10d._unflat(flat, chunk)
                        chunk, size = [], 0
                    if u is not None:
                        chunk.append(u)
                        size += u.nbytes

    def _sync_module_states(self) -> None:
        self._broadcast_coalesced(self._module_states())

    def _build_buckets(self) -> None:
        self._buckets: list[_Bucket] = []
        self._where: dict[int, tuple[int, int]] = {}  # param index -> (bucket index, slot)
        order = list(range(len(self._params)))[::-1]
        open_buckets: dict[tuple[Any, Any], tuple[list[int], int]] = {}  # -> (indices, bytes)
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        pending: list[list[int]] = []

        def close(key: tuple[Any, Any]) -> None:
            idx, _ = open_buckets.pop(key)
            pending.append(idx)

        for i in order:
            p = self._params[i]
            key = (p.dtype, p.device)
            idx, size = open_buckets.get(key, ([], 0))
            idx.append(i)
            size += p.nbytes
            open_buckets[key] = (idx, size)
            if size >= cap:
                close(key)
                cap = self.bucket_bytes_cap
        for key in list(open_buckets):
            close(key)
        for indices in pending:
            b = _Bucket([self._params[i] for i in indices], indices)
            for slot, i in enumerate(indices):
                self._where[i] = (len(self._buckets), slot)
            self._buckets.append(b)

    # -------------------------------------------------------------- forward

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """The module's forward, preparing this iteration's gradient reduction."""
        if self._unfinished is not None:
            msg, self._unfinished = self._unfinished, None
            raise RuntimeError(msg)
        if self.device_ids and self.device_ids[0].type == "cuda":
            inputs = _move(inputs, self.device_ids[0])
            kwargs = _move(kwargs, self.device_ids[0])
        grad = ember_autograd.is_grad_enabled()
        if grad and self.require_forward_param_sync and self.broadcast_buffers:
            buffers = [b for b in self.module.buffers() if b is not None]
            if buffers and self.world_size > 1:
                self._broadcast_coalesced(buffers)
        out = self.module(*inputs, **kwargs)
        if grad and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        else:
            self._expect_backward = False
        return out

    def _prepare_for_backward(self, out: object) -> None:
        for b in self._buckets:
            if b.work is not None:  # a backward that never ran (e.g. an exception)
                b.work.wait()
            b.ready = set()
            b.work = None
        self._next_bucket = 0
        self._queued = False
        self._expect_backward = True
        unused: list[int] = []
        if self.find_unused_parameters or (self.static_graph and self._static_unused is None):
            used = _reachable_leaves(out)
            unused = [i for i, p in enumerate(self._params) if id(p) not in used]
            if self.static_graph:
                self._static_unused = unused
        elif self.static_graph:
            unused = self._static_unused or []
        self._locally_used = None
        if self.find_unused_parameters or (self.static_graph and unused):
            locally_used = ec.ones(len(self._params), dtype=ec.int32)
            for i in unused:
                locally_used[i] = 0
            self._locally_used = locally_used
        with ember_autograd.no_grad():
            for i in unused:
                bi, slot = self._where[i]
                b = self._buckets[bi]
                b.views[slot].zero_()
                b.ready.add(slot)
        if unused:
            self._launch_ready()

    # -------------------------------------------------------------- backward

    def _make_hook(self, index: int) -> Callable[[ec.Tensor], None]:
        def hook(param: ec.Tensor) -> None:
            if not (self.require_backward_grad_sync and self._expect_backward):
                return
            if not self._queued:
                Variable._execution_engine.queue_callback(self._finalize)
                self._queued = True
            bi, slot = self._where[index]
            b = self._buckets[bi]
            if slot in b.ready:
                if self._locally_used is not None and not int(self._locally_used[index]):
                    raise RuntimeError(
                        f"DistributedDataParallel: parameter {self._names[index]!r} was marked "
                        "unused (find_unused_parameters / static_graph found no path to it from "
                        "forward's outputs) but received a gradient; with static_graph=True the "
                        "set of used parameters must not change between iterations"
                    )
                raise RuntimeError(
                    f"Expected to mark a variable ready only once. Parameter "
                    f"{self._names[index]!r} received two gradients in one backward"
                )
            view = b.views[slot]
            g = param.grad
            if g is not None and g.data_ptr() != view.data_ptr():
                with ember_autograd.no_grad():
                    view.copy_(g)
            b.ready.add(slot)
            if len(b.ready) == len(b.params):
                self._launch_ready()

        return hook

    def _launch_ready(self) -> None:
        while self._next_bucket < len(self._buckets):
            b = self._buckets[self._next_bucket]
            if len(b.ready) != len(b.params):
                return
            with ember_autograd.no_grad():
                b.flat.div_(self.world_size)
            b.work = c10d.all_reduce(b.flat, group=self.process_group, async_op=True)
            self._launch_log.append((self._iteration, self._next_bucket))
            self._next_bucket += 1

    def _finalize(self) -> None:
        self._expect_backward = False
        self._iteration += 1
        missing = [
            self._names[i]
            for b in self._buckets[self._next_bucket :]
            for slot, i in enumerate(b.indices)
            if slot not in b.ready
        ]
        for b in self._buckets:
            if b.work is not None:
                b.work.wait()
        if missing:
            for b in self._buckets:
                b.work = None
            self._unfinished = (
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss. Parameters which did not "
                f"receive grad on rank {self.process_group.rank()}: {', '.join(missing)}"
            )
            return
        globally_used = None
        if self._locally_used is not None:
            used = self._locally_used.clone()
            c10d.all_reduce(used, op=ReduceOp.MAX, group=self.process_group)
            globally_used = used.tolist()
        with ember_autograd.no_grad():
            for b in self._buckets:
                b.work = None
                for slot, i in enumerate(b.indices):
                    if globally_used is not None and not globally_used[i]:
                        continue
                    p, view = b.params[slot], b.views[slot]
                    if self.gradient_as_bucket_view:
                        p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)

    # -------------------------------------------------------------- API

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communication; the
        first synchronised backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def _get_ddp_logging_data(self) -> dict[str, Any]:
        return {
            "world_size": self.world_size,
            "bucket_cap_bytes": self.bucket_bytes_cap,
            "num_buckets": len(self._buckets),
            "bucket_sizes": [b.flat.numel() * b.flat.element_size() for b in self._buckets],
            "find_unused_parameters": self.find_unused_parameters,
            "static_graph": self.static_graph,
            "gradient_as_bucket_view": self.gradient_as_bucket_view,
            "backend_name": self.process_group.name(),
            "iteration": self._iteration,
        }

    def __getstate__(self) -> dict[str, Any]:
        raise RuntimeError("DistributedDataParallel cannot be pickled; save .module instead")
