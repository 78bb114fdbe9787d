"""Ten training programs of the kinds public PyTorch code is made of (pytorch/examples' dcgan,
super_resolution, time_sequence_prediction, fast_neural_style, reinforcement_learning actor-critic,
gcn and siamese_network; the nn.Transformer translation tutorial; lucidrains' einops ViT; nanoGPT's
GPT-2 trainer), written as ordinary torch scripts in tests/compat_scripts/ and run unchanged through
`python -m tensorlab.compat`: every printed loss matches torch's at float32 tolerance and every
other printed line is identical (torch as the oracle; weights, data and noise come from fixed NumPy
seeds). The DCGAN and GPT-2 programs also resume from a checkpoint the other library wrote with
torch.save. A program whose torch names tensorlab does not have yet is skipped, naming them."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from test_compat_runner import HAS_TORCH, ROOT, SCRIPTS, _run, _split


def _lacking(names):
    """The dotted names (torch's spelling under `torch.`) that tensorlab does not resolve."""
    missing = []
    for name in names:
        parts = name.split(".")
        obj, i = importlib.import_module("tensorlab"), 0
        try:
            while i < len(parts):
                try:
                    obj = getattr(obj, parts[i])
                except AttributeError:
                    obj = importlib.import_module(obj.__name__ + "." + parts[i])
                if isinstance(obj, types.ModuleType) and not os.path.abspath(obj.__file__ or "").startswith(
                        os.path.join(ROOT, "tensorlab") + os.sep):
                    raise ImportError(obj.__name__)  # another checkout's module (an editable install's)
                i += 1
        except (AttributeError, ImportError):
            missing.append("torch." + name)
    return missing


def _needs(*names):
    missing = _lacking(names)
    if missing:
        pytest.skip("tensorlab does not have " + ", ".join(missing) + " yet (other branches of issue 34)")


def _same(ours, theirs):
    our_losses, our_rest = _split(ours.stdout)
    their_losses, their_rest = _split(theirs.stdout)
    assert our_rest == their_rest
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-4, atol=1e-6)


def _check(script, args=(), *, n_losses, learns=None):
    """Run script under compat, check its loss count (and that loss[j] < loss[i] for learns=(i, j)),
    then the same run on torch."""
    path = os.path.join(SCRIPTS, script)
    ours = _run([path, *args])
    assert ours.returncode == 0, ours.stderr
    losses, rest = _split(ours.stdout)
    assert len(losses) == n_losses and np.isfinite(losses).all()
    if learns:
        assert losses[learns[1]] < losses[learns[0]]
    if HAS_TORCH:
        theirs = _run([path, *args], compat=False)
        assert theirs.returncode == 0, theirs.stderr
        _same(ours, theirs)
    return losses, rest


def _resume_across_libraries(script, tmp_path, n_losses):
    """Each library trains and saves; each then resumes from the other's checkpoint; the resumed runs
    agree (the two checkpoints hold the same weights to float32 tolerance)."""
    path = os.path.join(SCRIPTS, script)
    ours_ckpt, their_ckpt = str(tmp_path / "tensorlab.pt"), str(tmp_path / "torch.pt")
    ours = _run([path, "--save", ours_ckpt])
    assert ours.returncode == 0, ours.stderr
    assert len(_split(ours.stdout)[0]) == n_losses
    theirs = _run([path, "--save", their_ckpt], compat=False)
    assert theirs.returncode == 0, theirs.stderr
    _same(ours, theirs)
    ours = _run([path, "--resume", their_ckpt])  # tensorlab loads torch's file
    assert ours.returncode == 0, ours.stderr
    theirs = _run([path, "--resume", ours_ckpt], compat=False)  # torch loads tensorlab's file
    assert theirs.returncode == 0, theirs.stderr
    _same(ours, theirs)
    return _split(ours.stdout)


def test_dcgan_trains_and_resumes_across_libraries(tmp_path):
    if not HAS_TORCH:
        losses, rest = _check("dcgan.py", n_losses=21)
        return
    losses, rest = _resume_across_libraries("dcgan.py", tmp_path, 21)
    assert rest[0] == "<All keys matched successfully> <All keys matched successfully>"
    assert rest[1] == "resumed at step 4" and len(losses) == 21


def test_super_resolution_pixel_shuffle_trains_as_on_torch():
    _needs("nn.PixelShuffle", "nn.init.orthogonal_")
    losses, rest = _check("super_resolution.py", n_losses=15, learns=(0, -2))
    assert rest[-1] == "output shape (1, 1, 24, 24)"


def test_lstm_time_series_with_lbfgs_strong_wolfe_trains_as_on_torch():
    _needs("optim.LBFGS")
    losses, rest = _check("time_sequence_lbfgs.py", n_losses=25, learns=(0, -3))
    assert rest[-3] == "<All keys matched successfully>" and rest[-1] == "future shape (2, 50)"
    assert losses[-2] == losses[-1]  # the checkpointed model predicts as the trained one


