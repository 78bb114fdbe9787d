"""torch's ModuleInfo database (torch.testing._internal.common_modules.module_db) as the yardstick of
torch.nn's semantics, as test_opinfo_db.py is for ops: every ModuleInfo whose class exists in
tensorlab builds torch's module and ours from the same constructor arguments, copies torch's
parameters and buffers into ours, runs forward in train and eval mode and backward with the same
grad_outputs, and compares outputs, buffers and the input and parameter gradients; torch's error
inputs must raise the same kind of exception (tests/moduleinfo_harness.py). What disagrees today is
data (tests/moduleinfo_known_failures.json: device|module|mode|dtype|sample -> the difference); the
test fails on any other disagreement and when fewer classes exist than EXIST_FLOOR. CI runs the
float32 samples, all of them on the CPU and every third on the emulated CUDA device;
TENSORLAB_MODDB_FULL=1 runs float64 too and every sample on every device."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import moduleinfo_harness as H

pytestmark = pytest.mark.torch_oracle

KNOWN_FILE = Path(__file__).with_name("moduleinfo_known_failures.json")
EXIST_FLOOR = 114  # ModuleInfos (of torch 2.13's 114) whose class exists in tensorlab; it may only grow
FULL = os.environ.get("TENSORLAB_MODDB_FULL") == "1"
FAILING = (H.MISMATCH, H.OURS_RAISED, H.TORCH_RAISED)


def run(device, every):
    torch = pytest.importorskip("torch")
    pytest.importorskip("expecttest")  # torch.testing._internal's own dependency
    infos = [m for m in H.module_db() if H.exists(m)]
    dtypes = [torch.float32, torch.float64] if FULL else [torch.float32]
    found, counts = {}, {}
    for info in infos:
        for mode, dt, i, status, detail in H.run_module(info, dtypes, device, every):
            counts[status] = counts.get(status, 0) + 1
            if status in FAILING:
                found[f"{device}|{H.key(info)}|{mode}|{dt}|{i}"] = f"{status}: {detail}"
    return infos, found, counts


def test_moduleinfo_db(device):
    every = 1 if device == "cpu" or FULL else 3
    infos, found, counts = run(device, every)
    known = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}
    ran = sum(n for s, n in counts.items() if s != H.SKIPPED)
    agree = counts.get(H.PASS, 0) + counts.get(H.BOTH_RAISED, 0)
    total = len(H.module_db())
    print(f"\nModuleInfo coverage on {device}: {len(infos)} / {total} classes exist; {agree} / {ran} samples agree "
          f"({100.0 * agree / max(ran, 1):.2f}%); {counts}")
    fixed = sorted(k for k in known if k.startswith(device + "|") and k not in found)
    if fixed:
        print(f"{len(fixed)} known failures pass now (remove them from {KNOWN_FILE.name}): {fixed[:10]}")
    new = {k: v for k, v in found.items() if k not in known}
    assert not new, (f"{len(new)} ModuleInfo samples disagree with torch that {KNOWN_FILE.name} does not list:\n" +
                     "\n".join(f"  {k}: {v}" for k, v in sorted(new.items())[:40]))
    assert len(infos) >= EXIST_FLOOR, f"only {len(infos)} ModuleInfo classes exist in tensorlab (floor {EXIST_FLOOR})"
