"""CUDA tests (marked `cuda`) skip without a usable GPU, or fail where one is
expected (EMBER_EXPECT_CUDA=1, set by `make gpu-check`) -- the same rule as
tensor-core's tests (packages/tensor-core/tests/cuda_helpers.py)."""

import os

import pytest

import ember_core as ec

_reason = []


def cuda_unavailable_reason():
    if _reason:
        return _reason[0]
    cuda = getattr(ec, "cuda", None)
    why = None
    if cuda is None or not hasattr(cuda, "is_available"):
        why = "ember_core has no `cuda` module yet (its CUDA backend is not built)"
    else:
        try:
            if not cuda.is_available():
                why = "ember_core.cuda.is_available() is False"
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            why = f"ember_core.cuda.is_available() raised {type(e).__name__}: {e}"
    _reason.append(why)
    return why


def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") is None:
        return
    why = cuda_unavailable_reason()
    if why is None:
        return
    if os.environ.get("EMBER_EXPECT_CUDA", "") not in ("", "0"):
        pytest.fail(f"EMBER_EXPECT_CUDA=1 but ember cannot use CUDA: {why}", pytrace=False)
    pytest.skip(f"no CUDA: {why}")
