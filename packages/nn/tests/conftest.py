import numpy as np
import pytest


@pytest.fixture
def torch():
    """PyTorch (CPU), for parity tests; skips when it is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
