"""A DLPack capsule is consumed exactly once (issue 38, item 7): tensorlab's check-and-rename is
one step no other thread can enter, so tensorlab and torch consuming one capsule from two threads
never both own it (both owning it frees the producer's memory twice: a crash)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorlab as tl

_RACE = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import tensorlab as tl
    import torch
    sys.setswitchinterval(1e-6)
    tries, owners_twice, owned_never = int(sys.argv[1]), 0, 0
    arr = np.arange(64, dtype=np.float32)
    keep = []
    for i in range(tries):
        cap = arr.__dlpack__()
        barrier = threading.Barrier(2)
        got = [None, None]
        def consume(k, lib):
            barrier.wait()
            try:
                got[k] = lib.from_dlpack(cap)
            except Exception:
                pass
        ts = [threading.Thread(target=consume, args=(0, tl)), threading.Thread(target=consume, args=(1, torch))]
        for t in ts: t.start()
        for t in ts: t.join()
        n = sum(g is not None for g in got)
        owners_twice += n == 2
        owned_never += n == 0
        if n == 2:
            keep.append(got)  # dropping both would free the memory twice: report instead of crashing
    print("RESULT", owners_twice, owned_never, flush=True)
    import os; os._exit(0)
""")


def test_tensorlab_and_torch_racing_on_one_capsule_never_both_own_it(torch):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
    r = subprocess.run([sys.executable, "-c", _RACE, "3000"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT")][0]
    twice, never = map(int, line.split()[1:])
    assert twice == 0, f"{twice} capsules consumed twice"
    assert never == 0


def test_two_tensorlab_threads_consume_once():
    import threading
    for _ in range(200):
        cap = np.arange(8, dtype=np.float64).__dlpack__()
        barrier = threading.Barrier(4)
        got = []

        def consume():
            barrier.wait()
            try:
                got.append(tl.from_dlpack(cap))
            except RuntimeError as e:
                assert "consumed only once" in str(e)
        ts = [threading.Thread(target=consume) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(got) == 1
        np.testing.assert_array_equal(got[0].numpy(), np.arange(8.0))


def test_a_refused_capsule_stays_usable(torch):
    # lanes != 1 is refused by tensorlab after it claimed the capsule: the claim is given back
    import ctypes
    from tensorlab.interop import dlpack as D
    cap = np.arange(6, dtype=np.float32).__dlpack__()
    versioned = D._claim(cap)
    D._unclaim(cap, versioned)
    t = torch.from_dlpack(cap)
    assert t.tolist() == list(range(6))
    with pytest.raises(RuntimeError, match="consumed only once"):
        tl.from_dlpack(cap)
    del ctypes
