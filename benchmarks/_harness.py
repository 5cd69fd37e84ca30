"""Shared benchmark helpers: medians of repeated timings and a ratio table.

Benchmarks compare ember with PyTorch and NumPy in one run (the machines are
shared and noisy, so only same-run ratios mean anything).  torch is optional:
columns for missing libraries are left empty."""

import statistics
import time


def median_time(fn, *, number=None, repeat=7, min_time=0.2):
    """Median seconds per call of fn(), calibrating `number` to last ~min_time."""
    fn()  # warm up (allocator caches, lazy imports)
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t0 > min_time / 5 or number > 1 << 20:
                break
            number *= 4
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def try_import(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def fmt_time(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def table(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
