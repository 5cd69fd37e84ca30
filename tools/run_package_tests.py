"""Run one or more packages' tests from their own directories.

    python tools/run_package_tests.py allocator [tensor-core ...] [-- PYTEST ARGS]

Each package runs in packages/<dir> (so its pyproject's pytest settings and
markers apply and the installed wheel, not src/, is what gets imported).
pytest's exit status 5, "no tests collected", counts as success: a package with
no tests yet, or no tests of a selected marker, has not failed.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NO_TESTS_COLLECTED = 5


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        packages, pytest_args = argv[:split], argv[split + 1 :]
    else:
        packages, pytest_args = argv, []
    failed = []
    for package in packages:
        cwd = ROOT / "packages" / package
        print(f"=== {package}: pytest {' '.join(pytest_args)}", flush=True)
        rc = subprocess.call([sys.executable, "-m", "pytest", *pytest_args], cwd=cwd)
        if rc not in (0, NO_TESTS_COLLECTED):
            failed.append(f"{package} (exit {rc})")
    if failed:
        sys.exit(f"tests failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
