"""tensorlab.fft against torch.fft and numpy.fft on every device: each transform with n/s, dim and
the three norm modes, out=, the helpers, torch's argument errors, gradients against torch's, and
stft/istft against torch's."""
import warnings

import numpy as np
import pytest

import tensorlab as tl

RNG = np.random.default_rng(11)
XR = RNG.standard_normal((3, 4, 6))
XC = XR + 1j * RNG.standard_normal((3, 4, 6))
DATA = (XR, XC, XR.astype(np.float32), XC.astype(np.complex64))
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]


def _same(torch, name, device, *args, **kw):
    for data in DATA:
        try:
            want = getattr(torch.fft, name)(torch.from_numpy(data), *args, **kw)
        except Exception as e:  # noqa: BLE001 - the same exception class is the expectation
            with pytest.raises(type(e)):
                getattr(tl.fft, name)(tl.tensor(data, device=device), *args, **kw)
            continue
        got = getattr(tl.fft, name)(tl.tensor(data, device=device), *args, **kw)
        assert got.dtype.name == str(want.dtype).split(".")[1], (name, kw, data.dtype)
        assert tuple(got.shape) == tuple(want.shape), (name, kw)
        tol = 1e-4 if data.dtype in (np.float32, np.complex64) else 1e-10
        assert np.allclose(got.cpu().numpy(), want.resolve_conj().numpy(), atol=tol), (name, kw, data.dtype)


@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional(device, torch, name):
    for kw in ({}, {"n": 3}, {"n": 9}, {"dim": 0}, {"dim": 1, "norm": "ortho"}, {"norm": "forward"},
               {"n": 5, "dim": 0, "norm": "forward"}, {"norm": "backward"}):
        _same(torch, name, device, **kw)


@pytest.mark.parametrize("name", N_D)
def test_n_dimensional(device, torch, name):
    for kw in ({}, {"s": (3, 5)}, {"dim": (2, 0)}, {"norm": "ortho"}, {"norm": "forward", "s": (6, 2)},
               {"dim": (1,)}, {"s": (2, -1), "dim": (0, 2)}):
        _same(torch, name, device, **kw)


def test_against_numpy_fft(device):
    x = tl.tensor(XC, device=device)
    assert np.allclose(tl.fft.fft(x).cpu().numpy(), np.fft.fft(XC))
    assert np.allclose(tl.fft.fftn(x, norm="ortho").cpu().numpy(), np.fft.fftn(XC, norm="ortho"))
    assert np.allclose(tl.fft.irfftn(x, s=(3, 4, 7)).cpu().numpy(), np.fft.irfftn(XC, s=(3, 4, 7), axes=(0, 1, 2)))
    assert np.allclose(tl.fft.hfft(x, n=8).cpu().numpy(), np.fft.hfft(XC, n=8))
    assert np.allclose(tl.fft.ihfft(tl.tensor(XR, device=device)).cpu().numpy(), np.fft.ihfft(XR))
    big = RNG.standard_normal((2, 2, 3, 2, 4)) + 1j * RNG.standard_normal((2, 2, 3, 2, 4))
    b = tl.tensor(big, device=device)  # more than cuFFT's three dims: transformed in groups
    assert np.allclose(tl.fft.fftn(b).cpu().numpy(), np.fft.fftn(big))
    assert np.allclose(tl.fft.ifftn(b, dim=(0, 2, 4, 1)).cpu().numpy(), np.fft.ifftn(big, axes=(0, 2, 4, 1)))
    assert np.allclose(tl.fft.rfftn(b.real).cpu().numpy(), np.fft.rfftn(big.real))
    assert np.allclose(tl.fft.irfftn(b, s=(2, 2, 3, 2, 6)).cpu().numpy(),
                       np.fft.irfftn(big, s=(2, 2, 3, 2, 6), axes=(0, 1, 2, 3, 4)))
    i = tl.tensor(np.arange(6), device=device)  # integers compute in the default float dtype
    assert tl.fft.fft(i).dtype is tl.complex64 and np.allclose(tl.fft.fft(i).cpu().numpy(), np.fft.fft(np.arange(6)))


