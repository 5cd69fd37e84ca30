"""A script for the launcher tests: reports its environment, pid and an all-reduce, then
the last rank fails if asked (``--fail``: exit code 3, ``--kill``: SIGKILL) while the
others wait in a barrier."""

import json
import os
import signal
import sys

import ember_core as ec
import ember_distributed as dist

dist.init_process_group()
r = dist.get_rank()
t = ec.ones(1) * (r + 1)
dist.all_reduce(t)
keys = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)
line = json.dumps(
    {
        **{k: os.environ.get(k) for k in keys},
        "sum": t.item(),
        "rank": r,
        "pid": os.getpid(),
        "argv": sys.argv[1:],
        "launched": dist.is_torchelastic_launched(),
    }
)
# one file per rank: the ranks' stdout lines may interleave through mpiexec
with open(os.path.join(os.environ["EMBER_TEST_ENV_DIR"], f"rank{r}.json"), "w") as f:
    f.write(line)
if r == int(os.environ["WORLD_SIZE"]) - 1:
    if "--fail" in sys.argv:
        sys.exit(3)
    if "--kill" in sys.argv:
        os.kill(os.getpid(), signal.SIGKILL)
dist.barrier()
