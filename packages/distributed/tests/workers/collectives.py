"""Every collective against NumPy, run by test_collectives.py under mpiexec -n 2 and -n 4:
each reduce op and dtype, in place on contiguous and non-contiguous tensors, async handles."""

import numpy as np

import ember_core as ec
import ember_distributed as dist
from ember_distributed import ReduceOp as R

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
DTYPES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
]


def data(rank, name, shape=(3, 4)):
    rng = np.random.default_rng(100 + rank)
    if name == "bool":
        return rng.random(shape) > 0.5
    if name in ("float16", "bfloat16", "float32", "float64"):
        # small integers and halves: exact in every float type, so sums compare exactly
        return (rng.integers(-4, 5, shape) / 2).astype(np.float64)
    return rng.integers(1, 4, shape).astype(name)


def tensor(a, name):
    if name == "bfloat16":
        return ec.tensor(a.astype(np.float32)).to(ec.bfloat16)
    if name in ("float16", "float32", "float64"):
        return ec.tensor(a.astype(name))
    return ec.tensor(a)


def value(t):
    if t.dtype in (ec.bfloat16, ec.float16):
        t = t.to(ec.float64)
    return t.numpy()


def reference(op, arrays, name):
    a = np.stack(arrays)
    if name == "bool":
        return {
            R.SUM: a.any(0),
            R.MAX: a.any(0),
            R.BOR: a.any(0),
            R.PRODUCT: a.all(0),
            R.MIN: a.all(0),
            R.BAND: a.all(0),
            R.BXOR: np.logical_xor.reduce(a, 0),
        }[op]
    out = {
        R.SUM: lambda: a.sum(0),
        R.PRODUCT: lambda: a.prod(0),
        R.MIN: lambda: a.min(0),
        R.MAX: lambda: a.max(0),
        R.AVG: lambda: a.mean(0),
        R.BAND: lambda: np.bitwise_and.reduce(a, 0),
        R.BOR: lambda: np.bitwise_or.reduce(a, 0),
        R.BXOR: lambda: np.bitwise_xor.reduce(a, 0),
    }[op]()
    return out.astype(a.dtype) if op is not R.AVG else out


def ops_for(name):
    if name == "bool":
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
    if name in ("float16", "bfloat16", "float32", "float64"):
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.AVG]
    return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]


