"""Lazy modules against torch: UninitializedParameter/UninitializedBuffer, LazyModuleMixin's first
forward (shapes from the input, the placeholders' dtype/device, torch's reset_parameters, the class
becoming cls_to_become), repr before and after, state_dict of placeholders, load_state_dict into a
lazy module, an optimizer built before the first forward, deepcopy, and every Lazy* class's outputs
and gradients against torch's (its materialized parameters copied into ours)."""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import tensorlab as tl

nn = tl.nn

LAZY = [  # (class name, constructor args, input shape)
    ("LazyLinear", (4,), (3, 5)),
    ("LazyLinear", (2, False), (2, 3, 6)),
    ("LazyConv1d", (4, 3), (2, 3, 8)),
    ("LazyConv1d", (4, 3), (3, 8)),  # unbatched
    ("LazyConv2d", (6, 2), (2, 4, 5, 5)),
    ("LazyConv3d", (2, 2), (1, 3, 4, 3, 4)),
    ("LazyConvTranspose1d", (4, 3, 2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 2), (2, 3, 4, 3)),
    ("LazyConvTranspose3d", (2, 2), (1, 2, 3, 3, 2)),
    ("LazyBatchNorm1d", (), (5, 3)),
    ("LazyBatchNorm2d", (1e-3, 0.3), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 3)),
    ("LazyInstanceNorm1d", (), (2, 3, 6)),
    ("LazyInstanceNorm2d", (1e-5, 0.1, False, False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 2)),
]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Lazy modules are a new feature")
        yield


