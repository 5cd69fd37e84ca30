"""spawn / start_processes, as torch.multiprocessing.spawn."""

import os
import sys

import numpy as np
import pytest

import ember_core as ec
import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402


def test_child_exception_is_reraised_with_its_traceback_and_others_stopped():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.start_processes(helpers.fail_on_one, nprocs=3, start_method="fork")
    msg = str(info.value)
    assert "-- Process 1 terminated with the following error:" in msg
    assert "Traceback (most recent call last)" in msg
    assert "ValueError: worker 1 failed on purpose" in msg and "fail_on_one" in msg
    assert info.value.error_index == 1
    assert not mp.active_children()  # the sleeping ones were stopped


def test_a_killed_child_is_reported_with_its_signal():
    with pytest.raises(mp.ProcessExitedException, match="terminated with signal SIGKILL") as info:
        mp.start_processes(helpers.exit_with_signal, nprocs=2, start_method="fork")
    assert info.value.signal_name == "SIGKILL" and info.value.exit_code == -9
    assert info.value.error_index == 0
    assert not mp.active_children()


def test_a_non_zero_exit_code_is_reported():
    with pytest.raises(mp.ProcessExitedException, match="terminated with exit code 3") as info:
        mp.start_processes(helpers.exit_with_code, nprocs=2, start_method="fork")
    assert info.value.exit_code == 3 and info.value.error_index == 1


def test_spawn_runs_every_rank_over_shared_tensors():
    t = ec.zeros(3).share_memory_()
    assert mp.spawn(helpers.add_rank, args=(t,), nprocs=3) is None
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    assert not mp.active_children()


def test_join_false_returns_a_context():
    out = mp.get_context("fork").SimpleQueue()
    ctx = mp.start_processes(
        helpers.put_rank, args=(out,), nprocs=2, join=False, start_method="fork"
    )
    assert len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert sorted(out.get() for _ in range(2)) == [0, 1]


def test_spawn_with_another_start_method_warns_like_torch():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(
            helpers.put_rank,
            args=(mp.get_context("fork").SimpleQueue(),),
            nprocs=1,
            start_method="fork",
        )


@pytest.mark.parity
def test_failure_reports_match_torch():
    pytest.importorskip("torch")
    import torch.multiprocessing as tmp

    reports = []
    for lib in (mp, tmp):
        with pytest.raises(lib.ProcessRaisedException) as info:
            lib.start_processes(helpers.fail_on_one, nprocs=2, start_method="fork")
        lines = str(info.value).strip().splitlines()
        reports.append((lines[0], lines[-1], info.value.error_index))
        with pytest.raises(lib.ProcessExitedException) as info:
            lib.start_processes(helpers.exit_with_signal, nprocs=2, start_method="fork")
        reports.append((str(info.value), info.value.exit_code, info.value.signal_name))
    assert reports[:2] == reports[2:]
