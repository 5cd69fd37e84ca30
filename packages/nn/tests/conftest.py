"""Fixtures of ember_nn's tests.  CUDA tests (marked `cuda`) skip without a
usable CUDA device, or fail where one is expected (EMBER_EXPECT_CUDA=1, set by
`make gpu-check`) -- the rule of tensor-core's and autograd's tests."""

import os

import numpy as np
import pytest

import ember_core as ec


def _cuda_unavailable_reason():
    try:
        return None if ec.cuda.is_available() else "ember_core.cuda.is_available() is False"
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        return f"ember_core.cuda.is_available() raised {type(e).__name__}: {e}"


def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") is None:
        return
    why = _cuda_unavailable_reason()
    if why is None:
        return
    if os.environ.get("EMBER_EXPECT_CUDA", "") not in ("", "0"):
        pytest.fail(f"EMBER_EXPECT_CUDA=1 but ember cannot use CUDA: {why}", pytrace=False)
    pytest.skip(f"no CUDA: {why}")


@pytest.fixture
def torch():
    """PyTorch (CPU), for parity tests; skips when it is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
