"""torch.special benchmarks: ember vs PyTorch vs SciPy (the NumPy column) on 1M
elements, float32 and float64, in one run (medians, ratios).  Run:
``.venv/bin/python benchmarks/special.py [--quick]``."""

import statistics
import sys
import time

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember  # noqa: E402

torch = try_import("torch")
sp = try_import("scipy.special")
if sp is not None:
    import scipy.special as sp


def _medians(fns):
    out = []
    for f in fns:
        if f is None:
            out.append(None)
            continue
        time.sleep(0.1)
        out.append(statistics.median(median_time(f, repeat=5, min_time=0.1) for _ in range(2)))
    return out


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def rows_for(dtype, n):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 8.0, n).astype(dtype)
    p = rng.uniform(0.001, 0.999, n).astype(dtype)
    e, ep = ember.from_numpy(x), ember.from_numpy(p)
    t, tp = (torch.from_numpy(x), torch.from_numpy(p)) if torch else (None, None)
    cases = [
        ("i0e", lambda: ember.special.i0e(e), lambda: torch.special.i0e(t), lambda: sp.i0e(x)),
        ("i1", lambda: ember.special.i1(e), lambda: torch.special.i1(t), lambda: sp.i1(x)),
        (
            "k0",
            lambda: ember.special.modified_bessel_k0(e),
            lambda: torch.special.modified_bessel_k0(t),
            lambda: sp.k0(x),
        ),
        (
            "ndtri",
            lambda: ember.special.ndtri(ep),
            lambda: torch.special.ndtri(tp),
            lambda: sp.ndtri(p),
        ),
        (
            "log_ndtr",
            lambda: ember.special.log_ndtr(e),
            lambda: torch.special.log_ndtr(t),
            lambda: sp.log_ndtr(x),
        ),
        (
            "polygamma(1)",
            lambda: ember.special.polygamma(1, e),
            lambda: torch.special.polygamma(1, t),
            lambda: sp.polygamma(1, x),
        ),
        (
            "gammainc",
            lambda: ember.special.gammainc(e, e),
            lambda: torch.special.gammainc(t, t),
            lambda: sp.gammainc(x, x),
        ),
        (
            "airy_ai",
            lambda: ember.special.airy_ai(e),
            lambda: torch.special.airy_ai(t),
            lambda: sp.airy(x)[0],
        ),
    ]
    rows = []
    for name, fe, ft, fs in cases:
        me, mt, ms = _medians([fe, ft if torch else None, fs if sp else None])
        rows.append(
            [
                f"{name} {n} {np.dtype(dtype).name}",
                fmt_time(me),
                fmt_time(mt),
                fmt_time(ms),
                _ratio(mt, me),
                _ratio(ms, me),
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main():
    n = 100_000 if "--quick" in sys.argv else 1_000_000
    rows = rows_for(np.float32, n) + rows_for(np.float64, n)
    print(table(rows, ["case", "ember", "torch", "scipy", "torch/ember", "scipy/ember"]))


if __name__ == "__main__":
    main()
