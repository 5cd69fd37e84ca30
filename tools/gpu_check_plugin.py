"""pytest plugin of `make gpu-check` (tools/gpu_check.py loads it with -p).

Appends one JSON line per test outcome to $EMBER_GPU_CHECK_RESULTS: the test's
id, its outcome (passed, failed, error, skipped, xfailed, xpassed), whether it
is marked `parity`, its duration and, for failures, a short message.  Collection
errors are recorded too (outcome "collect-error").  gpu_check.py counts these
lines for its summary; pytest's own output goes to the log unchanged.
"""

import json
import os
import time

_PATH = os.environ.get("EMBER_GPU_CHECK_RESULTS")
_PACKAGE = os.environ.get("EMBER_GPU_CHECK_PACKAGE", "")
_setup_failed = set()


def _write(record):
    if not _PATH:
        return
    record["package"] = _PACKAGE
    record["t"] = round(time.time(), 3)
    with open(_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _message(report):
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    # the last lines say what failed (the E lines / the exception)
    return "\n".join(lines[-6:])[:1500]


def pytest_runtest_logreport(report):
    parity = "parity" in report.keywords
    base = {"id": report.nodeid, "parity": parity, "duration": round(report.duration, 4)}
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "setup":
        if report.skipped:
            outcome = "xfailed" if wasxfail else "skipped"
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            _write({**base, "outcome": outcome, "message": str(reason)[:300]})
        elif report.failed:
            _setup_failed.add(report.nodeid)
            _write({**base, "outcome": "error", "message": _message(report)})
    elif report.when == "call":
        if report.passed:
            _write({**base, "outcome": "xpassed" if wasxfail else "passed"})
        elif report.skipped:
            outcome = "xfailed" if wasxfail else "skipped"
            reason = (
                wasxfail
                if wasxfail
                else (report.longrepr[2] if isinstance(report.longrepr, tuple) else "")
            )
            _write({**base, "outcome": outcome, "message": str(reason)[:300]})
        else:
            _write({**base, "outcome": "failed", "message": _message(report)})
    elif report.when == "teardown" and report.failed and report.nodeid not in _setup_failed:
        _write({**base, "outcome": "error", "message": "teardown: " + _message(report)})


def pytest_collectreport(report):
    if report.failed:
        _write(
            {
                "id": report.nodeid,
                "parity": False,
                "duration": 0.0,
                "outcome": "collect-error",
                "message": _message(report),
            }
        )
