"""torchvision, unchanged, on tensorlab (`python -m tensorlab.compat`): it imports (its C++ ops cannot load
there, which torchvision detects as it does for a mismatched build), and a user's script
(tests/compat_scripts/torchvision_tour.py) builds and runs 20 classification models, trains resnet18
for a few steps (the loss falls), runs v1 transforms on tensors and PIL images, FakeData through a
DataLoader, box ops, roi_align's Python path and focal loss, each against a NumPy reference.

torchvision is installed where the test can find it without replacing the torch oracle:
`.ci/run` puts it (no dependencies) in .ci/deps/torchvision; TENSORLAB_TORCHVISION_DIR names another
directory. Without it the test is skipped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TV_DIR = Path(os.environ.get("TENSORLAB_TORCHVISION_DIR", ROOT / ".ci" / "deps" / "torchvision"))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "vgg11", "densenet121",
          "squeezenet1_0", "shufflenet_v2_x0_5", "convnext_tiny", "regnet_y_400mf", "vit_b_16", "swin_t",
          "googlenet", "alexnet", "mnasnet0_5", "wide_resnet50_2", "resnext50_32x4d", "maxvit_t", "efficientnet_v2_s"]
MODELS_CI = ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "convnext_tiny", "vit_b_16"]

pytestmark = pytest.mark.skipif(not (TV_DIR / "torchvision" / "__init__.py").is_file(),
                                reason=f"torchvision not installed in {TV_DIR} (.ci/run installs it)")


@pytest.fixture(scope="module")
def tour():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TV_DIR), str(ROOT)]), CUDA_VISIBLE_DEVICES="")
    models = MODELS_CI if os.environ.get("CI") and not os.environ.get("TENSORLAB_FULL") else MODELS
    proc = subprocess.run([sys.executable, "-m", "tensorlab.compat", str(ROOT / "tests" / "compat_scripts" /
                                                                        "torchvision_tour.py"), ",".join(models)],
                          capture_output=True, text=True, env=env, timeout=1800, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), models


def test_models_build_and_run(tour):
    out, models = tour
    assert out["torch_is_tensorlab"] and out["version"].startswith("0.")
    assert out["shapes"] == {m: [2, 10] for m in models}


def test_training_steps_lower_the_loss(tour):
    losses = tour[0]["losses"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_transforms_and_data(tour):
    out = tour[0]
    assert out["v1"] == [3, 32, 32] and out["fakedata"] == [[4, 3, 16, 16], [4]]
    (shape, first, other) = out["pil"]
    # CenterCrop(32) of 40x50 starts at row 4, column 9; ToTensor divides by 255
    assert shape == [3, 32, 32]
    assert first == pytest.approx(((4 * 150 + 9 * 3) % 256) / 255, abs=1e-7)
    assert other == pytest.approx(((9 * 150 + 16 * 3 + 2) % 256) / 255, abs=1e-7)
    assert out["grid"] == [3, 19, 19]


def test_box_ops_roi_align_and_focal_loss_against_numpy(tour):
    out = tour[0]
    b = np.array([[0.0, 0, 10, 10], [5, 5, 15, 15], [0, 0, 5, 5]])
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt, rb = np.maximum(b[:, None, :2], b[None, :, :2]), np.minimum(b[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    union = area[:, None] + area[None] - inter
    iou = inter / union
    np.testing.assert_allclose(out["iou"], iou, rtol=1e-6)
    hull = (np.maximum(b[:, None, 2:], b[None, :, 2:]) - np.minimum(b[:, None, :2], b[None, :, :2])).prod(-1)
    np.testing.assert_allclose(out["giou"], iou - (hull - union) / hull, rtol=1e-6, atol=1e-7)
    # roi [0, 0, 8, 8] of a 16x16 map of c*256 + 16y + x, 2x2 bins of 4, 2x2 samples at 1,3 / 5,7: bin means
    want = [[[c * 256 + 34, c * 256 + 38], [c * 256 + 98, c * 256 + 102]] for c in range(2)]
    np.testing.assert_allclose(out["roi_align"], [want], rtol=1e-6)
    x, t = np.array([0.5, -1.0]), np.array([1.0, 0.0])
    p = 1 / (1 + np.exp(-x))
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    pt = p * t + (1 - p) * (1 - t)
    focal = (0.25 * t + 0.75 * (1 - t)) * ce * (1 - pt) ** 2
    assert out["focal"] == pytest.approx(focal.sum(), rel=1e-6)
