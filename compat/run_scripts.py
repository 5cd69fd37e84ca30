"""Run every compat/scripts/s*.py under PyTorch and under ember (``import ember as torch``).

    .venv/bin/python compat/run_scripts.py [-v] [-k SUBSTR] [--timeout S]

A script passes when it exits 0 and prints OK. Lines ``CHECK name value...`` are compared
between the two runs (numbers with rtol 1e-3 / atol 1e-4, everything else exactly).
The table shows: torch status, ember status, matched/total CHECK lines, and the first
ember error line or first mismatching CHECK. -v prints every mismatch and the ember traceback tail.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NUM = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?inf|nan")


def run(cmd, timeout):
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return (
            "TIMEOUT",
            (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""),
            "",
            timeout,
        )


def checks(out, strict=False):
    """CHECK lines as {name: rest}. Unless strict, ember's module prefix in reprs
    (``ember.float32``, ``ember.Size``) is read as ``torch.`` so that one known
    difference does not hide the others."""
    if not strict:
        out = re.sub(r"\bember(?:_core|_nn|_data)?\.", "torch.", out)
    d = {}
    for line in out.splitlines():
        if line.startswith("CHECK "):
            parts = line.split(" ", 2)
            d[parts[1] if len(parts) > 1 else ""] = parts[2] if len(parts) > 2 else ""
    return d


def same(a, b):
    if a == b:
        return True
    if NUM.sub("#", a) != NUM.sub("#", b):
        return False
    for x, y in zip(NUM.findall(a), NUM.findall(b)):
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if fx != fx and fy != fy:
            continue
        if abs(fx - fy) > 1e-4 + 1e-3 * abs(fy):
            return False
    return True


def status(rc, out):
    if rc == "TIMEOUT":
        return "TIMEOUT"
    if rc == 0 and re.search(r"^OK$", out, re.M):
        return "pass"
    return f"FAIL({rc})"


def last_error(err, out):
    lines = [line for line in (err or "").strip().splitlines() if line.strip()]
    if lines:
        return lines[-1].strip()
    lines = [line for line in (out or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", action="store_true")
    ap.add_argument("-k", default="")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument(
        "--strict", action="store_true", help="do not map 'ember.' to 'torch.' in CHECK lines"
    )
    a = ap.parse_args()
    scripts = sorted(glob.glob(os.path.join(HERE, "scripts", "s*.py")))
    scripts = [s for s in scripts if a.k in os.path.basename(s)]
    rows = []
    for s in scripts:
        name = os.path.basename(s)[:-3]
        rt, ot, et, tt = run([sys.executable, s], a.timeout)
        re_, oe, ee, te = run(
            [sys.executable, os.path.join(HERE, "ember_as_torch.py"), s], a.timeout
        )
        ct, ce = checks(ot, a.strict), checks(oe, a.strict)
        mism = [k for k in ct if k not in ce or not same(ce[k], ct[k])]
        st_t, st_e = status(rt, ot), status(re_, oe)
        note = ""
        if st_e != "pass":
            note = last_error(ee, oe)
        elif mism:
            k = mism[0]
            note = f"CHECK {k}: ember={ce.get(k, '<missing>')!s:.70} torch={ct[k]!s:.70}"
        if st_t != "pass":
            note = "[torch: " + last_error(et, ot)[:80] + "] " + note
        rows.append(
            (name, st_t, st_e, f"{len(ct) - len(mism)}/{len(ct)}", f"{tt:.1f}/{te:.1f}s", note)
        )
        print(
            f"{name:28s} torch={st_t:8s} ember={st_e:8s} checks={rows[-1][3]:7s} "
            f"{rows[-1][4]:12s} {note[:160]}",
            flush=True,
        )
        if a.v:
            for k in mism:
                print(f"    MISMATCH {k}:\n      ember: {ce.get(k, '<missing>')[:300]}")
                print(f"      torch: {ct[k][:300]}")
            if st_e != "pass":
                print(
                    "    ember stderr tail:\n      "
                    + "\n      ".join((ee or "").strip().splitlines()[-6:])
                )
    n_pass = sum(r[2] == "pass" for r in rows)
    n_clean = sum(r[2] == "pass" and r[3].split("/")[0] == r[3].split("/")[1] for r in rows)
    matched = sum(int(r[3].split("/")[0]) for r in rows)
    total = sum(int(r[3].split("/")[1]) for r in rows)
    print(
        f"\nember: {n_pass}/{len(rows)} scripts run to OK; {n_clean}/{len(rows)} also match "
        f"every CHECK with torch; CHECK lines matching: {matched}/{total}"
    )


if __name__ == "__main__":
    main()
