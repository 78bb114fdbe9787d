"""Training-step rows for pytest-benchmark, next to torch: one optimizer step (zero_grad, forward,
loss, backward, step) of the benchmark command's models (tensorlab/bench/models.py: the MLP
128x256 -> 512 -> 10 with SGD, a nanoGPT-style GPT with AdamW, pytorch/examples' MNIST convnet with
Adadelta, an LSTM language model with clipping and SGD), from the same NumPy-drawn weights and
data on both libraries, at one CPU thread and at the default count (tl.set_num_threads where
tensorlab has it, torch.set_num_threads). Before a row is timed, the first-step loss of tensorlab is
checked against torch's (when torch is installed), so a model that computes something else cannot
post a time. No assertions on time; the medians and ratios go to the board of conftest.py (its
terminal summary prints torch's median / tensorlab's).

Batch sizes follow TENSORLAB_BENCH_MODE ("tiny", "quick" (default), "full") as models.BATCH says.
CUDA rows run on a CUDA GPU only (the emulation driver would time the host).

    pytest benchmarks/test_models.py --benchmark-only --benchmark-group-by=group
"""
from __future__ import annotations

import os

import pytest

import tensorlab as tl
from tensorlab.bench import models
from tensorlab.bench import threads as thread_counts
from tensorlab.bench.libs import torch_module

pytest.importorskip("pytest_benchmark")

MODE = os.environ.get("TENSORLAB_BENCH_MODE", "quick")
_LOSSES = {}


def _first_losses(name, device):
    if (name, device) not in _LOSSES:
        _LOSSES[name, device] = models.first_losses(name, MODE, device, steps=1)
    return _LOSSES[name, device]


def _params():
    """(model, device, library, thread setting) for every model on the devices it runs on (the CUDA-graph
    row is CUDA-only)."""
    out = []
    for model, m in models.MODELS.items():
        for device in m.devices:
            marks = () if device == "cpu" else pytest.mark.skipif(not tl.cuda.is_available(), reason="no CUDA GPU")
            for threads in (("1", "default") if device == "cpu" else ("default",)):
                for impl in ("tensorlab", "torch"):
                    out.append(pytest.param(model, device, impl, threads, id=f"{model}-{device}-{impl}-{threads}",
                                            marks=marks))
    return out


@pytest.mark.parametrize("model, device, impl, threads", _params())
def test_train_step(benchmark, ratio_board, model, device, impl, threads):
    libs = models.libraries(device)
    if impl not in libs:
        pytest.skip(f"{impl} is not installed or has no {device}")
    torch = torch_module()
    default = max(thread_counts.tensorlab_threads(), torch.get_num_threads() if torch is not None else 1)
    if threads == "1" and default == 1:
        pytest.skip("the default is one thread already")
    losses = _first_losses(model, device)
    models.check_first_loss(losses)  # tensorlab against torch, before anything is timed
    with thread_counts.using(1 if threads == "1" else None, torch):
        _, _, step = models.build(model, impl, MODE, device)
        step()  # warm-up
        lib = libs[impl]
        n = thread_counts.tensorlab_threads() if lib is tl else lib.get_num_threads()
        where = f"{device}, {threads} thread{'s' if threads != '1' else ''}"
        benchmark.group = f"train step: {model} on {where}"
        benchmark.extra_info.update(library=impl, device=device, model=model, title=models.title(model, MODE),
                                    thread_setting=threads, threads=n if device == "cpu" else None,
                                    first_loss=losses[impl][0])
        if device == "cpu":
            benchmark(step)
        else:
            sync = (lambda: tl.cuda.synchronize()) if lib is tl else lib.cuda.synchronize
            benchmark(lambda: (step(), sync()))
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    median = stats.stats.median
    ratio_board.post((where, "train_step", model), f"{where} {model} train step", impl, median, 1 / median,
                     "steps/s", benchmark)
