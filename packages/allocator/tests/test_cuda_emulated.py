"""The tests marked `cuda` on the CPU emulation of the CUDA driver
(packages/tensor-core/tests/cuda_emu, Note [CUDA emulation] in its driver.c):
the CUDA pool's device memory, streams and events, expandable segments and
pinned memory over emulated devices, so they run on every machine with a C
compiler, GPU or not.  One subprocess: the emulated libraries must be found
before the process starts."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
EMULATOR = HERE.parent.parent / "tensor-core" / "tests" / "cuda_emu" / "ember_cuda_emu.py"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the CUDA emulator needs gcc")
@pytest.mark.skipif(not EMULATOR.exists(), reason="no CUDA emulator in this checkout")
@pytest.mark.skipif(
    os.environ.get("EMBER_CUDA_EMULATE") == "1", reason="runs them on the emulator itself"
)
def test_cuda_tests_on_the_emulator():
    cmd = [sys.executable, str(EMULATOR), "run", "--devices", "2", "--", sys.executable, "-m"]
    cmd += ["pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda", str(HERE)]
    r = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout, r.stdout[-2000:]
