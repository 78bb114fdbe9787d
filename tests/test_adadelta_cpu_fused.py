"""Adadelta's CPU update in a few NumPy calls (optim/_adadelta_cpu.py) gives the general path's bits
and moves the version counters as the general path's in-place ops do; ineligible cases (fault plan,
a state aliasing the gradient) take the general path."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.optim import _adadelta_cpu

CASES = [dict(lr=1.0), dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.05), dict(lr=2.0, rho=0.95, maximize=True)]


def _run(kw, dtype, fused, monkeypatch):
    rng = np.random.default_rng(0)
    ps = [tl.nn.Parameter(tl.from_numpy(rng.standard_normal(s).astype(dtype))) for s in [(5, 7), (3,), ()]]
    opt = tl.optim.Adadelta(ps, **kw)
    with monkeypatch.context() as m:
        calls = []
        real = _adadelta_cpu.update
        m.setattr(_adadelta_cpu, "update", lambda *a: calls.append(1) or real(*a))
        if not fused:
            m.setattr(_adadelta_cpu, "eligible", lambda *a: False)
        for _ in range(4):
            for p in ps:
                p.grad = tl.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
            opt.step()
    assert bool(calls) == fused
    st = [opt.state[p] for p in ps]
    return ([p.detach().numpy().copy() for p in ps] + [s["square_avg"].numpy().copy() for s in st]
            + [s["acc_delta"].numpy().copy() for s in st],
            [(p._version, s["square_avg"]._version, s["acc_delta"]._version, s["step"]._version, s["step"].item())
             for p, s in zip(ps, st)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_cpu_adadelta_is_the_general_paths_bits(case, dtype, monkeypatch):
    a, b = _run(CASES[case], dtype, True, monkeypatch), _run(CASES[case], dtype, False, monkeypatch)
    for x, y in zip(a[0], b[0]):
        assert x.tobytes() == y.tobytes()
    assert a[1] == b[1]


def test_adadelta_matches_torch(torch):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 6)).astype(np.float32)
    grads = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(5)]
    out = []
    for lib in (tl, torch):
        w = lib.nn.Parameter(lib.tensor(w0))
        opt = lib.optim.Adadelta([w], lr=1.0, rho=0.9, weight_decay=0.01)
        for g in grads:
            w.grad = lib.tensor(g)
            opt.step()
        out.append(w.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6, atol=1e-7)
