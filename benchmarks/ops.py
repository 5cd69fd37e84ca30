"""Tensor op benchmarks: ember vs PyTorch vs NumPy in one run (medians, ratios).

Targets (issue 3, on the 2-core development machine):
  - per-op overhead of `a + b` on 4x4 float32 within 2x of PyTorch;
  - add, mul, exp on 16M float32, sum over 16M, add of a transposed 2048x2048:
    at least the throughput of the faster of NumPy and PyTorch;
  - matmul float32 at 256, 1024, 2048: at least 0.9x NumPy's GFLOP/s.
"""

import statistics
import sys
import time

import numpy as np

_HERE = __file__.rsplit("/", 1)[0]
sys.path.insert(0, _HERE)
from _harness import fmt_time, median_time, table, try_import  # noqa: E402

import ember_core as ec  # noqa: E402

torch = try_import("torch")


def _block_medians(fns, rounds=3):
    """Median seconds per call of each fn: each is timed in a block of calls (its
    own thread pool warm, the others' asleep -- alternating single calls would
    have OpenMP/BLAS pools of different libraries spinning against each other),
    and the blocks are repeated in turns so that load changes hit all alike."""
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for f, out in zip(fns, samples):
            # a pause first: NumPy's OpenBLAS threads spin for a while after its
            # last call and would take a core from the next library's block
            time.sleep(0.1)
            out.append(median_time(f, repeat=5, min_time=0.1))
    return [statistics.median(s) for s in samples]


def case(name, ember_fn, torch_fn=None, numpy_fn=None, flops=None):
    fns = [f for f in (ember_fn, torch_fn, numpy_fn) if f is not None]
    times = iter(_block_medians(fns))
    te = next(times)
    tt = next(times) if torch_fn else None
    tn = next(times) if numpy_fn else None
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
    rows.append(
        case("a + b (4x4)", lambda: a + b, (lambda: ta + tb) if torch else None, lambda: na + nb)
    )
    tsum, tidx, tview = [None] * 3
    if torch:
        tsum, tidx, tview = (lambda: ta.sum()), (lambda: ta[1]), (lambda: ta.view(16))
    rows.append(case("a.sum() (4x4)", lambda: a.sum(), tsum, lambda: na.sum()))
    rows.append(case("a[1] (4x4)", lambda: a[1], tidx, lambda: na[1]))
    rows.append(case("a.view(16) (4x4)", lambda: a.view(16), tview, lambda: na.reshape(16)))
    rows.extend(broadcast_rows())

    n = 1 << 24
    x, y = ec.rand(n), ec.rand(n)
    nx, ny = x.numpy(), y.numpy()
    tx, ty = (torch.from_numpy(nx.copy()), torch.from_numpy(ny.copy())) if torch else (None, None)
    rows.append(
        case("add 16M f32", lambda: x + y, (lambda: tx + ty) if torch else None, lambda: nx + ny)
    )
    rows.append(
        case("mul 16M f32", lambda: x * y, (lambda: tx * ty) if torch else None, lambda: nx * ny)
    )
    rows.append(
        case(
            "exp 16M f32",
            lambda: x.exp(),
            (lambda: tx.exp()) if torch else None,
            lambda: np.exp(nx),
        )
    )
    tsig = (lambda: tx.sigmoid()) if torch else None
    rows.append(case("sigmoid 16M f32", lambda: x.sigmoid(), tsig, lambda: 1 / (1 + np.exp(-nx))))
    rows.append(
        case(
            "sum 16M f32", lambda: x.sum(), (lambda: tx.sum()) if torch else None, lambda: nx.sum()
        )
    )

    m = ec.rand(2048, 2048)
    m2 = ec.rand(2048, 2048)
    nm, nm2 = m.numpy(), m2.numpy()
    tm, tm2 = (torch.from_numpy(nm.copy()), torch.from_numpy(nm2.copy())) if torch else (None, None)
    rows.append(
        case(
            "a.T + b 2048^2",
            lambda: m.T + m2,
            (lambda: tm.T + tm2) if torch else None,
            lambda: nm.T + nm2,
        )
    )

    for size in (256, 1024, 2048):
        p, q = ec.rand(size, size), ec.rand(size, size)
        npq, nq = p.numpy(), q.numpy()
        tp, tq = (
            (torch.from_numpy(npq.copy()), torch.from_numpy(nq.copy())) if torch else (None, None)
        )
        rows.append(
            case(
                f"matmul {size}",
                lambda p=p, q=q: p @ q,
                (lambda tp=tp, tq=tq: tp @ tq) if torch else None,
                lambda npq=npq, nq=nq: npq @ nq,
                flops=2 * size**3,
            )
        )

    rows.extend(indexing_rows())

    print(
        f"ember {ec.__version__}, torch {torch.__version__ if torch else 'not installed'}, numpy {np.__version__}; "  # noqa: E501
        f"{ec.get_num_threads()} threads"
    )
    table(
        rows,
        [
            "case",
            "ember",
            "torch",
            "numpy",
            "torch/ember",
            "numpy/ember",
            "best/ember",
            "ember GFLOP/s",
        ],
    )
    print("ratios > 1 mean ember is faster")


