"""ember.cuda.nvtx: the calls reach NVIDIA's NVTX library when one is installed, and
raise saying what to install when none is."""

import glob
import os
import sys

import pytest

from ember.cuda import nvtx


def _library():
    for root in sys.path:
        found = glob.glob(os.path.join(root, "nvidia/cu*/lib/libnvtx3interop.so*"))
        if found:
            return found[0]
    return None


def test_without_the_library_the_calls_raise_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(nvtx, "_lib", [])
    monkeypatch.setattr(nvtx, "_candidates", lambda: iter(["/nonexistent/libnvToolsExt.so.1"]))
    with pytest.raises(RuntimeError, match="pip install nvidia-nvtx"):
        nvtx.range_push("step")
    with pytest.raises(RuntimeError, match="NVTX functions not installed"), nvtx.range("s {}", 1):
        pass


@pytest.mark.skipif(_library() is None, reason="the nvidia-nvtx wheel is not installed")
def test_ranges_and_marks_reach_the_library(monkeypatch):
    monkeypatch.setattr(nvtx, "_lib", [])
    monkeypatch.setenv("EMBER_NVTX_LIBRARY", _library())
    depth = nvtx.range_push("outer")
    assert isinstance(depth, int)
    with nvtx.range("inner {x}", x=3):
        nvtx.mark("event")
    assert isinstance(nvtx.range_pop(), int)
    rid = nvtx.range_start("async")
    nvtx.range_end(rid)
