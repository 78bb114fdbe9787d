"""InstanceNorm1d/2d/3d, LocalResponseNorm, CrossMapLRN2d, Bilinear, LPPool1d/2d/3d (and F.lp_pool*),
SyncBatchNorm (one process; several ranks in tests/distributed_scripts/sync_batchnorm.py), Container
and DataParallel against torch: outputs, gradients, buffers, repr, state_dict names, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorlab as tl
from test_ddp import mpirun

F = tl.nn.functional


def _t(torch, a, device, grad=False):
    x = tl.tensor(np.asarray(a), device=device)
    return x.requires_grad_(True) if grad else x


def _copy_params(tm, om, device):
    with tl.no_grad():
        for (n, p), (n2, q) in zip(list(tm.named_parameters()) + list(tm.named_buffers()),
                                   list(om.named_parameters()) + list(om.named_buffers())):
            assert n == n2
            q.copy_(tl.tensor(p.detach().numpy(), device=device))


def _close(a, b, tol=1e-5):
    b = b.detach().numpy() if hasattr(b, "detach") else b
    np.testing.assert_allclose(a.detach().cpu().numpy(), b, rtol=tol, atol=tol)


def _fwd_bwd(torch, tm, om, shapes, device, train=True, seed=0):
    """Forward and backward of both modules on the same random inputs; compares everything."""
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s) for s in shapes]
    tx = [torch.tensor(x, requires_grad=True) for x in xs]
    ox = [_t(torch, x, device, True) for x in xs]
    tm.train(train)
    om.train(train)
    ty = tm(*tx)
    oy = om(*ox)
    _close(oy, ty)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    oy.backward(tl.tensor(g, device=device))
    for a, b in zip(ox, tx):
        _close(a.grad, b.grad)
    for (n, p), (_, q) in zip(tm.named_parameters(), om.named_parameters()):
        _close(q.grad, p.grad)
    for (n, b), (_, q) in zip(tm.named_buffers(), om.named_buffers()):
        _close(q, b)


# -- InstanceNorm ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nd,shape", [(1, (3, 4, 7)), (2, (2, 4, 5, 3)), (3, (2, 4, 3, 2, 3))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (False, True), (True, True)])
def test_instance_norm_matches_torch(torch, device, nd, shape, affine, track):
    tcls, ocls = getattr(torch.nn, f"InstanceNorm{nd}d"), getattr(tl.nn, f"InstanceNorm{nd}d")
    tm = tcls(4, eps=1e-3, momentum=0.3, affine=affine, track_running_stats=track).double()
    om = ocls(4, eps=1e-3, momentum=0.3, affine=affine, track_running_stats=track).to(device=device, dtype=tl.float64)
    assert repr(om) == repr(tm)
    assert list(om.state_dict()) == list(tm.state_dict())
    if affine:
        with torch.no_grad():
            tm.weight.uniform_(0.5, 1.5)
            tm.bias.uniform_(-0.5, 0.5)
    _copy_params(tm, om, device)
    _fwd_bwd(torch, tm, om, [shape], device, train=True)
    _fwd_bwd(torch, tm, om, [shape], device, train=False, seed=1)
    _fwd_bwd(torch, tm, om, [shape[1:]], device, train=True, seed=2)  # unbatched


def test_instance_norm_checks(torch):
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        tl.nn.InstanceNorm1d(3)(tl.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="num_features"):
        tl.nn.InstanceNorm2d(3, affine=True)(tl.randn(2, 4, 3, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        y = tl.nn.InstanceNorm2d(3)(tl.randn(2, 4, 3, 3))
    assert tuple(y.shape) == (2, 4, 3, 3)
    assert repr(tl.nn.InstanceNorm3d(5, bias=False, affine=True)) == repr(torch.nn.InstanceNorm3d(5, bias=False,
                                                                                                    affine=True))


# -- LocalResponseNorm / CrossMapLRN2d -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 7, 3, 4), (1, 5, 2, 3, 2)])
def test_local_response_norm_matches_torch(torch, device, shape):
    tm, om = torch.nn.LocalResponseNorm(3, 1e-2, 0.7, 1.5), tl.nn.LocalResponseNorm(3, 1e-2, 0.7, 1.5)
    assert repr(om) == repr(tm)
    _fwd_bwd(torch, tm.double(), om, [shape], device)


@pytest.mark.parametrize("size", [2, 3, 4, 5])
@pytest.mark.parametrize("channels", [1, 4, 9])
def test_cross_map_lrn2d_matches_torch_forward_and_its_backward(torch, device, size, channels):
    tm, om = torch.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.5), tl.nn.CrossMapLRN2d(size, 1e-2, 0.75, 1.5)
    assert repr(om) == repr(tm)
    _fwd_bwd(torch, tm, om, [(2, channels, 3, 4)], device)


def test_cross_map_lrn2d_wants_4d(device):
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        tl.nn.CrossMapLRN2d(3)(tl.randn(2, 3, 4, device=device))


# -- Bilinear ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(torch, device, bias):
    tm = torch.nn.Bilinear(3, 4, 5, bias=bias).double()
    om = tl.nn.Bilinear(3, 4, 5, bias=bias, device=device, dtype=tl.float64)
    assert repr(om) == repr(tm)
    assert list(om.state_dict()) == list(tm.state_dict())
    bound = 1 / np.sqrt(3)
    assert float(om.weight.abs().max()) <= bound
    _copy_params(tm, om, device)
    _fwd_bwd(torch, tm, om, [(2, 6, 3), (2, 6, 4)], device)
    with pytest.raises(RuntimeError, match="batch dimensions"):
        om(tl.randn(2, 3, device=device, dtype=tl.float64), tl.randn(3, 4, device=device, dtype=tl.float64))


# -- LPPool ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nd,shape,kernel,stride,ceil", [
    (1, (2, 3, 9), 3, None, False), (1, (3, 8), 2, 3, True), (2, (2, 3, 6, 5), (2, 3), None, False),
    (2, (3, 7, 7), 3, 2, True), (3, (2, 2, 4, 5, 4), 2, None, False), (3, (2, 5, 4, 5), (2, 1, 2), 2, True)])
@pytest.mark.parametrize("p", [2.0, 1.5, 3])
def test_lp_pool_matches_torch(torch, device, nd, shape, kernel, stride, ceil, p):
    tm = getattr(torch.nn, f"LPPool{nd}d")(p, kernel, stride, ceil)
    om = getattr(tl.nn, f"LPPool{nd}d")(p, kernel, stride, ceil)
    assert repr(om) == repr(tm)
    _fwd_bwd(torch, tm, om, [shape], device)
    x = np.abs(np.random.default_rng(3).standard_normal(shape)) + 0.1
    want = getattr(torch.nn.functional, f"lp_pool{nd}d")(torch.tensor(x), p, kernel, stride, ceil)
    _close(getattr(F, f"lp_pool{nd}d")(tl.tensor(x, device=device), p, kernel, stride, ceil), want)


# -- SyncBatchNorm on one process ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
def test_sync_batchnorm_on_one_process_is_batchnorm(torch, device, shape):
    tm = torch.nn.SyncBatchNorm(3, momentum=0.2).double()
    om = tl.nn.SyncBatchNorm(3, momentum=0.2).to(device=device, dtype=tl.float64)
    assert repr(om) == repr(tm)
    assert list(om.state_dict()) == list(tm.state_dict())
    _fwd_bwd(torch, tm, om, [shape], device)
    _fwd_bwd(torch, tm, om, [shape], device, train=False, seed=1)
    assert int(om.num_batches_tracked) == 1


def test_sync_batchnorm_checks_and_conversion(torch):
    with pytest.raises(ValueError, match="expected at least 2D input"):
        tl.nn.SyncBatchNorm(3)(tl.randn(3))
    with pytest.raises(ValueError, match="number of input channels should be non-zero"):
        tl.nn.SyncBatchNorm(3)(tl.randn(2, 0, 4))
    model = tl.nn.Sequential(tl.nn.Conv2d(2, 3, 1), tl.nn.BatchNorm2d(3),
                             tl.nn.Sequential(tl.nn.BatchNorm1d(4, affine=False, momentum=None)))
    model[1].eval()
    w = model[1].weight
    rm = model[1].running_mean
    conv = tl.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(conv[1]) is tl.nn.SyncBatchNorm and type(conv[2][0]) is tl.nn.SyncBatchNorm
    assert conv[1].weight is w and conv[1].running_mean is rm and not conv[1].training
    assert conv[2][0].weight is None and conv[2][0].momentum is None
    assert type(conv[0]) is tl.nn.Conv2d
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3),
                                 torch.nn.Sequential(torch.nn.BatchNorm1d(4, affine=False, momentum=None)))
    assert repr(conv) == repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(tmodel))


def test_sync_batchnorm_across_two_ranks():
    mpirun("sync_batchnorm.py", "cpu")


# -- Container, DataParallel -------------------------------------------------------------------------------------
def test_container_is_deprecated_but_works(torch):
    with pytest.warns(FutureWarning, match="nn.Container. is deprecated"):
        c = tl.nn.Container(a=tl.nn.Linear(2, 3), b=tl.nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tc = torch.nn.Container(a=torch.nn.Linear(2, 3), b=torch.nn.ReLU())
    assert repr(c) == repr(tc)
    assert list(c.state_dict()) == list(tc.state_dict())


def test_data_parallel_without_devices_runs_the_module(torch):
    m = tl.nn.Linear(3, 2)
    dp = tl.nn.DataParallel(m)
    x = tl.randn(4, 3)
    _close(dp(x), m(x).detach().numpy())
    assert dp.module is m
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert repr(dp) == repr(torch.nn.DataParallel(torch.nn.Linear(3, 2)))
    assert tl.nn.parallel.DataParallel is tl.nn.DataParallel


def test_data_parallel_on_one_cuda_device(device):
    if device != "cuda":
        pytest.skip("DataParallel's device path")
    m = tl.nn.Linear(3, 2)
    dp = tl.nn.DataParallel(m, device_ids=[0])
    assert m.weight.device.type == "cuda"
    x = tl.randn(4, 3)
    y = dp(x)
    assert y.device.type == "cuda"
    y.sum().backward()
    assert m.weight.grad is not None
    _close(y, m(x.cuda()).detach().cpu().numpy())


def test_data_parallel_split_across_device_ids(device):
    """The several-device path (chunks, per-device state copies, gather), on device 0 twice."""
    if device != "cuda":
        pytest.skip("DataParallel's device path")
    tl.manual_seed(0)
    m = tl.nn.Sequential(tl.nn.Linear(3, 4), tl.nn.Tanh(), tl.nn.Linear(4, 2)).cuda()
    dp = tl.nn.DataParallel(m, device_ids=[0, 0])
    x = tl.randn(5, 3, device="cuda")
    y = dp(x)
    y.pow(2).sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    ref = m(x)
    ref.pow(2).sum().backward()
    _close(y, ref.detach().cpu().numpy())
    for g, p in zip(grads, m.parameters()):
        _close(g, p.grad.cpu().numpy())


def test_scatter_and_gather_of_several_devices():
    from tensorlab.nn.parallel.data_parallel import _gather, _scatter
    x = tl.arange(10.0).reshape(5, 2)
    parts = _scatter((x, {"k": x, "n": 3}), 3, 0)
    assert [tuple(p[0].shape) for p in parts] == [(2, 2), (2, 2), (1, 2)]
    assert all(p[1]["n"] == 3 for p in parts)
    back = _gather([p[0] for p in parts], "cpu", 0)
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    with pytest.warns(UserWarning, match="scalars"):
        v = _gather([tl.tensor(1.0), tl.tensor(2.0)], "cpu", 0)
    assert v.tolist() == [1.0, 2.0]


def test_fractional_max_pool_takes_extra_random_sample_rows_as_torch(torch):
    """torch uses the first N rows of _random_samples (an unbatched input is a batch of one) and
    refuses fewer rows or another channel count."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 5, 5))
    s = rng.random((2, 4, 3))
    want = torch.nn.functional.fractional_max_pool3d(torch.tensor(x), 2, output_ratio=0.5,
                                                     _random_samples=torch.tensor(s))
    got = F.fractional_max_pool3d(tl.tensor(x), 2, output_ratio=0.5, _random_samples=tl.tensor(s))
    _close(got, want)
    with pytest.raises(RuntimeError, match="no less then input batch size"):
        F.fractional_max_pool3d(tl.randn(2, 4, 5, 5, 5), 2, output_ratio=0.5, _random_samples=tl.rand(1, 4, 3))
    with pytest.raises(RuntimeError, match="equals to input channel size"):
        F.fractional_max_pool3d(tl.randn(4, 5, 5, 5), 2, output_ratio=0.5, _random_samples=tl.rand(1, 3, 3))
