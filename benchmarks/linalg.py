"""linalg benchmarks: ember vs PyTorch vs NumPy in one run (medians, ratios).

Large single matrices measure LAPACK itself (ember and NumPy call OpenBLAS's,
PyTorch its own build's); a batch of small matrices measures the per-matrix
cost of the batching loop.  Run: .venv/bin/python benchmarks/linalg.py [--quick]
"""

import statistics
import sys

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_core as ec  # noqa: E402

torch = try_import("torch")


def case(name, ember_fn, torch_fn, numpy_fn):
    fns = [ember_fn] + [f for f in (torch_fn, numpy_fn) if f is not None]
    samples = [[] for _ in fns]
    for _ in range(2):  # blocks in turns, so that load changes hit all alike
        for f, out in zip(fns, samples):
            out.append(median_time(f, repeat=5, min_time=0.1))
    times = [statistics.median(s) for s in samples]
    te = times[0]
    tt = times[1] if torch_fn else None
    tn = times[-1] if numpy_fn else None
    return [
        name,
        fmt_time(te),
        fmt_time(tt),
        fmt_time(tn),
        f"{tt / te:.2f}" if tt else "-",
        f"{tn / te:.2f}" if tn else "-",
    ]


def size_rows(rng, n, batch, dtype=np.float32):
    """One row per op for a batch of (n x n) float32 (or complex64) matrices."""
    shape = batch + (n, n)
    cplx = np.dtype(dtype).kind == "c"

    def randn(shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape) if cplx else x).astype(dtype)

    a = randn(shape)
    s = (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
    b = randn(batch + (n, 1))
    A, S, B = ec.from_numpy(a), ec.from_numpy(s), ec.from_numpy(b)
    tA, tS, tB = (
        (torch.from_numpy(a), torch.from_numpy(s), torch.from_numpy(b))
        if torch
        else (None, None, None)
    )
    kind = "c64" if cplx else "f32"
    label = f"{'x'.join(map(str, batch)) + ' x ' if batch else ''}{n}x{n} {kind}"
    ops = [
        ("inv", lambda: ec.linalg.inv(A), lambda: torch.linalg.inv(tA), lambda: np.linalg.inv(a)),
        (
            "solve",
            lambda: ec.linalg.solve(A, B),
            lambda: torch.linalg.solve(tA, tB),
            lambda: np.linalg.solve(a, b),
        ),
        ("det", lambda: ec.linalg.det(A), lambda: torch.linalg.det(tA), lambda: np.linalg.det(a)),
        (
            "cholesky",
            lambda: ec.linalg.cholesky(S),
            lambda: torch.linalg.cholesky(tS),
            lambda: np.linalg.cholesky(s),
        ),
        (
            "eigh",
            lambda: ec.linalg.eigh(S),
            lambda: torch.linalg.eigh(tS),
            lambda: np.linalg.eigh(s),
        ),
        (
            "svd",
            lambda: ec.linalg.svd(A, full_matrices=False),
            lambda: torch.linalg.svd(tA, full_matrices=False),
            lambda: np.linalg.svd(a, full_matrices=False),
        ),
        ("qr", lambda: ec.linalg.qr(A), lambda: torch.linalg.qr(tA), lambda: np.linalg.qr(a)),
    ]
    if not batch or n <= 32:  # the general eigenproblem (geev) is slow: small batches only
        ops.append(
            (
                "eig",
                lambda: ec.linalg.eig(A),
                lambda: torch.linalg.eig(tA),
                lambda: np.linalg.eig(a),
            )
        )
    rows = []
    for name, fe, ft, fn in ops:
        rows.append(case(f"{name} {label}", fe, ft if torch else None, fn))
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main():
    rng = np.random.default_rng(0)
    sizes = (
        [(256, ()), (4, (10000,))]
        if "--quick" in sys.argv
        else [(256, ()), (1024, ()), (4, (10000,)), (32, (1000,))]
    )
    rows = []
    for n, batch in sizes:
        rows += size_rows(rng, n, batch)
    # complex matrices (csrc/linalg_complex.c)
    for n, batch in sizes[:2]:
        rows += size_rows(rng, n, batch, np.complex64)
    print(table(rows, ["case", "ember", "torch", "numpy", "torch/ember", "numpy/ember"]))


if __name__ == "__main__":
    main()
