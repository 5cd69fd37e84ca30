"""The file_system strategy leaves nothing in /dev/shm: the last reference
unlinks, and the cleanup process unlinks what crashed processes left."""

import os
import sys
import time

import pytest

import ember_core as ec
import ember_multiprocessing as mp
from ember_multiprocessing import _file_system

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402
from conftest import shm_files  # noqa: E402
from test_segments import run_script  # noqa: E402


def _files_of(pid):
    return {n for n in shm_files() if n.startswith(f"{_file_system.PREFIX}{pid}_")}


def _wait_until_gone(pid, seconds=10):
    deadline = time.monotonic() + seconds
    while _files_of(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _files_of(pid)


def test_named_file_lives_exactly_as_long_as_its_storages(no_leaks):
    mp.set_sharing_strategy("file_system")
    try:
        t = ec.arange(4.0).share_memory_()
    finally:
        mp.set_sharing_strategy("file_descriptor")
    name = t.untyped_storage()._owner[1].name
    assert os.path.exists(f"/dev/shm/{name}")
    view = t[1:]
    del t
    assert os.path.exists(f"/dev/shm/{name}") and view[0].item() == 1.0
    del view
    assert not os.path.exists(f"/dev/shm/{name}")


@pytest.mark.parametrize("ending", ["exception", "SIGKILL", "os._exit"])
def test_nothing_is_left_however_the_process_ends(ending):
    r = run_script(
        f"""
        import os, signal, sys
        import ember_core as ec, ember_multiprocessing as mp, helpers
        mp.set_sharing_strategy("file_system")
        ctx = mp.get_context("fork")
        q, done = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=helpers.hold, args=(q, done), daemon=True); p.start()
        kept = [ec.ones(100).share_memory_() for _ in range(3)]
        q.put(kept[0]); done.get(timeout=60)  # the child holds one too
        print(os.getpid(), flush=True)
        if {ending!r} == "exception":
            raise RuntimeError("boom")
        if {ending!r} == "SIGKILL":
            p.kill(); os.kill(os.getpid(), signal.SIGKILL)
        p.kill(); os._exit(3)
        """
    )
    pid = int(r.stdout.split()[0])
    assert r.returncode != 0
    assert _wait_until_gone(pid) == set()


def test_a_name_another_process_still_holds_survives_its_creator(no_leaks):
    # the creator exits; the receiver's reference keeps the name until the
    # receiver drops it, and then the last reference unlinks it
    mp.set_sharing_strategy("file_system")
    try:
        ctx = mp.get_context("fork")
        q, ack = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=helpers.send_then_wait, args=(q, ack))
        p.start()
        t = q.get(timeout=60)
        ack.put(True)
        p.join(60)
        assert p.exitcode == 0 and t.tolist() == [0.0, 1.0, 2.0]
        name = t.untyped_storage()._owner.name
        assert os.path.exists(f"/dev/shm/{name}")
        del t
        assert not os.path.exists(f"/dev/shm/{name}")
    finally:
        mp.set_sharing_strategy("file_descriptor")
