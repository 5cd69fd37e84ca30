"""A process that fails (run by test_faults.py): argv[1] says how rank 1 fails while rank 0
waits in a collective; every process writes its pid to argv[2] first."""

import os
import signal
import sys
import threading
import time
from datetime import timedelta

import ember_core as ec
import ember_distributed as dist

how, pid_dir = sys.argv[1], sys.argv[2]
dist.init_process_group("mpi", timeout=timedelta(seconds=float(os.environ.get("T", "30"))))
r = dist.get_rank()
with open(os.path.join(pid_dir, f"pid{r}"), "w") as f:
    f.write(str(os.getpid()))
dist.barrier()
if r == 1:
    if how == "raise":
        raise ValueError("rank 1 failed on purpose")
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how in ("hang", "hang-async", "interrupt"):
        time.sleep(120)
if how == "interrupt":  # Ctrl-C reaches rank 0 while it waits for the late rank 1
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        dist.all_reduce(ec.ones(4))
    except KeyboardInterrupt:
        print(f"rank 0 interrupted after {time.monotonic() - start:.1f} s", flush=True)
        raise
elif how == "hang-async":
    work = dist.all_reduce(ec.ones(4), async_op=True)
    work.wait(timeout=timedelta(seconds=2))
else:
    dist.all_reduce(ec.ones(4))
print("rank 0 was not stopped", flush=True)