def close(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        raise AssertionError(f"rank {r}: {what}: got {got.tolist()}, want {want.tolist()}")


checked = 0
# ---- all_reduce: every op and dtype; contiguous, non-contiguous, async
for name in DTYPES:
    arrays = [data(k, name) for k in range(n)]
    for op in ops_for(name):
        want = reference(op, arrays, name)
        t = tensor(arrays[r], name)
        dist.all_reduce(t, op=op)
        close(value(t), want, f"all_reduce {op} {name}")
        big = tensor(np.ascontiguousarray(arrays[r].T), name)  # (4, 3)
        view = big.t()  # (3, 4), not contiguous
        assert not view.is_contiguous()
        dist.all_reduce(view, op=op)
        close(value(view), want, f"all_reduce {op} {name} non-contiguous")
        t = tensor(arrays[r], name)
        work = dist.all_reduce(t, op=op, async_op=True)
        assert work.wait() is True and work.is_completed() and work.is_success()
        close(value(t), want, f"all_reduce {op} {name} async")
        checked += 3

# ---- the synchronous path's edge cases (Note [MPI fast path]): a contiguous view at an
# offset into its storage, a 0-d tensor, an empty one
base = ec.arange(10.0) + r
view = base[2:7]
dist.all_reduce(view)
close(
    value(base),
    np.concatenate([np.arange(2) + r, n * np.arange(2, 7) + sum(range(n)), np.arange(7, 10) + r]),
    "all_reduce of a view at an offset",
)
s0 = ec.tensor(float(r + 1))
dist.all_reduce(s0, op=R.PRODUCT)
close(value(s0), np.prod(np.arange(1, n + 1)), "all_reduce 0-d")
e0 = ec.ones(0)
dist.all_reduce(e0)
assert e0.numel() == 0

# ---- several async all-reduces in flight at once, waited in reverse
ts = [ec.full((1000,), float(r + k)) for k in range(5)]
works = [dist.all_reduce(t, async_op=True) for t in ts]
for w in reversed(works):
    w.wait()
for k, t in enumerate(ts):
    close(value(t), np.full(1000, sum(q + k for q in range(n))), "async in flight")

# ---- broadcast from every root, reduce onto every root
for src in range(n):
    for name in ("float32", "int64", "bfloat16", "bool"):
        arrays = [data(k, name) for k in range(n)]
        t = tensor(arrays[r], name)
        dist.broadcast(t, src=src)
        close(value(t), arrays[src], f"broadcast {name} from {src}")
    t = ec.tensor(data(r, "float64")).t()
    dist.broadcast(t, src=src)
    close(value(t), data(src, "float64").T, "broadcast non-contiguous")
    arrays = [data(k, "float64") for k in range(n)]
    t = ec.tensor(arrays[r])
    dist.reduce(t, dst=src, op=R.MAX)
    close(value(t), np.max(arrays, 0) if r == src else arrays[r], f"reduce onto {src}")

# ---- reduce: every op onto the last rank (sync and async), float64, int32, bool, bfloat16
for name in ("float64", "int32", "bool", "bfloat16"):
    arrays = [data(k, name) for k in range(n)]
    for op in ops_for(name):
        for async_op in (False, True):
            t = tensor(arrays[r], name)
            w = dist.reduce(t, dst=n - 1, op=op, async_op=async_op)
            if async_op:
                w.wait()
            if r == n - 1:
                close(value(t), reference(op, arrays, name), f"reduce {op} {name}")

# ---- all_gather (list, into one tensor: concatenated and stacked), gather, scatter
arrays = [data(k, "float32") for k in range(n)]
out = [ec.zeros(3, 4) for _ in range(n)]
dist.all_gather(out, ec.tensor(arrays[r].astype(np.float32)))
for k in range(n):
    close(value(out[k]), arrays[k], "all_gather")
cat = ec.zeros(n * 3, 4)
dist.all_gather_into_tensor(cat, ec.tensor(arrays[r].astype(np.float32)))
close(value(cat), np.concatenate(arrays), "all_gather_into_tensor (cat)")
stack = ec.zeros(n, 3, 4)
w = dist.all_gather_into_tensor(stack, ec.tensor(arrays[r].astype(np.float32)), async_op=True)
w.wait()
close(value(stack), np.stack(arrays), "all_gather_into_tensor (stack, async)")
dst = 1 % n
glist = [ec.zeros(3, 4) for _ in range(n)] if r == dst else None
dist.gather(ec.tensor(arrays[r].astype(np.float32)), glist, dst=dst)
if r == dst:
    for k in range(n):
        close(value(glist[k]), arrays[k], "gather")
slist = [ec.full((2, 2), float(10 * k + 1)) for k in range(n)] if r == 0 else None
o = ec.zeros(2, 2)
dist.scatter(o, slist, src=0)
close(value(o), np.full((2, 2), 10 * r + 1), "scatter")

# ---- reduce_scatter (list), reduce_scatter_tensor (SUM, AVG, 2-d)
inputs = [ec.full((3,), float((r + 1) * (k + 1))) for k in range(n)]
o = ec.zeros(3)
dist.reduce_scatter(o, inputs)
close(value(o), np.full(3, sum((q + 1) * (r + 1) for q in range(n))), "reduce_scatter")
inp = ec.arange(float(2 * n)) + r
o = ec.zeros(2)
dist.reduce_scatter_tensor(o, inp)
close(value(o), n * np.arange(2 * n)[2 * r : 2 * r + 2] + sum(range(n)), "reduce_scatter_tensor")
o = ec.zeros(1, 2)
dist.reduce_scatter_tensor(o, (ec.arange(float(2 * n)) + r).reshape(n, 2), op=R.AVG)
close(value(o), (np.arange(2 * n)[2 * r : 2 * r + 2] + sum(range(n)) / n)[None], "rs AVG 2-d")

# ---- all_to_all_single: even and uneven splits; all_to_all lists
inp = ec.arange(float(2 * n)) + 100 * r
o = ec.zeros(2 * n)
dist.all_to_all_single(o, inp)
close(value(o), np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)]), "a2a")
in_splits = [k + 1 for k in range(n)]  # rank r sends k+1 rows to rank k
out_splits = [r + 1] * n  # and receives r+1 rows from everyone
inp = (
    ec.tensor(np.repeat(np.arange(n), in_splits).astype(np.float64) + 10 * r)[:, None]
    .expand(sum(in_splits), 2)
    .contiguous()
)
o = ec.zeros(sum(out_splits), 2, dtype=ec.float64)
dist.all_to_all_single(o, inp, out_splits, in_splits)
want = np.concatenate([np.full((r + 1, 2), r + 10.0 * k) for k in range(n)])
close(value(o), want, "a2a uneven")
outs = [ec.zeros(k + 1) for k in range(n)]
ins = [ec.full((r + 1,), float(r * 10 + k)) for k in range(n)]
dist.all_to_all(outs, ins)
for k in range(n):
    close(value(outs[k]), np.full(k + 1, k * 10 + r), "all_to_all")

