"""Sparse tensor benchmarks: ember vs PyTorch in one run (medians, ratios).

Sparse @ dense on a GNN-sized adjacency (Cora: 2708 nodes, ~10.5k edges, 64
features) and on a larger random matrix, with and without gradients;
coalesce, to_dense and sparse + sparse.  Run: ``.venv/bin/python
benchmarks/sparse.py [--quick]``.  The "torch/ember" column is PyTorch's time
over ember's (above 1: ember is faster)."""

import statistics
import sys
import time
import warnings

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember  # noqa: E402

torch = try_import("torch")
warnings.filterwarnings("ignore", "Sparse invariant checks")


def _medians(fns):
    out = []
    for f in fns:
        if f is None:
            out.append(None)
            continue
        time.sleep(0.1)
        out.append(statistics.median(median_time(f, repeat=5, min_time=0.1) for _ in range(2)))
    return out


def _both(ns, idx, val, shape, dense):
    s = ns.sparse_coo_tensor(ns.tensor(idx), ns.tensor(val), shape)
    return s, ns.tensor(dense)


def rows_for(label, n, m, nnz, k, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, m, nnz)])
    val = rng.standard_normal(nnz).astype(np.float32)
    dense = rng.standard_normal((m, k)).astype(np.float32)
    libs = [ember] + ([torch] if torch else [])
    made = {ns: _both(ns, idx, val, (n, m), dense) for ns in libs}
    other = {
        ns: ns.sparse_coo_tensor(ns.tensor(idx[:, ::-1].copy()), ns.tensor(val), (n, m))
        for ns in libs
    }

    def spmm(ns):
        s, d = made[ns]
        return lambda: s @ d

    def spmm_grad(ns):
        s, d = made[ns]
        v = s._values().detach().requires_grad_()
        dg = d.detach().requires_grad_()
        i = s._indices()

        def run():
            out = ns.sparse.mm(ns.sparse_coo_tensor(i, v, (n, m)), dg)
            out.sum().backward()

        return run

    def coalesce(ns):
        s, _ = made[ns]
        return lambda: ns.sparse_coo_tensor(s._indices(), s._values(), (n, m)).coalesce()

    def to_dense(ns):
        s, _ = made[ns]
        return lambda: s.to_dense()

    def add(ns):
        s, _ = made[ns]
        return lambda: s + other[ns]

    rows = []
    for name, make in (
        (f"sparse @ dense ({k} cols)", spmm),
        ("sparse.mm forward+backward", spmm_grad),
        ("coalesce", coalesce),
        ("to_dense", to_dense),
        ("sparse + sparse", add),
    ):
        te, tt = _medians([make(ember), make(torch) if torch else None])
        ratio = "-" if tt is None else f"{tt / te:.2f}"
        rows.append([f"{label}: {name}", fmt_time(te), fmt_time(tt), ratio])
    return rows


def main():
    quick = "--quick" in sys.argv
    rows = rows_for("cora 2708^2 nnz 10.5k", 2708, 2708, 10556, 64)
    if not quick:
        rows += rows_for("20k^2 nnz 200k", 20000, 20000, 200000, 64, seed=1)
    table(rows, ["case", "ember", "torch", "torch/ember"])


if __name__ == "__main__":
    main()
