"""The DataLoader with worker processes: same batches for any num_workers,
errors that say what happened, and no process left behind (checked in /proc)."""

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import helpers
import numpy as np
import pytest
from conftest import alive, wait_until

from ember_data import DataLoader, _rng
from ember_data._utils import shm, transport

pytestmark = pytest.mark.usefixtures("no_children_left")


def values(batch):
    return np.asarray(batch).tolist()


def augmented_batches(num_workers, seed=0, ctx=None, **kwargs):
    loader = DataLoader(
        helpers.RandomAugment(24),
        batch_size=5,
        shuffle=True,
        num_workers=num_workers,
        generator=np.random.default_rng(seed),
        multiprocessing_context=ctx if num_workers else None,
        **kwargs,
    )
    return [(values(b["i"]), values(b["py"]), values(b["np"])) for b in loader]


def test_same_batches_for_any_num_workers():
    reference = augmented_batches(0)
    assert augmented_batches(1) == reference
    assert augmented_batches(2) == reference
    assert augmented_batches(2, prefetch_factor=1) == reference
    assert augmented_batches(2, seed=1) != reference
    indices = sorted(i for b in reference for i in b[0])
    assert indices == list(range(24))


def test_same_batches_with_spawn():
    assert augmented_batches(2, ctx="spawn") == augmented_batches(0)


def test_ember_seeded_the_same_for_any_num_workers():
    ec = pytest.importorskip("ember_core")

    def run(n):
        ec.manual_seed(3)
        loader = DataLoader(helpers.Squares(10), batch_size=3, shuffle=True, num_workers=n)
        return [values(y) for _, y in loader]

    assert run(0) == run(2)


def test_batches_arrive_in_sampler_order_despite_uneven_work():
    class Uneven(helpers.Squares):
        pass

    loader = DataLoader(helpers.Slow(0.0, n=30), batch_size=3, num_workers=2)
    assert [values(b) for b in loader] == [list(range(i, min(i + 3, 30))) for i in range(0, 30, 3)]


def test_in_order_false_yields_every_batch():
    loader = DataLoader(helpers.Squares(20), batch_size=3, num_workers=2, in_order=False)
    got = sorted(i for _, y in loader for i in values(y))
    assert got == list(range(20))


def test_large_batches_travel_through_shared_memory_and_are_writable():
    loader = DataLoader(helpers.Big(12, (3, 64, 64)), batch_size=4, num_workers=2)
    for k, b in enumerate(loader):
        a = np.asarray(b)
        assert a.shape == (4, 3, 64, 64)
        np.testing.assert_array_equal(a[:, 0, 0, 0], np.arange(4 * k, 4 * k + 4))
        a += 1  # batches are writable, as PyTorch's
    # without batching: large samples are copied into shared memory once
    items = list(DataLoader(helpers.Big(3, (64, 64)), batch_size=None, num_workers=1))
    assert [float(np.asarray(x)[5, 5]) for x in items] == [0.0, 1.0, 2.0]


def test_worker_info_and_init_fn():
    ids = [
        v for b in DataLoader(helpers.WorkerIds(), batch_size=2, num_workers=2) for v in values(b)
    ]
    assert ids == [0, 0, 1, 1, 0, 0, 1, 1]
    assert values(next(iter(DataLoader(helpers.WorkerIds(), batch_size=2)))) == [-1, -1]
    seen = DataLoader(
        helpers.InitSeen(), batch_size=1, num_workers=2, worker_init_fn=helpers.record_init
    )
    assert [values(b)[0] for b in seen] == [0, 1, 0, 1]


def test_iterable_dataset_sharded_without_duplicates():
    for workers in (1, 2, 3):
        loader = DataLoader(helpers.Range(0, 23), batch_size=4, num_workers=workers)
        got = [i for b in loader for i in values(b)]
        assert sorted(got) == list(range(23)), workers


def test_iterable_dataset_without_batching():
    got = sorted(
        int(np.asarray(x)) for x in DataLoader(helpers.Range(0, 7), batch_size=None, num_workers=2)
    )
    assert got == list(range(7))


