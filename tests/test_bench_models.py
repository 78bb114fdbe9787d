"""The training-step benchmarks (tensorlab/bench/models.py): each model computes torch's losses from
the same initial weights and data (first step and the step after the optimizer's update), a
mismatch is reported instead of timed, and `python -m tensorlab.bench --models` prints the
rows. Times are never asserted."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.bench import cli, models, report
from tensorlab.bench import threads as thread_counts


CPU_MODELS = [n for n, m in models.MODELS.items() if "cpu" in m.devices]


@pytest.mark.parametrize("name", CPU_MODELS)
def test_first_steps_match_torch(name, torch):
    losses = models.first_losses(name, "tiny", steps=2)
    assert set(losses) == {"tensorlab", "torch"}
    models.check_first_loss(losses)
    np.testing.assert_allclose(losses["tensorlab"], losses["torch"], rtol=2e-5)
    assert losses["tensorlab"][1] != losses["tensorlab"][0]  # the optimizer step changed the weights


@pytest.mark.parametrize("name", CPU_MODELS)
def test_both_libraries_start_from_the_same_weights(name, torch):
    ours, _, _ = models.build(name, "tensorlab", "tiny")
    theirs, _, _ = models.build(name, "torch", "tiny")
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k].detach().numpy(), b[k].detach().numpy(), err_msg=k)


def test_the_gpt_ties_its_embedding_to_the_head():
    model, _, _ = models.build("gpt", "tensorlab", "tiny")
    assert model.wte.weight is model.lm_head.weight


def test_a_loss_mismatch_is_reported():
    models.check_first_loss({"tensorlab": [2.0], "torch": [2.0 * (1 + 1e-6)]})
    with pytest.raises(AssertionError, match="tensorlab 2.0, torch 2.1"):
        models.check_first_loss({"tensorlab": [2.0], "torch": [2.1]})
    with pytest.raises(AssertionError, match="nan"):
        models.check_first_loss({"tensorlab": [float("nan")]})


def test_a_mismatching_model_is_not_timed(monkeypatch):
    monkeypatch.setattr(models, "first_losses", lambda *a, **k: {"tensorlab": [1.0], "torch": [1.5]})
    rows = models.measure(["mlp"], "tiny", rounds=1, steps=1)
    assert rows and all("median_s" not in r and "first-step loss" in r["error"] for r in rows)


def test_measure_runs_each_model_at_one_thread_and_the_default(monkeypatch):
    state = {"n": 2}
    monkeypatch.setattr(tl, "get_num_threads", lambda: state["n"], raising=False)
    monkeypatch.setattr(tl, "set_num_threads", lambda n: state.update(n=n), raising=False)
    rows = models.measure(["mlp"], "tiny", rounds=2, steps=1)
    libs = list(models.libraries())
    assert [(r["impl"], r["thread_setting"]) for r in rows] == [(n, s) for s in ("1", "default") for n in libs]
    for r in rows:
        assert r["error"] is None and len(r["times_s"]) == 2 and r["min_s"] <= r["median_s"]
        want = 1 if r["thread_setting"] == "1" else (2 if r["impl"] == "tensorlab" else None)
        if want is not None:
            assert r["threads"] == want
        assert r["losses"] is not None and len(r["losses"]) == 2
    assert state["n"] == 2 and thread_counts.tensorlab_threads() == 2
    for r in rows:
        if r["impl"] == "tensorlab" and "torch" in libs:
            theirs = next(o for o in rows if o["impl"] == "torch" and o["thread_setting"] == r["thread_setting"])
            assert r["ratios"]["torch"] == pytest.approx(theirs["median_s"] / r["median_s"])


def test_the_command_prints_the_model_rows(tmp_path, capsys):
    assert cli.main(["--tiny", "--devices", "cpu", "--workloads", "add", "--models", "mlp,lstm", "--no-overhead",
                     "--no-plot", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / report.JSON_NAME).read_text())
    assert {r["model"] for r in doc["models"]} == {"mlp", "lstm"}
    text = capsys.readouterr().out
    head = next(line for line in text.splitlines() if line.split()[:2] == ["device", "model"])
    assert "median/step" in head and "first loss" in head
    for r in doc["models"]:
        assert r["kind"] == "model" and r["error"] is None
        row = [line for line in text.splitlines() if line.split()[:4] == ["cpu", r["model"], r["impl"],
                                                                         report.threads_text(r)]
               and report.fmt_time(r["median_s"]) in line]
        assert row, r
        assert f"{r['losses'][0]:.6f}" in row[0]
    assert models.MODELS["lstm"].title in text


def test_models_option_rejects_unknown_names(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--models", "mlp,alexnet"])
    assert e.value.code == 2 and "unknown name" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["mlp", "convnet", "resnet", "vit", "seq2seq", "dcgan"])
def test_models_on_cuda_match_the_cpu(name, cuda):
    losses = models.first_losses(name, "tiny", "cuda:0", steps=2)
    assert "cpu" in losses
    models.check_first_loss(losses)
    np.testing.assert_allclose(losses["tensorlab"], losses["cpu"], rtol=1e-4)


def test_the_graphed_launch_bound_step_computes_the_eager_losses(cuda):
    """The CUDA-graph row replays the small MLP's forward and backward: its losses are the eager
    step's (on the CPU, where torch's are checked against it above); a CPU run skips the row."""
    eager = models.first_losses("small_mlp", "tiny", "cpu", steps=3)["tensorlab"]
    _, _, step = models.build("small_mlp_graphed", "tensorlab", "tiny", cuda)
    graphed = [float(step().item()) for _ in range(3)]
    np.testing.assert_allclose(graphed, eager, rtol=1e-5)
    assert all(r["model"] != "small_mlp_graphed" for r in models.measure(["small_mlp_graphed"], "tiny", "cpu"))
