"""Autograd benchmarks: ember vs PyTorch in one run (medians, ratios).

Targets (issue 4, on the 2-core development machine):
  - `y = (a * b).sum(); y.backward()` on 4x4 float32 inputs: at least as fast
    as PyTorch (the cost of recording two ops and running the engine);
  - a 20-layer MLP (width 256, batch 64, float32) forward + backward: within
    1.2x of PyTorch.
Also reported: the forward of the small case with and without requires_grad
(the recording overhead).  Each case is timed in wall time (the shared harness)
and in CPU time of the calling thread, which other processes on a shared
machine disturb less.

    python benchmarks/autograd.py            # or `make bench`
"""

import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_autograd  # noqa: E402, F401 - registers autograd with ember_core
import ember_core as ec  # noqa: E402

torch = try_import("torch")

LAYERS, WIDTH, BATCH = 20, 256, 64


def small(ns, requires_grad=True):
    a = ns.ones(4, 4, requires_grad=requires_grad)
    b = ns.ones(4, 4, requires_grad=requires_grad)

    def step():
        y = (a * b).sum()
        y.backward()

    def forward():
        (a * b).sum()

    return step, forward


def mlp(ns):
    gen = ns.Generator().manual_seed(0)
    x = ns.randn(BATCH, WIDTH, generator=gen)
    params = []
    for _ in range(LAYERS):
        w = (ns.randn(WIDTH, WIDTH, generator=gen) * (2.0 / WIDTH) ** 0.5).requires_grad_()
        b = ns.zeros(WIDTH, requires_grad=True)
        params.append((w, b))

    def step():
        h = x
        for w, b in params:
            h = (h @ w + b).relu()
        h.mean().backward()

    return step


def cpu_time(fn, repeat=7, min_time=0.2):
    """Median CPU seconds (this thread) per call: robust on a shared machine,
    where wall time also counts the other processes."""
    fn()
    number = 1
    while True:
        t0 = time.thread_time()
        for _ in range(number):
            fn()
        if time.thread_time() - t0 > min_time / 5 or number > 1 << 20:
            break
        number *= 4
    samples = []
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(number):
            fn()
        samples.append((time.thread_time() - t0) / number)
    return statistics.median(samples)


def row(name, ember_fn, torch_fn):
    te, ce = median_time(ember_fn), cpu_time(ember_fn)
    tt, ct = (median_time(torch_fn), cpu_time(torch_fn)) if torch_fn else (None, None)
    return [
        name,
        fmt_time(te),
        fmt_time(tt),
        f"{tt / te:.2f}" if tt else "-",
        fmt_time(ce),
        fmt_time(ct),
        f"{ct / ce:.2f}" if ct else "-",
    ]


def main():
    if torch and hasattr(ec, "get_num_threads"):
        torch.set_num_threads(ec.get_num_threads())  # same threads for both
    rows = []
    e_step, e_fwd = small(ec)
    t_step, t_fwd = small(torch) if torch else (None, None)
    rows.append(row("(a*b).sum().backward() 4x4", e_step, t_step))
    rows.append(row("  forward only, requires_grad", e_fwd, t_fwd))
    _, e_plain = small(ec, requires_grad=False)
    _, t_plain = small(torch, requires_grad=False) if torch else (None, None)
    rows.append(row("  forward only, no grad", e_plain, t_plain))
    rows.append(
        row(f"MLP {LAYERS}x{WIDTH}, batch {BATCH}, fwd+bwd", mlp(ec), mlp(torch) if torch else None)
    )
    headers = ["case", "ember", "torch", "torch/ember", "ember cpu", "torch cpu", "torch/ember cpu"]
    table(rows, headers)
    print("(medians; ratios > 1: ember faster; cpu: this thread's CPU time)")


if __name__ == "__main__":
    main()
