"""The simulated asynchronous device (tensorlab/backends/cuda/emulation/simulated.py): on the emulation's
kernels, work is queued to a device thread, so the host sees what it sees on a GPU - a launch returns before
the work, queries say "not ready", events are stamped by the device, results are right after a wait - without
a GPU. Deterministic: driver.hold() keeps the device from starting while the host looks. Runs in CI's emulated
pass, in a subprocess (the driver is chosen at import)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(os.environ.get("TENSORLAB_CUDA_EMULATION") != "1",
                                                   reason="runs on the CUDA emulation's kernels (emulated pass)")]

SCRIPT = r'''
import numpy as np
import tensorlab as tl
from tensorlab.backends.cuda.active import driver
assert type(driver).__name__ == "SimulatedDriver", type(driver)
x = tl.randn(4096, device="cuda")
xh = x.cpu()
tl.cuda.synchronize()
s, e = tl.cuda.Event(enable_timing=True), tl.cuda.Event(enable_timing=True)
with driver.hold():
    s.record()
    y = (x * 2 + 1).sum()                     # returns at once: the device has not started
    e.record()
    assert not e.query() and not tl.cuda.current_stream().query()
    try:
        s.elapsed_time(e)
        raise AssertionError("elapsed_time before the work ran")
    except RuntimeError as err:
        assert "synchronize" in str(err)
e.synchronize()
assert e.query() and s.elapsed_time(e) >= 0.0
assert abs(y.item() - float((xh.numpy().astype(np.float64) * 2 + 1).sum())) < 1e-2
import threading
# a blocking copy must wait for the device: run it on another thread while the device is held
out = {}
with driver.hold():
    z = tl.full((4,), 5.0, device="cuda")
    t = threading.Thread(target=lambda: out.setdefault("v", z.cpu().tolist()))
    t.start(); t.join(0.3)
    assert t.is_alive(), "the copy to the host returned before the device ran"
t.join(30)
assert out["v"] == [5.0] * 4
p = tl.arange(4.0).pin_memory()
g = p.to("cuda", non_blocking=True)
assert (g * 2).tolist() == [0.0, 2.0, 4.0, 6.0]
assert (tl.ones(3, 3, device="cuda") @ tl.ones(3, 2, device="cuda")).tolist() == [[3.0, 3.0]] * 3
with tl.cuda.sync_trace() as tr:
    v = tl.arange(5.0, device="cuda").sum()
    v.item()
assert "item" in tr.summary()
print("ok")
'''


def test_the_simulated_device_is_asynchronous_and_right():
    env = dict(os.environ, TENSORLAB_CUDA_EMULATION_ASYNC="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout[-3000:] + p.stderr[-3000:]
