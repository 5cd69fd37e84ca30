"""Install each package's distribution from dist/ into a fresh venv and smoke-test it.

    python tools/dist_check.py DIST allocator tensor-core ... [--sdist] [--keep]

For every package directory named: a new venv (no ember in it), then
1. its third-party dependencies (and those of the ember packages it depends on,
   read from the wheels' metadata) from PyPI;
2. the package itself with ``pip install --no-index --find-links DIST``: it and
   its ember siblings can only come from DIST, as on a machine that has nothing
   but pip and that folder;
3. a smoke test (SMOKE below) in a clean working directory, which also checks
   ``__version__`` against VERSION.
``--sdist`` installs from the sdists instead (``--no-binary`` for ember's
packages: the C extensions compile, so a C compiler is needed; their build
requirements come first, third-party ones from PyPI and ember's from DIST).
Exit status 1 if any package failed; each failure's output is printed.
"""

import email.parser
import pathlib
import subprocess
import sys
import tempfile
import time
import zipfile

import tomllib
from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text().strip()

# What each package's smoke test runs (VERSION is defined in front of it).
SMOKE = {
    "allocator": """
import ember_allocator
assert ember_allocator.__version__ == VERSION
a = ember_allocator.CachingAllocator("host")
b = a.allocate(4096)
assert a.memory_stats()["allocated_bytes.all.current"] == 4096
del b
""",
    "tensor-core": """
import numpy as np
import ember_core as ec
assert ec.__version__ == VERSION
x = ec.arange(12, dtype=ec.float32).reshape(3, 4)
np.testing.assert_allclose((x @ x.T).numpy(), x.numpy() @ x.numpy().T)  # OpenBLAS
assert ec.ones(1000, 1000).exp().sum().item() > 2.7e6  # OpenMP (libgomp)
""",
    "autograd": """
import ember_core as ec
import ember_autograd
assert ember_autograd.__version__ == VERSION
x = ec.tensor([1.0, 2.0, 3.0], requires_grad=True)
(x * x).sum().backward()
assert x.grad.tolist() == [2.0, 4.0, 6.0]
""",
    "nn": """
import ember_core as ec
import ember_nn as nn
from ember_nn import optim
assert nn.__version__ == VERSION
model = nn.Linear(4, 2)
opt = optim.SGD(model.parameters(), lr=0.1)
loss = model(ec.ones(8, 4)).pow(2).mean()
loss.backward()
opt.step()  # the fused C optimizer step
assert model(ec.ones(8, 4)).pow(2).mean().item() < loss.item()
""",
    "multiprocessing": """
import ember_core as ec
import ember_multiprocessing as mp
assert mp.__version__ == VERSION


def child(q):
    t = q.get()
    t.add_(1)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    t = ec.zeros(4).share_memory_()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    q.put(t)
    p.join(60)
    assert p.exitcode == 0 and t.tolist() == [1.0] * 4, (p.exitcode, t)
""",
    "data": """
import numpy as np
import ember_data
from ember_data import DataLoader, TensorDataset
assert ember_data.__version__ == VERSION
ds = TensorDataset(np.arange(10, dtype=np.float32), np.arange(10))
batches = list(DataLoader(ds, batch_size=4))
assert [len(b[0]) for b in batches] == [4, 4, 2]
""",
    "distributed": """
import ember_core as ec
import ember_distributed as dist
assert dist.__version__ == VERSION
assert dist.is_available() and not dist.is_initialized()
""",
    "ember": """
import ember as torch
assert torch.__version__ == VERSION
model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
x = torch.randn(16, 3)
model(x).sum().backward()
assert model[0].weight.grad.shape == (8, 3)
import io
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
assert torch.load(buf)["0.weight"].equal(model[0].weight)
""",
}


def dist_name(package_dir):
    pyproject = ROOT / "packages" / package_dir / "pyproject.toml"
    return tomllib.loads(pyproject.read_text())["project"]["name"]


def wheel_requirements(dist, name):
    """Requires-Dist of ``name``'s wheel in ``dist`` (no extras' lines)."""
    pattern = f"{name.replace('-', '_')}-{VERSION}-*.whl"
    (wheel,) = dist.glob(pattern)
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(z.read(meta).decode())
    return [Requirement(r) for r in message.get_all("Requires-Dist") or []]


def third_party(dist, name, extras=()):
    """Every non-ember requirement of ``name`` and of the ember packages it needs."""
    seen, out, todo = set(), [], [(name, frozenset(extras))]
    while todo:
        current, wanted = todo.pop()
        if (current, wanted) in seen:
            continue
        seen.add((current, wanted))
        for req in wheel_requirements(dist, current):
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in ("", *wanted)):
                continue
            if req.name.startswith("ember"):
                todo.append((req.name, frozenset(req.extras)))
            else:  # the marker was evaluated here (pip would see no extra)
                extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
                text = f"{req.name}{extras}{req.specifier}"
                if text not in out:
                    out.append(text)
    return out


def build_requirements(package_dir):
    """(third-party, ember) requirements of the package's [build-system]."""
    pyproject = ROOT / "packages" / package_dir / "pyproject.toml"
    third, ember = [], []
    for text in tomllib.loads(pyproject.read_text())["build-system"]["requires"]:
        req = Requirement(text)
        if req.marker and not req.marker.evaluate():
            continue
        (ember if req.name.startswith("ember") else third).append(f"{req.name}{req.specifier}")
    return third, ember


def check(dist, package_dir, sdist, keep):
    name = dist_name(package_dir)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"dist-check-{package_dir}-"))
    venv = tmp / "venv"
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    steps = [[sys.executable, "-m", "venv", str(venv)]]
    deps = third_party(dist, name)
    if deps:
        steps.append([*pip, *deps])
    if sdist:
        # the build requirements: third-party ones from PyPI, ember's from DIST
        third, ember = build_requirements(package_dir)
        steps.append([*pip, "setuptools>=77", "wheel", *third])
        if ember:
            steps.append(
                [*pip, "--no-index", "--find-links", str(dist), "--no-build-isolation"]
                + ["--no-binary", ":all:", *ember]
            )
        steps.append(
            [*pip, "--no-index", "--find-links", str(dist), "--no-build-isolation"]
            + ["--no-binary", ":all:", name]
        )
    else:
        steps.append(
            [*pip, "--no-index", "--find-links", str(dist), "--only-binary", ":all:", name]
        )
    script = tmp / "smoke.py"
    script.write_text(f"VERSION = {VERSION!r}\n" + SMOKE[package_dir])
    steps.append([py, "-I", str(script)])
    started = time.perf_counter()
    for step in steps:
        proc = subprocess.run(step, cwd=tmp, capture_output=True, text=True)
        if proc.returncode:
            print(f"FAIL {package_dir}: {' '.join(step)}\n{proc.stdout}{proc.stderr}", flush=True)
            return False
    print(f"ok   {package_dir} ({time.perf_counter() - started:.0f} s)", flush=True)
    if not keep:
        subprocess.run(["rm", "-rf", str(tmp)])
    return True


def main(argv):
    sdist, keep = "--sdist" in argv, "--keep" in argv
    args = [a for a in argv if a not in ("--sdist", "--keep")]
    if len(args) < 2:
        sys.exit(__doc__)
    dist = pathlib.Path(args[0]).resolve()
    failed = [p for p in args[1:] if not check(dist, p, sdist, keep)]
    if failed:
        sys.exit(f"dist_check: failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
