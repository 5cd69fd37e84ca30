import os
import sys

import pytest

import ember_multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402


def test_spawn_reraises_child_exception_with_traceback():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(helpers.fail_on_one, nprocs=3, start_method="fork")
    assert "worker 1 failed on purpose" in str(info.value)
    assert "Traceback" in str(info.value)
    assert info.value.error_index == 1


def test_spawn_reports_a_killed_child():
    with pytest.raises(mp.ProcessExitedException) as info:
        mp.spawn(helpers.exit_with_signal, nprocs=2, start_method="fork")
    assert info.value.signal_name == "SIGKILL"


def test_spawn_runs_every_rank():
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.spawn(helpers.ok, args=(out,), nprocs=3)
    assert sorted(out.get() for _ in range(3)) == [0, 1, 2]
    assert not mp.active_children()