def test_fast_neural_style_trains_as_on_torch():
    _needs("nn.ReflectionPad2d", "nn.InstanceNorm2d")
    _check("fast_style.py", n_losses=9, learns=(1, 7))


def test_actor_critic_with_categorical_trains_as_on_torch():
    _needs("distributions.Categorical")
    _check("actor_critic_cartpole.py", n_losses=10)


def test_gcn_on_a_sparse_adjacency_trains_as_on_torch():
    _needs("sparse.mm", "sparse_coo_tensor", "Tensor.to_sparse", "Tensor.coalesce", "Tensor.to_dense")
    losses, rest = _check("gcn.py", n_losses=12, learns=(0, -2))
    assert rest[0] == "adjacency torch.sparse_coo (45, 45) nnz 257"


def test_siamese_resnet_trains_as_on_torch():
    losses, rest = _check("siamese_resnet.py", n_losses=7, learns=(0, 5))
    assert rest[-3:-1] == ["<All keys matched successfully>", "running_mean restored: True"]


def test_transformer_translation_trains_as_on_torch():
    _needs("nn.utils.rnn.pad_sequence")
    losses, rest = _check("transformer_translation.py", n_losses=6, learns=(1, 5))
    assert rest[-1] == "decoded length True starts with BOS True"


def test_einops_vit_trains_as_on_torch():
    pytest.importorskip("einops")
    losses, rest = _check("vit_einops.py", n_losses=6, learns=(0, 4))
    assert rest[-3:-1] == ["patches (2, 16, 48) einops backend: Parameter", "einops shapes (16, 3, 8, 8) (16, 195) True"]


def test_gpt2_trainer_resumes_across_libraries(tmp_path):
    if not HAS_TORCH:
        _check("gpt2_train.py", n_losses=16, learns=(2, 14))
        return
    losses, rest = _resume_across_libraries("gpt2_train.py", tmp_path, 16)
    assert rest[0] == "<All keys matched successfully>"
    assert "saving checkpoint" not in "\n".join(rest)
    assert len(losses) == 17  # the resumed run's: best val loss, 2 evaluations x 2, 6 x (grad norm, loss)


def test_names_the_public_programs_reach(tmp_path):
    """word_language_model allowlists torch.nn.modules.linear.NonDynamicallyQuantizableLinear (the class
    of MultiheadAttention.out_proj) to torch.load a whole pickled TransformerModel. Same output on torch."""
    code = ("import io, torch\nfrom torch import nn\n"
            "cls = torch.nn.modules.linear.NonDynamicallyQuantizableLinear\n"
            "enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1, enable_nested_tensor=False)\n"
            "print(type(enc.layers[0].self_attn.out_proj) is cls, issubclass(cls, nn.Linear))\n"
            "buf = io.BytesIO(); torch.save(enc, buf); buf.seek(0)\n"
            "with torch.serialization.safe_globals([nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.ModuleList,\n"
            "        nn.MultiheadAttention, cls, nn.Linear, nn.Dropout, nn.LayerNorm, torch.nn.functional.relu]):\n"
            "    back = torch.load(buf)\n"
            "src = torch.arange(24.).view(3, 1, 8) / 24\n"
            "print(torch.equal(back(src), enc(src)), type(back.layers[0].self_attn.out_proj).__name__)\n")
    ours = _run(["-c", code], cwd=str(tmp_path))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == "True True\nTrue NonDynamicallyQuantizableLinear\n"
    if HAS_TORCH:
        theirs = _run(["-c", code], compat=False, cwd=str(tmp_path))
        assert theirs.returncode == 0, theirs.stderr
        assert theirs.stdout == ours.stdout


# the programs on the CUDA backend (a GPU, or the emulation driver: python -m
# tensorlab.backends.cuda.emulation -m pytest ... -m cuda), compared with torch on the CPU; the GPT-2
# trainer always, the rest with TENSORLAB_PUBLIC_PROGRAMS_CUDA=1 (minutes each under emulation)
CUDA_PROGRAMS = [("gpt2_train.py", 16), ("dcgan.py", 21), ("vit_einops.py", 6), ("siamese_resnet.py", 7)]


@pytest.mark.parametrize("script,n_losses", CUDA_PROGRAMS, ids=[s for s, _ in CUDA_PROGRAMS])
def test_programs_on_cuda_match_torch_on_the_cpu(cuda, script, n_losses):
    if script != "gpt2_train.py" and not os.environ.get("TENSORLAB_PUBLIC_PROGRAMS_CUDA"):
        pytest.skip("set TENSORLAB_PUBLIC_PROGRAMS_CUDA=1 for every program on CUDA")
    if script == "vit_einops.py":
        pytest.importorskip("einops")
    path = os.path.join(SCRIPTS, script)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))  # keeps the emulation
    ours = subprocess.run([sys.executable, "-m", "tensorlab.compat", path, "--device", "cuda"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert ours.returncode == 0, ours.stderr
    assert len(_split(ours.stdout)[0]) == n_losses
    if HAS_TORCH:
        theirs = _run([path], compat=False)
        assert theirs.returncode == 0, theirs.stderr
        _same(ours, theirs)