# ------------------------------------------- small broadcast ops (per-op cost)


def broadcast_rows():
    """What an MLP's forward and backward do besides GEMMs, on 64x256 float32:
    a bias add (broadcast), a product with an expanded operand, and `where`."""

    def fns(ones, broadcast_to, where):
        x, bias = ones((64, 256)), ones((256,))
        col = broadcast_to(ones((64, 1)), (64, 256))
        mask = x > 0.5
        return [lambda: x + bias, lambda: x * col, lambda: where(mask, x, x)]

    e = fns(ec.ones, ec.broadcast_to, ec.where)
    t = fns(torch.ones, torch.broadcast_to, torch.where) if torch else [None] * 3
    n = fns(lambda s: np.ones(s, np.float32), np.broadcast_to, np.where)
    names = ["x + bias (64x256 + 256)", "x * expanded (64x1 -> 64x256)", "where (64x256)"]
    return [case(name, *fs) for name, *fs in zip(names, e, t, n)]


# ---------------------------------------------------------- indexing and sorting


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


# ------------------------------------------ NN kernels: convolution and pooling
# (issue 5).  Targets on the 2-core machine: conv2d forward+backward
# (batch 32, 64 -> 64 channels, 32x32, 3x3, padding 1) within 1.25x of
# PyTorch's time; depthwise conv2d and max_pool2d forward+backward at least as
# fast as PyTorch.  These calls take tens of milliseconds on a shared machine,
# so ember and PyTorch are timed alternately (one call each per round) and the
# medians compared: load that comes and goes hits both alike.


def _alternating(ember_fn, torch_fn, rounds=15):
    ember_fn(), torch_fn()
    te, tt = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        ember_fn()
        te.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch_fn()
        tt.append(time.perf_counter() - t0)
    return statistics.median(te), statistics.median(tt)


def _nn_conv_cases(F, x, w, b, wd, g_full, g_half):
    """(name, call) pairs, the same code for ember and torch (F: the functional
    namespace; x, w, b, wd require grad)."""
    xd, wdd = x.detach(), wd.detach()
    return [
        ("conv2d 3x3 64->64 fwd", lambda: F.conv2d(xd, w.detach(), b.detach(), padding=1)),
        ("conv2d 3x3 64->64 fwd+bwd", lambda: F.conv2d(x, w, b, padding=1).backward(g_full)),
        ("depthwise 3x3 fwd", lambda: F.conv2d(xd, wdd, None, padding=1, groups=64)),
        (
            "depthwise 3x3 fwd+bwd",
            lambda: F.conv2d(x, wd, None, padding=1, groups=64).backward(g_full),
        ),
        ("max_pool2d 2x2 fwd", lambda: F.max_pool2d(xd, 2)),
        ("max_pool2d 2x2 fwd+bwd", lambda: F.max_pool2d(x, 2).backward(g_half)),
    ]


def _cpu_time(fn, rounds=5):
    """Median CPU time of fn() (all threads of this process): on a loaded machine
    it moves far less than wall time, which counts time spent descheduled."""
    fn()
    samples = []
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        samples.append(time.process_time() - t0)
    return statistics.median(samples)