def test_worker_exception_keeps_type_worker_and_traceback():
    loader = DataLoader(helpers.RaiseAt(5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as info:
        list(loader)
    text = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0" in text
    assert "bad index 5" in text and "Traceback" in text and "__getitem__" in text


def test_worker_exception_then_iteration_goes_on():
    it = iter(DataLoader(helpers.RaiseAt(2, KeyError, n=8), batch_size=2, num_workers=2))
    assert values(next(it)) == [0, 1]
    with pytest.raises(KeyError, match="worker process 1"):
        next(it)
    assert [values(b) for b in it] == [[4, 5], [6, 7]]


def test_exception_type_that_cannot_take_a_message():
    class Picky(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    w = None
    try:
        raise Picky(1, 2)
    except Picky:
        from ember_data._utils.exceptions import ExceptionWrapper

        w = ExceptionWrapper(where="in DataLoader worker process 3")
    with pytest.raises(RuntimeError, match="Caught Picky in DataLoader worker process 3"):
        w.reraise()  # a local class does not pickle: a RuntimeError with the text


def test_init_fn_exception_is_reported():
    loader = DataLoader(helpers.Squares(4), num_workers=1, worker_init_fn=helpers.failing_init)
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(loader)


def test_unpicklable_batch_is_an_error_not_a_hang():
    loader = DataLoader(
        helpers.Unpicklable(), batch_size=2, num_workers=1, collate_fn=helpers.identity_collate
    )
    with pytest.raises(Exception, match="worker process 0"):
        list(loader)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_dead_worker_detected_fast_naming_the_signal(sig):
    loader = DataLoader(helpers.SignalAt(6, sig), batch_size=2, num_workers=2, timeout=30)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        list(loader)
    assert time.monotonic() - t0 < 5
    text = str(info.value)
    assert "worker 1" in text and signal.Signals(sig).name in text and "exited unexpectedly" in text


def test_timeout():
    loader = DataLoader(helpers.Slow(5.0, n=4), batch_size=1, num_workers=1, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iter(loader))
    assert time.monotonic() - t0 < 2.5


def test_break_and_iterator_deletion_stop_the_workers():
    loader = DataLoader(helpers.Squares(100), batch_size=2, num_workers=2)
    for _ in loader:
        break
    it = iter(loader)
    next(it)
    pids = [w.pid for w in it._workers]
    assert all(alive(p) for p in pids)
    del it
    assert wait_until(lambda: not any(alive(p) for p in pids), timeout=3)


def test_workers_busy_in_a_slow_dataset_are_stopped():
    it = iter(DataLoader(helpers.Slow(0.4, n=50), batch_size=1, num_workers=2))
    next(it)
    t0 = time.monotonic()
    del it
    assert time.monotonic() - t0 < 3


def test_persistent_workers_are_reused_and_fast():
    loader = DataLoader(
        helpers.Squares(8),
        batch_size=2,
        num_workers=2,
        persistent_workers=True,
        worker_init_fn=helpers.slow_init,
    )
    t0 = time.perf_counter()
    it = iter(loader)
    next(it)
    first = time.perf_counter() - t0
    pids = [w.pid for w in it._workers]
    list(it)
    t0 = time.perf_counter()
    it2 = iter(loader)
    next(it2)
    second = time.perf_counter() - t0
    assert it2 is it and [w.pid for w in it2._workers] == pids
    assert second * 10 < first, (first, second)
    assert [values(y) for _, y in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    del it, it2
    loader._iterator._shutdown_workers()


def test_persistent_workers_epochs_match_fresh_workers():
    def epochs(persistent):
        loader = DataLoader(
            helpers.RandomAugment(10),
            batch_size=3,
            shuffle=True,
            num_workers=2,
            persistent_workers=persistent,
            generator=np.random.default_rng(0),
        )
        out = [[values(b["py"]) for b in loader] for _ in range(3)]
        if persistent:
            loader._iterator._shutdown_workers()
        return out

    assert epochs(True) == epochs(False)


def test_persistent_iterable_dataset_runs_every_epoch():
    loader = DataLoader(helpers.Range(0, 9), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert sorted(i for b in loader for i in values(b)) == list(range(9))
    loader._iterator._shutdown_workers()


def test_state_dict_resume_with_workers():
    def make(n):
        return DataLoader(
            helpers.RandomAugment(20),
            batch_size=3,
            shuffle=True,
            num_workers=n,
            generator=np.random.default_rng(2),
        )

    full = [values(b["py"]) for b in make(0)]
    loader = make(2)
    head = []
    for b in loader:
        head.append(values(b["py"]))
        if len(head) == 3:
            break
    state = loader.state_dict()
    resumed = make(1)
    resumed.load_state_dict(state)
    assert head + [values(b["py"]) for b in resumed] == full


def test_full_shared_memory_is_a_clear_error(monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)  # inherited by forked workers
    # ember_data's own segments (without ember_multiprocessing's transport, which
    # would make the batch in its shared memory instead)
    monkeypatch.setattr(transport, "_hook", [None])
    loader = DataLoader(
        helpers.Big(4, (3, 64, 64)), batch_size=4, num_workers=1, multiprocessing_context="fork"
    )
    with pytest.raises(RuntimeError) as info:
        list(loader)
    text = str(info.value)
    assert "out of shared memory" in text and shm.shm_dir() in text and "free" in text
    assert "worker process 0" in text


def test_forkserver_context_object():
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    loader = DataLoader(
        helpers.Squares(6), batch_size=3, num_workers=1, multiprocessing_context=ctx
    )
    assert [values(y) for _, y in loader] == [[0, 1, 2], [3, 4, 5]]


def _run_script(body):
    code = textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), *sys.path]))
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


SCRIPT = """
    import sys, helpers
    from ember_data import DataLoader
    loader = DataLoader(helpers.Slow(0.05, n=10000), batch_size=1, num_workers=2)
    it = iter(loader)
    next(it)
    print(" ".join(str(w.pid) for w in it._workers), flush=True)
    for _ in it:
        pass
"""


def test_ctrl_c_leaves_no_process_behind():
    p = _run_script(SCRIPT)
    try:
        pids = [int(x) for x in p.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(x) for x in pids)
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        # ~0.2 s when idle; the bound is generous for a machine under heavy load
        p.wait(timeout=60)
        assert "KeyboardInterrupt" in p.stderr.read()
        assert wait_until(lambda: not any(alive(x) for x in pids), timeout=3)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_workers_exit_when_the_main_process_is_killed():
    p = _run_script(SCRIPT)
    try:
        pids = [int(x) for x in p.stdout.readline().split()]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        assert wait_until(lambda: not any(alive(x) for x in pids), timeout=4)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_ember_tensor_batches_cross_without_copy_loss():
    ec = pytest.importorskip("ember_core")
    ds = helpers.Big(8, (3, 32, 32))
    for b in DataLoader(ds, batch_size=4, num_workers=2):
        assert isinstance(b, ec.Tensor) and b.dtype == ec.float32
        b.add_(1)  # writable
    assert _rng.ember_core() is ec


class _TensorSamples:
    """Samples that are ember tensors (and plain ints), made in the worker."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ec = _rng.ember_core()
        return ec.full((3, 4), float(i)), i


def test_worker_batches_arrive_in_shared_memory_with_ember_multiprocessing():
    # As PyTorch's workers collate into shared storages: with ember_multiprocessing
    # installed, every tensor of a batch made in a worker is shared in the main process.
    ec = pytest.importorskip("ember_core")
    pytest.importorskip("ember_multiprocessing")
    loader = DataLoader(_TensorSamples(12), batch_size=4, num_workers=2)
    batches = list(loader)
    assert len(batches) == 3
    for k, (x, y) in enumerate(batches):
        assert isinstance(x, ec.Tensor) and x.is_shared() and y.is_shared()
        want = np.arange(4 * k, 4 * k + 4, dtype=np.float32)
        np.testing.assert_array_equal(x.numpy(), np.broadcast_to(want[:, None, None], (4, 3, 4)))
        np.testing.assert_array_equal(y.numpy(), np.arange(4 * k, 4 * k + 4))
    # in the main process collation makes ordinary tensors
    x, _ = next(iter(DataLoader(_TensorSamples(4), batch_size=4)))
    assert not x.is_shared()
