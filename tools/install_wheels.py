"""Install ember packages from the local wheelhouse into the running Python.

    python tools/install_wheels.py WHEELHOUSE allocator tensor-core ...

First installs each package with its declared dependencies (siblings from the
wheelhouse, everything else from PyPI), which proves the package installs on its
own; then force-reinstalls the ember wheels without dependencies, so a rebuilt
wheel with an unchanged version number still replaces the installed one; then
resolves once more against the refreshed wheels' metadata, so a dependency added
since the environment was made (pip saw the old wheel as already satisfied) is
installed too.
"""

import pathlib
import subprocess
import sys

import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def dist_name(package_dir):
    pyproject = ROOT / "packages" / package_dir / "pyproject.toml"
    if not pyproject.exists():
        sys.exit(f"install_wheels: no package 'packages/{package_dir}' (looked for {pyproject})")
    return tomllib.loads(pyproject.read_text())["project"]["name"]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    wheelhouse, package_dirs = pathlib.Path(argv[0]).resolve(), argv[1:]
    names = [dist_name(d) for d in package_dirs]
    for name in names:  # a one-line hint rather than pip's resolver traceback
        if not list(wheelhouse.glob(f"{name.replace('-', '_')}-*.whl")):
            sys.exit(f"install_wheels: no {name} wheel in {wheelhouse}: run `make wheels` first")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.check_call([*pip, "--find-links", str(wheelhouse), *names])
    # Refresh every ember distribution now installed (the requested ones and the
    # siblings they pulled in) from the current wheels.
    installed = subprocess.check_output(
        [sys.executable, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
        text=True,
    )
    ember = [
        line.split("==")[0] for line in installed.splitlines() if line.lower().startswith("ember")
    ]
    subprocess.check_call(
        [
            *pip,
            "--no-index",
            "--no-deps",
            "--force-reinstall",
            "--find-links",
            str(wheelhouse),
            *ember,
        ]
    )
    subprocess.check_call([*pip, "--find-links", str(wheelhouse), *names])


if __name__ == "__main__":
    main(sys.argv[1:])
