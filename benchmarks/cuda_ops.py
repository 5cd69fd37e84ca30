"""CUDA op benchmarks: ember vs PyTorch on the same GPU, in one run (issue 15).

    python benchmarks/cuda_ops.py [--json PATH] [--only SUBSTR,...] [--reps N] [--strict]

GPU times are medians of CUDA-event timings (warm-up first; each sample times a
loop of calls lasting ~10 ms; ember and PyTorch alternate in rounds so that
clock and load changes hit both alike).  The table gives both times, the ratio
torch/ember (above 1: ember is faster), each side's throughput, and the issue's
target with whether ember meets it:

  - add, mul of 64M float32 and bfloat16: >= 90% of the device-to-device copy
    bandwidth measured in the same run (PyTorch's `dst.copy_(src)`);
  - sum of 64M float32, sum over each dim of 4096x4096, softmax over the rows of
    4096x4096, transpose-copy of 8192x8192: >= 0.9x PyTorch's speed;
  - matmul 4096x4096 float32 (TF32 off, on) and bfloat16, bmm 64x512x512:
    >= 0.95x PyTorch;
  - pinned host<->device copies of 256 MB: >= 0.9x PyTorch's bandwidth;
  - host cost per op (10,000 `a + b` on 4x4 CUDA tensors, with and without
    requires_grad, then one synchronize): at most PyTorch's;
  - first-use NVRTC compile of the kernel set in a fresh process: < 60 s cold
    (empty EMBER_CACHE_DIR), < 1 s warm (same cache).

Every case is independent: one that fails (an op not on CUDA yet) prints its
error and the others go on.  Without a GPU it says CUDA is unavailable and exits
0.  Exit status 1 when a GPU is there (PyTorch sees one, or EMBER_EXPECT_CUDA=1)
but ember cannot use it or one of ember's cases failed; missed targets only
count with --strict.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
from _harness import fmt_time, table, try_import  # noqa: E402

N64M = 64 * 1024 * 1024


def load_ember():
    """The umbrella (`import ember as torch`) if installed, else ember_core."""
    try:
        import ember as m
    except Exception:  # noqa: BLE001 - the umbrella is optional here
        import ember_core as m
    return m


def cuda_reason(m, label):
    """None if library ``m`` can use a CUDA device, else why not."""
    if m is None:
        return f"{label} is not installed"
    cuda = getattr(m, "cuda", None)
    if cuda is None or not hasattr(cuda, "is_available"):
        return f"{label} has no cuda module"
    try:
        if cuda.is_available():
            return None
    except Exception as e:  # noqa: BLE001
        return f"{label}.cuda.is_available() raised {type(e).__name__}: {e}"
    why = f"{label}.cuda.is_available() is False"
    try:
        m.empty(1, device="cuda")
    except Exception as e:  # noqa: BLE001
        why += f" ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
    return why


# --- timing ------------------------------------------------------------------------


def gpu_time(m, fn, *, reps, target_ms=10.0, warmup=3):
    """Median seconds per call of fn() on the GPU, from CUDA events."""
    for _ in range(warmup):
        fn()
    m.cuda.synchronize()
    start = m.cuda.Event(enable_timing=True)
    end = m.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end), 1e-3)  # ms
    inner = max(1, min(2000, int(target_ms / one)))
    samples = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / inner / 1e3)
    return statistics.median(samples)


def host_time(m, fn, *, n=10_000, reps=5):
    """Median seconds per call of fn() enqueued n times, then one synchronize."""
    for _ in range(200):
        fn()
    m.cuda.synchronize()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        m.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


# --- cases: each setup(m) returns the function to time, on library m ---------------


def _dt(m, name):
    return getattr(m, name)


def setup_copy(m, dtype="float32"):
    src = m.rand(N64M, device="cuda", dtype=_dt(m, dtype))
    dst = m.empty_like(src)
    return lambda: dst.copy_(src)


def setup_binary(m, op, dtype):
    a = m.rand(N64M, device="cuda", dtype=_dt(m, dtype))
    b = m.rand(N64M, device="cuda", dtype=_dt(m, dtype))
    if op == "add":
        return lambda: a + b
    return lambda: a * b


def setup_sum_all(m):
    x = m.rand(N64M, device="cuda")
    return lambda: x.sum()


def setup_sum_dim(m, dim):
    x = m.rand(4096, 4096, device="cuda")
    return lambda: x.sum(dim)


def setup_softmax(m):
    x = m.randn(4096, 4096, device="cuda")
    return lambda: m.softmax(x, 1)


def setup_transpose(m):
    x = m.rand(8192, 8192, device="cuda")
    return lambda: x.t().contiguous()


def setup_matmul(m, dtype, tf32=False):
    m.backends.cuda.matmul.allow_tf32 = tf32
    a = m.randn(4096, 4096, device="cuda", dtype=_dt(m, dtype))
    b = m.randn(4096, 4096, device="cuda", dtype=_dt(m, dtype))
    return lambda: a @ b


def setup_bmm(m, dtype="float32"):
    m.backends.cuda.matmul.allow_tf32 = False
    a = m.randn(64, 512, 512, device="cuda", dtype=_dt(m, dtype))
    b = m.randn(64, 512, 512, device="cuda", dtype=_dt(m, dtype))
    return lambda: m.bmm(a, b)


def setup_pinned(m, direction):
    n = 64 * 1024 * 1024  # 256 MB of float32
    h = m.empty(n, dtype=m.float32, pin_memory=True)
    if hasattr(h, "is_pinned") and not h.is_pinned():
        raise RuntimeError("empty(pin_memory=True) returned memory that is not pinned")
    d = m.empty(n, dtype=m.float32, device="cuda")
    if direction == "h2d":
        return lambda: d.copy_(h, non_blocking=True)
    return lambda: h.copy_(d, non_blocking=True)


def setup_tiny_add(m, requires_grad):
    a = m.ones(4, 4, device="cuda", requires_grad=requires_grad)
    b = m.ones(4, 4, device="cuda")
    return lambda: a + b


def setup_sdpa(m, backward):
    # GPT-2-small-like attention: batch 8, 12 heads, 1024 tokens, head dim 64,
    # bf16, causal (ember: the fused kernel, csrc/cuda/attention.cuh)
    F = m.nn.functional
    shape = (8, 12, 1024, 64)
    q, k, v = (m.randn(*shape, device="cuda", dtype=m.bfloat16) for _ in range(3))
    if not backward:
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for t in (q, k, v):
        t.requires_grad_(True)
    go = m.randn(*shape, device="cuda", dtype=m.bfloat16)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(go)


def setup_grid_sample(m, backward):
    F = m.nn.functional
    x = m.randn(8, 32, 128, 128, device="cuda", requires_grad=backward)
    g = (m.rand(8, 128, 128, 2, device="cuda") * 2.2 - 1.1).requires_grad_(backward)
    if not backward:
        return lambda: F.grid_sample(x, g, align_corners=False)
    go = m.randn(8, 32, 128, 128, device="cuda")
    return lambda: F.grid_sample(x, g, align_corners=False).backward(go)


def setup_ctc(m):
    F = m.nn.functional
    T, N, C, S = 200, 32, 40, 50
    lp = m.randn(T, N, C, device="cuda").log_softmax(2).detach().requires_grad_(True)
    tg = m.randint(1, C, (N, S), device="cuda")
    il, tl = m.full((N,), T, dtype=m.int64), m.full((N,), S, dtype=m.int64)
    return lambda: F.ctc_loss(lp, tg, il, tl).backward()


GB = 1e9
TFLOP = 1e12


class Case:
    def __init__(self, name, setup, *, kind="gpu", nbytes=None, flops=None, target=None):
        self.name = name
        self.setup = setup
        self.kind = kind  # gpu | host
        self.nbytes = nbytes
        self.flops = flops
        # ("copy_pct", 0.9) | ("ratio", r): torch_time / ember_time >= r
        self.target = target


CASES = [
    Case("copy d2d 64M f32", lambda m: setup_copy(m), nbytes=2 * N64M * 4),
    Case("copy d2d 64M bf16", lambda m: setup_copy(m, "bfloat16"), nbytes=2 * N64M * 2),
    Case(
        "add 64M f32",
        lambda m: setup_binary(m, "add", "float32"),
        nbytes=3 * N64M * 4,
        target=("copy_pct", 0.9),
    ),
    Case(
        "mul 64M f32",
        lambda m: setup_binary(m, "mul", "float32"),
        nbytes=3 * N64M * 4,
        target=("copy_pct", 0.9),
    ),
    Case(
        "add 64M bf16",
        lambda m: setup_binary(m, "add", "bfloat16"),
        nbytes=3 * N64M * 2,
        target=("copy_pct", 0.9),
    ),
    Case(
        "mul 64M bf16",
        lambda m: setup_binary(m, "mul", "bfloat16"),
        nbytes=3 * N64M * 2,
        target=("copy_pct", 0.9),
    ),
    Case("sum 64M f32", setup_sum_all, nbytes=N64M * 4, target=("ratio", 0.9)),
    Case(
        "sum(0) 4096x4096 f32",
        lambda m: setup_sum_dim(m, 0),
        nbytes=4096 * 4096 * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "sum(1) 4096x4096 f32",
        lambda m: setup_sum_dim(m, 1),
        nbytes=4096 * 4096 * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "softmax(dim=1) 4096x4096 f32",
        setup_softmax,
        nbytes=2 * 4096 * 4096 * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "t().contiguous() 8192x8192 f32",
        setup_transpose,
        nbytes=2 * 8192 * 8192 * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "matmul 4096 f32 (tf32 off)",
        lambda m: setup_matmul(m, "float32", False),
        flops=2 * 4096**3,
        target=("ratio", 0.95),
    ),
    Case(
        "matmul 4096 f32 (tf32 on)",
        lambda m: setup_matmul(m, "float32", True),
        flops=2 * 4096**3,
        target=("ratio", 0.95),
    ),
    Case(
        "matmul 4096 bf16",
        lambda m: setup_matmul(m, "bfloat16"),
        flops=2 * 4096**3,
        target=("ratio", 0.95),
    ),
    Case(
        "bmm 64x512x512 f32",
        lambda m: setup_bmm(m),
        flops=2 * 64 * 512**3,
        target=("ratio", 0.95),
    ),
    # issue 16's kernels without targets yet (measured as ratios to PyTorch)
    Case(
        "sdpa causal bf16 8x12x1024x64",
        lambda m: setup_sdpa(m, False),
        flops=2 * 8 * 12 * 1024 * 1024 * 64,
    ),
    Case(
        "sdpa causal bf16 8x12x1024x64 fwd+bwd",
        lambda m: setup_sdpa(m, True),
        flops=7 * 8 * 12 * 1024 * 1024 * 64,
    ),
    Case("grid_sample 8x32x128x128", lambda m: setup_grid_sample(m, False)),
    Case("grid_sample 8x32x128x128 fwd+bwd", lambda m: setup_grid_sample(m, True)),
    Case("ctc_loss T200 N32 C40 S50 fwd+bwd", setup_ctc),
    Case(
        "pinned h2d 256MB",
        lambda m: setup_pinned(m, "h2d"),
        nbytes=N64M * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "pinned d2h 256MB",
        lambda m: setup_pinned(m, "d2h"),
        nbytes=N64M * 4,
        target=("ratio", 0.9),
    ),
    Case(
        "host: a + b 4x4 (per op)",
        lambda m: setup_tiny_add(m, False),
        kind="host",
        target=("ratio", 1.0),
    ),
    Case(
        "host: a + b 4x4 requires_grad",
        lambda m: setup_tiny_add(m, True),
        kind="host",
        target=("ratio", 1.0),
    ),
]


def _free(m):
    if m is None:
        return
    try:
        m.cuda.synchronize()
        m.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort between cases
        pass


def measure(case, m, reps):
    """Seconds per call of the case on library m (raises on failure)."""
    tf32 = None
    if hasattr(m, "backends"):
        tf32 = m.backends.cuda.matmul.allow_tf32
    try:
        fn = case.setup(m)
        if case.kind == "host":
            return host_time(m, fn)
        return gpu_time(m, fn, reps=reps)
    finally:
        if tf32 is not None:
            m.backends.cuda.matmul.allow_tf32 = tf32
        fn = None
        _free(m)


def run_case(case, libs, reps, rounds=2):
    """{'ember': seconds or error text, 'torch': ...}: alternating rounds, median."""
    times = {name: [] for name in libs}
    errors = {}
    for _ in range(rounds):
        for name, m in libs.items():
            if m is None or name in errors:
                continue
            try:
                times[name].append(measure(case, m, reps))
            except Exception as e:  # noqa: BLE001 - a failing case reports and moves on
                first = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
                errors[name] = f"{type(e).__name__}: {first}"
                print(f"  [{case.name}] {name} failed:", flush=True)
                traceback.print_exc(limit=4, file=sys.stdout)
    out = {}
    for name in libs:
        if name in errors:
            out[name] = errors[name]
        elif times[name]:
            out[name] = statistics.median(times[name])
        else:
            out[name] = None
    return out


# --- compile time (fresh processes) -------------------------------------------------

COMPILE_SCRIPT = r"""
import concurrent.futures, json, os, sys, time
t0 = time.perf_counter()
import ember_core as ec
t1 = time.perf_counter()
x = ec.ones(16, device="cuda")
ec.cuda.synchronize()
t2 = time.perf_counter()
threads = int(sys.argv[1])
hook = getattr(ec.cuda, "_compile_all", None)
if hook is not None:  # the backend's own "compile the whole kernel set" entry point
    n = hook()
    mode = "compile_all"
