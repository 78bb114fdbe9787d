"""torch's OpInfo database (torch.testing._internal's op_db) as the yardstick of "PyTorch's semantics":
every OpInfo whose op exists in tensorlab runs its function, method, in-place and operator variants on
torch's own sample inputs, converted with storage, sizes, strides and offset intact
(tests/opinfo_harness.py), against torch's results. What disagrees today is data
(tests/opinfo_known_failures.json: device|op|variant|dtype|sample -> the difference); the test fails
on any other disagreement and when fewer OpInfos exist than EXIST_FLOOR, and prints the coverage
figures. CI runs float32 sample_inputs and every second sample's float64 gradients on the CPU, and
every third sample on the emulated CUDA device; TENSORLAB_OPDB_FULL=1 runs every dtype torch samples,
every gradient and the reference inputs too."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import opinfo_harness as H

pytestmark = pytest.mark.torch_oracle

KNOWN_FILE = Path(__file__).with_name("opinfo_known_failures.json")
EXIST_FLOOR = 672  # OpInfos (of 682 public ones in torch 2.13) whose op exists; it may only grow
FULL = os.environ.get("TENSORLAB_OPDB_FULL") == "1"
FAILING = (H.MISMATCH, H.OURS_RAISED, H.TORCH_RAISED)


def run(device, every):
    torch = pytest.importorskip("torch")
    pytest.importorskip("expecttest")  # torch.testing._internal's own dependency
    # every OpInfo whose op exists, the private ones too (__rsub__, _chunk_cat); the coverage counts public ones
    ops = [op for op in H.op_db() if H.exists(op)]
    dtypes = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.float16] if FULL else [
        torch.float32]
    found, counts = {}, {}
    for op in ops:
        rows = H.run_op(op, dtypes, device, reference=False, every=every)
        if device == "cpu":  # float64 gradients against torch's (every second sample in CI)
            rows += H.run_grads(op, device, every=1 if FULL else 2)
        if FULL:
            rows += [("ref:" + r[0],) + r[1:] for r in H.run_op(op, dtypes, device, reference=True)]
        for variant, dt, i, status, detail in rows:
            counts[status] = counts.get(status, 0) + 1
            if status in FAILING:
                found[f"{device}|{H.key(op)}|{variant}|{dt}|{i}"] = f"{status}: {detail}"
    return ops, found, counts


def test_opinfo_db(device):
    every = 1 if device == "cpu" or FULL else 3
    ops, found, counts = run(device, every)
    known = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}
    ran = sum(n for s, n in counts.items() if s != H.SKIPPED)
    agree = counts.get(H.PASS, 0) + counts.get(H.BOTH_RAISED, 0)
    total = sum(1 for op in H.op_db() if H.public(op))
    have = sum(1 for op in ops if H.public(op))
    print(f"\nOpInfo coverage on {device}: {have} / {total} public OpInfos exist ({len(ops) - have} private ones "
          f"run too); {agree} / {ran} samples agree "
          f"({100.0 * agree / max(ran, 1):.2f}%); {counts}")
    fixed = sorted(k for k in known if k.startswith(device + "|") and k not in found)
    if fixed:
        print(f"{len(fixed)} known failures pass now (remove them from {KNOWN_FILE.name}): {fixed[:10]}")
    new = {k: v for k, v in found.items() if k not in known}
    assert not new, (f"{len(new)} OpInfo samples disagree with torch that {KNOWN_FILE.name} does not list:\n" +
                     "\n".join(f"  {k}: {v}" for k, v in sorted(new.items())[:40]))
    assert have >= EXIST_FLOOR, f"only {have} OpInfos exist in tensorlab (floor {EXIST_FLOOR})"
