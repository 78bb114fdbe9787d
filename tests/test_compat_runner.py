"""`python -m tensorlab.compat script.py` runs unmodified PyTorch scripts (tests/compat_scripts/) on
tensorlab; with torch installed the same scripts run on torch and print the same losses (float32
tolerance: weights and data come from a fixed NumPy seed on both sides) and the same module trees,
state_dict keys and load_state_dict results."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "compat_scripts")
HAS_TORCH = importlib.util.find_spec("torch") is not None
LOSS = re.compile(r"loss (\S+)$")


def _run(args, *, compat=True, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TENSORLAB_CUDA_EMULATION", None)
    cmd = [sys.executable] + (["-m", "tensorlab.compat"] if compat else []) + args
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def _split(out):
    """(loss values, the other lines) of a script's output."""
    losses, rest = [], []
    for line in out.splitlines():
        m = LOSS.search(line)
        if m:
            losses.append(float(m.group(1)))
            rest.append(line[:m.start()])
        else:
            rest.append(line.replace("tensorlab.", "torch."))  # dtype names in ParameterList reprs
    return np.array(losses), rest


def _compare_with_torch(script, args, ours):
    if not HAS_TORCH:
        return
    theirs = _run([script] + args, compat=False)
    assert theirs.returncode == 0, theirs.stderr
    our_losses, our_rest = _split(ours.stdout)
    their_losses, their_rest = _split(theirs.stdout)
    assert our_rest == their_rest
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-4, atol=1e-6)


def test_mlp_regression_script_trains_as_on_torch():
    script = os.path.join(SCRIPTS, "mlp_regression.py")
    res = _run([script, "--steps", "15"])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert len(losses) == 31  # 15 SGD steps, 15 Adam steps, the final evaluation
    assert losses[-1] < losses[0] / 5
    assert rest[0] == "<All keys matched successfully>"
    assert rest[-1] == "keys: ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'fc3.weight', 'fc3.bias']"
    _compare_with_torch(script, ["--steps", "15"], res)


def test_containers_script_matches_torch():
    script = os.path.join(SCRIPTS, "containers.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "state_dict: ['steps', 'blocks.0.weight', 'blocks.0.bias', 'blocks.1.weight', 'blocks.1.bias', 'blocks.2.weight', " \
           "'blocks.2.bias', 'heads.reg.weight', 'heads.reg.bias', 'heads.aux.0.weight', 'heads.aux.0.bias', " \
           "'scales.0', 'scales.1', 'scales.2', 'bias.b']" in lines
    assert "hook calls: 8 (8, 6) steps buffer: 9" in lines
    assert "_IncompatibleKeys(missing_keys=['steps'], unexpected_keys=[])" in lines
    assert lines[-1] == "same output: True"
    _compare_with_torch(script, [], res)


def test_missing_name_script_stops_with_a_clear_message():
    res = _run([os.path.join(SCRIPTS, "missing_name.py")])
    assert res.returncode == 1
    assert res.stdout == "forward ok (1, 2)\n"
    err = res.stderr.splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert err[1].strip().startswith('File "') and "missing_name.py" in err[1]  # the script's line comes first
    assert err[-1] == ("AttributeError: tensorlab does not implement torch.utils.mobile_optimizer.optimize_for_mobile "
                       "(torch.utils.mobile_optimizer has no tensorlab counterpart yet)")
    assert "runpy" not in res.stderr


def test_alias_resolution_and_missing_names():
    res = _run([os.path.join(SCRIPTS, "alias_checks.py"), "--flag", "value"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "OK"


def test_run_module_and_usage(tmp_path):
    (tmp_path / "tiny_torch_mod.py").write_text("import sys, torch\nprint(__name__, torch.ones(2).sum().item(), "
                                               "sys.argv[1:])\n")
    res = _run(["-m", "tiny_torch_mod", "x"], cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "__main__ 2.0 ['x']\n"
    usage = _run([])
    assert usage.returncode == 2 and "usage: python -m tensorlab.compat" in usage.stderr
    missing = _run([str(tmp_path / "nope.py")])
    assert missing.returncode == 2 and "can't open file" in missing.stderr


def test_run_code_with_dash_c(tmp_path):
    """python -m tensorlab.compat -c CODE [args]: as python -c (sys.argv[0] '-c', a fresh __main__, the
    traceback of a failure without the runner's frames)."""
    res = _run(["-c", "import sys, torch; print(__name__, type(torch.ones(2)).__module__, "
                      "torch.arange(4.).sum().item(), sys.argv)", "x", "y"], cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "__main__ tensorlab.tensor 6.0 ['-c', 'x', 'y']\n"
    bad = _run(["-c", "import torch\ntorch.no_such_function()"], cwd=str(tmp_path))
    assert bad.returncode == 1 and 'File "<string>", line 2' in bad.stderr and "no_such_function" in bad.stderr
    assert "runpy" not in bad.stderr and "__main__.py" not in bad.stderr
    assert _run(["-c"]).returncode == 2


def test_install_uninstall_and_refusal_in_a_fresh_process():
    code = ("import sys, tensorlab, tensorlab.compat as c\n"
            "with c.install():\n"
            "    import torch\n"
            "    assert torch.nn.Linear is tensorlab.nn.Linear\n"
            "assert 'torch' not in sys.modules and not c.installed()\n"
            "c.install(); c.install()\n"
            "assert sys.meta_path.count(c._alias.FINDER) == 1\n"
            "c.uninstall()\n"
            "print('ok')\n")
    res = _run(["-c", code], compat=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "ok\n"
    if HAS_TORCH:
        res = _run(["-c", "import torch, tensorlab.compat as c\nc.install()"], compat=False)
        assert res.returncode == 1
        assert "RuntimeError: tensorlab.compat: PyTorch itself is already imported in this process" in res.stderr


def test_dataloader_and_scheduler_script_matches_torch():
    for needed in ("tensorlab.utils.data", "tensorlab.optim.lr_scheduler"):
        try:
            found = importlib.util.find_spec(needed) is not None
        except ImportError:
            found = False
        if not found:
            pytest.skip(f"{needed} is not part of this tree")
    script = os.path.join(SCRIPTS, "dataloader_scheduler.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert rest[0] == "batches: 5" and len(losses) == 5 and losses[-1] < losses[0] / 3
    assert [line.split(" lr ")[1].strip() for line in rest[1:]] == ["0.05", "0.025", "0.025", "0.0125", "0.0125"]
    _compare_with_torch(script, [], res)


def test_spawned_children_get_the_alias_too():
    res = _run([os.path.join(SCRIPTS, "spawn_child.py")])
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"{m} ('TorchAlias', 'tensorlab', 10)" for m in ("spawn", "forkserver", "fork")]


def test_onnx_export_script_writes_the_model_torch_writes():
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    script = os.path.join(SCRIPTS, "onnx_export.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[:2] == ["inputs ['image'] outputs ['logp']", "batch dim batch"]
    assert lines[-1] == "matches eager True" and "batch 5 shape (5, 5)" in lines[3]
    _compare_with_torch(script, [], res)
