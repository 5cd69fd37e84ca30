"""Memory and descriptor hygiene: nothing leaks, killed children included."""

import os
import resource
import signal
import subprocess
import sys
import textwrap

import pytest

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402


def _run(code, timeout=120):
    """Run code in a fresh interpreter (so limits and leaks are its own)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_ten_thousand_tensors_under_256_open_files():
    r = _run(
        """
        import os, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        import ember_core as ec, ember_multiprocessing as mp, helpers
        ctx = mp.get_context("fork")
        q, out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=helpers.sum_all, args=(q, out, 10000)); p.start()
        for i in range(10000):
            q.put(ec.full((256,), float(i)))
        print(out.get(timeout=120) == 256.0 * sum(range(10000)))
        p.join()
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_memory_is_reused_after_every_process_dropped_it():
    alloc = mp.shared_allocator()
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, 1))
    p.start()
    t = ec.ones(1000)
    q_in.put(t)
    back = q_out.get(timeout=30)
    q_in.put(None)
    p.join(30)
    assert back.data_ptr() == t.data_ptr()
    del t, back
    alloc.reap()
    assert alloc.pending() == 0


@pytest.mark.parametrize("strategy", ["segments", "file_system"])
def test_child_killed_mid_transfer_leaks_nothing(strategy, no_leaks):
    r = _run(
        f"""
        import os
        import ember_core as ec, ember_multiprocessing as mp, helpers
        mp.set_sharing_strategy({strategy!r})
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=helpers.die_after_get, args=(q,)); p.start()
        for i in range(5):
            q.put(ec.ones(1000) * i)
        p.join(30)
        print(p.exitcode)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(-signal.SIGKILL)


def test_exception_in_parent_leaves_no_shm_files(no_leaks):
    r = _run(
        """
        import ember_core as ec, ember_multiprocessing as mp, helpers
        mp.set_sharing_strategy("file_system")
        ctx = mp.get_context("fork")
        q_in, q_out = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=helpers.echo, args=(q_in, q_out, 1)); p.start()
        q_in.put(ec.ones(100)); q_out.get(timeout=30); q_in.put(None); p.join()
        raise SystemExit("boom")
        """
    )
    assert "boom" in r.stderr
    import time

    time.sleep(0.5)  # the cleanup process unlinks after its parent is gone


def test_descriptors_do_not_accumulate(no_leaks):
    before = len(os.listdir("/proc/self/fd"))
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=helpers.echo, args=(q_in, q_out, 200))
    p.start()
    for i in range(200):
        q_in.put(ec.full((64,), float(i)))
    got = [q_out.get(timeout=30) for _ in range(200)]
    q_in.put(None)
    p.join(30)
    assert [g[0].item() for g in got] == [float(i) for i in range(200)]
    del got
    after = len(os.listdir("/proc/self/fd"))
    assert after - before < 20  # queues' pipes and a few segments, not one per tensor


def test_cuda_tensors_give_a_clear_error():
    from multiprocessing.reduction import ForkingPickler

    class FakeCuda:
        pass

    t = ec.ones(2)
    dev = ec.device("cuda", 0)
    object.__setattr__  # noqa: B018 - the storage's device is what the reduction checks
    t._storage._device = dev
    try:
        with pytest.raises(RuntimeError, match="CUDA IPC"):
            ForkingPickler.dumps(t)
    finally:
        t._storage._device = ec.device("cpu")


def test_share_memory_in_place_and_shared_allocator_stats():
    t = ec.arange(8.0)
    v = t[2:4]
    t.share_memory_()
    assert t.is_shared() and v.is_shared()
    v[0] = -1
    assert t[2].item() == -1
    with mp.shared_memory():
        s = ec.zeros(16)
    assert s.is_shared()
    stats = mp.shared_allocator().memory_stats()
    assert stats["allocated_bytes.all.current"] > 0


def test_resource_limit_is_restored_for_other_tests():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > 256 or hard == soft
