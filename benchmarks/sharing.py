"""Tensors between processes: ember_multiprocessing vs torch.multiprocessing vs
pickling the bytes, in one run (medians, ratios).

Targets (issue 8): at least PyTorch's speed on both cases; the 64 MiB round trip
at least 10x faster than pickling the bytes.

  - 64 MiB round trip: the parent puts a 64 MiB float32 tensor on a Queue, a
    child (started once, with fork) puts it back on another, the parent gets it.
    "first send": a tensor not yet in shared memory (includes its one copy
    there); "shared": the same tensor again (only handles travel).
  - 1,000 x 1 KiB: the parent puts 1,000 fresh 1 KiB tensors on a Queue, the
    child gets them all and answers once; tensors per second.

    python benchmarks/sharing.py [--repeat 7]
"""

import argparse
import multiprocessing
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import fmt_time, table, try_import  # noqa: E402

import ember_core as ec  # noqa: E402
import ember_multiprocessing as emp  # noqa: E402

torch = try_import("torch")
if torch is not None:
    import torch.multiprocessing as tmp

BIG = 16 << 20  # float32 elements: 64 MiB
SMALL = 256  # 1 KiB
COUNT = 1000


def echo_child(q_in, q_out):
    """Send back everything until None."""
    while True:
        obj = q_in.get()
        if obj is None:
            return
        q_out.put(obj)
        del obj


def count_child(q_in, q_out):
    """Receive batches of COUNT tensors; answer the count of each batch."""
    while True:
        n = q_in.get()
        if n is None:
            return
        got = [q_in.get() for _ in range(n)]
        q_out.put(len(got))
        del got


class Child:
    def __init__(self, ctx, target):
        self.q_in, self.q_out = ctx.Queue(), ctx.Queue()
        self.p = ctx.Process(target=target, args=(self.q_in, self.q_out), daemon=True)
        self.p.start()

    def close(self):
        self.q_in.put(None)
        self.p.join(60)


def median_of(fn, make, repeat):
    """Median seconds of fn(x) for fresh x = make() (made outside the timing)."""
    fn(make())  # warm up: child mappings, allocator caches
    samples = []
    for _ in range(repeat):
        x = make()
        t0 = time.perf_counter()
        fn(x)
        samples.append(time.perf_counter() - t0)
        del x
    return statistics.median(samples)


def round_trip(child):
    def fn(x):
        child.q_in.put(x)
        back = child.q_out.get()
        assert back.shape == x.shape

    return fn


def many_small(child):
    def fn(xs):
        child.q_in.put(len(xs))
        for x in xs:
            child.q_in.put(x)
        assert child.q_out.get() == len(xs)

    return fn


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    r = args.repeat

    ember_ctx = emp.get_context("fork")
    plain_ctx = multiprocessing.get_context("fork")  # NumPy arrays: pickled by value
    libs = {"ember": (ember_ctx, ec.ones), "pickle": (plain_ctx, np.ones)}
    if torch is not None:
        libs["torch"] = (tmp.get_context("fork"), torch.ones)

    results = {}
    for name, (ctx, ones) in libs.items():
        child = Child(ctx, echo_child)
        fn = round_trip(child)
        results[name, "64 MiB round trip, first send"] = median_of(
            fn, lambda ones=ones: ones(BIG), r
        )
        if name != "pickle":
            shared = ones(BIG)
            shared.share_memory_()
            results[name, "64 MiB round trip, shared"] = median_of(
                fn, lambda shared=shared: shared, r
            )
        else:
            results[name, "64 MiB round trip, shared"] = results[
                name, "64 MiB round trip, first send"
            ]
        child.close()

        child = Child(ctx, count_child)
        fn = many_small(child)
        results[name, "1,000 x 1 KiB through a Queue"] = median_of(
            fn, lambda ones=ones: [ones(SMALL) for _ in range(COUNT)], r
        )
        child.close()

    rows = []
    for case in (
        "64 MiB round trip, first send",
        "64 MiB round trip, shared",
        "1,000 x 1 KiB through a Queue",
    ):
        te, tp = results["ember", case], results["pickle", case]
        tt = results.get(("torch", case))
        small = case.startswith("1,000")
        row = [case, fmt_time(te), fmt_time(tt), fmt_time(tp)]
        if small:
            row.append(f"{COUNT / te:,.0f} / {COUNT / tt:,.0f}" if tt else f"{COUNT / te:,.0f}")
        else:
            row.append("")
        row.append(f"{tt / te:.2f}" if tt else "-")
        row.append(f"{tp / te:.1f}")
        rows.append(row)
    print(f"median of {r} runs; ratios > 1: ember is faster")
    table(
        rows,
        [
            "case",
            "ember",
            "torch",
            "pickled bytes",
            "tensors/s ember / torch",
            "torch/ember",
            "pickle/ember",
        ],
    )


if __name__ == "__main__":
    main()
