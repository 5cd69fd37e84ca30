"""Shared fixtures of the allocator tests (helpers live in helpers.py).

Every test uses a fresh CachingAllocator of its own (never the process-wide
default, whose state other tests would change), over real memory."""

import pytest

import ember_allocator


def _cuda_error():
    try:
        ember_allocator.CachingAllocator("cuda")
    except ember_allocator.AllocatorError as e:
        return str(e)
    return None


CUDA_ERROR = _cuda_error()


def pytest_collection_modifyitems(config, items):
    if CUDA_ERROR is None:
        return
    skip = pytest.mark.skip(reason=f"no CUDA: {CUDA_ERROR}")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture
def host():
    return ember_allocator.CachingAllocator("host")


@pytest.fixture
def sim():
    """Host memory behind a simulated device whose streams run asynchronously."""
    return ember_allocator.CachingAllocator("sim")