else:
    try:  # every compile group the launchers can ask for (the compile test's list)
        from ember_core import _cuda_compile, _cuda_kernels
        groups = _cuda_kernels.all_groups()
        arch = _cuda_compile.arch_of(0)
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda g: _cuda_compile.compile_group(g, arch), groups))
        n, mode = len(groups), f"{len(groups)} groups, {threads} threads"
    except ImportError:  # no kernel list: first use of a spread of ops and dtypes
        n, mode = 0, "workload"
        for dt in [ec.float32, ec.float16, ec.bfloat16, ec.float64, ec.int32, ec.int64,
                   ec.int8, ec.uint8, ec.bool]:
            a = ec.ones(1000, dtype=dt, device="cuda")
            for f in (lambda: a + a, lambda: a * a, lambda: a.sum(), lambda: a.abs(),
                      lambda: a.to(ec.float32), lambda: ec.where(a > 0, a, a)):
                try:
                    f(); n += 1
                except Exception:
                    pass
ec.cuda.synchronize()
t3 = time.perf_counter()
print("COMPILE " + json.dumps({"import_s": t1 - t0, "init_s": t2 - t1, "kernels_s": t3 - t2,
                               "mode": mode, "n": n}))
"""


def compile_times(timeouts=(120, 60)):
    """The kernel set compiled into an empty EMBER_CACHE_DIR (cold, NVRTC on every
    core) and loaded from it (warm, one thread), each in a fresh process."""
    res = {}
    with tempfile.TemporaryDirectory(prefix="ember-kernel-cache-") as cache:
        env = dict(os.environ, EMBER_CACHE_DIR=cache)
        for label, timeout, threads in zip(("cold", "warm"), timeouts, (os.cpu_count(), 1)):
            if label == "warm" and not isinstance(res.get("cold"), dict):
                res[label] = "skipped: the cold compile did not finish"
                continue
            t0 = time.perf_counter()
            try:
                p = subprocess.run(
                    [sys.executable, "-c", COMPILE_SCRIPT, str(threads or 1)],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                res[label] = f"timed out after {timeout}s"
                continue
            wall = time.perf_counter() - t0
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("COMPILE ")]
            if p.returncode != 0 or not line:
                tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
                res[label] = f"exit {p.returncode}: {' | '.join(tail)[:300]}"
                continue
            r = json.loads(line[0][len("COMPILE ") :])
            r["wall_s"] = wall
            res[label] = r
    return res


# --- report ------------------------------------------------------------------------


def _metric(case, t):
    if not isinstance(t, float):
        return "-"
    if case.flops:
        return f"{case.flops / t / TFLOP:.1f} TFLOP/s"
    if case.nbytes:
        return f"{case.nbytes / t / GB:.0f} GB/s"
    return ""


def _fmt(t):
    if t is None:
        return "-"
    if isinstance(t, str):
        return "ERROR"
    return fmt_time(t)


def evaluate(case, res, copy_bw):
    """(target text, met: True/False/None, value) for one case."""
    te, tt = res.get("ember"), res.get("torch")
    if case.target is None:
        return "", None, None
    kind, want = case.target
    if kind == "copy_pct":
        text = f">= {want:.0%} of copy BW"
        if not isinstance(te, float) or not copy_bw:
            return text, None, None
        pct = case.nbytes / te / copy_bw
        return text, pct >= want, f"{pct:.0%} of copy"
    text = f">= {want:g}x torch"
    if not isinstance(te, float) or not isinstance(tt, float):
        return text, None, None
    return text, tt / te >= want, None


def main(argv=None):
    ap = argparse.ArgumentParser(description="ember vs PyTorch on one GPU")
    ap.add_argument("--json", default=None, help="write the results here as JSON")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time case")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)

    E = load_ember()
    torch = try_import("torch")
    e_why = cuda_reason(E, "ember")
    t_why = cuda_reason(torch, "torch")
    expect = os.environ.get("EMBER_EXPECT_CUDA", "") not in ("", "0")
    gpu_here = t_why is None or expect
    device = "-"
    if t_why is None:
        device = torch.cuda.get_device_name(0)
    elif e_why is None:
        device = E.cuda.get_device_name(0)
    report = {
        "device": device,
        "torch": getattr(torch, "__version__", None),
        "ember_cuda": e_why or "available",
        "torch_cuda": t_why or "available",
        "cases": [],
    }
    print(f"GPU: {device}; torch {report['torch']}", flush=True)
    if e_why is not None:
        print(f"ember: CUDA is unavailable: {e_why}", flush=True)
    if t_why is not None:
        print(f"torch: CUDA is unavailable: {t_why}", flush=True)
    if e_why is not None and t_why is not None:
        print("CUDA is unavailable: nothing to benchmark.", flush=True)
        report["note"] = "CUDA is unavailable: nothing benchmarked"
        report["table"] = ""
        _write(args.json, report)
        return 1 if expect else 0

    libs = {"ember": E if e_why is None else None, "torch": torch if t_why is None else None}
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    cases = [c for c in CASES if not only or any(s in c.name for s in only)]
    results = {}
    interrupted = False
    for case in cases:
        t0 = time.perf_counter()
        try:
            results[case.name] = run_case(case, libs, args.reps)
        except KeyboardInterrupt:
            print("interrupted: reporting what was measured", flush=True)
            interrupted = True
            break
        r = results[case.name]
        print(
            f"  {case.name:<32} ember {_fmt(r['ember']):>10}  torch {_fmt(r['torch']):>10}"
            f"  ({time.perf_counter() - t0:.1f}s)",
            flush=True,
        )

    copy_bw = None
    ref = results.get("copy d2d 64M f32", {})
    for lib in ("torch", "ember"):
        if isinstance(ref.get(lib), float):
            copy_bw = 2 * N64M * 4 / ref[lib]  # bytes/s
            break
    rows = []
    ember_failed = []
    missed = []
    for case in cases:
        if case.name not in results:
            continue
        r = results[case.name]
        te, tt = r["ember"], r["torch"]
        ratio = f"{tt / te:.2f}" if isinstance(te, float) and isinstance(tt, float) else "-"
        target, met, extra = evaluate(case, r, copy_bw)
        if isinstance(te, str):
            ember_failed.append(case.name)
        if met is False:
            missed.append(case.name)
        mark = {True: "yes", False: "NO", None: "-" if target else ""}[met]
        rows.append(
            [
                case.name,
                _fmt(te),
                _fmt(tt),
                ratio,
                extra or _metric(case, te),
                _metric(case, tt),
                target,
                mark,
            ]
        )
        report["cases"].append(
            {
                "name": case.name,
                "ember_s": te if isinstance(te, float) else None,
                "torch_s": tt if isinstance(tt, float) else None,
                "ember_error": te if isinstance(te, str) else None,
                "torch_error": tt if isinstance(tt, str) else None,
                "torch_over_ember": (tt / te)
                if isinstance(te, float) and isinstance(tt, float)
                else None,
                "bytes": case.nbytes,
                "flops": case.flops,
                "target": target,
                "met": met,
            }
        )

    if not interrupted and not args.no_compile and (not only or "compile" in only):
        print("  compile: cold and warm first use in fresh processes ...", flush=True)
        if e_why is None:
            try:
                ct = compile_times()
            except KeyboardInterrupt:
                interrupted = True
                ct = {"cold": "interrupted", "warm": "interrupted"}
            except Exception as e:  # noqa: BLE001
                ct = {"cold": f"{type(e).__name__}: {e}", "warm": "-"}
        else:
            ct = {"cold": "ember has no CUDA", "warm": "ember has no CUDA"}
        report["compile"] = ct
        for label, limit in (("cold", 60.0), ("warm", 1.0)):
            r = ct.get(label)
            if isinstance(r, dict):
                secs = r["kernels_s"]
                met = secs < limit
                rows.append(
                    [
                        f"compile {label} ({r['mode']})",
                        fmt_time(secs),
                        "",
                        "",
                        f"import {r['import_s']:.2f}s init {r['init_s']:.2f}s",
                        "",
                        f"< {limit:g} s",
                        "yes" if met else "NO",
                    ]
                )
                if not met:
                    missed.append(f"compile {label}")
            else:
                rows.append([f"compile {label}", "ERROR", "", "", str(r)[:60], "", "", "-"])
                if e_why is None:
                    ember_failed.append(f"compile {label}")

    headers = ["case", "ember", "torch", "torch/ember", "ember", "torch", "target", "met"]
    print()
    table(rows, headers)
    if copy_bw:
        print(f"device-to-device copy bandwidth (reference): {copy_bw / GB:.0f} GB/s")
    if e_why is not None:
        print(f"ember column empty: {e_why}")
    if ember_failed:
        print(f"ember cases that failed: {', '.join(ember_failed)}")
    if missed:
        print(f"targets missed: {', '.join(missed)}")
    report["table"] = _table_text(rows, headers)
    report["copy_bw_GBps"] = copy_bw / GB if copy_bw else None
    report["ember_failed"] = ember_failed
    report["targets_missed"] = missed
    if e_why is not None:
        report["note"] = f"ember: CUDA is unavailable: {e_why}"
    _write(args.json, report)
    if interrupted:
        return 1
    if gpu_here and (e_why is not None or ember_failed):
        return 1
    if args.strict and missed:
        return 1
    return 0


def _table_text(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("-" * len(lines[0]))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _write(path, report):
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=1, default=str)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
