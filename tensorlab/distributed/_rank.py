"""What each rank runs under `python -m tensorlab.distributed.run`: torchrun's environment variables
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT),
taken from the MPI launcher's own (Open MPI's OMPI_COMM_WORLD_*, MPICH/Hydra's PMI_*), then the
user's script or module as __main__. Reading them does not start MPI: scripts that read LOCAL_RANK
before init_process_group (to pick a GPU) work as under torchrun."""
from __future__ import annotations

import os
import runpy
import sys

_SOURCES = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"),
}


def torchrun_env(environ):
    """The torchrun variables derived from an MPI launcher's environment (only those it provides)."""
    out = {}
    for name, sources in _SOURCES.items():
        for src in sources:
            if environ.get(src) not in (None, ""):
                out[name] = environ[src]
                break
    if "RANK" in out and "LOCAL_WORLD_SIZE" in out:
        rank, local = int(out["RANK"]), max(1, int(out["LOCAL_WORLD_SIZE"]))
        # the launcher maps N consecutive ranks per node (run.py asks mpiexec for that); Open MPI numbers
        # local ranks in its own (core) order, torchrun as rank % N: give torchrun's, unique all the same
        out["GROUP_RANK"] = out["NODE_RANK"] = str(rank // local)
        out["LOCAL_RANK"] = str(rank % local)
    out.setdefault("MASTER_ADDR", environ.get("MASTER_ADDR", "127.0.0.1"))
    out.setdefault("MASTER_PORT", environ.get("MASTER_PORT", "29500"))
    return out


def main(argv):
    if len(argv) < 2 or argv[0] not in ("script", "module"):
        sys.exit("usage: python -m tensorlab.distributed._rank {script|module} TARGET [ARGS...] (started by "
                 "python -m tensorlab.distributed.run)")
    for k, v in torchrun_env(os.environ).items():
        os.environ.setdefault(k, v)
    kind, target, args = argv[0], argv[1], argv[2:]
    if kind == "module":
        sys.argv = [target] + args
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
