"""Faults: a rank that raises, is killed or hangs stops the job -- the others raise within
the timeout or are stopped at once -- and no process is left behind."""

import re

import pytest
from helpers import assert_gone, need_mpi, run_mpi


def _pids(tmp_path):
    return [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_stops_the_job(tmp_path, how):
    need_mpi()
    res = run_mpi("faults.py", 2, timeout=60, args=(how, str(tmp_path)))
    assert res.returncode != 0, res
    assert "rank 0 was not stopped" not in res.out, res
    assert res.elapsed < 30, res
    if how == "raise":
        assert "ValueError: rank 1 failed on purpose" in res.out, res
    assert_gone(_pids(tmp_path))


@pytest.mark.parametrize("how", ["hang", "hang-async"])
def test_a_hung_rank_makes_the_others_raise_within_the_timeout(tmp_path, how):
    need_mpi()
    res = run_mpi("faults.py", 2, timeout=60, args=(how, str(tmp_path)), T=2)
    assert res.returncode != 0, res
    assert "DistBackendError" in res.out and "did not finish within 2 s" in res.out, res
    assert "rank 0 was not stopped" not in res.out, res
    assert res.elapsed < 30, res
    assert_gone(_pids(tmp_path))


def test_ctrl_c_interrupts_a_waiting_collective(tmp_path):
    """SIGINT reaches a process waiting in all_reduce for a late peer at once (the
    C loop returns to Python between slices), not after the group's timeout."""
    need_mpi()
    res = run_mpi("faults.py", 2, timeout=60, args=("interrupt", str(tmp_path)))
    assert res.returncode != 0, res
    m = re.search(r"rank 0 interrupted after ([\d.]+) s", res.out)
    assert m and float(m.group(1)) < 5, res
    assert "rank 0 was not stopped" not in res.out, res
    assert res.elapsed < 30, res
    assert_gone(_pids(tmp_path))