def nn_conv_kernels():
    import ember_autograd  # noqa: F401 - backward()

    rng = np.random.default_rng(0)
    arrays = (
        rng.standard_normal((32, 64, 32, 32), dtype=np.float32),
        rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05,
        rng.standard_normal(64, dtype=np.float32),
        rng.standard_normal((64, 1, 3, 3), dtype=np.float32),
    )

    def cases(lib, F):
        t = [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]
        return _nn_conv_cases(F, *t, lib.ones(32, 64, 32, 32), lib.ones(32, 64, 16, 16))

    ember_cases = cases(ec, ec)
    if torch is not None:
        torch_cases = cases(torch, torch.nn.functional)
    else:
        torch_cases = [(n, None) for n, _ in ember_cases]
    rows = []
    for (name, e_call), (_, t_call) in zip(ember_cases, torch_cases):
        if t_call is None:
            rows.append([name, fmt_time(median_time(e_call)), "-", "-"])
            continue
        te, tt = _alternating(e_call, t_call)
        rows.append([name, fmt_time(te), fmt_time(tt), f"{te / tt:.2f}"])
    print(
        "\nNN kernels: convolution and pooling (batch 32, 64 channels, 32x32 float32); "
        f"{ec.get_num_threads()} threads"
    )
    table(rows, ["case", "ember", "torch", "ember/torch time"])
    print(
        "ember/torch time < 1 means ember is faster (targets: conv2d fwd+bwd <= 1.25, "
        "depthwise and max_pool2d fwd+bwd <= 1.0)"
    )
    if torch is None:
        return
    # the same cases on one thread each, by CPU time: how much work each does
    threads = ec.get_num_threads(), torch.get_num_threads()
    ec.set_num_threads(1)
    torch.set_num_threads(1)
    try:
        rows = []
        for (name, e_call), (_, t_call) in zip(ember_cases, torch_cases):
            ce, ct = _cpu_time(e_call), _cpu_time(t_call)
            rows.append([name, fmt_time(ce), fmt_time(ct), f"{ce / ct:.2f}"])
    finally:
        ec.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])
    print("\nthe same on 1 thread each, CPU time per call")
    table(rows, ["case", "ember cpu", "torch cpu", "ember/torch cpu"])


# ------------------------------------------------------------------------
# NN kernels: softmax, norms, losses, embedding, RNN cells (issue 5, part 2).
# Forward + backward through autograd, as a training step runs them.
# Targets: at least as fast as PyTorch (torch/ember >= 1).
# `python benchmarks/ops.py nn [THREADS]` runs this section alone.


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
    both(
        "softmax fwd+bwd 512x1000",
        lambda: ag.grad(ec.softmax(x, 1), [x], g),
        lambda: torch.autograd.grad(torch.softmax(tx, 1), [tx], tg),
    )
    target = np.random.default_rng(2).integers(0, 1000, 512)
    et, tt = ec.from_numpy(target), (torch.from_numpy(target) if torch else None)
    both(
        "cross_entropy fwd+bwd 512x1000",
        lambda: ag.grad(F.cross_entropy(x, et), [x]),
        lambda: torch.autograd.grad(tF.cross_entropy(tx, tt), [tx]),
    )
    both(
        "cross_entropy fwd 512x1000",
        lambda: F.cross_entropy(x.detach(), et),
        lambda: tF.cross_entropy(tx.detach(), tt),
    )

    # layer norm over 1024 features of 4096 rows
    x, tx = _pair((4096, 1024))
    g, tg = _pair((4096, 1024), requires_grad=False, seed=1)
    w, tw = _pair((1024,), seed=2)
    b, tb = _pair((1024,), seed=3)
    both(
        "layer_norm fwd+bwd 4096x1024",
        lambda: ag.grad(F.layer_norm(x, (1024,), w, b), [x, w, b], g),
        lambda: torch.autograd.grad(tF.layer_norm(tx, (1024,), tw, tb), [tx, tw, tb], tg),
    )

    # batch norm (training) of a conv activation: 32 x 64 x 32 x 32
    x, tx = _pair((32, 64, 32, 32))
    g, tg = _pair((32, 64, 32, 32), requires_grad=False, seed=1)
    w, tw = _pair((64,), seed=2)
    b, tb = _pair((64,), seed=3)
    rm, rv = ec.zeros(64), ec.ones(64)
    trm, trv = (torch.zeros(64), torch.ones(64)) if torch else (None, None)
    both(
        "batch_norm fwd+bwd 32x64x32x32",
        lambda: ag.grad(F.batch_norm(x, rm, rv, w, b, True), [x, w, b], g),
        lambda: torch.autograd.grad(tF.batch_norm(tx, trm, trv, tw, tb, True), [tx, tw, tb], tg),
    )

    # embedding: a 10k x 256 table, 64 x 128 lookups
    w, tw = _pair((10000, 256))
    idx = np.random.default_rng(4).integers(0, 10000, (64, 128))
    ei, ti = ec.from_numpy(idx), (torch.from_numpy(idx) if torch else None)
    g, tg = _pair((64, 128, 256), requires_grad=False, seed=1)
    both(
        "embedding fwd+bwd 10k x 256, 8192 ids",
        lambda: ag.grad(F.embedding(ei, w), [w], g),
        lambda: torch.autograd.grad(tF.embedding(ti, tw), [tw], tg),
    )

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
    both(
        "sdpa causal fwd+bwd 8x8x128x64",
        lambda: ag.grad(sdpa(q, k, v, is_causal=True).sum(), [q, k, v]),
        lambda: torch.autograd.grad(tsdpa(tq, tk, tv, is_causal=True).sum(), [tq, tk, tv]),
    )

    print(f"NN kernels: softmax, norms, losses, embedding; {ec.get_num_threads()} threads")
    table(rows, ["case", "ember", "torch", "torch/ember"])
    print("ratios > 1 mean ember is faster")


