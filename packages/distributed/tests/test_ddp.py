"""DistributedDataParallel: workers/ddp.py under mpiexec -n 2 compares DDP with one process
(MLP and CNN in float64, no_sync, unused parameters, static_graph, bucket views) and checks
that bucket all-reduces start before backward ends."""

import re

from helpers import need_mpi, run_mpi


def test_ddp_matches_one_process():
    need_mpi()
    res = run_mpi("ddp.py", 2, timeout=180)
    assert res.returncode == 0, res
    for r in range(2):
        line = re.search(rf"DDP OK rank {r}: .*", res.out)
        assert line, res
        diffs = [float(x) for x in re.findall(r"(\d\.\d+e[-+]\d+)", line.group(0))]
        assert diffs and max(diffs) < 1e-6, line.group(0)
