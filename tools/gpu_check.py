"""`make gpu-check`: build ember here and run its CUDA tests and benchmark, in one go.

    python3 tools/gpu_check.py [--out DIR] [--budget SECONDS] [--only STEP,...]

Made for a GPU machine without network access and without a virtual
environment: `python3` there has numpy, pytest, hypothesis, torch (CUDA), cupy
and NVIDIA's CUDA wheels, but not cffi, pycparser, scipy-openblas32 or ducc0, which
ember needs to build; `make gpu-wheels` (run where PyPI is reachable) puts their
wheels into .gpu/wheels/, which travels with the checkout.  The steps:

  wheels   install .gpu/wheels/*.whl into a private directory (--target)
  build    build every ember package from this checkout (pip wheel, the C ones
           in parallel) and install them into the same directory
  env      GPU (nvidia-smi), driver, Python, torch, cupy versions
  kernels  compile ember's whole CUDA kernel set with NVRTC on every core into the
           tests' kernel cache (EMBER_CACHE_DIR), so that tests do not pay for
           first-use compiles one by one; reports the time and any compile error
  tests    every test marked `cuda` in every package (`pytest -m cuda`, which
           includes the GPU parity tests marked `cuda and parity`), one pytest
           per package
  bench    benchmarks/cuda_ops.py (ember vs PyTorch on the same GPU)

Every step has its own timeout (cut to fit the whole run in --budget seconds,
450 by default), runs even if an earlier one failed (a failed build stops only
the steps that need it), and is reported in the summary.  A pytest that times
out is interrupted with SIGINT, so it still prints what it got.  Logs and
summary go to $OUT if set (the remote runner returns that folder), else
gpu-check-logs/: summary.txt, console.log, build.log, env.txt, tests.log,
bench.log, bench.json (7 files).  Exit status 0 only if every step passed.

Where nvidia-smi lists a GPU, EMBER_EXPECT_CUDA=1 is set for the tests, so a
CUDA test fails (instead of skipping) when ember cannot use the GPU.  Without a
GPU (a dry run of the plumbing) the CUDA tests skip and the benchmark says CUDA
is unavailable.
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
WHEEL_DIR = ROOT / ".gpu" / "wheels"
# Every package under packages/ (a new one is picked up by itself); the ones with
# a csrc/ have C code (every package has a setup.py: Note [One version]).  Build
# order does not matter (each is built alone, --no-deps; tensor-core's stubs
# import the allocator from packages/allocator/build, built long before
# tensor-core's C is compiled); tests run tensor-core and autograd first.
_ALL = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
C_PACKAGES = [p for p in _ALL if (ROOT / "packages" / p / "csrc").is_dir()]
C_PACKAGES.sort(key=lambda p: p != "tensor-core")  # the longest build starts first
PY_PACKAGES = [p for p in _ALL if p not in C_PACKAGES]
_FIRST = ["tensor-core", "autograd"]
TEST_PACKAGES = [p for p in _FIRST if p in _ALL] + [p for p in _ALL if p not in _FIRST]
# Most seconds each step may take, and the least it is left when time runs short.
STEP_MAX = {"wheels": 60, "build": 200, "env": 40, "kernels": 90, "bench": 150}
TEST_MAX = {"tensor-core": 180, "autograd": 60, "allocator": 90}
TEST_MAX_DEFAULT = 45
STEP_MIN = {"wheels": 20, "build": 60, "env": 10, "kernels": 15, "bench": 60}
TEST_MIN = 15

_print_lock = threading.Lock()
_console = None
T0 = time.monotonic()


def say(msg=""):
    line = f"[gpu-check {time.monotonic() - T0:6.1f}s] {msg}" if msg else ""
    with _print_lock:
        print(line, flush=True)
        if _console:
            _console.write(line + "\n")
            _console.flush()


class Budget:
    def __init__(self, total):
        self.total = total
        self.start = time.monotonic()

    def left(self):
        return self.total - (time.monotonic() - self.start)

    def timeout(self, want, reserve_after):
        """Seconds for a step wanting ``want``, leaving ``reserve_after`` for later."""
        return max(5.0, min(want, self.left() - reserve_after))


def run(cmd, *, log, timeout, env=None, cwd=None, echo=False, header=None):
    """Run ``cmd``, its output appended to ``log`` (and echoed), with a timeout.

    On timeout the process group gets SIGINT (pytest and the benchmark print what
    they have), then SIGKILL 20 s later.  Returns (exit code, seconds, timed_out)."""
    t0 = time.monotonic()
    with open(log, "a", encoding="utf-8", errors="replace") as f:
        f.write(f"\n===== {header or ''} $ {' '.join(map(str, cmd))}  (cwd {cwd or ROOT})\n")
        f.flush()
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=cwd or ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = []

        def on_timeout():
            timed_out.append(True)
            say(f"TIMEOUT after {timeout:.0f}s: interrupting {header or cmd[0]}")
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                return
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, on_timeout)
        timer.start()
        try:
            for raw in proc.stdout:
                text = raw.decode("utf-8", "replace")
                f.write(text)
                f.flush()
                if echo:
                    with _print_lock:
                        sys.stdout.write(text)
                        sys.stdout.flush()
                        if _console:
                            _console.write(text)
            rc = proc.wait()
        finally:
            timer.cancel()
        if timed_out:
            f.write(f"\n===== TIMED OUT after {timeout:.0f}s\n")
    return rc, time.monotonic() - t0, bool(timed_out)


class Step:
    def __init__(self, name):
        self.name = name
        self.status = "not run"
        self.seconds = 0.0
        self.detail = ""

    def set(self, ok, seconds, detail="", timed_out=False):
        self.status = "ok" if ok else ("TIMEOUT" if timed_out else "FAILED")
        self.seconds = seconds
        self.detail = detail


def gpu_present():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "nvidia-smi not found"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"nvidia-smi -L failed: {e}"
    gpus = [ln for ln in out.stdout.splitlines() if ln.startswith("GPU ")]
    return bool(gpus), (out.stdout.strip() or out.stderr.strip())


def step_wheels(site, log, budget, step, python):
    wheels = sorted(WHEEL_DIR.glob("*.whl"))
    t0 = time.monotonic()
    if not wheels:
        step.set(False, 0.0, f"no wheels in {WHEEL_DIR.relative_to(ROOT)} (run `make gpu-wheels`)")
        return False
    have = {}
    for mod in ("cffi", "pycparser", "scipy_openblas32", "setuptools", "wheel", "numpy"):
        probe = subprocess.run(
            [python, "-c", f"import {mod} as m; print(getattr(m, '__version__', '?'))"],
            capture_output=True,
            text=True,
            env=_clean_env(),
        )
        have[mod] = probe.stdout.strip() if probe.returncode == 0 else "missing"
    say("this python has: " + ", ".join(f"{k} {v}" for k, v in have.items()))
    cmd = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    cmd += ["--disable-pip-version-check", "--target", site, *wheels]
    rc, secs, to = run(cmd, log=log, timeout=budget, header="wheels")
    names = ", ".join(w.name.split("-")[0] + " " + w.name.split("-")[1] for w in wheels)
    step.set(rc == 0, time.monotonic() - t0, f"{names} (machine had: {have})", to)
    return rc == 0


def _clean_env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def step_build(site, env, log, timeout, step, python):
    t0 = time.monotonic()
    wheelhouse = pathlib.Path(site).parent / "wheelhouse"
    shutil.rmtree(wheelhouse, ignore_errors=True)
    wheelhouse.mkdir(parents=True)
    cmd = [python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    cmd += ["--disable-pip-version-check", "-w", wheelhouse]
    results = {}
    deadline = time.monotonic() + timeout

    def build(pkg):
        left = max(5.0, deadline - time.monotonic())
        return pkg, run(
            [*cmd, ROOT / "packages" / pkg],
            log=wheelhouse.parent / f"build-{pkg}.log",
            timeout=left,
            env=env,
            header=f"build {pkg}",
        )

    packages = C_PACKAGES + PY_PACKAGES
    with concurrent.futures.ThreadPoolExecutor(len(packages)) as pool:
        for pkg, (rc, secs, to) in pool.map(build, packages):
            results[pkg] = (rc, secs, to)
            say(f"  built {pkg}: {'ok' if rc == 0 else 'FAILED'} in {secs:.1f}s")
    # one build.log, package by package
    with open(log, "a", encoding="utf-8") as out:
        for pkg in packages:
            part = wheelhouse.parent / f"build-{pkg}.log"
            if part.exists():
                out.write(part.read_text(errors="replace"))
                part.unlink()
    failed = [p for p, (rc, _, _) in results.items() if rc != 0]
    build_secs = time.monotonic() - t0
    if failed:
        step.set(False, build_secs, f"build failed: {', '.join(failed)} (see build.log)")
        return False
    inst = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    inst += ["--disable-pip-version-check", "--upgrade", "--target", site]
    inst += sorted(wheelhouse.glob("*.whl"))
    left = max(5.0, deadline - time.monotonic())
    rc, _, to = run(inst, log=log, timeout=left, env=env, header="install ember wheels")
    secs = time.monotonic() - t0
    per = ", ".join(f"{p} {results[p][1]:.0f}s" for p in packages)
    step.set(rc == 0, secs, f"build + install {secs:.1f}s ({per})", to)
    say(f"build time: {secs:.1f}s")
    return rc == 0


ENV_SCRIPT = r"""
import platform, sys
print("python", sys.version.split()[0], platform.platform())
for name in ("numpy", "pytest", "hypothesis", "cffi", "scipy_openblas32", "cupy",
             "cuda.pathfinder", "ember_core", "ember"):
    try:
        m = __import__(name, fromlist=["_"])
        print(name, getattr(m, "__version__", "?"), getattr(m, "__file__", ""))
    except Exception as e:
        print(name, "unavailable:", type(e).__name__, e)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "available", torch.cuda.is_available())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print("torch device", p.name, "sm", f"{p.major}.{p.minor}",
              "memory", p.total_memory, "SMs", p.multi_processor_count)
