"""Every collective, reduce op and dtype against NumPy, with 2 and 4 processes on one
machine (MPI's shared-memory transport): workers/collectives.py under mpiexec."""

import pytest
from helpers import need_mpi, run_mpi


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_against_numpy(n):
    need_mpi()
    res = run_mpi("collectives.py", n, timeout=180)
    assert res.returncode == 0, res
    for r in range(n):
        assert f"COLLECTIVES OK rank {r} of {n}" in res.out, res
