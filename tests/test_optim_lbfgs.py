"""optim.LBFGS against torch.optim.LBFGS: iterates, evaluation counts and losses on Rosenbrock, a
least-squares fit and a small LSTM regression, with and without the strong-Wolfe line search;
state_dict round trip; errors; a failing closure leaves everything as it was.

Tolerances: the two implementations take the same arithmetic steps; their dot products and sums
differ in the last bit (torch: MKL's ddot, tensorlab: NumPy's BLAS; e.g. 27% of random length-2
float64 dots differ by an ulp). Convex problems keep that at rounding level (1e-15); the LSTM's
nonlinear fit over 60 evaluations grows it to ~5e-9; Rosenbrock without a line search (full lr=1
steps across a curved valley) amplifies it chaotically after ~10 iterations (torch against itself
from a start one ulp away diverges the same way: 3e-15 after 10 iterations, 1e-10 after 60, 2e-9
after 90), so that case compares the first iterations exactly and the end point only by where it
converged."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.optim as optim


def _np(t):
    return t.detach().cpu().numpy()


def _rosen(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _rosenbrock_run(lib, ls, steps, dtype="float64", device="cpu", **kw):
    kwargs = {"device": device} if lib is tl else {}
    x = lib.nn.Parameter(lib.tensor(np.array([-1.5, 2.0], dtype=dtype), **kwargs))
    opt = lib.optim.LBFGS([x], line_search_fn=ls, **kw)

    def closure():
        opt.zero_grad()
        loss = _rosen(x)
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        out.append((float(loss.detach()), _np(x).copy()))
    return out, opt.state[x]["func_evals"], opt.state[x]["n_iter"]


def test_rosenbrock_strong_wolfe_matches_torch(device, torch):
    ours, evals, iters = _rosenbrock_run(tl, "strong_wolfe", 5, device=device)
    ref, ref_evals, ref_iters = _rosenbrock_run(torch, "strong_wolfe", 5)
    assert (evals, iters) == (ref_evals, ref_iters)
    for (l1, x1), (l2, x2) in zip(ours, ref):
        np.testing.assert_allclose(x1, x2, rtol=1e-10, atol=1e-12)
        assert l1 == pytest.approx(l2, rel=1e-9, abs=1e-15)
    np.testing.assert_allclose(ours[-1][1], [1.0, 1.0], atol=1e-5)


def test_rosenbrock_plain_steps_match_torch(torch):
    # one iteration per step: the first 10 iterates agree to rounding, then the run is chaotic (see above)
    ours, _, _ = _rosenbrock_run(tl, None, 10, max_iter=1)
    ref, _, _ = _rosenbrock_run(torch, None, 10, max_iter=1)
    for (l1, x1), (l2, x2) in zip(ours, ref):
        np.testing.assert_allclose(x1, x2, rtol=1e-11, atol=1e-13)
        assert l1 == pytest.approx(l2, rel=1e-11)
    ours, _, _ = _rosenbrock_run(tl, None, 5)
    ref, _, _ = _rosenbrock_run(torch, None, 5)
    np.testing.assert_allclose(ours[-1][1], ref[-1][1], atol=1e-3)
    np.testing.assert_allclose(ours[-1][1], [1.0, 1.0], atol=1e-4)


def test_rosenbrock_float32_first_step(torch):
    ours, evals, _ = _rosenbrock_run(tl, "strong_wolfe", 1, dtype="float32")
    ref, ref_evals, _ = _rosenbrock_run(torch, "strong_wolfe", 1, dtype="float32")
    np.testing.assert_allclose(ours[0][1], ref[0][1], rtol=1e-4, atol=1e-4)


def _lsq_run(lib, ls, device="cpu", steps=3, **kw):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((30, 5)), rng.standard_normal(30)
    kwargs = {"device": device} if lib is tl else {}
    w = lib.nn.Parameter(lib.zeros(5, dtype=lib.float64, **kwargs))
    c = lib.nn.Parameter(lib.zeros((), dtype=lib.float64, **kwargs))
    at, bt = lib.tensor(a, **kwargs), lib.tensor(b, **kwargs)
    opt = lib.optim.LBFGS([w, c], line_search_fn=ls, **kw)

    def closure():
        opt.zero_grad()
        loss = ((at @ w + c - bt) ** 2).mean()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        opt.step(closure)
        out.append(np.concatenate([_np(w), _np(c)[None]]))
    return out, opt.state[w]["func_evals"], opt


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
@pytest.mark.parametrize("kw", [{}, {"history_size": 2, "lr": 0.5}, {"max_iter": 3, "max_eval": 4}],
                         ids=["defaults", "short-history", "budget"])
def test_least_squares_matches_torch(device, torch, ls, kw):
    ours, evals, _ = _lsq_run(tl, ls, device=device, **kw)
    ref, ref_evals, _ = _lsq_run(torch, ls, **kw)
    assert evals == ref_evals
    for x1, x2 in zip(ours, ref):
        np.testing.assert_allclose(x1, x2, rtol=1e-12, atol=1e-13)


def _lstm_run(lib, ls, steps=2):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 4, 3)), rng.standard_normal((6, 4, 2))
    lstm, head = lib.nn.LSTM(3, 4, batch_first=True).double(), lib.nn.Linear(4, 2).double()
    params = list(lstm.parameters()) + list(head.parameters())
    init = np.random.default_rng(1)
    with lib.no_grad():
        for p in params:
            p.copy_(lib.tensor(init.uniform(-0.5, 0.5, tuple(p.shape))))
    xt, yt = lib.tensor(x), lib.tensor(y)
    opt = lib.optim.LBFGS(params, line_search_fn=ls)

    def closure():
        opt.zero_grad()
        loss = ((head(lstm(xt)[0]) - yt) ** 2).mean()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        out.append((float(loss.detach()), np.concatenate([_np(p).ravel() for p in params])))
    return out, opt.state[params[0]]["func_evals"]


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lstm_regression_matches_torch(torch, ls):
    ours, evals = _lstm_run(tl, ls)
    ref, ref_evals = _lstm_run(torch, ls)
    assert evals == ref_evals
    for (l1, p1), (l2, p2) in zip(ours, ref):
        assert l1 == pytest.approx(l2, rel=1e-9)
        np.testing.assert_allclose(p1, p2, rtol=1e-6, atol=1e-8)


def test_state_dict_round_trip(device, torch):
    # two steps, save, load into a fresh optimizer over copies: the continuations agree bit for bit
    _, _, opt = _lsq_run(tl, "strong_wolfe", device=device, steps=1, max_iter=2, history_size=3)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["max_eval"] == 2 * 5 // 4
    ref_sd = _lsq_run(torch, "strong_wolfe", steps=1, max_iter=2, history_size=3)[2].state_dict()
    assert set(ref_sd["state"][0]) == set(sd["state"][0])
    _, _, longer = _lsq_run(tl, None, device=device, steps=1, max_iter=4, history_size=3)
    _, _, ref_longer = _lsq_run(torch, None, steps=1, max_iter=4, history_size=3)
    ours_state, ref_state = longer.state_dict()["state"][0], ref_longer.state_dict()["state"][0]
    assert set(ours_state) == set(ref_state) and len(ours_state["al"]) == len(ref_state["al"]) == 3
    assert [a is None for a in ours_state["al"]] == [a is None for a in ref_state["al"]]
    assert sd["param_groups"] == ref_sd["param_groups"]
    params = opt.param_groups[0]["params"]
    twins = [tl.nn.Parameter(p.detach().clone()) for p in params]
    twin = optim.LBFGS(twins, max_iter=2, history_size=3, line_search_fn="strong_wolfe")
    twin.load_state_dict(sd)
    assert twin.state[twins[0]]["n_iter"] == opt.state[params[0]]["n_iter"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((30, 5)), rng.standard_normal(30)
    at, bt = tl.tensor(a, device=device), tl.tensor(b, device=device)
    for o, (w, c) in ((opt, params), (twin, twins)):
        def closure(o=o, w=w, c=c):
            o.zero_grad()
            loss = ((at @ w + c - bt) ** 2).mean()
            loss.backward()
            return loss
        o.step(closure)
    for p, q in zip(params, twins):
        np.testing.assert_array_equal(_np(p), _np(q))


def test_constructor_and_step_errors(torch):
    p, q = tl.nn.Parameter(tl.ones(3)), tl.nn.Parameter(tl.ones(2))
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [q]}])
    with pytest.raises(ValueError, match="learning rate"):
        optim.LBFGS([p], lr=-1)
    opt = optim.LBFGS([p])
    assert opt.defaults == torch.optim.LBFGS([torch.nn.Parameter(torch.ones(3))]).defaults
    with pytest.raises(TypeError):
        opt.step()
    opt = optim.LBFGS([p], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((p - 2) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="strong_wolfe"):
        opt.step(closure)


def test_converged_gradient_returns_without_moving():
    p = tl.nn.Parameter(tl.full((3,), 2.0, dtype=tl.float64))
    opt = optim.LBFGS([p])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = ((p - 2) ** 2).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert len(calls) == 1 and _np(p).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_failing_closure_leaves_everything_unchanged(device, ls):
    p = tl.nn.Parameter(tl.tensor([-1.5, 2.0], dtype=tl.float64, device=device))
    opt = optim.LBFGS([p], line_search_fn=ls, max_iter=4)
    count = [0]
    fail_at = [None]

    def closure():
        count[0] += 1
        if fail_at[0] is not None and count[0] == fail_at[0]:
            raise RuntimeError("closure failed")
        opt.zero_grad()
        loss = _rosen(p)
        loss.backward()
        return loss

    opt.step(closure)
    before = _np(p).copy()
    state = {k: (_np(v).copy() if isinstance(v, tl.Tensor) else (list(v) if isinstance(v, list) else v))
             for k, v in opt.state[p].items()}
    fail_at[0] = count[0] + 3
    with pytest.raises(RuntimeError, match="closure failed"):
        opt.step(closure)
    np.testing.assert_array_equal(_np(p), before)
    after = opt.state[p]
    assert set(after) == set(state)
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(_np(after[k]), v)
        elif isinstance(v, list):
            assert len(after[k]) == len(v) and all(a is b for a, b in zip(after[k], v))
        else:
            assert after[k] == v


def test_complex_parameters_match_torch(torch):
    rng = np.random.default_rng(3)
    z0 = (rng.standard_normal(3) + 1j * rng.standard_normal(3))
    target = (rng.standard_normal(3) + 1j * rng.standard_normal(3))
    results = []
    for lib in (tl, torch):
        z = lib.nn.Parameter(lib.tensor(z0))
        t = lib.tensor(target)
        opt = lib.optim.LBFGS([z], line_search_fn="strong_wolfe", max_iter=5)

        def closure():
            opt.zero_grad()
            loss = ((z - t).abs() ** 2).sum() + (z * z).real.sum() * 0.1
            loss.backward()
            return loss

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.step(closure)
        results.append(z.detach().cpu().numpy() if lib is tl else z.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-12)
