"""Running MPI jobs from tests: a timeout on every job, its output kept for messages,
and a check that no process of it is left behind."""

import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")


def mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


def need_mpi():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install 'ember-distributed[mpi]')")
    if mpiexec() is None:
        pytest.skip("no mpiexec (pip install mpich)")


def env(**extra):
    e = dict(os.environ)
    e.update(PYTHONUNBUFFERED="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # the pytest process may itself be an MPI singleton: its PMI variables must not leak
    for k in list(e):
        if k.startswith(("PMI_", "PMIX_", "OMPI_COMM_WORLD", "MPI_LOCALRANKID", "HYDRA_")):
            del e[k]
    e.update({k: str(v) for k, v in extra.items()})
    return e


class Result:
    def __init__(self, proc, out, elapsed):
        self.returncode = proc.returncode
        self.out = out
        self.elapsed = elapsed

    def __repr__(self):
        return f"exit {self.returncode} after {self.elapsed:.1f} s; output:\n{self.out}"


def run(cmd, timeout=120, **extra_env):
    """Run cmd in its own session; on timeout kill the whole session and fail."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(**extra_env),
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} hung for {timeout} s; output:\n{out}")
    return Result(proc, out, time.monotonic() - start)


def run_mpi(script, n, timeout=120, args=(), **extra_env):
    return run(
        [mpiexec(), "-n", str(n), sys.executable, os.path.join(WORKERS, script), *args],
        timeout,
        **extra_env,
    )


def assert_gone(pids, within=10.0):
    """Every pid has exited (zombies of the job count as gone)."""
    import psutil

    deadline = time.monotonic() + within
    alive = []
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"processes left behind: {alive}")
