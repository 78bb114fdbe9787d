"""torch's OptimizerInfo database (torch.testing._internal.common_optimizers.optim_db) as the
yardstick for the optimizers of issue 34 part F: every optimizer configuration torch tests for
LBFGS, Adafactor and Muon, run on the same float64 model and data here and in torch for a few
steps; the parameters must agree to float64 rounding (Muon: float32 rounding of its bfloat16
orthogonalization's inputs, see test_optim_adafactor_muon.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

NAMES = ("LBFGS", "Adafactor", "Muon")


def _inputs(torch):
    try:
        from torch.testing._internal.common_optimizers import optim_db
    except Exception as e:  # pragma: no cover - an older torch
        pytest.skip(f"torch's optim_db is not importable: {e}")
    out = []
    for info in optim_db:
        name = info.optim_cls.__name__
        if name in NAMES:
            for oi in info.optim_inputs_func(device="cpu"):
                out.append((name, oi.kwargs, oi.desc))
    return out


def _convert(kwargs, lib):
    return {k: (lib.tensor(float(v)) if hasattr(v, "numel") else v) for k, v in kwargs.items()}


def _run(lib, name, kwargs, steps=3):
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    x, y = rng.standard_normal((8, 4)), rng.standard_normal((8, 3))
    w, b = lib.nn.Parameter(lib.tensor(w0)), lib.nn.Parameter(lib.tensor(b0))
    xt, yt = lib.tensor(x), lib.tensor(y)
    opt = getattr(lib.optim, name)([w, b], **_convert(kwargs, lib))

    def closure():
        opt.zero_grad()
        h = lib.tanh(xt @ w.T)
        loss = ((h @ b[:, :3] - yt) ** 2).mean() + (b ** 2).sum() * 0.01
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        if name == "LBFGS":
            opt.step(closure)
        else:
            closure()
            opt.step()
        out.append([p.detach().cpu().numpy().copy() for p in (w, b)])
    return out


def test_optim_db_configurations_match_torch(torch):
    cases = _inputs(torch)
    assert {c[0] for c in cases} == set(NAMES)
    failures = []
    for name, kwargs, desc in cases:
        tol = dict(rtol=1e-5, atol=1e-6) if name == "Muon" else dict(rtol=1e-9, atol=1e-11)
        ours, theirs = _run(tl, name, kwargs), _run(torch, name, kwargs)
        for step, (a, b) in enumerate(zip(ours, theirs)):
            for p, q in zip(a, b):
                if not np.allclose(p, q, **tol):
                    failures.append(f"{name} {desc!r} step {step}: max diff {np.abs(p - q).max():.3g}")
    assert not failures, failures
