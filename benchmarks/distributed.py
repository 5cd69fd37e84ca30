"""ember.distributed benchmarks: all_reduce bus bandwidth and DDP step time.

    python benchmarks/distributed.py            # CPU: 2 processes under mpiexec
    python benchmarks/distributed.py --gpu      # one GPU: NCCL, a world of one

CPU, all in the same run (medians of repeated calls, 2 processes on this machine):
- all_reduce of float32 tensors from 4 KB to 256 MB: ember (MPI backend) vs mpi4py's own
  Allreduce on NumPy arrays vs PyTorch's gloo (when torch is installed); bus bandwidth
  = 2 (n-1)/n * bytes / time, and ember's ratio to each;
- the `make train` CNN's DDP step (forward, backward, SGD) on 2 processes (one thread
  each) vs 1 process (every core) with the same global batch, and DDP with 0.1 MiB
  buckets (all-reduces overlapping backward) vs one bucket holding every gradient (one
  all-reduce after backward): scaling efficiency and the gain from overlap.
GPU: NCCL all_reduce on one device (a smoke figure: a world of one copies nothing across
GPUs) and a DDP step with backend='nccl', world size 1, vs the module without DDP.
"""

import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
ROUNDS = 3  # DDP configurations: each runs this many times, in turn


def _reps(nbytes):
    return (
        300 if nbytes <= 64 << 10 else 50 if nbytes <= 1 << 20 else 10 if nbytes <= 16 << 20 else 3
    )


def _medians(fns, reps, sync):
    """{name: median time} of the functions, called in turn (ember, mpi4py, ember,
    ...): a change of load on the machine touches every one alike."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            sync()
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _median(fn, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def worker_allreduce():
    import numpy as np

    import ember_core as ec
    import ember_distributed as dist

    dist.init_process_group("mpi")
    MPI = dist._mpi.mpi()
    comm = MPI.COMM_WORLD
    out = {}
    for nbytes in SIZES:
        n = nbytes // 4
        t = ec.ones(n)
        a, b = np.ones(n, np.float32), np.empty(n, np.float32)
        reps = _reps(nbytes)
        out[nbytes] = _medians(
            {
                "ember": lambda t=t: dist.all_reduce(t),
                "mpi4py": lambda a=a, b=b: comm.Allreduce(a, b),
            },
            reps,
            comm.Barrier,
        )
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)


def worker_gloo(rank, port, queue):
    import torch
    import torch.distributed as tdist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    tdist.init_process_group("gloo", rank=rank, world_size=2)
    out = {}
    for nbytes in SIZES:
        t = torch.ones(nbytes // 4)
        out[nbytes] = _median(lambda t=t: tdist.all_reduce(t), _reps(nbytes), tdist.barrier)
    if rank == 0:
        queue.put(out)
    tdist.destroy_process_group()


def gloo():
    try:
        import torch.multiprocessing as mp
    except ImportError:
        return None
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker_gloo, args=(r, port, q)) for r in range(2)]
    for p in procs:
        p.start()
    out = q.get(timeout=600)
    for p in procs:
        p.join()
    return out


def worker_ddp(buckets):
    """One DDP configuration: ``none`` (no DDP: the 1-process baseline) or a
    bucket_cap_mb.  The machine's cores are shared out: each of the world's
    processes computes on cores // world threads (1 process: every core)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "examples"))
    from train_digits import CNN

    import ember as torch
    import ember.distributed as dist
    import ember.nn.functional as F

    dist.init_process_group("mpi")
    world = dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    torch.manual_seed(0)
    model = CNN()
    model.eval()  # no dropout: the same work in every configuration
    n_buckets = 0
    if buckets != "none":
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=float(buckets))
        n_buckets = len(model._buckets)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = 128 // world
    x, y = torch.randn(batch, 1, 8, 8), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    t = _median(step, 40, dist.barrier)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"step": t, "buckets": n_buckets}), flush=True)


