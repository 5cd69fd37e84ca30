"""DistributedDataParallel: workers/ddp.py under mpiexec -n 2 and -n 4 compares DDP with one
process (MLP and CNN in float64, fused and foreach optimizers, no_sync, unused parameters,
static_graph, bucket views) and checks that bucket all-reduces start before backward ends."""

import re

import pytest
from helpers import need_mpi, run_mpi


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_one_process(n):
    need_mpi()
    res = run_mpi("ddp.py", n, timeout=180)
    assert res.returncode == 0, res
    for r in range(n):
        line = re.search(rf"DDP OK rank {r}: .*", res.out)
        assert line, res
        diffs = [float(x) for x in re.findall(r"(\d\.\d+e[-+]\d+)", line.group(0))]
        assert diffs and max(diffs) < 1e-6, line.group(0)
