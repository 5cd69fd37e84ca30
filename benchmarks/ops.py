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

    print(f"ember {ec.__version__}, torch {torch.__version__ if torch else 'not installed'}, numpy {np.__version__}; "
          f"{ec.get_num_threads()} threads")
    table(rows, ["case", "ember", "torch", "numpy", "torch/ember", "numpy/ember", "best/ember", "ember GFLOP/s"])
    print("ratios > 1 mean ember is faster")


# ------------------------------------------------------------------------
# NN kernels: softmax, norms, losses, embedding, RNN cells (issue 5, part 2).
# Forward + backward through autograd, as a training step runs them.
# Targets: at least as fast as PyTorch (torch/ember >= 1).
# `python benchmarks/ops.py nn [THREADS]` runs this section alone.

import statistics  # noqa: E402
import time  # noqa: E402


def _calibrate(fn, min_time=0.05):
    fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 > min_time or number > 1 << 16:
            return number
        number *= 2


def _interleaved_medians(fns, repeat=9):
    """Median seconds per call of each fn, sampling them in turns so that load
    changes on a shared machine hit every column alike."""
    numbers = [_calibrate(f) for f in fns]
    samples = [[] for _ in fns]
    for _ in range(repeat):
        for f, n, out in zip(fns, numbers, samples):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            out.append((time.perf_counter() - t0) / n)
    return [statistics.median(s) for s in samples]


def nn_case(name, ember_fn, torch_fn):
    if torch_fn is None:
        return [name, fmt_time(median_time(ember_fn)), "-", "-"]
    te, tt = _interleaved_medians([ember_fn, torch_fn])
    return [name, fmt_time(te), fmt_time(tt), f"{tt / te:.2f}"]


def _pair(shape, *, requires_grad=True, scale=1.0, seed=0, dtype=np.float32):
    data = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
    e = ec.from_numpy(data.copy()).requires_grad_(requires_grad)
    t = torch.from_numpy(data.copy()).requires_grad_(requires_grad) if torch else None
    return e, t


def nn_main():
    import ember_autograd as ag
    import ember_nn.functional as F

    tF = torch.nn.functional if torch else None
    rows = []

    def both(name, ember_step, torch_step):
        rows.append(nn_case(name, ember_step, torch_step if torch else None))

    # softmax and cross entropy on 512 x 1000 logits
    x, tx = _pair((512, 1000))
    g, tg = _pair((512, 1000), requires_grad=False, seed=1)
    both("softmax fwd+bwd 512x1000",
         lambda: ag.grad(ec.softmax(x, 1), [x], g),
         lambda: torch.autograd.grad(torch.softmax(tx, 1), [tx], tg))
    target = np.random.default_rng(2).integers(0, 1000, 512)
    et, tt = ec.from_numpy(target), (torch.from_numpy(target) if torch else None)
    both("cross_entropy fwd+bwd 512x1000",
         lambda: ag.grad(F.cross_entropy(x, et), [x]),
         lambda: torch.autograd.grad(tF.cross_entropy(tx, tt), [tx]))
    both("cross_entropy fwd 512x1000",
         lambda: F.cross_entropy(x.detach(), et),
         lambda: tF.cross_entropy(tx.detach(), tt))

    # layer norm over 1024 features of 4096 rows
    x, tx = _pair((4096, 1024))
    g, tg = _pair((4096, 1024), requires_grad=False, seed=1)
    w, tw = _pair((1024,), seed=2)
    b, tb = _pair((1024,), seed=3)
    both("layer_norm fwd+bwd 4096x1024",
         lambda: ag.grad(F.layer_norm(x, (1024,), w, b), [x, w, b], g),
         lambda: torch.autograd.grad(tF.layer_norm(tx, (1024,), tw, tb), [tx, tw, tb], tg))

    # batch norm (training) of a conv activation: 32 x 64 x 32 x 32
    x, tx = _pair((32, 64, 32, 32))
    g, tg = _pair((32, 64, 32, 32), requires_grad=False, seed=1)
    w, tw = _pair((64,), seed=2)
    b, tb = _pair((64,), seed=3)
    rm, rv = ec.zeros(64), ec.ones(64)
    trm, trv = (torch.zeros(64), torch.ones(64)) if torch else (None, None)
    both("batch_norm fwd+bwd 32x64x32x32",
         lambda: ag.grad(F.batch_norm(x, rm, rv, w, b, True), [x, w, b], g),
         lambda: torch.autograd.grad(tF.batch_norm(tx, trm, trv, tw, tb, True), [tx, tw, tb], tg))

    # embedding: a 10k x 256 table, 64 x 128 lookups
    w, tw = _pair((10000, 256))
    idx = np.random.default_rng(4).integers(0, 10000, (64, 128))
    ei, ti = ec.from_numpy(idx), (torch.from_numpy(idx) if torch else None)
    g, tg = _pair((64, 128, 256), requires_grad=False, seed=1)
    both("embedding fwd+bwd 10k x 256, 8192 ids",
         lambda: ag.grad(F.embedding(ei, w), [w], g),
         lambda: torch.autograd.grad(tF.embedding(ti, tw), [tw], tg))

    # one LSTM cell step, batch 64, 256 -> 256
    xs, txs = _pair((64, 256))
    h, th = _pair((64, 256), seed=1)
    c, tc = _pair((64, 256), seed=2)
    wi, twi = _pair((1024, 256), scale=0.06, seed=3)
    wh, twh = _pair((1024, 256), scale=0.06, seed=4)
    bi, tbi = _pair((1024,), scale=0.06, seed=5)
    bh, tbh = _pair((1024,), scale=0.06, seed=6)
    params = [xs, h, c, wi, wh, bi, bh]
    tparams = [txs, th, tc, twi, twh, tbi, tbh]

    def ember_lstm():
        hy, cy = ec.lstm_cell(xs, (h, c), wi, wh, bi, bh)
        return ag.grad((hy * hy).sum() + cy.sum(), params)

    def torch_lstm():
        hy, cy = torch.lstm_cell(txs, (th, tc), twi, twh, tbi, tbh)
        return torch.autograd.grad((hy * hy).sum() + cy.sum(), tparams)

    both("lstm_cell fwd+bwd b64 256->256", ember_lstm, torch_lstm if torch else None)

    # attention: batch 8, 8 heads, 128 tokens, 64 dims
    q, tq = _pair((8, 8, 128, 64))
    k, tk = _pair((8, 8, 128, 64), seed=1)
    v, tv = _pair((8, 8, 128, 64), seed=2)
    sdpa = F.scaled_dot_product_attention
    tsdpa = tF.scaled_dot_product_attention if torch else None
    both("sdpa causal fwd+bwd 8x8x128x64",
         lambda: ag.grad(sdpa(q, k, v, is_causal=True).sum(), [q, k, v]),
         lambda: torch.autograd.grad(tsdpa(tq, tk, tv, is_causal=True).sum(), [tq, tk, tv]))

    print(f"NN kernels: softmax, norms, losses, embedding; {ec.get_num_threads()} threads")
    table(rows, ["case", "ember", "torch", "torch/ember"])
    print("ratios > 1 mean ember is faster")


if __name__ == "__main__":
    if sys.argv[1:2] == ["nn"]:
        if len(sys.argv) > 2:
            ec.set_num_threads(int(sys.argv[2]))
            if torch:
                torch.set_num_threads(int(sys.argv[2]))
        nn_main()
    else:
        main()
        nn_main()
