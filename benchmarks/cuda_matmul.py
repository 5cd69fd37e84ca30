"""Matrix products on CUDA: ember (cuBLAS through ecu_matmul) against PyTorch on the
same GPU in one run -- issue 15's targets: matmul 4096x4096 in float32 (TF32 off
and on) and bfloat16, bmm 64x512x512, at least 0.95x PyTorch's speed -- plus the
host cost of a small product.  Medians of GPU times measured with CUDA events;
``ratio`` is PyTorch's time over ember's (above 1: ember is faster).

    python benchmarks/cuda_matmul.py [--repeat 7] [--iters 20]
"""

import argparse
import statistics
import time

import numpy as np

import ember_core as ec
from ember_core._cuda import blas as _cuda_blas

CASES = [
    # name, shapes of a and b, dtype, tf32
    ("matmul 4096 fp32", (4096, 4096), (4096, 4096), "float32", False),
    ("matmul 4096 fp32 tf32", (4096, 4096), (4096, 4096), "float32", True),
    ("matmul 4096 bf16", (4096, 4096), (4096, 4096), "bfloat16", False),
    ("matmul 4096 fp16", (4096, 4096), (4096, 4096), "float16", False),
    ("bmm 64x512x512 fp32", (64, 512, 512), (64, 512, 512), "float32", False),
    ("bmm 64x512x512 bf16", (64, 512, 512), (64, 512, 512), "bfloat16", False),
    ("linear 8192x4096 @ W.t() bf16", (8192, 4096), (4096, 4096), "bfloat16", False),
]


def _time_gpu(fn, sync, event, iters, repeat):
    """Median milliseconds per call, from CUDA events around ``iters`` calls."""
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start, end = event(), event()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return statistics.median(times)


def _host_us(fn, sync, n=10_000):
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    if not ec.cuda.is_available():
        raise SystemExit("CUDA is not available to ember")
    try:
        import torch

        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    print(f"GPU: {ec.cuda.get_device_name(0)}; PyTorch: {'yes' if have_torch else 'no'}")
    rng = np.random.default_rng(0)
    ev_ec = lambda: ec.cuda.Event(enable_timing=True)  # noqa: E731
    print(f"{'case':34s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s} {'TFLOP/s':>8s}")
    for name, sa, sb, dtype, tf32 in CASES:
        a = rng.uniform(-1, 1, sa).astype(np.float32)
        b = rng.uniform(-1, 1, sb).astype(np.float32)
        ea = ec.tensor(a, dtype=getattr(ec, dtype), device="cuda")
        eb = ec.tensor(b, dtype=getattr(ec, dtype), device="cuda")
        if name.startswith("linear"):
            ember_fn = lambda ea=ea, eb=eb: ec.mm(ea, eb.t())  # noqa: E731
        elif len(sa) == 3:
            ember_fn = lambda ea=ea, eb=eb: ec.bmm(ea, eb)  # noqa: E731
        else:
            ember_fn = lambda ea=ea, eb=eb: ea @ eb  # noqa: E731
        _cuda_blas.matmul.allow_tf32 = tf32
        t_ec = _time_gpu(ember_fn, ec.cuda.synchronize, ev_ec, args.iters, args.repeat)
        _cuda_blas.matmul.allow_tf32 = False
        t_pt = float("nan")
        if have_torch:
            ta = torch.from_numpy(a).to("cuda", getattr(torch, dtype))
            tb = torch.from_numpy(b).to("cuda", getattr(torch, dtype))
            if name.startswith("linear"):
                torch_fn = lambda ta=ta, tb=tb: torch.mm(ta, tb.t())  # noqa: E731
            elif len(sa) == 3:
                torch_fn = lambda ta=ta, tb=tb: torch.bmm(ta, tb)  # noqa: E731
            else:
                torch_fn = lambda ta=ta, tb=tb: ta @ tb  # noqa: E731
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ev_pt = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
            t_pt = _time_gpu(torch_fn, torch.cuda.synchronize, ev_pt, args.iters, args.repeat)
            torch.backends.cuda.matmul.allow_tf32 = False
        batch = sa[0] if len(sa) == 3 else 1
        flops = 2.0 * batch * sa[-2] * sa[-1] * (sb[-1] if not name.startswith("linear") else
                                                  sb[0])  # fmt: skip
        print(f"{name:34s} {t_ec:10.3f} {t_pt:10.3f} {t_pt / t_ec:7.3f} "
              f"{flops / t_ec / 1e9:8.1f}")  # fmt: skip
    # host cost per small product (queued, not waited for)
    x = ec.tensor(rng.uniform(-1, 1, (4, 4)).astype(np.float32), device="cuda")
    h_ec = _host_us(lambda: x @ x, ec.cuda.synchronize)
    h_pt = float("nan")
    if have_torch:
        tx = torch.from_numpy(np.asarray(x.cpu().numpy())).cuda()
        h_pt = _host_us(lambda: tx @ tx, torch.cuda.synchronize)
    print(f"{'host cost of 4x4 @ (us per op)':34s} {h_ec:10.2f} {h_pt:10.2f} {h_pt / h_ec:7.3f}")


if __name__ == "__main__":
    main()
