"""The default strategy's descriptor economy: one descriptor per segment and
receiving process, whatever the number of tensors."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402
from conftest import open_fds  # noqa: E402


def run_script(code, timeout=120):
    """Run code in a fresh interpreter (its limits and leaks are its own)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_ten_thousand_tensors_under_256_open_files():
    r = run_script(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        import ember_core as ec, ember_multiprocessing as mp, helpers
        ctx = mp.get_context("fork")
        q, out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=helpers.sum_all, args=(q, out, 10000))
        p.start()
        kept = [ec.full((256,), float(i)) for i in range(10000)]  # 1 KiB each, all alive
        for t in kept:
            q.put(t)
        print(out.get(timeout=200), 256.0 * sum(range(10000)))
        p.join()
        print(p.exitcode)
        """
    )
    assert r.returncode == 0, r.stderr
    total, expected, code = r.stdout.split()
    assert float(total) == float(expected) and code == "0"


def test_descriptors_do_not_grow_with_the_number_of_tensors(no_leaks):
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, 300))
    p.start()
    before = len(open_fds())
    for i in range(300):
        q_in.put(ec.full((64,), float(i)))
    got = [q_out.get(timeout=60) for _ in range(300)]
    during = len(open_fds())
    q_in.put(None)
    p.join(60)
    np.testing.assert_array_equal([g[0].item() for g in got], np.arange(300.0))
    assert during - before <= 2  # a segment or two, not one per tensor


def test_receiving_after_the_sender_exited_is_a_clear_error(no_leaks):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=helpers.put_rank, args=(0, q))
    p.start()
    p.join(60)
    assert q.get(timeout=60) == 0  # plain objects arrive
    p = ctx.Process(target=helpers.send_and_exit, args=(q,))
    p.start()
    p.join(60)
    with pytest.raises(RuntimeError, match="have exited"):
        q.get(timeout=60)


@pytest.mark.parametrize("strategy_name", ["file_descriptor", "file_system"])
def test_child_killed_mid_transfer_leaks_nothing(strategy_name):
    before = {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    r = run_script(
        f"""
        import ember_core as ec, ember_multiprocessing as mp, helpers
        from conftest import open_fds
        mp.set_sharing_strategy({strategy_name!r})
        mp._segments.server_address()  # long-lived
        fds = open_fds()
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=helpers.die_after_get, args=(q,))
        p.start()
        for i in range(5):
            q.put(ec.ones(1000) * i)  # the child dies holding one; four are in flight
        p.join(60)
        code = p.exitcode
        q.close(); q.join_thread(); del q, p
        import gc; gc.collect()
        # blocks the dead child held (or never received) stay reserved in this
        # process until it exits: at most their one segment stays open
        print(code, len(open_fds().keys() - fds.keys()) <= 1)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["-9", "True"]
    after = {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    for _ in range(50):  # the cleanup process unlinks once its writers are gone
        if after - before == set():
            break
        import time

        time.sleep(0.1)
        after = {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    assert after - before == set()


def _mapped_from(pid):
    return [m for m in mp._segments._mapped.values() if m.origin == pid]


def test_segments_of_retired_senders_are_not_kept_idle(no_leaks):
    # Note [Segment sharing]: idle segments stay mapped for the sender's next
    # tensors; once the sender is retired (a DataLoader's workers after its
    # iterator shut down) they go at once, and in-use ones when they die
    ctx = mp.get_context("fork")
    q, ack = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.send_many_then_wait, args=(q, ack, 50))
    p.start()
    got = [q.get(timeout=60) for _ in range(50)]
    kept = got[-1]
    del got
    gc.collect()
    assert _mapped_from(p.pid), "the sender's segment is mapped here"
    mp._segments.retire([p.pid])
    in_use = _mapped_from(p.pid)
    assert in_use and all(m.users for m in in_use), "only segments still in use stay"
    assert not [m for m in mp._segments._idle.values() if m.origin == p.pid]
    assert kept.sum().item() == 64 * 49.0
    del kept
    gc.collect()
    assert _mapped_from(p.pid) == []
    assert p.pid not in mp._segments._retired, "nothing left to retire: the pid is forgotten"
    ack.put(None)
    p.join(60)


def test_retiring_unmaps_idle_segments_of_that_sender_only(no_leaks):
    ctx = mp.get_context("fork")
    q, ack = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.send_many_then_wait, args=(q, ack, 3))
    p.start()
    got = [q.get(timeout=60) for _ in range(3)]
    del got
    gc.collect()
    idle_before = [m for m in mp._segments._idle.values() if m.origin == p.pid]
    assert idle_before, "a dropped tensor's small segment is kept idle"
    mp._segments.retire([p.pid + 1_000_000])  # some other process
    assert [m for m in mp._segments._idle.values() if m.origin == p.pid] == idle_before
    fds = set(open_fds())
    mp._segments.retire([p.pid])  # now its own: its idle segments are unmapped, closed
    assert _mapped_from(p.pid) == []
    assert len(fds - set(open_fds())) == len(idle_before)
    ack.put(None)
    p.join(60)
