"""An unchanged torch script using LBFGS (strong Wolfe), Rprop, ASGD, Adamax, activation
checkpointing, SWA, torch.func and torch.autograd.functional runs under `python -m
tensorlab.compat` and prints torch's losses (tests/compat_scripts/lbfgs_swa_checkpoint.py)."""
from __future__ import annotations

import os

from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split


def test_lbfgs_swa_checkpoint_script_matches_torch():
    script = os.path.join(SCRIPTS, "lbfgs_swa_checkpoint.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, _ = _split(res.stdout)
    assert len(losses) == 16 and losses[2] < losses[0]
    _compare_with_torch(script, [], res)
