"""Tensor op benchmarks: ember vs PyTorch vs NumPy in one run (medians, ratios).

Targets (issue 3, on the 2-core development machine):
  - per-op overhead of `a + b` on 4x4 float32 within 2x of PyTorch;
  - add, mul, exp on 16M float32, sum over 16M, add of a transposed 2048x2048:
    at least the throughput of the faster of NumPy and PyTorch;
  - matmul float32 at 256, 1024, 2048: at least 0.9x NumPy's GFLOP/s.
"""

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_core as ec  # noqa: E402

torch = try_import("torch")


def case(name, ember_fn, torch_fn=None, numpy_fn=None, flops=None):
    te = median_time(ember_fn)
    tt = median_time(torch_fn) if torch_fn else None
    tn = median_time(numpy_fn) if numpy_fn else None
    best = min(t for t in (tt, tn) if t is not None) if (tt or tn) else None
    row = [name, fmt_time(te), fmt_time(tt), fmt_time(tn)]
    row.append(f"{tt / te:.2f}" if tt else "-")
    row.append(f"{tn / te:.2f}" if tn else "-")
    row.append(f"{best / te:.2f}" if best else "-")
    if flops:
        row.append(f"{flops / te / 1e9:.1f}")
    else:
        row.append("")
    return row


def main():
    rows = []
    a, b = ec.ones(4, 4), ec.ones(4, 4)
    na, nb = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)
    ta, tb = (torch.ones(4, 4), torch.ones(4, 4)) if torch else (None, None)
    rows.append(case("a + b (4x4)", lambda: a + b, (lambda: ta + tb) if torch else None, lambda: na + nb))

    n = 1 << 24
    x, y = ec.rand(n), ec.rand(n)
    nx, ny = x.numpy(), y.numpy()
    tx, ty = (torch.from_numpy(nx.copy()), torch.from_numpy(ny.copy())) if torch else (None, None)
    rows.append(case("add 16M f32", lambda: x + y, (lambda: tx + ty) if torch else None, lambda: nx + ny))
    rows.append(case("mul 16M f32", lambda: x * y, (lambda: tx * ty) if torch else None, lambda: nx * ny))
    rows.append(case("exp 16M f32", lambda: x.exp(), (lambda: tx.exp()) if torch else None, lambda: np.exp(nx)))
    rows.append(case("sum 16M f32", lambda: x.sum(), (lambda: tx.sum()) if torch else None, lambda: nx.sum()))

    m = ec.rand(2048, 2048)
    m2 = ec.rand(2048, 2048)
    nm, nm2 = m.numpy(), m2.numpy()
    tm, tm2 = (torch.from_numpy(nm.copy()), torch.from_numpy(nm2.copy())) if torch else (None, None)
    rows.append(case("a.T + b 2048^2", lambda: m.T + m2, (lambda: tm.T + tm2) if torch else None, lambda: nm.T + nm2))

    for size in (256, 1024, 2048):
        p, q = ec.rand(size, size), ec.rand(size, size)
        npq, nq = p.numpy(), q.numpy()
        tp, tq = (torch.from_numpy(npq.copy()), torch.from_numpy(nq.copy())) if torch else (None, None)
        rows.append(case(f"matmul {size}", lambda: p @ q, (lambda: tp @ tq) if torch else None, lambda: npq @ nq,
                         flops=2 * size**3))

    rows.extend(indexing_rows())

    print(f"ember {ec.__version__}, torch {torch.__version__ if torch else 'not installed'}, numpy {np.__version__}; "
          f"{ec.get_num_threads()} threads")
    table(rows, ["case", "ember", "torch", "numpy", "torch/ember", "numpy/ember", "best/ember", "ember GFLOP/s"])
    print("ratios > 1 mean ember is faster")


# ----------------------------------------------- indexing and sorting (tc-index)


def indexing_rows():
    """x[idx] gather, index_add_, sort and topk on 1M float32 (issue 5).  NumPy's
    counterparts: fancy indexing, np.add.at, a stable argsort plus gather (sort
    returns values and indices), argpartition plus sorting the k found."""
    n = 1 << 20
    x = ec.rand(n)
    idx = ec.randint(0, n, (n,))
    acc = ec.zeros(n)
    nx, nidx, nacc = x.numpy(), idx.numpy(), np.zeros(n, np.float32)
    tx = torch.from_numpy(nx.copy()) if torch else None
    tidx = torch.from_numpy(nidx.copy()) if torch else None
    tacc = torch.zeros(n) if torch else None

    def np_sort():
        i = np.argsort(nx, kind="stable")
        return nx[i], i

    def np_topk(k=100):
        i = np.argpartition(nx, n - k)[n - k :]
        return i[np.argsort(-nx[i], kind="stable")]

    def with_torch(fn):
        return fn if torch else None

    return [
        case("x[idx] 1M f32", lambda: x[idx], with_torch(lambda: tx[tidx]), lambda: nx[nidx]),
        case(
            "index_add_ 1M f32",
            lambda: acc.index_add_(0, idx, x),
            with_torch(lambda: tacc.index_add_(0, tidx, tx)),
            lambda: np.add.at(nacc, nidx, nx),
        ),
        case("sort 1M f32", lambda: x.sort(), with_torch(lambda: tx.sort()), np_sort),
        case("topk 100 of 1M f32", lambda: x.topk(100), with_torch(lambda: tx.topk(100)), np_topk),
    ]


if __name__ == "__main__":
    main()