except Exception as e:
    print("torch unavailable:", type(e).__name__, e)
try:
    import ember_core as ec
    cuda = getattr(ec, "cuda", None)
    if cuda is None:
        print("ember_core.cuda: missing (no CUDA backend in this build)")
    else:
        ok = cuda.is_available()
        print("ember_core.cuda.is_available()", ok)
        if ok:
            print("ember device", cuda.get_device_name(0), cuda.get_device_capability(0))
        else:
            try:
                ec.empty(1, device="cuda")
            except Exception as e:
                print("ember says:", type(e).__name__, e)
except Exception as e:
    print("ember_core import failed:", type(e).__name__, e)
"""


def step_env(env, log, timeout, step, python, info):
    t0 = time.monotonic()
    lines = []
    smi = shutil.which("nvidia-smi")
    if smi:
        q = "name,driver_version,memory.total,compute_cap"
        try:
            out = subprocess.run(
                [smi, f"--query-gpu={q}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            info["gpus"] = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
            full = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
            m = re.search(r"CUDA Version:\s*([\d.]+)", full)
            info["driver_cuda"] = m.group(1) if m else "?"
            lines += ["$ nvidia-smi", full]
        except (OSError, subprocess.TimeoutExpired) as e:
            info["gpus"] = [f"nvidia-smi failed: {e}"]
    else:
        info["gpus"] = []
        lines.append("nvidia-smi: not found (no NVIDIA driver on this machine)")
    with open(log, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    rc, _, to = run([python, "-c", ENV_SCRIPT], log=log, timeout=timeout, env=env, header="env")
    text = pathlib.Path(log).read_text(errors="replace")
    for key, pat in (
        ("python", r"^python (\S+)"),
        ("torch", r"^torch (\S+ cuda \S+ available \S+)"),
        ("cupy", r"^cupy (.*)$"),
        ("ember_cuda", r"^ember_core\.cuda.*$"),
        ("ember_says", r"^ember says: .*$"),
    ):
        m = re.search(pat, text, re.M)
        if m:
            info[key] = m.group(1) if m.groups() else m.group(0)
    step.set(rc == 0, time.monotonic() - t0, "; ".join(info.get("gpus", [])) or "no GPU", to)


KERNELS_SCRIPT = r"""
import concurrent.futures, os, sys, time
import ember_core as ec
if not ec.cuda.is_available():
    print("KERNELS skipped: ember cannot use CUDA here")
    sys.exit(0)
