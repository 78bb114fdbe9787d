"""An unchanged torch script using torch.nn.utils (packed sequences through GRU/LSTM, weight_norm and
orthogonal parametrizations, pruning, clipping, functional_call) runs under `python -m tensorlab.compat`
and prints torch's losses (tests/compat_scripts/nn_utils_sequences.py)."""
from __future__ import annotations

import os

from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split


def test_nn_utils_sequences_script_matches_torch():
    script = os.path.join(SCRIPTS, "nn_utils_sequences.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert len(losses) == 14 and losses[10] < losses[0]
    assert rest[1] == "parametrized: True True"
    assert "'head.parametrizations.weight.original0'" in rest[0] and "'gru.weight_hh_l0_mask'" in rest[0]
    _compare_with_torch(script, [], res)
