"""A torchrun-like launcher: ``python -m ember.distributed.run --nproc-per-node N script.py ARGS``.

Each machine (node) runs one launcher, which starts its ``--nproc-per-node``
workers and sets torchrun's environment variables in each: RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID.  A script then calls ``init_process_group()`` as under
torchrun.

``--launcher mpiexec`` (the default) starts a node's workers as one MPI job
(``mpiexec -n N``, the mpiexec of the installed MPI: shared memory between
them); with ``--nnodes M`` the nodes' jobs meet through the TCP store at
MASTER_ADDR:MASTER_PORT (Note [Forming the world]).  ``--launcher processes``
starts every worker as its own one-process MPI job, joined the same way.

A worker that fails (an exception, a non-zero exit, a signal) stops the others:
its traceback is printed, the job is aborted, and the launcher exits non-zero
(the worker's exit code where one is known).  SIGINT/SIGTERM to the launcher
reach every worker.  For several machines under MPI's own launcher instead,
run ``mpiexec -f hostfile -n N python script.py`` (see the README).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from types import FrameType

__all__ = ["main", "parse_args"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The launcher's arguments (torchrun's flags), checked."""
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start N worker processes per node for ember.distributed (torchrun's flags).",
    )
    p.add_argument(
        "--nproc-per-node",
        "--nproc_per_node",
        default="1",
        help="workers on this node: a number, or 'cpu' (one per core)",
    )
    p.add_argument("--nnodes", default="1", help="number of nodes (machines)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's rank")
    p.add_argument(
        "--master-addr",
        "--master_addr",
        default="127.0.0.1",
        help="address of node 0 (where the rendezvous store listens)",
    )
    p.add_argument(
        "--master-port",
        "--master_port",
        type=int,
        default=None,
        help="port of the rendezvous store (default: a free port, single node only)",
    )
    p.add_argument("--standalone", action="store_true", help="one node, a free port (as torchrun)")
    p.add_argument("--rdzv-id", "--rdzv_id", "--run-id", default=None, help="a job id")
    p.add_argument(
        "--launcher",
        choices=("mpiexec", "processes"),
        default="mpiexec",
        help="one MPI job per node (default) or one per worker",
    )
    p.add_argument(
        "--mpiexec",
        default=None,
        help="the mpiexec to use (default: found on PATH next to this Python first)",
    )
    p.add_argument("--mpiexec-args", default="", help="extra arguments for mpiexec")
    p.add_argument("-m", "--module", action="store_true", help="run a module, as python -m")
    p.add_argument(
        "--no-python",
        "--no_python",
        action="store_true",
        help="the script is an executable, not a Python script",
    )
    p.add_argument("training_script", help="the script (or module with -m) each worker runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node == "cpu":
        args.nproc_per_node = os.cpu_count() or 1
    try:
        args.nproc_per_node = int(args.nproc_per_node)
    except ValueError:
        p.error(f"--nproc-per-node must be a number or 'cpu', got {args.nproc_per_node!r}")
    if ":" in str(args.nnodes):
        lo, _, hi = str(args.nnodes).partition(":")
        if lo != hi:
            p.error("elastic --nnodes MIN:MAX is not supported; give one number")
        args.nnodes = lo
    args.nnodes = int(args.nnodes)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        p.error("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node-rank must be in [0, {args.nnodes - 1}]")
    if args.master_port is None:
        if args.nnodes > 1:
            p.error("--master-port is needed with --nnodes > 1 (every node must agree on it)")
        args.master_port = _free_port()
    return args


def _find_mpiexec(given: str | None) -> str:
    if given:
        return given
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        sys.exit(
            "ember.distributed.run: no mpiexec found; pip install 'ember-distributed[mpi]' "
            "(the mpich wheel brings one) or install an MPI"
        )
    return found


def _mpi_env() -> dict[str, str]:
    """Variables that let MPI run as root where the MPI asks for them (Open MPI)."""
    env = {}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def _worker_command(args: argparse.Namespace) -> list[str]:
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    cmd = [sys.executable, "-u", "-m", "ember_distributed._worker"]
    if args.module:
        cmd.append("-m")
    return [*cmd, args.training_script, *args.training_script_args]


def _stop(procs: list[subprocess.Popen[bytes]], grace: float = 3.0) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Start the workers, wait for them; the exit code (a failed worker's)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    n, nodes = args.nproc_per_node, args.nnodes
    env = dict(os.environ)
    env.update(_mpi_env())
    env.update(
        MASTER_ADDR=args.master_addr,
        MASTER_PORT=str(args.master_port),
        WORLD_SIZE=str(n * nodes),
        LOCAL_WORLD_SIZE=str(n),
        GROUP_RANK=str(args.node_rank),
        GROUP_WORLD_SIZE=str(nodes),
        NODE_RANK=str(args.node_rank),
        TORCHELASTIC_RUN_ID=args.rdzv_id or uuid.uuid4().hex[:12],
        EMBER_RANK_OFFSET=str(args.node_rank * n),
        PYTHONUNBUFFERED="1",
    )
    mpiexec = _find_mpiexec(args.mpiexec)
    extra = args.mpiexec_args.split()
    procs: list[subprocess.Popen[bytes]] = []
    if args.launcher == "mpiexec":
        cmd = [mpiexec, *extra, "-n", str(n), *_worker_command(args)]
        procs.append(subprocess.Popen(cmd, env=env, start_new_session=True))
    else:
        for local in range(n):
            wenv = dict(env, EMBER_LOCAL_RANK=str(local))
            cmd = [mpiexec, *extra, "-n", "1", *_worker_command(args)]
            procs.append(subprocess.Popen(cmd, env=wenv, start_new_session=True))

    def forward(signum: int, frame: FrameType | None) -> None:
        _stop(procs)
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    code = 0
    while True:
        states = [p.poll() for p in procs]
        failed = [(i, c) for i, c in enumerate(states) if c not in (None, 0)]
        if failed:
            i, c = failed[0]
            who = f"worker {i} (local rank {i})" if args.launcher == "processes" else "the MPI job"
            print(
                f"ember.distributed.run: {who} on node {args.node_rank} exited with code "
                f"{c if c >= 0 else f'{c} (signal {-c})'}; stopping the others",
                file=sys.stderr,
                flush=True,
            )
            _stop(procs)
            code = c if c > 0 else 1
            break
        if all(c == 0 for c in states):
            break
        time.sleep(0.05)
    return code


if __name__ == "__main__":
    sys.exit(main())
