"""Bad input across processes (run by test_errors.py under mpiexec -n 2):
collectives that disagree between ranks are named with TORCHDIST's DETAIL debug mode,
argument errors that need two ranks (DistributedSampler is checked in ember's tests)."""

import os

import ember_core as ec
import ember_distributed as dist

assert os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL"
dist.init_process_group("mpi")
r = dist.get_rank()


def expect(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), (text, str(e))
        return
    raise AssertionError(f"no {exc.__name__} ({text})")


# shapes that differ between ranks: named, not a hang or garbage
expect(
    RuntimeError,
    "Detected mismatch between collectives on ranks",
    lambda: dist.all_reduce(ec.ones(3 + r)),
)
# dtypes that differ
expect(
    RuntimeError,
    "Detected mismatch",
    lambda: dist.all_reduce(ec.ones(3, dtype=[ec.float32, ec.float64][r])),
)
# different collectives
expect(
    RuntimeError,
    "Detected mismatch",
    lambda: dist.broadcast(ec.ones(2), 0) if r == 0 else dist.all_reduce(ec.ones(2)),
)
# the group still works after a reported mismatch
t = ec.ones(2)
dist.all_reduce(t)
assert t.tolist() == [2.0, 2.0]
if r == 1:
    expect(
        ValueError,
        "must NOT be specified on non-destination ranks",
        lambda: dist.gather(ec.ones(1), [ec.zeros(1), ec.zeros(1)], dst=0),
    )
    expect(
        ValueError,
        "must NOT be specified on non-source ranks",
        lambda: dist.scatter(ec.ones(1), [ec.zeros(1), ec.zeros(1)], src=0),
    )
dist.barrier()
print(f"ERRORS OK rank {r}", flush=True)
