"""nn.utils.parametrize and nn.utils.parametrizations against torch: state_dict keys, parametrized
weights, outputs and gradients with torch's state loaded (weight_norm, spectral_norm with its u/v
buffers in train and eval, orthogonal with each map), right_inverse on assignment, chains, sequences
of originals, cached(), removal, errors; the older weight_norm / spectral_norm hooks; functional_call
on a parametrized module."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from tensorlab.nn.utils import parametrizations as PZ
from tensorlab.nn.utils import parametrize as P
from layers_oracle import close, close_grads, copy_weights, np_of, randn

F64 = dict(rtol=1e-8, atol=1e-10)


def _run_both(torch, device, m, tm, in_features, seed=1):
    x = randn(3, in_features, seed=seed, dtype="float64")
    y, ty = m(tl.tensor(x, device=device)), tm(torch.tensor(x))
    close(y, ty, **F64)
    w = randn(*ty.shape, seed=seed + 1, dtype="float64")
    (y * tl.tensor(w, device=device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    close_grads(tm, m, **F64)


def _pair_linear(torch, device, out_f, in_f):
    torch.manual_seed(0)
    tm = torch.nn.Linear(in_f, out_f).double()
    m = copy_weights(tm, nn.Linear(in_f, out_f).double(), device)
    return m, tm


def _load_from(torch, device, m, tm):
    m.load_state_dict({k: tl.tensor(v.detach().numpy(), device=device) for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(torch, device, dim):
    m, tm = _pair_linear(torch, device, 4, 3)
    PZ.weight_norm(m, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert type(m).__name__ == "ParametrizedLinear" and type(tm).__name__ == "ParametrizedLinear"
    assert list(m.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        close(m.state_dict()[k], v, **F64)
    close(m.weight, tm.weight, **F64)
    _run_both(torch, device, m, tm, 3)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("layer", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_matches_torch(torch, device, training, layer):
    torch.manual_seed(0)
    if layer == "linear":
        tm, m = torch.nn.Linear(5, 4).double(), nn.Linear(5, 4).double()
    elif layer == "conv":
        tm, m = torch.nn.Conv2d(2, 3, 2).double(), nn.Conv2d(2, 3, 2).double()
    else:
        tm, m = torch.nn.ConvTranspose2d(2, 3, 2).double(), nn.ConvTranspose2d(2, 3, 2).double()
    m.to(device)
    PZ.spectral_norm(m, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=2)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert "parametrizations.weight.0._u" in m.state_dict()
    _load_from(torch, device, m, tm)  # the same u, v (their start is random)
    m.train(training)
    tm.train(training)
    for _ in range(2):  # the power iteration advances u, v at every training-mode read
        close(m.weight, tm.weight, **F64)
    close(m.parametrizations.weight[0]._u, tm.parametrizations.weight[0]._u, **F64)
    if layer == "linear":
        _run_both(torch, device, m, tm, 5)
    else:
        x = randn(1, 2, 4, 4, seed=3, dtype="float64")
        y, ty = m(tl.tensor(x, device=device)), tm(torch.tensor(x))
        close(y, ty, **F64)
        y.sum().backward()
        ty.sum().backward()
        close_grads(tm, m, **F64)
    close(m.parametrizations.weight[0]._v, tm.parametrizations.weight[0]._v, **F64)
    # sigma of the normalized weight is ~1 once the power iteration has converged
    if training:
        with tl.no_grad():
            for _ in range(30):
                w = m.weight
        mat = np_of(w).reshape(np_of(w).shape[0], -1) if layer != "conv_transpose" else \
            np.moveaxis(np_of(w), 1, 0).reshape(3, -1)
        assert abs(np.linalg.norm(mat, 2) - 1) < 1e-6


@pytest.mark.parametrize("omap,shape", [("matrix_exp", (4, 4)), ("cayley", (4, 4)), ("householder", (5, 3)),
                                        ("matrix_exp", (3, 5)), ("cayley", (5, 3)), (None, (3, 5))])
def test_orthogonal_matches_torch(torch, device, omap, shape):
    m, tm = _pair_linear(torch, device, *shape)
    PZ.orthogonal(m, orthogonal_map=omap)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=omap)
    assert list(m.state_dict()) == list(tm.state_dict())
    _load_from(torch, device, m, tm)  # base (random for non-square) as torch's
    w = np_of(m.weight)
    small = min(shape)
    gram = w @ w.T if shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    close(m.weight, tm.weight, **F64)
    _run_both(torch, device, m, tm, shape[1])


def test_orthogonal_assignment_and_no_trivialization(torch, device):
    m = nn.Linear(4, 4).double().to(device)
    PZ.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    q = np.linalg.qr(randn(4, 4, seed=8, dtype="float64"))[0]
    m.weight = tl.tensor(q, device=device)  # right_inverse through geqrf
    np.testing.assert_allclose(np_of(m.weight), q, atol=1e-10)
    e = nn.Linear(3, 3).double().to(device)
    PZ.orthogonal(e, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        e.weight = tl.eye(3, dtype=tl.float64, device=device)
    with pytest.raises(ValueError, match="has to be one of"):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix"):
        PZ.orthogonal(nn.BatchNorm1d(3))
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        PZ.orthogonal(nn.Linear(3, 3), "kernel")


class _Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class _Scale(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, X):
        return X * self.s

    def right_inverse(self, X):
        return X / self.s


class _Sum(nn.Module):
    """A parametrization of two tensors: weight = A + B."""

    def forward(self, A, B):
        return A + B

    def right_inverse(self, W):
        return W * 0.25, W * 0.75


def _torch_versions(torch):
    class Symmetric(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    class Scale(torch.nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s

        def forward(self, X):
            return X * self.s

        def right_inverse(self, X):
            return X / self.s

    class Sum(torch.nn.Module):
        def forward(self, A, B):
            return A + B

        def right_inverse(self, W):
            return W * 0.25, W * 0.75
    return Symmetric, Scale, Sum


def test_custom_chain_and_sequence_originals_match_torch(torch, device):
    TSym, TScale, TSum = _torch_versions(torch)
    m, tm = _pair_linear(torch, device, 4, 4)
    P.register_parametrization(m, "weight", _Symmetric())
    P.register_parametrization(m, "weight", _Scale(3.0))
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSym())
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TScale(3.0))
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight, tm.weight, **F64)
    _run_both(torch, device, m, tm, 4)
    # assignment runs the right_inverse chain (last first) into original, keeping its identity
    orig = m.parametrizations.weight.original
    w = randn(4, 4, seed=4, dtype="float64")
    m.weight = tl.tensor(w, device=device)
    with torch.no_grad():
        tm.weight = torch.tensor(w)
    assert m.parametrizations.weight.original is orig
    close(m.parametrizations.weight.original, tm.parametrizations.weight.original, **F64)
    close(m.weight, tm.weight, **F64)
    # the bias as a sum of two tensors: original0, original1
    P.register_parametrization(m, "bias", _Sum())
    torch.nn.utils.parametrize.register_parametrization(tm, "bias", TSum())
    assert list(m.state_dict()) == list(tm.state_dict())
    assert P.is_parametrized(m, "bias") and m.parametrizations.bias.ntensors == 2
    m.zero_grad()
    tm.zero_grad()
    _run_both(torch, device, m, tm, 4)
    # removal: leave the current values as plain parameters
    P.remove_parametrizations(m, "bias")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "bias")
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and not P.is_parametrized(m)
    assert list(m.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        close(m.state_dict()[k], v, **F64)


def test_cached_and_type_and_errors(device):
    m = nn.Linear(3, 3).to(device)
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2
    P.register_parametrization(m, "weight", Counting())
    calls.clear()
    with P.cached():
        a, b = m.weight, m.weight
        with P.cached():
            c = m.weight
    assert a is b is c and len(calls) == 1
    m.weight
    assert len(calls) == 2  # the cache empties with the outermost context
    assert P.type_before_parametrizations(m) is nn.Linear and isinstance(m, nn.Linear)
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(m)
    dup = copy.deepcopy(m)  # deepcopy works and is independent
    P.remove_parametrizations(dup, "weight")
    assert P.is_parametrized(m, "weight") and type(dup) is nn.Linear
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(m, "kernel", Counting())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(m, "bias")

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Shrink())
    P.register_parametrization(nn.Linear(3, 3), "weight", Shrink(), unsafe=True)

    class NoInverse(nn.Module):
        def forward(self, X):
            return X
    n = nn.Linear(2, 2)
    P.register_parametrization(n, "weight", NoInverse())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        n.weight = tl.zeros(2, 2)


def test_parametrized_buffer_and_optimizer_identity(device):
    bn = nn.BatchNorm1d(3).to(device)
    P.register_parametrization(bn, "running_var", _Scale(2.0))
    assert "parametrizations.running_var.original" in bn.state_dict()
    np.testing.assert_allclose(np_of(bn.running_var), np.ones(3))
    lin = nn.Linear(2, 2).to(device)
    before = lin.weight
    P.register_parametrization(lin, "weight", _Scale(2.0))
    assert lin.parametrizations.weight.original is before  # an optimizer built before still updates it


def test_old_weight_norm_hook_matches_torch(torch, device):
    m, tm = _pair_linear(torch, device, 4, 3)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(m, dim=0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(tm, dim=0)
    assert list(m.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    _run_both(torch, device, m, tm, 3)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight, tm.weight, **F64)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)


def test_old_spectral_norm_hook_matches_torch(torch, device):
    m, tm = _pair_linear(torch, device, 4, 5)
    nn.utils.spectral_norm(m)
    torch.nn.utils.spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    _load_from(torch, device, m, tm)
    _run_both(torch, device, m, tm, 5)
    close(m.weight_u, tm.weight_u, **F64)
    close(m.weight_v, tm.weight_v, **F64)
    m.eval()
    tm.eval()
    _run_both(torch, device, m, tm, 5, seed=4)
    nn.utils.remove_spectral_norm(m)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight", "bias"] or \
        sorted(m.state_dict()) == sorted(tm.state_dict())
    close(m.weight, tm.weight, **F64)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(m)


def test_functional_call_on_parametrized_module(torch, device):
    m = nn.Linear(3, 3, bias=False).double().to(device)
    P.register_parametrization(m, "weight", _Scale(2.0))
    orig = np_of(m.parametrizations.weight.original).copy()
    w = tl.tensor(randn(3, 3, seed=2, dtype="float64"), device=device, requires_grad=True)
    x = tl.tensor(randn(2, 3, seed=3, dtype="float64"), device=device)
    # the parametrized name replaces the whole parametrization (torch's documented behaviour)
    y = tl.func.functional_call(m, {"weight": w}, (x,))
    np.testing.assert_allclose(np_of(y), np_of(x) @ np_of(w).T, rtol=1e-12)
    y.sum().backward()
    assert w.grad is not None
    # the original's key goes through the parametrization
    y2 = tl.func.functional_call(m, {"parametrizations.weight.original": w}, (x,))
    np.testing.assert_allclose(np_of(y2), np_of(x) @ (2 * np_of(w)).T, rtol=1e-12)
    np.testing.assert_array_equal(np_of(m.parametrizations.weight.original), orig)  # the module is unchanged
    np.testing.assert_allclose(np_of(m.weight), 2 * orig)
    with pytest.warns(FutureWarning, match="stateless.functional_call"):
        y3 = nn.utils.stateless.functional_call(m, {"weight": w}, (x,))
    np.testing.assert_allclose(np_of(y3), np_of(y), rtol=1e-12)


def test_spectral_norm_checkpoint_hooks_match_torch(torch, device):
    """The version-0 checkpoint conversion (weight_v solved from sigma) and the version metadata, called
    directly (they run on their own where the Module has state-dict hooks)."""
    from tensorlab.nn.utils.spectral_norm import (SpectralNorm, SpectralNormLoadStateDictPreHook,
                                                  SpectralNormStateDictHook)
    import importlib
    tsn = importlib.import_module("torch.nn.utils.spectral_norm")
    w = randn(4, 3, seed=1, dtype="float64")
    u = randn(4, seed=2, dtype="float64")
    u /= np.linalg.norm(u)
    old = {"weight_orig": w, "weight": w / 2.5, "weight_u": u}
    ours = {k: tl.tensor(v, device=device) for k, v in old.items()}
    theirs = {k: torch.tensor(v) for k, v in old.items()}
    SpectralNormLoadStateDictPreHook(SpectralNorm())(ours, "", {}, True, [], [], [])
    tsn.SpectralNormLoadStateDictPreHook(tsn.SpectralNorm())(theirs, "", {}, True, [], [], [])
    assert sorted(ours) == sorted(theirs) == ["weight_orig", "weight_u", "weight_v"]
    close(ours["weight_v"], theirs["weight_v"], rtol=1e-8, atol=1e-10)
    meta = {}
    SpectralNormStateDictHook(SpectralNorm())(None, {}, "", meta)
    assert meta == {"spectral_norm": {"weight.version": 1}}
    with pytest.raises(RuntimeError, match="Unexpected key in metadata"):
        SpectralNormStateDictHook(SpectralNorm())(None, {}, "", meta)


def test_transfer_parametrizations_matches_torch(torch, device):
    tp = torch.nn.utils.parametrize
    a, ta = _pair_linear(torch, device, 3, 3)
    torch.manual_seed(3)
    tb = torch.nn.Linear(3, 3).double()
    b = copy_weights(tb, nn.Linear(3, 3).double(), device)
    PZ.orthogonal(a)
    torch.nn.utils.parametrizations.orthogonal(ta)
    _load_from(torch, device, a, ta)
    P.transfer_parametrizations_and_params(a, b)
    tp.transfer_parametrizations_and_params(ta, tb)
    assert list(b.state_dict()) == list(tb.state_dict())
    for k, v in tb.state_dict().items():
        close(b.state_dict()[k], v, **F64)
    close(b.weight, tb.weight, **F64)

    class Empty(nn.Module):
        pass

    class TEmpty(torch.nn.Module):
        pass
    e, te = Empty(), TEmpty()
    P.transfer_parametrizations_and_params(a, e, "weight")
    tp.transfer_parametrizations_and_params(ta, te, "weight")
    assert list(e.state_dict()) == list(te.state_dict())
    close(e.weight, te.weight, **F64)


@pytest.mark.parametrize("kind", ["weight_norm", "orthogonal", "spectral_norm"])
def test_gradcheck_parametrized_weight(device, kind):
    m = nn.Linear(3, 3).double().to(device)
    {"weight_norm": PZ.weight_norm, "orthogonal": PZ.orthogonal, "spectral_norm": PZ.spectral_norm}[kind](m)
    m.eval()  # spectral_norm: no power-iteration step inside the function
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in m.parameters())
    x = tl.tensor(randn(2, 3, seed=1, dtype="float64"), device=device)

    def f(*ps):
        return tl.func.functional_call(m, dict(zip(names, ps)), (x,))
    assert tl.autograd.gradcheck(f, params)
