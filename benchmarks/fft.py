"""FFT benchmarks: ember.fft vs torch.fft vs scipy.fft in one run (medians, ratios).

Cases: a 1-D complex64 transform of 2**20 points, a 2-D complex64 transform of
2048 x 2048, a batched rfft (4096 float32 signals of 1024 points), each at one
thread and at every thread (``set_num_threads`` / torch's / scipy's
``workers``).  ember runs ducc0 on its own memory (Note [FFT primitives]);
PyTorch runs its pocketfft or MKL build; scipy.fft runs pocketfft.
Run: .venv/bin/python benchmarks/fft.py [--quick]
"""

import importlib
import os
import statistics
import sys

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_core as ec  # noqa: E402

torch = try_import("torch")
scipy_fft = importlib.import_module("scipy.fft") if try_import("scipy") else None


def case(name, fns):
    """fns: ember, torch, scipy (None where absent); medians of interleaved blocks."""
    present = [f for f in fns if f is not None]
    samples = [[] for _ in present]
    for _ in range(2):  # blocks in turns, so that load changes hit all alike
        for f, out in zip(present, samples):
            out.append(median_time(f, repeat=5, min_time=0.2))
    it = iter(statistics.median(s) for s in samples)
    te, tt, ts = (next(it) if f is not None else None for f in fns)
    return [
        name,
        fmt_time(te),
        fmt_time(tt),
        fmt_time(ts),
        f"{tt / te:.2f}" if tt else "-",
        f"{ts / te:.2f}" if ts else "-",
    ]


def rows_for(threads, quick):
    rng = np.random.default_rng(0)
    n1 = 1 << (18 if quick else 20)
    n2 = 1024 if quick else 2048
    x1 = (rng.standard_normal(n1) + 1j * rng.standard_normal(n1)).astype(np.complex64)
    x2 = (rng.standard_normal((n2, n2)) + 1j * rng.standard_normal((n2, n2))).astype(np.complex64)
    xb = rng.standard_normal((4096, 1024)).astype(np.float32)
    ec.set_num_threads(threads)
    if torch:
        torch.set_num_threads(threads)
    e1, e2, eb = ec.from_numpy(x1), ec.from_numpy(x2), ec.from_numpy(xb)
    t1, t2, tb = (torch.from_numpy(a) for a in (x1, x2, xb)) if torch else (None,) * 3
    cases = [
        (
            f"fft 1-D 2^{n1.bit_length() - 1} c64",
            lambda: ec.fft.fft(e1),
            (lambda: torch.fft.fft(t1)) if torch else None,
            (lambda: scipy_fft.fft(x1, workers=threads)) if scipy_fft else None,
        ),
        (
            f"fft2 {n2}x{n2} c64",
            lambda: ec.fft.fft2(e2),
            (lambda: torch.fft.fft2(t2)) if torch else None,
            (lambda: scipy_fft.fft2(x2, workers=threads)) if scipy_fft else None,
        ),
        (
            "rfft 4096 x 1024 f32",
            lambda: ec.fft.rfft(eb),
            (lambda: torch.fft.rfft(tb)) if torch else None,
            (lambda: scipy_fft.rfft(xb, workers=threads)) if scipy_fft else None,
        ),
    ]
    rows = []
    for name, fe, ft, fs in cases:
        rows.append(case(f"{name}, {threads} thr", [fe, ft, fs]))
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main():
    quick = "--quick" in sys.argv
    rows = []
    for threads in sorted({1, os.cpu_count() or 1}):
        rows += rows_for(threads, quick)
    table(rows, ["case", "ember", "torch", "scipy", "torch/ember", "scipy/ember"])


if __name__ == "__main__":
    main()
