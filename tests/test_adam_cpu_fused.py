"""Adam/AdamW's CPU update in a few NumPy calls (optim/_adam_cpu.py) gives the general path's bits
and moves the version counters as the general path's in-place ops do."""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab.optim import _adam_cpu

CASES = [(tl.optim.AdamW, dict(lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)),
         (tl.optim.Adam, dict(lr=0.01, weight_decay=0.1)),
         (tl.optim.Adam, dict(lr=0.01, betas=(0.3, 0.8), eps=1e-3, maximize=True)),
         (tl.optim.AdamW, dict(lr=0.1, betas=(0.6, 0.9), weight_decay=0.0))]


def _run(cls, kw, dtype, fused, monkeypatch):
    rng = np.random.default_rng(0)
    ps = [tl.nn.Parameter(tl.from_numpy(rng.standard_normal(s).astype(dtype))) for s in [(5, 7), (3,), ()]]
    opt = cls(ps, **kw)
    with monkeypatch.context() as m:
        calls = []
        real = _adam_cpu.update
        m.setattr(_adam_cpu, "update", lambda *a: calls.append(1) or real(*a))
        if not fused:
            m.setattr(_adam_cpu, "eligible", lambda *a: False)
        for _ in range(4):
            for p in ps:
                p.grad = tl.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
            opt.step()
    assert bool(calls) == fused
    st = [opt.state[p] for p in ps]
    return ([p.detach().numpy().copy() for p in ps], [s["exp_avg"].numpy().copy() for s in st],
            [(p._version, s["exp_avg"]._version, s["exp_avg_sq"]._version, s["step"]._version, s["step"].item(),
              s["step"].dtype, s["step"].device.type) for p, s in zip(ps, st)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_cpu_update_is_the_general_paths_bits(case, dtype, monkeypatch):
    cls, kw = CASES[case]
    a, b = _run(cls, kw, dtype, True, monkeypatch), _run(cls, kw, dtype, False, monkeypatch)
    for x, y in zip(a[0] + a[1], b[0] + b[1]):
        assert x.tobytes() == y.tobytes()
    assert a[2] == b[2]