# ----------------- nn extras: fractional pooling, anti-aliased resizing, Adafactor


def nn_extras_main():
    """Fractional max pooling, anti-aliased resizing, adaptive softmax, Adafactor."""
    import ember_autograd as ag
    import ember_nn
    import ember_nn.functional as F

    tF = torch.nn.functional if torch else None
    rows = []

    def both(name, ember_step, torch_step):
        rows.append(nn_case(name, ember_step, torch_step if torch else None))

    x, tx = _pair((16, 32, 64, 64))
    u = np.random.default_rng(5).random((16, 32, 2)).astype(np.float32)
    eu, tu = ec.from_numpy(u), (torch.from_numpy(u) if torch else None)
    both(
        "fractional_max_pool2d k3 64->32 fwd+bwd 16x32",
        lambda: ag.grad(F.fractional_max_pool2d(x, 3, 32, _random_samples=eu).sum(), [x]),
        lambda: torch.autograd.grad(
            tF.fractional_max_pool2d(tx, 3, 32, _random_samples=tu).sum(), [tx]
        ),
    )
    img, timg = _pair((8, 3, 256, 256))
    for mode in ("bilinear", "bicubic"):
        both(
            f"interpolate {mode} antialias 256->100 fwd+bwd 8x3",
            lambda mode=mode: ag.grad(
                F.interpolate(img, size=100, mode=mode, antialias=True).sum(), [img]
            ),
            lambda mode=mode: torch.autograd.grad(
                tF.interpolate(timg, size=100, mode=mode, antialias=True).sum(), [timg]
            ),
        )
    h, th = _pair((512, 256))
    target = np.random.default_rng(6).integers(0, 20000, 512)
    et, tt = ec.from_numpy(target), (torch.from_numpy(target) if torch else None)
    asm = ember_nn.AdaptiveLogSoftmaxWithLoss(256, 20000, [2000, 10000])
    tasm = torch.nn.AdaptiveLogSoftmaxWithLoss(256, 20000, [2000, 10000]) if torch else None
    both(
        "AdaptiveLogSoftmaxWithLoss fwd+bwd 512x256, 20k",
        lambda: ag.grad(asm(h, et).loss, [h]),
        lambda: torch.autograd.grad(tasm(th, tt).loss, [th]),
    )
    w, tw = _pair((1024, 1024))
    gw, tgw = _pair((1024, 1024), requires_grad=False, seed=1)
    w.grad, opt = gw, ember_nn.optim.Adafactor([w])
    if torch:
        tw.grad, topt = tgw, torch.optim.Adafactor([tw])
    both("Adafactor step 1024x1024", opt.step, topt.step if torch else None)

    print(f"nn extras; {ec.get_num_threads()} threads")
    table(rows, ["case", "ember", "torch", "torch/ember"])
    print("ratios > 1 mean ember is faster")


# `python benchmarks/ops.py [core|conv|nn] [THREADS]`: one section, or all of them.
SECTIONS = {"core": lambda: main(), "conv": lambda: nn_conv_kernels(), "nn": lambda: nn_main()}
SECTIONS["extras"] = lambda: nn_extras_main()

if __name__ == "__main__":
    chosen = [a for a in sys.argv[1:] if a in SECTIONS] or list(SECTIONS)
    threads = [int(a) for a in sys.argv[1:] if a.isdigit()]
    if threads:
        ec.set_num_threads(threads[0])
        if torch:
            torch.set_num_threads(threads[0])
    for name in chosen:
        SECTIONS[name]()
