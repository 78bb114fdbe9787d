"""An unchanged torch script using Rprop, ASGD, Adamax, activation
checkpointing, SWA, torch.func and torch.autograd.functional runs under `python -m
tensorlab.compat` and prints torch's losses (tests/compat_scripts/swa_checkpoint_func.py)."""
from __future__ import annotations

import os

from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split


def test_swa_checkpoint_func_script_matches_torch():
    script = os.path.join(SCRIPTS, "swa_checkpoint_func.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, _ = _split(res.stdout)
    assert len(losses) == 13 and losses[2] < losses[0]
    _compare_with_torch(script, [], res)


def test_lazy_norm_pool_script_matches_torch():
    """Lazy layers, InstanceNorm2d, LocalResponseNorm, LPPool2d, Bilinear, SyncBatchNorm, DataParallel."""
    script = os.path.join(SCRIPTS, "lazy_norm_pool.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, _ = _split(res.stdout)
    assert len(losses) == 5 and losses[-1] < losses[0]
    _compare_with_torch(script, [], res)