def _mpirun(n, *args):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    res = subprocess.run(
        [mpiexec, "-n", str(n), sys.executable, HERE, *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    for line in res.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"benchmark worker failed:\n{res.stdout}\n{res.stderr}")


def cpu():
    ar = _mpirun(2, "--worker", "allreduce")
    g = gloo()
    print(f"all_reduce, float32, 2 processes: bus bandwidth GB/s (median); {_load()}")
    head = (
        "size",
        "ember",
        "mpi4py",
        "gloo",
        "ember/mpi4py",
        "ember/gloo",
        "ember us",
        "mpi4py us",
    )
    print("{:>8} {:>8} {:>8} {:>8} {:>13} {:>11} {:>10} {:>10}".format(*head))
    for nbytes in SIZES:
        r = ar[str(nbytes)]
        bw = {k: nbytes / v / 1e9 for k, v in r.items()}  # 2(n-1)/n = 1 for n = 2
        gl = nbytes / g[nbytes] / 1e9 if g else None
        e = bw["ember"]
        gl_s = f"{gl:8.2f}" if gl else "       -"
        ratio = f"{e / gl:11.2f}" if gl else "          -"
        m = bw["mpi4py"]
        us = f"{r['ember'] * 1e6:>10.1f} {r['mpi4py'] * 1e6:>10.1f}"
        print(f"{nbytes >> 10:>6}KB {e:>8.2f} {m:>8.2f} {gl_s} {e / m:>13.2f} {ratio} {us}")
    # the configurations run in turn, ROUNDS times: a change of load on the machine
    # touches each alike; the median of each one's medians is reported
    configs = {"one": (1, "none"), "default": (2, "25"), "small": (2, "0.1"), "single": (2, "1e6")}
    runs = {k: [] for k in configs}
    for _ in range(ROUNDS):
        for k, (n, cap) in configs.items():
            runs[k].append(_mpirun(n, "--worker", "ddp", cap))
    one, default, small, single = (
        {"step": statistics.median(r["step"] for r in runs[k]), "buckets": runs[k][0]["buckets"]}
        for k in configs
    )

    def row(name, r):
        b = f", {r['buckets']} bucket{'s' if r['buckets'] != 1 else ''}" if r["buckets"] else ""
        return f"  {name + b + ':':<54} {r['step'] * 1e3:7.2f} ms"

    print(
        f"\nDDP step of the make-train CNN, global batch 128 (median of 40 steps, median of "
        f"{ROUNDS} rounds); {_load()}"
    )
    print(row(f"1 process ({os.cpu_count()} threads), no DDP", one))
    print(
        row("2 processes (1 thread each), DDP 25 MiB", default)
        + f"  scaling efficiency {one['step'] / (2 * default['step']) * 100:.0f}%"
        f" (speed-up {one['step'] / default['step']:.2f}x)"
    )
    print(row("2 processes, DDP 0.1 MiB buckets (overlap)", small))
    print(
        row("2 processes, one bucket (after backward)", single)
        + f"  gain from overlap {(single['step'] / small['step'] - 1) * 100:+.0f}%"
    )


def _load():
    with open("/proc/loadavg") as f:
        return "load average " + " ".join(f.read().split()[:3])


def gpu():
    import ember_autograd
    import ember_core as ec
    import ember_distributed as dist
    import ember_nn as nn
    from ember_core import cuda
    from ember_distributed.parallel import DistributedDataParallel as DDP

    dev = ec.device("cuda", 0)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29571", rank=0, world_size=1)
    print("NCCL all_reduce, one GPU (world of one: a smoke figure), GB/s of the tensor")
    for nbytes in SIZES:
        t = ec.ones(nbytes // 4, device=dev)
        s = _median(lambda t=t: dist.all_reduce(t), _reps(nbytes), cuda.synchronize)
        print(f"  {nbytes >> 10:>8} KB {nbytes / s / 1e9:8.2f} GB/s ({s * 1e6:.1f} us)")

    class Scale(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(ec.ones(n, device=dev))
            self.b = nn.Parameter(ec.zeros(n, device=dev))

        def forward(self, x):
            return x * self.w + self.b

    n = 1 << 24
    x, g = ec.ones(n, device=dev), ec.ones(n, device=dev)
    for name, wrap in (("no DDP", False), ("DDP nccl, world 1", True)):
        m = Scale(n)
        model = DDP(m, device_ids=[0]) if wrap else m

        def step(model=model, m=m):
            model(x).backward(g)
            with ember_autograd.no_grad():
                m.w.sub_(m.w.grad * 1e-3)
                m.w.grad = None
                m.b.grad = None

        s = _median(step, 20, cuda.synchronize)
        print(f"  step, {n} x 2 parameters, {name}: {s * 1e3:.3f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        kind = sys.argv[sys.argv.index("--worker") + 1]
        if kind == "allreduce":
            worker_allreduce()
        else:
            worker_ddp(sys.argv[-1])
    elif "--gpu" in sys.argv:
        gpu()
    else:
        cpu()
