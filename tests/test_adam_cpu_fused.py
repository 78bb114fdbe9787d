"""The optimizers' CPU updates in a few NumPy calls (optim/_adam_cpu.py for Adam/AdamW,
optim/_adadelta_cpu.py for Adadelta) give the general path's bits and move the version counters as
the general path's in-place ops do."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.optim import _adadelta_cpu, _adam_cpu

_ADAM = (_adam_cpu, ("exp_avg", "exp_avg_sq"))
_ADADELTA = (_adadelta_cpu, ("square_avg", "acc_delta"))
CASES = [(tl.optim.AdamW, dict(lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1), _ADAM),
         (tl.optim.Adam, dict(lr=0.01, weight_decay=0.1), _ADAM),
         (tl.optim.Adam, dict(lr=0.01, betas=(0.3, 0.8), eps=1e-3, maximize=True), _ADAM),
         (tl.optim.AdamW, dict(lr=0.1, betas=(0.6, 0.9), weight_decay=0.0), _ADAM),
         (tl.optim.Adadelta, dict(lr=1.0), _ADADELTA),
         (tl.optim.Adadelta, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.05), _ADADELTA),
         (tl.optim.Adadelta, dict(lr=2.0, rho=0.95, maximize=True), _ADADELTA)]


def _run(cls, kw, fused_module, names, dtype, fused, monkeypatch):
    rng = np.random.default_rng(0)
    ps = [tl.nn.Parameter(tl.from_numpy(rng.standard_normal(s).astype(dtype))) for s in [(5, 7), (3,), ()]]
    opt = cls(ps, **kw)
    with monkeypatch.context() as m:
        calls = []
        real = fused_module.update
        m.setattr(fused_module, "update", lambda *a: calls.append(1) or real(*a))
        if not fused:
            m.setattr(fused_module, "eligible", lambda *a: False)
        for _ in range(4):
            for p in ps:
                p.grad = tl.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
            opt.step()
    assert bool(calls) == fused
    st = [opt.state[p] for p in ps]
    return ([p.detach().numpy().copy() for p in ps] + [s[n].numpy().copy() for s in st for n in names],
            [(p._version, s["step"]._version, s["step"].item(), s["step"].dtype, s["step"].device.type)
             + tuple(s[n]._version for n in names) for p, s in zip(ps, st)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_cpu_update_is_the_general_paths_bits(case, dtype, monkeypatch):
    cls, kw, (module, names) = CASES[case]
    a = _run(cls, kw, module, names, dtype, True, monkeypatch)
    b = _run(cls, kw, module, names, dtype, False, monkeypatch)
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