def test_out_helpers_and_errors(device, torch):
    x = tl.tensor(XC, device=device)
    out = tl.empty(0, dtype=tl.complex128, device=device)
    r = tl.fft.fft(x, out=out)
    assert r is out and np.allclose(out.cpu().numpy(), np.fft.fft(XC))
    for n, d in ((5, 1.0), (6, 0.5), (1, 2.0)):
        assert np.allclose(tl.fft.fftfreq(n, d, device=device).cpu().numpy(), torch.fft.fftfreq(n, d).numpy())
        assert np.allclose(tl.fft.rfftfreq(n, d, device=device).cpu().numpy(), torch.fft.rfftfreq(n, d).numpy())
    assert tl.fft.fftfreq(4, dtype=tl.float64).dtype is tl.float64
    for dim in (None, 0, (0, 2), -1):
        assert np.array_equal(tl.fft.fftshift(x, dim).cpu().numpy(), torch.fft.fftshift(torch.from_numpy(XC), dim).numpy())
        assert np.array_equal(tl.fft.ifftshift(x, dim).cpu().numpy(),
                              torch.fft.ifftshift(torch.from_numpy(XC), dim).numpy())
    with pytest.raises(RuntimeError, match="Invalid normalization mode"):
        tl.fft.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        tl.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexDouble"):
        tl.fft.rfft(x)
    with pytest.raises(RuntimeError, match="dim and shape arguments must have the same length"):
        tl.fft.fftn(x, s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        tl.fft.fftn(x, dim=(0, 0))
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        tl.fft.fft(tl.zeros(4, dtype=tl.float16, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tl.fft.fft(x, dim=3)
    assert tl.fft.fft(tl.zeros(0, 4, device=device)).shape == (0, 4)


def _loss(lib, y, w):
    y = lib.view_as_real(y.resolve_conj()) if y.is_complex() else y
    ww = w[: y.numel()].reshape(tuple(y.shape))
    ww = lib.tensor(ww) if lib is tl else lib.from_numpy(ww)
    return (y * ww).sum() + (y ** 2).sum()


@pytest.mark.parametrize("name,kws", [("fft", [{}, {"n": 9}, {"norm": "ortho"}]), ("ifft", [{}, {"n": 3}]),
                                      ("rfft", [{}, {"n": 5}, {"norm": "forward"}]), ("irfft", [{}, {"n": 5}, {"n": 12}]),
                                      ("hfft", [{}, {"n": 7}]), ("ihfft", [{}, {"norm": "ortho"}]), ("fft2", [{}]),
                                      ("rfftn", [{}, {"s": (3, 7)}]), ("irfftn", [{}, {"s": (4, 9)}]), ("hfftn", [{}]),
                                      ("ihfftn", [{}]), ("ifftn", [{"norm": "forward"}])])
def test_gradients_match_torch(torch, name, kws):
    x2r, x2c = XR[0], XC[0]
    w = RNG.standard_normal(1000)
    for kw in kws:
        for data in (x2r, x2c):
            if name in ("rfft", "ihfft", "rfftn", "ihfftn") and np.iscomplexobj(data):
                continue
            a = torch.tensor(data, requires_grad=True)
            b = tl.tensor(data, requires_grad=True)
            _loss(torch, getattr(torch.fft, name)(a, **kw), w).backward()
            _loss(tl, getattr(tl.fft, name)(b, **kw), w).backward()
            assert np.allclose(a.grad.resolve_conj().numpy(), b.grad.numpy(), atol=1e-8), (name, kw)


def test_gradcheck_and_cuda_gradients(device):
    x = tl.tensor(XC[0, :2, :3], requires_grad=True, device=device)
    assert tl.autograd.gradcheck(lambda t: tl.fft.fft(t).abs(), (x,))
    r = tl.tensor(XR[0, :2, :4], requires_grad=True, device=device)
    assert tl.autograd.gradcheck(lambda t: tl.fft.irfft(tl.fft.rfft(t) * 2j, n=5), (r,))
    assert tl.autograd.gradcheck(lambda t: tl.fft.hfft2(t.cdouble() * (1 + 1j)), (r,))


def test_stft_istft_match_torch(device, torch):
    x = RNG.standard_normal((2, 50))
    warnings.simplefilter("ignore")
    for kw in (dict(n_fft=8, window=True), dict(n_fft=8, hop_length=3, win_length=6, window=True),
               dict(n_fft=16, center=False, window=True), dict(n_fft=8, normalized=True, window=True, pad_mode="constant"),
               dict(n_fft=8, onesided=False, window=True), dict(n_fft=7, hop_length=2, window=True), dict(n_fft=8)):
        for data in (x, x[0], x + 1j * x[::-1]):
            kw2 = dict(kw)
            use_w = kw2.pop("window", False)
            wl = kw2.get("win_length", kw2["n_fft"])
            wt = torch.hann_window(wl, dtype=torch.float64) if use_w else None
            wtl = tl.tensor(wt.numpy(), device=device) if use_w else None
            if np.iscomplexobj(data) and kw2.get("onesided") is not None:
                continue
            e = torch.stft(torch.tensor(data), window=wt, return_complex=True, **kw2)
            g = tl.stft(tl.tensor(data, device=device), window=wtl, return_complex=True, **kw2)
            assert tuple(e.shape) == tuple(g.shape) and np.allclose(e.numpy(), g.cpu().numpy(), atol=1e-8), kw
            if not use_w:
                continue
            ikw = {k: v for k, v in kw2.items() if k != "pad_mode"}
            for length in (None, 40, 60):
                try:
                    want = torch.istft(e, window=wt, length=length, return_complex=np.iscomplexobj(data), **ikw)
                except RuntimeError:  # torch's NOLA check (the window envelope vanishes at the padded end)
                    with pytest.raises(RuntimeError, match="window overlap add min"):
                        tl.istft(g, window=wtl, length=length, return_complex=np.iscomplexobj(data), **ikw)
                    continue
                got = tl.istft(g, window=wtl, length=length, return_complex=np.iscomplexobj(data), **ikw)
                assert tuple(got.shape) == tuple(want.shape)
                assert np.allclose(got.cpu().numpy(), want.numpy(), atol=1e-8), (kw, length)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        tl.stft(tl.tensor(x[0], device=device), 8)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        tl.istft(tl.tensor(x, device=device), 8)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = tl.stft(tl.tensor(x[0], device=device), 8, window=tl.ones(8, device=device, dtype=tl.float64),
                    return_complex=False)
    assert r.shape[-1] == 2 and r.dtype is tl.float64
    a = torch.tensor(x[0], requires_grad=True)
    b = tl.tensor(x[0], requires_grad=True, device=device)
    wt = torch.hann_window(8, dtype=torch.float64)
    torch.stft(a, 8, window=wt, return_complex=True).abs().sum().backward()
    tl.stft(b, 8, window=tl.tensor(wt.numpy(), device=device), return_complex=True).abs().sum().backward()
    assert np.allclose(a.grad.numpy(), b.grad.cpu().numpy())