# ---- point to point: a ring with isend/irecv, recv from any source, tags
right, left = (r + 1) % n, (r - 1) % n
buf = ec.zeros(5)
rw = dist.irecv(buf, src=left, tag=7)
sw = dist.isend(ec.full((5,), float(r)), dst=right, tag=7)
sw.wait()
rw.wait()
assert rw.is_completed()
close(value(buf), np.full(5, left), "isend/irecv ring")
if r == 0:
    seen = set()
    for _ in range(n - 1):
        b = ec.zeros(1, dtype=ec.int64)
        sender = dist.recv(b)
        assert sender == int(b.item()), (sender, b)
        seen.add(sender)
    assert seen == set(range(1, n)), seen
else:
    dist.send(ec.tensor([r]), dst=0)

# ---- objects
objs = [{"rank": r, "list": list(range(r))}, f"from {r}"] if r == 0 else [None, None]
dist.broadcast_object_list(objs, src=0)
assert objs == [{"rank": 0, "list": []}, "from 0"], objs
every = [None] * n
dist.all_gather_object(every, ("x" * (r * 50), r))
assert every == [("x" * (k * 50), k) for k in range(n)], every
got = [None] * n if r == n - 1 else None
dist.gather_object({"r": r}, got, dst=n - 1)
if r == n - 1:
    assert got == [{"r": k} for k in range(n)], got
out_obj = [None]
dist.scatter_object_list(out_obj, [k * k for k in range(n)] if r == 0 else None, src=0)
assert out_obj == [r * r], out_obj

# ---- groups: the even ranks, ranks mapped
evens = list(range(0, n, 2))
g = dist.new_group(evens)
if r in evens:
    assert dist.get_rank(g) == evens.index(r) and dist.get_world_size(g) == len(evens)
    t = ec.ones(2) * r
    dist.all_reduce(t, group=g)
    close(value(t), np.full(2, sum(evens)), "group all_reduce")
    t = ec.ones(1) * r
    dist.broadcast(t, src=evens[-1], group=g)  # src is a global rank
    close(value(t), [evens[-1]], "group broadcast")
    assert dist.get_process_group_ranks(g) == evens
    assert dist.get_global_rank(g, len(evens) - 1) == evens[-1]
else:
    assert g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
    assert dist.all_reduce(ec.ones(1), group=g) is None  # PyTorch: a warning, nothing done
dist.barrier()
w = dist.barrier(async_op=True)
w.wait()
dist.monitored_barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"COLLECTIVES OK rank {r} of {n}: {checked} all_reduce checks", flush=True)
