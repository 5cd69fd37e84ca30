import gc
import os
import time

import pytest


def child_processes(pid=None):
    """(pid, state) of every process whose parent is ``pid`` (default: this one),
    read from /proc -- zombies included (state 'Z')."""
    pid = os.getpid() if pid is None else pid
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append((int(d), fields[0]))
    return found


def alive(pid):
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_until(predicate, timeout=5.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def _helper_processes():
    """multiprocessing's own long-lived helpers (the resource tracker that spawn
    starts, the forkserver): not workers, they live as long as this process."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(resource_tracker._resource_tracker, "_pid", None)}
    pids.add(getattr(forkserver._forkserver, "_forkserver_pid", None))
    return pids


@pytest.fixture
def no_children_left():
    """Fails the test if it leaves child processes (or zombies) behind."""
    before = {p for p, _ in child_processes()}
    yield
    # pytest.raises keeps the exception, whose traceback's frames hold the
    # iterator, in a reference cycle with the test's frame: collect it
    gc.collect()

    def left():
        helpers = _helper_processes()
        return [c for c in child_processes() if c[0] not in before and c[0] not in helpers]

    ok = wait_until(lambda: not left(), timeout=3.0)
    assert ok, f"child processes left behind: {left()}"


def ember_core_or_skip():
    return pytest.importorskip("ember_core", reason="needs ember_core (ember tensors)")
