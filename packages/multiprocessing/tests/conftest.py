import os

import pytest


def _fds():
    return set(os.listdir("/proc/self/fd"))


def _shm():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    except FileNotFoundError:
        return set()


@pytest.fixture
def no_leaks():
    """Fail if the test leaves ember files in /dev/shm behind."""
    before = _shm()
    yield
    import gc

    gc.collect()
    leaked = _shm() - before
    assert not leaked, f"leaked shared-memory files: {sorted(leaked)}"
