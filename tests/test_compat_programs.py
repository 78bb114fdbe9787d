"""Training programs of the kinds real PyTorch users run (char-level MLP, bag-of-words, RNN/GRU/LSTM
and GPT language models, a VAE, an MNIST convnet), written as ordinary torch scripts
in tests/compat_scripts/ and run unchanged through `python -m tensorlab.compat`: every step's loss
matches torch's at float32 tolerance (torch as the oracle; without it the script must still run and
learn). The convnet is pytorch/examples' MNIST net (Conv2d, max_pool2d, Adadelta, StepLR)."""
from __future__ import annotations

import os

import pytest

from test_compat_runner import SCRIPTS, _compare_with_torch, _run, _split


@pytest.mark.parametrize("model", ["mlp", "bow", "rnn", "gru", "lstm", "gpt"])
def test_char_language_models_train_as_on_torch(model):
    script = os.path.join(SCRIPTS, "char_models.py")
    res = _run([script, model, "--steps", "6"])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert len(losses) == 7 and rest[0] == "<All keys matched successfully>"
    assert losses[-2] < losses[0]  # it learns
    _compare_with_torch(script, [model, "--steps", "6"], res)


def test_vae_trains_as_on_torch():
    script = os.path.join(SCRIPTS, "vae.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, _ = _split(res.stdout)
    assert len(losses) == 7 and losses[5] < losses[0]
    _compare_with_torch(script, [], res)


def test_mnist_convnet_trains_as_on_torch():
    script = os.path.join(SCRIPTS, "mnist_convnet.py")
    res = _run([script])
    assert res.returncode == 0, res.stderr
    losses, rest = _split(res.stdout)
    assert len(losses) == 6 and rest[0] == "<All keys matched successfully>"
    _compare_with_torch(script, [], res)