@pytest.mark.parametrize("name,args,shape", LAZY, ids=[f"{n}-{len(s)}d" for n, _, s in LAZY])
def test_lazy_module_matches_torch(torch, device, name, args, shape):
    tm = getattr(torch.nn, name)(*args).double()
    om = getattr(nn, name)(*args).to(device=device, dtype=tl.float64)
    assert repr(om) == repr(tm)
    assert om.has_uninitialized_params() == tm.has_uninitialized_params()
    assert [(k, type(v).__name__) for k, v in om.state_dict().items()] == \
        [(k, type(v).__name__) for k, v in tm.state_dict().items()]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    tx = torch.tensor(x, requires_grad=True)
    ox = tl.tensor(x, device=device).requires_grad_(True)
    # materialize both with a no-grad eval forward, then give ours torch's parameters
    tm.eval()
    om.eval()
    with torch.no_grad():
        tm(tx)
    with tl.no_grad():
        om(ox)
    assert type(om).__name__ == type(tm).__name__ == name.replace("Lazy", "")
    assert repr(om) == repr(tm)
    assert not hasattr(om, "has_uninitialized_params")
    for (n, p), (n2, q) in zip(list(tm.named_parameters()) + list(tm.named_buffers()),
                               list(om.named_parameters()) + list(om.named_buffers())):
        assert n == n2 and tuple(p.shape) == tuple(q.shape)
        assert q.dtype == (tl.float64 if p.is_floating_point() else tl.int64)
        assert q.device.type == device
        with tl.no_grad():
            q.copy_(tl.tensor(p.detach().numpy(), device=device, dtype=q.dtype))
    tm.train()
    om.train()
    ty, oy = tm(tx), om(ox)
    np.testing.assert_allclose(oy.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-9)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    oy.backward(tl.tensor(g, device=device))
    np.testing.assert_allclose(ox.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    for (n, p), (_, q) in zip(tm.named_parameters(), om.named_parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-9, err_msg=n)
    for (n, b), (_, q) in zip(tm.named_buffers(), om.named_buffers()):
        np.testing.assert_allclose(q.cpu().numpy(), b.numpy(), rtol=1e-9, atol=1e-9, err_msg=n)


def test_lazy_linear_initializes_like_linear():
    tl.manual_seed(3)
    m = nn.LazyLinear(5)
    m(tl.randn(2, 4))
    bound = 1 / np.sqrt(4)
    assert float(m.weight.abs().max()) <= bound and float(m.weight.abs().max()) > bound / 4
    assert m.in_features == 4 and type(m) is nn.Linear and type(m.weight) is nn.Parameter


def test_uninitialized_placeholders(torch):
    p = nn.UninitializedParameter()
    b = nn.UninitializedBuffer()
    assert repr(p) == repr(torch.nn.UninitializedParameter()) == "<UninitializedParameter>"
    assert repr(b) == "<UninitializedBuffer>"
    assert p.requires_grad and not b.requires_grad
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape
    assert nn.parameter.UninitializedParameter is nn.UninitializedParameter
    q = nn.UninitializedParameter(dtype=tl.float64)
    q.materialize((2, 3))
    assert type(q) is nn.Parameter and tuple(q.shape) == (2, 3) and q.dtype == tl.float64 and q.requires_grad
    b.materialize((4,), dtype=tl.float16)
    assert type(b) is tl.Tensor and tuple(b.shape) == (4,) and b.dtype == tl.float16
    c = copy.deepcopy(nn.UninitializedParameter(requires_grad=False))
    assert type(c) is nn.UninitializedParameter and not c.requires_grad
    d = pickle.loads(pickle.dumps(nn.UninitializedBuffer(dtype=tl.float64)))
    assert type(d) is nn.UninitializedBuffer and d.dtype == tl.float64


def test_optimizer_built_before_the_first_forward_updates_the_materialized_parameters(torch):
    for name in ("Adam", "AdamW", "RMSprop"):  # accepted before the shapes are known, as torch's are
        m = nn.LazyLinear(2)
        opt = getattr(tl.optim, name)(m.parameters(), lr=0.1)
        getattr(torch.optim, name)(torch.nn.LazyLinear(2).parameters(), lr=0.1)
        m(tl.ones(3, 4)).sum().backward()
        opt.step()
        assert tuple(opt.state[m.weight]["exp_avg_sq" if name != "RMSprop" else "square_avg"].shape) == (2, 4)
    m = nn.LazyLinear(2)
    opt = tl.optim.SGD(m.parameters(), lr=0.5)
    w_obj = m.weight
    m(tl.ones(3, 4)).sum().backward()
    before = m.weight.detach().clone()
    opt.step()
    assert m.weight is w_obj
    np.testing.assert_allclose(m.weight.detach().numpy(), (before - 0.5 * m.weight.grad).numpy(), rtol=1e-6)
    # torch accepts it too
    tmod = torch.nn.LazyLinear(2)
    torch.optim.SGD(tmod.parameters(), lr=0.5)


def test_load_state_dict_into_a_lazy_module(torch):
    src = nn.Linear(4, 3)
    m = nn.LazyLinear(3)
    m.load_state_dict(src.state_dict())
    assert type(m) is nn.LazyLinear and not m.has_uninitialized_params()  # as torch: the class changes on forward
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())
    x = tl.randn(2, 4)
    np.testing.assert_allclose(m(x).detach().numpy(), src(x).detach().numpy(), rtol=1e-6)
    assert type(m) is nn.Linear
    # a lazy state_dict (placeholders) into a lazy module: nothing to load, nothing missing
    lazy = nn.LazyBatchNorm2d()
    res = lazy.load_state_dict(nn.LazyBatchNorm2d().state_dict())
    assert lazy.has_uninitialized_params() and not res.missing_keys and not res.unexpected_keys
    # a shape that does not fit the materialized one
    with pytest.raises(RuntimeError, match="size mismatch"):
        nn.Linear(5, 3).load_state_dict(src.state_dict())


def test_lazy_modules_inside_a_model_and_deepcopy():
    model = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(),
                          nn.LazyLinear(2))
    twin = copy.deepcopy(model)
    y = model(tl.randn(2, 3, 5, 5))
    assert tuple(y.shape) == (2, 2)
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert model[4].in_features == 100
    assert twin[0].has_uninitialized_params()  # the copy is still lazy
    twin(tl.randn(1, 3, 2, 2))
    assert twin[4].in_features == 16


def test_lazy_errors(torch):
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        nn.LazyConv2d(3, 2)(tl.randn(2, 3))
    m = nn.LazyConv2d(4, 2, groups=2)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        m(tl.randn(1, 3, 4, 4))
    assert m.has_uninitialized_params()  # nothing materialized by the failed forward
    with pytest.warns(UserWarning, match="Lazy modules are a new feature"):
        warnings.resetwarnings()
        nn.LazyLinear(2)
