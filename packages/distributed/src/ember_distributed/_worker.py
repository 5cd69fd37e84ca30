"""The bootstrap of every worker the launcher starts (``python -m ember_distributed._worker``).

It starts MPI, sets torchrun's environment variables from the MPI rank (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ...), then runs the
script as ``__main__``.  An uncaught exception (or a non-zero exit) prints its
traceback and aborts the whole MPI job, so the other workers stop at once
instead of waiting in a collective.
"""

import os
import runpy
import sys
import traceback


def _mpi_world():
    import mpi4py

    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI, MPI.COMM_WORLD


def main(argv):
    module = False
    if argv and argv[0] == "-m":
        module = True
        argv = argv[1:]
    if not argv:
        sys.exit("usage: python -m ember_distributed._worker [-m] SCRIPT [ARGS...]")
    MPI, world = _mpi_world()
    local = world.Get_rank()
    if "EMBER_LOCAL_RANK" in os.environ:  # one MPI job per worker (--launcher processes)
        local = int(os.environ["EMBER_LOCAL_RANK"])
    offset = int(os.environ.get("EMBER_RANK_OFFSET", "0"))
    os.environ["LOCAL_RANK"] = str(local)
    os.environ["RANK"] = str(offset + local)
    os.environ.setdefault("WORLD_SIZE", str(world.Get_size()))
    os.environ.setdefault("LOCAL_WORLD_SIZE", str(world.Get_size()))
    os.environ.setdefault("GROUP_RANK", "0")
    os.environ["ROLE_RANK"] = os.environ["RANK"]
    os.environ["ROLE_WORLD_SIZE"] = os.environ["WORLD_SIZE"]
    os.environ["ROLE_NAME"] = "default"
    sys.argv = list(argv)
    code = 0
    try:
        if module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None or e.code == 0:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - every failure must stop the job
        print(f"[rank {os.environ['RANK']}] worker failed:", file=sys.stderr)
        traceback.print_exc()
        code = 1
    if code:
        sys.stdout.flush()
        sys.stderr.flush()
        from ember_distributed import distributed_c10d

        comm = world
        if distributed_c10d._World.default is not None:
            comm = distributed_c10d._World.default._comm or world
        comm.Abort(code)
    sys.exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
