import gc
import multiprocessing.resource_tracker
import os
import time

import pytest

import ember_multiprocessing as mp
from ember_multiprocessing import _file_system, _segments


def shm_files():
    """ember's names in /dev/shm."""
    return {n for n in os.listdir("/dev/shm") if n.startswith(_file_system.PREFIX)}


def open_fds():
    """{descriptor: what it is} (without the descriptor listing them)."""
    fd_dir = f"/proc/{os.getpid()}/fd"
    fds = {}
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue  # listdir's own descriptor, closed by now
        if target != fd_dir:
            fds[name] = target
    return fds


@pytest.fixture(scope="session", autouse=True)
def _long_lived_descriptors():
    # Descriptors a process opens once and keeps: the segment server's socket,
    # the cleanup process's pipe and spawn's resource tracker.
    _segments.server_address()
    _file_system._report("-" + _file_system.PREFIX + "warmup")
    multiprocessing.resource_tracker.ensure_running()


def settle():
    """Drop what the test left, give back cached shared memory."""
    gc.collect()
    _segments.drop_idle()
    mp.shared_allocator().reap()
    mp.shared_allocator().backing.empty_cache()


@pytest.fixture
def no_leaks():
    """Fail if the test leaves files in /dev/shm or open descriptors behind."""
    settle()
    files, fds = shm_files(), open_fds()
    yield
    # A Queue's pipes close when its feeder thread has finished and the queue
    # is collected; on a loaded machine that can lag the test's end a little,
    # so a leak must persist for a few seconds before it counts.
    deadline = time.monotonic() + 5
    while True:
        settle()
        leaked_files = shm_files() - files
        after = open_fds()
        leaked_fds = {fd: after[fd] for fd in after.keys() - fds.keys()}
        if not (leaked_files or leaked_fds) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert leaked_files == set(), "leaked /dev/shm files"
    assert leaked_fds == {}, "leaked descriptors"


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)