from ember_core import _cuda_compile
arch = _cuda_compile.arch_of(0)
threads = os.cpu_count() or 4
t0 = time.perf_counter()
n, failed = ec.cuda._compile_all(threads)
secs = time.perf_counter() - t0
for name, err in failed[:20]:
    print(f"COMPILE ERROR {name}: {err[:2000]}")
print(f"KERNELS {n}/{n + len(failed)} kernels for sm_{arch} in {secs:.1f}s "
      f"({threads} threads, NVRTC {_cuda_compile.nvrtc_version()}), cache "
      f"{_cuda_compile.cache_dir()}")
sys.exit(1 if failed else 0)
"""


def step_kernels(env, log, timeout, step, python):
    t0 = time.monotonic()
    rc, _, to = run(
        [python, "-c", KERNELS_SCRIPT],
        log=log,
        timeout=timeout,
        env=env,
        echo=True,
        header="kernels",
    )
    text = pathlib.Path(log).read_text(errors="replace")
    m = re.findall(r"^KERNELS (.*)$", text, re.M)
    step.set(rc == 0 and not to, time.monotonic() - t0, m[-1] if m else f"exit {rc}", to)


def step_tests(pkg, env, log, timeout, step, python, results_file):
    env = dict(env)
    env["EMBER_GPU_CHECK_RESULTS"] = str(results_file)
    env["EMBER_GPU_CHECK_PACKAGE"] = pkg
    cmd = [python, "-m", "pytest", "-m", "cuda", "-p", "gpu_check_plugin"]
    cmd += ["-p", "no:cacheprovider", "-q", "-rfEX", "--tb=short", "--durations=15"]
    cmd += ["--continue-on-collection-errors", "-o", "faulthandler_timeout=120"]
    cmd += ["-W", "ignore::pytest.PytestUnknownMarkWarning"]
    rc, secs, to = run(
        cmd,
        log=log,
        timeout=timeout,
        env=env,
        cwd=ROOT / "packages" / pkg,
        echo=True,
        header=f"tests {pkg}",
    )
    # 5: no tests collected (a package without CUDA tests yet)
    ok = rc in (0, 5) and not to
    step.set(ok, secs, f"pytest exit {rc}" + (" (no cuda tests)" if rc == 5 else ""), to)


def step_bench(env, log, timeout, step, python, out_dir):
    json_path = out_dir / "bench.json"
    cmd = [python, "-u", ROOT / "benchmarks" / "cuda_ops.py", "--json", json_path]
    rc, secs, to = run(cmd, log=log, timeout=timeout, env=env, echo=True, header="bench")
    step.set(rc == 0 and not to, secs, f"exit {rc}", to)


def count_results(results_file):
    """Final outcome per test id (a teardown error outranks a pass)."""
    rank = {"collect-error": 6, "error": 5, "failed": 4, "xpassed": 3, "passed": 2}
    rank.update({"xfailed": 1, "skipped": 0})
    final = {}
    if results_file.exists():
        for line in results_file.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            key = (r["package"], r["id"])
            if key not in final or rank[r["outcome"]] > rank[final[key]["outcome"]]:
                final[key] = r
    return list(final.values())


def summarize(records, steps, info, out_dir, bench_json, args, final=True):
    lines = []
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"ember gpu-check, {now}, checkout {info.get('commit', '?')}")
    gpus = info.get("gpus") or ["none (nvidia-smi not found)"]
    lines.append(f"GPU: {'; '.join(gpus)}; driver CUDA {info.get('driver_cuda', '-')}")
    lines.append(
        f"python {info.get('python', '?')}; torch {info.get('torch', 'unavailable')}; "
        f"cupy {info.get('cupy', 'unavailable')}"
    )
    lines.append(f"ember: {info.get('ember_cuda', '?')}")
    if info.get("ember_says"):
        lines.append(f"  {info['ember_says']}")
    lines.append(f"EMBER_EXPECT_CUDA={info.get('expect', '0')}  budget {args.budget:.0f}s")
    lines.append("")
    lines.append("steps:")
    for s in steps:
        lines.append(f"  {s.name:<22} {s.status:<8} {s.seconds:7.1f}s  {s.detail}")
    lines.append("")
    kinds = ["passed", "failed", "error", "skipped", "xfailed", "xpassed", "collect-error"]
    for title, want_parity in (("cuda tests (not parity)", False), ("cuda and parity", True)):
        lines.append(f"{title}:")
        lines.append("  " + f"{'package':<16}" + "".join(f"{k:>14}" for k in kinds))
        tot = dict.fromkeys(kinds, 0)
        for pkg in TEST_PACKAGES:
            recs = [
                r
                for r in records
                if r["package"] == pkg
                and (r["parity"] == want_parity or r["outcome"] == "collect-error")
            ]
            if want_parity:
                recs = [r for r in recs if r["outcome"] != "collect-error"]
            c = {k: sum(1 for r in recs if r["outcome"] == k) for k in kinds}
            for k in kinds:
                tot[k] += c[k]
            if any(c.values()):
                lines.append("  " + f"{pkg:<16}" + "".join(f"{c[k]:>14}" for k in kinds))
        lines.append("  " + f"{'total':<16}" + "".join(f"{tot[k]:>14}" for k in kinds))
        lines.append("")
    missing = expected_missing()
    lines.append(f"EXPECTED_MISSING (xfail when NotImplementedError on CUDA): {missing}")
    xf = sorted({r["message"].split(":")[0] for r in records if r["outcome"] == "xfailed"})
    if xf:
        lines.append(f"  xfailed as expected-missing: {', '.join(xf)[:800]}")
    bad = [r for r in records if r["outcome"] in ("failed", "error", "collect-error", "xpassed")]
    if bad:
        lines.append("")
        lines.append(f"failures ({len(bad)}; the first 40, details in tests.log):")
        for r in bad[:40]:
            first = (r.get("message") or "").strip().splitlines()
            msg = first[-1][:200] if first else ""
            lines.append(f"  {r['outcome'].upper():<13} {r['package']}::{r['id']}  {msg}")
    skipped = [r for r in records if r["outcome"] == "skipped"]
    if skipped:
        reasons = {}
        for r in skipped:
            reasons.setdefault(r.get("message", "")[:160], 0)
            reasons[r.get("message", "")[:160]] += 1
        lines.append("")
        lines.append("skip reasons:")
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:8]:
            lines.append(f"  {n:6d}  {reason}")
    lines.append("")
    lines.append("benchmark (benchmarks/cuda_ops.py):")
    if bench_json.exists():
        try:
            data = json.loads(bench_json.read_text())
            lines.extend("  " + ln for ln in data.get("table", "").splitlines())
            if data.get("note"):
                lines.append(f"  {data['note']}")
        except ValueError as e:
            lines.append(f"  bench.json unreadable: {e}")
    else:
        lines.append("  (no bench.json)")
    failed = [s.name for s in steps if s.status != "ok"]
    lines.append("")
    verdict = "PASS" if not failed else f"FAIL ({', '.join(failed)})"
    if not final:
        verdict = f"INCOMPLETE (the run stopped after step {steps[-1].name}); so far: {verdict}"
    lines.append(f"RESULT: {verdict} in {time.monotonic() - T0:.0f}s")
    text = "\n".join(lines) + "\n"
    (out_dir / "summary.txt").write_text(text)
    return text, not failed


def expected_missing():
    src = ROOT / "packages" / "tensor-core" / "tests" / "cuda_helpers.py"
    try:
        m = re.search(r"EXPECTED_MISSING = \((.*?)\)", src.read_text(), re.S)
    except OSError:
        return "?"
    return ", ".join(re.findall(r'"([^"]+)"', m.group(1))) if m else "?"


def main():
    global _console
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "gpu-check-logs"))
    ap.add_argument("--budget", type=float, default=float(os.environ.get("GPU_CHECK_BUDGET", 450)))
    ap.add_argument("--only", default="", help="comma-separated: tests packages and/or bench")
    ap.add_argument("--site", default=None, help="private install dir (default: a temp dir)")
    args = ap.parse_args()
    python = sys.executable
    out_dir = pathlib.Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("summary.txt", "console.log", "build.log", "env.txt", "tests.log", "bench.log"):
        (out_dir / name).unlink(missing_ok=True)
    (out_dir / "bench.json").unlink(missing_ok=True)
    _console = open(out_dir / "console.log", "w", encoding="utf-8")  # noqa: SIM115 - whole run
    budget = Budget(args.budget)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ember-gpu-check-"))
    site = pathlib.Path(args.site).resolve() if args.site else work / "site"
    if args.site:
        shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True, exist_ok=True)
    info = {}
    try:
        info["commit"] = (
            subprocess.run(
                ["git", "-C", ROOT, "log", "-1", "--format=%h %s"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()[:80]
            or "(no git)"
        )
    except (OSError, subprocess.TimeoutExpired):
        info["commit"] = "(no git)"
    has_gpu, smi_text = gpu_present()
    expect = os.environ.get("EMBER_EXPECT_CUDA") or ("1" if has_gpu else "0")
    info["expect"] = expect
    say(f"python {sys.version.split()[0]} at {python}; out {out_dir}; budget {args.budget:.0f}s")
    say(f"GPU: {smi_text.splitlines()[0] if smi_text else 'none'}")

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), str(ROOT / "tools"), os.environ.get("PYTHONPATH", "")) if p
    )
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["EMBER_EXPECT_CUDA"] = expect
    env["EMBER_CACHE_DIR"] = str(work / "kernel-cache")
    only = {s.strip() for s in args.only.split(",") if s.strip()}

    def wanted(name):
        return not only or name in only

    test_pkgs = [p for p in TEST_PACKAGES if wanted(p) or wanted("tests")]
    run_bench = wanted("bench")
    steps = []

    def reserve(after):
        # time the steps after this one are guaranteed
        r = 0.0
        names = ["wheels", "build", "env", "kernels", *(f"tests {p}" for p in test_pkgs), "bench"]
        for n in names[names.index(after) + 1 :]:
            if n.startswith("tests "):
                r += TEST_MIN
            elif n == "bench" and not run_bench:
                continue
            else:
                r += STEP_MIN[n]
        return r

    results_file = work / "results.jsonl"

    def checkpoint():
        # summary.txt after every step: a run cut short still leaves one behind
        summarize(
            count_results(results_file), steps, info, out_dir, out_dir / "bench.json", args, False
        )

    s = Step("wheels")
    steps.append(s)
    say("step wheels: installing carried wheels")
    ok = step_wheels(
        site,
        out_dir / "build.log",
        budget.timeout(STEP_MAX["wheels"], reserve("wheels")),
        s,
        python,
    )
    say(f"step wheels: {s.status} {s.detail}")
    built = False
    s = Step("build")
    steps.append(s)
    if ok:
        say("step build: building ember's packages")
        built = step_build(
            site,
            env,
            out_dir / "build.log",
            budget.timeout(STEP_MAX["build"], reserve("build")),
            s,
            python,
        )
        say(f"step build: {s.status} {s.detail}")
    else:
        s.detail = "skipped: the carried wheels did not install"
    s = Step("env")
    steps.append(s)
    step_env(
        env, out_dir / "env.txt", budget.timeout(STEP_MAX["env"], reserve("env")), s, python, info
    )
    say(f"step env: {s.status}: {info.get('ember_cuda', '')} {info.get('torch', '')}")
    checkpoint()
    s = Step("kernels")
    steps.append(s)
    if built:
        t = budget.timeout(STEP_MAX["kernels"], reserve("kernels"))
        say(f"step kernels: NVRTC compile of the kernel set (timeout {t:.0f}s)")
        step_kernels(env, out_dir / "build.log", t, s, python)
        say(f"step kernels: {s.status} ({s.detail}) in {s.seconds:.1f}s")
    else:
        s.detail = "skipped: ember did not build"
    checkpoint()
    for pkg in test_pkgs:
        s = Step(f"tests {pkg}")
        steps.append(s)
        if not built:
            s.detail = "skipped: ember did not build"
            continue
        t = budget.timeout(TEST_MAX.get(pkg, TEST_MAX_DEFAULT), reserve(f"tests {pkg}"))
        say(f"step tests {pkg}: pytest -m cuda (timeout {t:.0f}s)")
        step_tests(pkg, env, out_dir / "tests.log", t, s, python, results_file)
        say(f"step tests {pkg}: {s.status} ({s.detail}) in {s.seconds:.1f}s")
        checkpoint()
    if run_bench:
        s = Step("bench")
        steps.append(s)
        if built:
            t = budget.timeout(STEP_MAX["bench"], 0)
            say(f"step bench: benchmarks/cuda_ops.py (timeout {t:.0f}s)")
            step_bench(env, out_dir / "bench.log", t, s, python, out_dir)
            say(f"step bench: {s.status} ({s.detail}) in {s.seconds:.1f}s")
        else:
            s.detail = "skipped: ember did not build"
    records = count_results(results_file)
    text, ok = summarize(records, steps, info, out_dir, out_dir / "bench.json", args)
    say("summary (also in summary.txt):")
    with _print_lock:
        print(text, flush=True)
        _console.write(text)
    _console.close()
    if not args.site:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
