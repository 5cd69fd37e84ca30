"""The launcher (python -m ember_distributed.run): environment variables, exit codes, a
failing worker, one MPI job per worker, and two "nodes" on this machine."""

import json
import os
import socket
import subprocess
import sys

import pytest
from helpers import WORKERS, assert_gone, env, need_mpi, run

from ember_distributed import run as launcher

SCRIPT = os.path.join(WORKERS, "launched.py")


def _envs(env_dir):
    """What each rank of launched.py reported (one file per rank)."""
    return sorted(
        (json.loads(p.read_text()) for p in env_dir.glob("rank*.json")), key=lambda e: e["rank"]
    )


def _launch(env_dir, *args, timeout=90):
    return run(
        [sys.executable, "-m", "ember_distributed.run", *args],
        timeout,
        EMBER_TEST_ENV_DIR=str(env_dir),
    )


@pytest.mark.parametrize("mode", ["mpiexec", "processes"])
def test_environment_and_exit_code(mode, tmp_path):
    need_mpi()
    res = _launch(tmp_path, "--nproc-per-node", "2", "--launcher", mode, SCRIPT, "a", "--b")
    assert res.returncode == 0, res
    envs = _envs(tmp_path)
    assert [e["RANK"] for e in envs] == ["0", "1"], res
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    for e in envs:
        assert e["WORLD_SIZE"] == "2" and e["LOCAL_WORLD_SIZE"] == "2" and e["GROUP_RANK"] == "0"
        assert e["MASTER_ADDR"] == "127.0.0.1" and int(e["MASTER_PORT"]) > 0
        assert e["TORCHELASTIC_RUN_ID"] and e["launched"] is True
        assert e["sum"] == 3.0 and e["argv"] == ["a", "--b"]


@pytest.mark.parametrize("mode", ["mpiexec", "processes"])
def test_a_failing_worker_stops_the_others(mode, tmp_path):
    """The last rank exits with code 3 while the others wait in a barrier: the launcher
    stops them and exits with the worker's code; no worker is left behind."""
    need_mpi()
    res = _launch(tmp_path, "--nproc-per-node", "2", "--launcher", mode, SCRIPT, "--fail")
    assert res.returncode == 3, res
    assert "exited with code 3" in res.out, res
    assert res.elapsed < 30, res
    assert_gone([e["pid"] for e in _envs(tmp_path)])


def test_a_killed_worker_stops_the_others(tmp_path):
    need_mpi()
    res = _launch(tmp_path, "--nproc-per-node", "2", SCRIPT, "--kill")
    assert res.returncode != 0, res
    assert "exited with code" in res.out, res
    assert res.elapsed < 30, res
    assert_gone([e["pid"] for e in _envs(tmp_path)])


def test_two_nodes_on_this_machine(tmp_path):
    """--nnodes 2: two launchers (one MPI job each) meet through the TCP store."""
    need_mpi()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--master-port", port]
    cmd = [sys.executable, "-m", "ember_distributed.run"]
    other = subprocess.Popen(
        [*cmd, *common, "--node-rank", "1", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(EMBER_TEST_ENV_DIR=str(tmp_path)),
        start_new_session=True,
    )
    try:
        res = run(
            [*cmd, *common, "--node-rank", "0", SCRIPT],
            timeout=90,
            EMBER_TEST_ENV_DIR=str(tmp_path),
        )
        out1, _ = other.communicate(timeout=60)
    finally:
        if other.poll() is None:
            os.killpg(other.pid, 9)
    assert res.returncode == 0 and other.returncode == 0, (res, out1)
    envs = _envs(tmp_path)
    assert [e["RANK"] for e in envs] == ["0", "1"], (res, out1)
    assert [e["GROUP_RANK"] for e in envs] == ["0", "1"]
    assert all(e["sum"] == 3.0 and e["WORLD_SIZE"] == "2" for e in envs)


def test_arguments():
    a = launcher.parse_args(["--nproc_per_node", "3", "x.py", "--lr", "1"])
    assert a.nproc_per_node == 3 and a.training_script == "x.py"
    assert a.training_script_args == ["--lr", "1"] and a.master_port > 0
    with pytest.raises(SystemExit):
        launcher.parse_args(["--nnodes", "2", "x.py"])  # no --master-port
    with pytest.raises(SystemExit):
        launcher.parse_args(["--nnodes", "2", "--node-rank", "2", "--master-port", "1", "x.py"])
