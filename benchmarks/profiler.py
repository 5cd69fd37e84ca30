"""Profiler overhead: ember vs PyTorch in one run (medians, ratios).

- ``step``: ``(a * b).sum().backward()`` on 4x4 float32 inputs, before any
  profiler ran, after one ran and stopped (ember's handler is removed again,
  so this should equal the first), and while one records;
- ``record_function``: entering and leaving a labelled range with no profiler
  running (one global check in ember) and while one records.

    python benchmarks/profiler.py
"""

import sys
import warnings

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember  # noqa: E402
import ember.profiler  # noqa: E402

torch = try_import("torch")
if torch is not None:
    import torch.profiler  # noqa: F401


def cases(ns, prof_mod):
    a = ns.ones(4, 4, requires_grad=True)
    b = ns.ones(4, 4, requires_grad=True)

    def step():
        (a * b).sum().backward()

    def rf():
        with prof_mod.record_function("label"):
            pass

    out = {
        "step, no profiler yet": median_time(step),
        "record_function, no profiler": median_time(rf),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prof_mod.profile() as prof:
            step_active = median_time(step, repeat=3, min_time=0.05)
            rf_active = median_time(rf, repeat=3, min_time=0.05)
    del prof
    out["step, after a profiler stopped"] = median_time(step)
    out["step, while profiling"] = step_active
    out["record_function, while profiling"] = rf_active
    return out


def main():
    mine = cases(ember, ember.profiler)
    theirs = cases(torch, torch.profiler) if torch is not None else {}
    rows = []
    for name, t in mine.items():
        tt = theirs.get(name)
        rows.append([name, fmt_time(t), fmt_time(tt), f"{t / tt:.2f}" if tt else "-"])
    table(rows, ["case", "ember", "torch", "ember/torch"])
    overhead = mine["step, after a profiler stopped"] / mine["step, no profiler yet"] - 1
    print(f"\nember, inactive profiler overhead on a step: {overhead * 100:+.1f}% (noise: a few %)")


if __name__ == "__main__":
    main()
