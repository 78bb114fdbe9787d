"""nn.init: torch's deterministic cases exactly (calculate_gain for every name, eye_, dirac_, constant_,
ones_, zeros_), orthogonal_ orthogonal, the random initializers by their statistics (uniform_, normal_,
trunc_normal_, xavier_*, kaiming_* for every mode and nonlinearity, sparse_), generator= reproducibility,
the deprecated aliases, torch's errors, and nn.utils.skip_init."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from tensorlab.nn import init
from layers_oracle import np_of, raises_like

GAIN_CASES = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
              ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
              ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)]


@pytest.mark.parametrize("name,param", GAIN_CASES)
def test_calculate_gain_matches_torch(torch, name, param):
    assert init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)


def test_calculate_gain_errors(torch):
    raises_like(lambda: init.calculate_gain("gelu"), lambda: torch.nn.init.calculate_gain("gelu"))
    raises_like(lambda: init.calculate_gain("leaky_relu", True),
                lambda: torch.nn.init.calculate_gain("leaky_relu", True))
    raises_like(lambda: init.calculate_gain("leaky_relu", "x"), lambda: torch.nn.init.calculate_gain("leaky_relu", "x"))


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_matches_torch(torch, device, shape):
    t = tl.empty(shape, device=device)
    assert init.eye_(t) is t
    np.testing.assert_array_equal(np_of(t), torch.nn.init.eye_(torch.empty(shape)).numpy())


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 4, 3, 3), 2), ((3, 5, 2, 3, 4), 1), ((6, 2, 3), 3)])
def test_dirac_matches_torch(torch, device, shape, groups):
    t = tl.empty(shape, device=device)
    init.dirac_(t, groups)
    np.testing.assert_array_equal(np_of(t), torch.nn.init.dirac_(torch.empty(shape), groups).numpy())


def test_fills_match_torch_and_leave_autograd_alone(torch, device):
    p = nn.Parameter(tl.empty(2, 3, device=device))
    assert init.constant_(p, 0.25) is p and p.grad_fn is None and p.requires_grad
    np.testing.assert_array_equal(np_of(p), np.full((2, 3), 0.25, dtype=np.float32))
    np.testing.assert_array_equal(np_of(init.ones_(p)), np.ones((2, 3)))
    np.testing.assert_array_equal(np_of(init.zeros_(p)), np.zeros((2, 3)))
    e = nn.Parameter(tl.empty(3, 3, device=device))
    init.eye_(e)
    assert e.requires_grad and e.grad_fn is None


@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4), (5, 2, 3, 3)])
def test_orthogonal_is_orthogonal(device, shape):
    t = tl.empty(shape, dtype=tl.float64, device=device)
    init.orthogonal_(t, gain=2.0)
    m = np_of(t).reshape(shape[0], -1)
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] == small else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-10)
    init.orthogonal_(tl.empty(0, 3, device=device))  # nothing to fill


def _stats(t):
    a = np_of(t).astype(np.float64).ravel()
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_normal_trunc_normal_statistics(device):
    tl.manual_seed(0)
    t = tl.empty(200, 200, device=device)
    mean, std, lo, hi = _stats(init.uniform_(t, -2.0, 3.0))
    assert -2.0 <= lo and hi < 3.0 and abs(mean - 0.5) < 0.03 and abs(std - 5 / math.sqrt(12)) < 0.02
    mean, std, _, _ = _stats(init.normal_(t, 1.5, 0.5))
    assert abs(mean - 1.5) < 0.01 and abs(std - 0.5) < 0.01
    mean, std, lo, hi = _stats(init.trunc_normal_(t, 0.0, 1.0, -1.0, 2.0))
    # N(0, 1) truncated to [-1, 2]: its mean and standard deviation
    from scipy import stats
    ref = stats.truncnorm(-1.0, 2.0)
    assert lo >= -1.0 and hi <= 2.0 and abs(mean - ref.mean()) < 0.01 and abs(std - ref.std()) < 0.01
    # bounds far in the tail keep their resolution (not one collapsed value)
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):  # as torch warns
        mean, std, lo, hi = _stats(init.trunc_normal_(t, 0.0, 1.0, 5.0, 6.0))
    ref = stats.truncnorm(5.0, 6.0)
    assert lo >= 5.0 and hi <= 6.0 and abs(mean - ref.mean()) < 0.01 and abs(std / ref.std() - 1) < 0.05


@pytest.mark.parametrize("fn,expected_std", [
    (lambda t: init.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(2.0 / (300 + 200))),
    (lambda t: init.xavier_normal_(t), math.sqrt(2.0 / (300 + 200))),
    (lambda t: init.kaiming_uniform_(t, a=0.2, mode="fan_in"), math.sqrt(2.0 / 1.04) / math.sqrt(300)),
    (lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"), math.sqrt(2.0) / math.sqrt(200)),
    (lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"), (5 / 3) / math.sqrt(200)),
    (lambda t: init.kaiming_normal_(t, nonlinearity="selu"), 0.75 / math.sqrt(300)),
    (lambda t: init.kaiming_normal_(t, mode="FAN_IN", nonlinearity="linear"), 1 / math.sqrt(300)),
])
def test_fan_based_initializers_statistics(device, fn, expected_std):
    tl.manual_seed(0)  # a fixed draw (the bounds below are ~4 standard errors wide)
    t = tl.empty(20, 30, 10, device=device)  # fan_in 30 * 10, fan_out 20 * 10
    mean, std, _, _ = _stats(fn(t))
    assert abs(mean) < 0.06 * expected_std and abs(std / expected_std - 1) < 0.04


def test_sparse_zeroes_each_column(device):
    tl.manual_seed(0)
    t = tl.empty(20, 50, device=device)
    init.sparse_(t, sparsity=0.3, std=0.5)
    a = np_of(t)
    assert ((a == 0).sum(axis=0) == math.ceil(0.3 * 20)).all()
    nz = a[a != 0]
    assert abs(nz.std() - 0.5) < 0.05


def test_generator_makes_draws_reproducible(device):
    for fn in (lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
               lambda t, g: init.trunc_normal_(t, generator=g), lambda t, g: init.xavier_uniform_(t, generator=g),
               lambda t, g: init.xavier_normal_(t, generator=g), lambda t, g: init.kaiming_uniform_(t, generator=g),
               lambda t, g: init.kaiming_normal_(t, generator=g), lambda t, g: init.orthogonal_(t, generator=g),
               lambda t, g: init.sparse_(t, 0.5, generator=g)):
        a = fn(tl.empty(4, 5, device=device), tl.Generator(device=device).manual_seed(3))
        b = fn(tl.empty(4, 5, device=device), tl.Generator(device=device).manual_seed(3))
        np.testing.assert_array_equal(np_of(a), np_of(b))


def test_deprecated_aliases_warn_and_work(torch, device):
    for old in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                "kaiming_normal", "orthogonal", "sparse"):
        assert hasattr(torch.nn.init, old)
        fn = getattr(init, old)
        assert fn.__name__ == old
    with pytest.warns(FutureWarning, match=r"`nn.init.constant` is now deprecated in favor of `nn.init.constant_`"):
        t = init.constant(tl.empty(2, device=device), 3.0)
    np.testing.assert_array_equal(np_of(t), [3.0, 3.0])


def test_init_errors_match_torch(torch, device):
    cases = [
        (lambda m: m.eye_(LIB[m](3)), "eye_ 1-D"),
        (lambda m: m.dirac_(LIB[m](3, 3)), "dirac_ 2-D"),
        (lambda m: m.dirac_(LIB[m](4, 2, 3), 3), "dirac_ groups"),
        (lambda m: m.orthogonal_(LIB[m](3)), "orthogonal_ 1-D"),
        (lambda m: m.sparse_(LIB[m](3, 3, 3), 0.1), "sparse_ 3-D"),
        (lambda m: m.xavier_uniform_(LIB[m](3)), "fan of 1-D"),
        (lambda m: m.kaiming_normal_(LIB[m](3, 3), mode="fan_avg"), "mode"),
        (lambda m: m.kaiming_uniform_(LIB[m](3, 3), nonlinearity="gelu"), "nonlinearity"),
    ]
    LIB.clear()
    LIB[init] = lambda *s: tl.empty(*s, device=device)
    LIB[torch.nn.init] = lambda *s: torch.empty(*s)
    for case, _ in cases:
        raises_like(lambda: case(init), lambda: case(torch.nn.init))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(tl.empty(0, 3, device=device))


LIB = {}


def test_skip_init(torch, device):
    m = nn.utils.skip_init(nn.Linear, 4, 3, device=device)
    assert isinstance(m, nn.Linear) and m.weight.shape == (3, 4) and m.weight.device.type == device
    # nothing was drawn: the generator's state did not move
    tl.manual_seed(5)
    nn.utils.skip_init(nn.Linear, 40, 30)
    after_skip = tl.rand(3)
    tl.manual_seed(5)
    after_none = tl.rand(3)
    np.testing.assert_array_equal(np_of(after_skip), np_of(after_none))
    raises_like(lambda: nn.utils.skip_init(int), lambda: torch.nn.utils.skip_init(int))
    raises_like(lambda: nn.utils.skip_init(nn.LSTM, 3, 3), lambda: torch.nn.utils.skip_init(torch.nn.LSTM, 3, 3))
