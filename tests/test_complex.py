"""Complex dtypes end to end: promotion, creation, conversion, printing, interop, views, the
complex ops and elementwise kernels (every complex.cu functor on CUDA), reductions, matmul,
data movement, torch's refusals, and autograd against torch's gradients."""
import math

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.kernel_table import COMPLEX_ELEMENTWISE

RNG = np.random.default_rng(7)


def _c(shape, dt=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def _np(t):
    return t.cpu().numpy()


def test_dtypes_and_promotion(torch):
    assert tl.cfloat is tl.complex64 and tl.cdouble is tl.complex128
    assert tl.complex64.is_complex and not tl.complex64.is_floating_point and tl.complex64.itemsize == 8
    for a in (tl.float16, tl.float32, tl.float64, tl.int64, tl.bool, tl.complex64, tl.complex128):
        for b in (tl.complex64, tl.complex128):
            ta, tb = getattr(torch, a.name if a is not tl.bool else "bool"), getattr(torch, b.name)
            assert tl.promote_types(a, b).name == str(torch.promote_types(ta, tb)).split(".")[1] \
                or (a is tl.float16 and b is tl.complex64)  # torch: complex32 for half; tensorlab has none
    x = tl.tensor([1.0, 2.0])
    assert (x * 1j).dtype is tl.complex64 and (x.double() * 1j).dtype is tl.complex128
    assert (tl.tensor([1, 2]) * 1j).dtype is tl.complex64
    assert tl.result_type(tl.tensor([1 + 1j]), tl.tensor([1.0], dtype=tl.float64)) is tl.complex128
    assert not tl.can_cast(tl.complex64, tl.float64) and tl.can_cast(tl.float64, tl.complex64)
    assert tl.tensor([1j]).is_complex() and tl.is_complex(tl.tensor([1j])) and not tl.tensor([1.0]).is_complex()
    tl.set_default_dtype(tl.float64)
    try:
        assert tl.tensor([1j]).dtype is tl.complex128
    finally:
        tl.set_default_dtype(tl.float32)
    assert tl.zeros(2, dtype=complex).dtype is tl.complex128


def test_creation_and_random(device, torch):
    x = tl.tensor([[1 + 2j, 3 - 1j]], device=device)
    assert x.dtype is tl.complex64 and _np(x).tolist() == [[1 + 2j, 3 - 1j]]
    assert _np(tl.zeros(3, dtype=tl.cfloat, device=device)).tolist() == [0j] * 3
    assert _np(tl.ones(2, dtype=tl.cdouble, device=device)).tolist() == [1 + 0j] * 2
    f = tl.full((2,), 1 - 2j, device=device)
    assert f.dtype is tl.complex64 and _np(f).tolist() == [1 - 2j] * 2
    assert tl.empty(2, 2, dtype=tl.cfloat, device=device).shape == (2, 2)
    with pytest.raises(NotImplementedError, match="arange_cpu"):
        tl.arange(3, dtype=tl.cfloat, device=device)
    r = tl.randn(20000, dtype=tl.cfloat, device=device)
    assert r.dtype is tl.complex64
    assert abs(float(r.real.std()) - math.sqrt(0.5)) < 0.02 and abs(float(r.imag.std()) - math.sqrt(0.5)) < 0.02
    u = tl.rand(1000, dtype=tl.cdouble, device=device)
    assert 0 <= float(u.real.min()) and float(u.imag.max()) < 1


def test_conversions_warn_like_torch(device):
    x = tl.tensor([1.5 + 2j, -3 - 4j], device=device)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        r = x.float()
    assert _np(r).tolist() == [1.5, -3.0]
    assert _np(tl.tensor([1.0, 2.0], device=device).to(tl.complex128)).tolist() == [1 + 0j, 2 + 0j]
    assert _np(tl.tensor([1, 2], device=device).cfloat()).dtype == np.complex64
    assert _np(x.cdouble()).dtype == np.complex128
    with pytest.raises(TypeError, match="complex32"):
        x.chalf()
    assert x[0].item() == 1.5 + 2j and complex(x[1]) == -3 - 4j and x.tolist() == [1.5 + 2j, -3 - 4j]
    with pytest.raises(RuntimeError, match="cannot be converted to type double"):
        float(x[0])
    y = tl.zeros(2, dtype=tl.cdouble, device=device)
    y.copy_(x)
    assert _np(y).tolist() == [1.5 + 2j, -3 - 4j]


def test_printing_matches_torch(torch):
    for data in ([1 + 2j, 3 - 1j], [[0.5 - 1e-5j, 100j], [-2, 3.25 + 1j]], [1j * i for i in range(2000)], 2 + 3j,
                 [-0.0 - 1j, 1.5 + 0j]):
        assert repr(tl.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "tensorlab.")
    assert repr(tl.tensor([1 + 1j], dtype=tl.complex128)) == "tensor([1.+1.j], dtype=tensorlab.complex128)"


def test_numpy_dlpack_and_checkpoints(torch, tmp_path):
    a = _c((2, 3))
    t = tl.from_numpy(a)
    assert t.dtype is tl.complex64 and np.array_equal(np.asarray(t), a)
    assert np.array_equal(tl.from_dlpack(t).numpy(), a)
    assert np.array_equal(torch.from_dlpack(t).numpy(), a)
    assert np.array_equal(tl.from_dlpack(torch.from_numpy(a)).numpy(), a)
    f = tmp_path / "c.pt"
    tl.save({"c": t, "d": t.cdouble()}, f)
    back = torch.load(f)
    assert np.array_equal(back["c"].numpy(), a) and back["d"].dtype == torch.complex128
    torch.save({"z": torch.from_numpy(a)}, f)
    assert np.array_equal(tl.load(f)["z"].numpy(), a)


def test_views_real_imag_and_pairs(device):
    a = _c((3, 4))
    x = tl.tensor(a, device=device)
    assert x.real.dtype is tl.float32 and np.array_equal(_np(x.real), a.real) and np.array_equal(_np(x.imag), a.imag)
    assert x.real.data_ptr() == x.data_ptr() and x.real.stride() == (8, 2)
    x.real = tl.zeros(3, 4, device=device)
    x.imag[0] = 5.0
    assert np.array_equal(_np(x).real, np.zeros((3, 4))) and np.array_equal(_np(x)[0].imag, [5.0] * 4)
    v = tl.view_as_real(x)
    assert v.shape == (3, 4, 2) and v.stride() == (8, 2, 1)
    v[..., 0] = 1.0
    assert np.array_equal(_np(x).real, np.ones((3, 4)))
    c = tl.view_as_complex(v)
    assert c.dtype is tl.complex64 and np.array_equal(_np(c), _np(x))
    t = tl.tensor(a, device=device).t()
    assert np.array_equal(_np(t.real), a.T.real)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        tl.tensor([1.0]).imag
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        tl.view_as_real(tl.tensor([1.0]))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        tl.view_as_complex(tl.zeros(3, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        tl.view_as_complex(tl.zeros(2, 4).t())
    with pytest.raises(RuntimeError, match="only supported for float and double"):
        tl.view_as_complex(tl.zeros(2, 2, dtype=tl.int64))


def test_complex_polar_angle_conj_sgn(device, torch):
    re, im = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    z = tl.complex(tl.tensor(re, device=device), tl.tensor(im, device=device))
    assert z.dtype is tl.complex64 and np.allclose(_np(z), re + 1j * im)
    p = tl.polar(tl.tensor(np.abs(re), device=device), tl.tensor(im, device=device))
    assert np.allclose(_np(p), torch.polar(torch.tensor(np.abs(re)), torch.tensor(im)).numpy(), atol=1e-6)
    a = _c((4,))
    x = tl.tensor(a, device=device)
    assert np.allclose(_np(x.angle()), np.angle(a), atol=1e-6)
    assert np.array_equal(_np(x.conj()), a.conj()) and not x.conj().is_conj()
    assert np.array_equal(_np(tl.conj_physical(x)), a.conj()) and x.resolve_conj() is x
    s = tl.tensor([0j, 3 + 4j], device=device).sgn()
    assert np.allclose(_np(s), [0, 0.6 + 0.8j])
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        tl.complex(tl.zeros(2), tl.zeros(2, dtype=tl.float64))
    out = tl.empty(0, dtype=tl.complex64, device=device)
    tl.complex(tl.tensor(re, device=device), tl.tensor(im, device=device), out=out)
    assert np.allclose(_np(out), re + 1j * im)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_every_complex_kernel_against_numpy(device, dt, index):
    a, b = _c((3, 5), dt), _c((5,), dt)
    a[0, 0], b[0], b[1] = 0.0, 0.5 + 0.5j, 1.0  # 0 ** z with Re z > 0 is 0 (NumPy, torch)
    x, y = tl.tensor(a, device=device), tl.tensor(b, device=device)
    with np.errstate(all="ignore"):
        unary = {"neg": (-x, -a), "abs": (x.abs(), np.abs(a)), "exp": (x.exp(), np.exp(a)),
                 "exp2": (x.exp2(), np.exp2(a)), "expm1": (x.expm1(), np.expm1(a)), "log": (x.log(), np.log(a)),
                 "log2": (x.log2(), np.log2(a)), "log10": (x.log10(), np.log10(a)), "log1p": (x.log1p(), np.log1p(a)),
                 "sqrt": (x.sqrt(), np.sqrt(a)), "rsqrt": (x.rsqrt(), 1 / np.sqrt(a)), "square": (x.square(), a * a),
                 "reciprocal": (x.reciprocal(), 1 / a), "sin": (x.sin(), np.sin(a)), "cos": (x.cos(), np.cos(a)),
                 "tan": (x.tan(), np.tan(a)), "tanh": (x.tanh(), np.tanh(a)), "sigmoid": (x.sigmoid(), 1 / (1 + np.exp(-a))),
                 "isnan": (x.isnan(), np.isnan(a)), "isinf": (x.isinf(), np.isinf(a)),
                 "isfinite": (x.isfinite(), np.isfinite(a)), "logical_not": (x.logical_not(), a == 0)}
        binary = {"add": (x + y, a + b), "sub": (x - y, a - b), "mul": (x * y, a * b), "div_true": (x / y, a / b),
                  "pow": (x ** y, a ** b), "eq": (x == y, a == b), "ne": (x != y, a != b),
                  "logical_and": (x.logical_and(y), (a != 0) & (b != 0)),
                  "logical_or": (x.logical_or(y), (a != 0) | (b != 0)),
                  "logical_xor": (x.logical_xor(y), (a != 0) ^ (b != 0))}
    assert set(unary) == set(COMPLEX_ELEMENTWISE["unary"]) and set(binary) == set(COMPLEX_ELEMENTWISE["binary"])
    tol = 1e-5 if dt == np.complex64 else 1e-12
    for name, (got, want) in {**unary, **binary}.items():
        g = _np(got)
        assert g.shape == want.shape and g.dtype == want.dtype, name
        fin = np.isfinite(want)
        assert np.array_equal(np.isfinite(g), fin), name
        assert np.allclose(g[fin], want[fin], rtol=tol * 10, atol=tol), name
    # scalars, mixed real operands, alpha, in-place, out= of a wider dtype
    assert np.allclose(_np(x * (2 - 1j)), a * (2 - 1j)) and np.allclose(_np(3 - x), 3 - a)
    assert np.allclose(_np(x + tl.tensor(b.real, device=device)), a + b.real)
    assert np.allclose(_np(tl.add(x, y, alpha=2)), a + 2 * b) and np.allclose(_np(x ** 2), a ** 2, atol=tol)
    z = x.clone()
    z.mul_(y)
    assert np.allclose(_np(z), a * b)
    out = tl.empty(3, 5, dtype=tl.complex128, device=device)
    tl.mul(x, y, out=out)
    assert np.allclose(_np(out), a * b)
    w = tl.where(x.abs() > 1, x, y)
    assert np.array_equal(_np(w), np.where(np.abs(a) > 1, a, b))
    assert np.allclose(_np(x.masked_fill(x.abs() > 1, 2j)), np.where(np.abs(a) > 1, 2j, a))
    assert np.allclose(_np(tl.addcmul(x, x, y, value=2)), a + 2 * a * b, atol=tol * 10)
    assert np.allclose(_np(tl.addcdiv(x, x, y, value=2)), a + 2 * a / b, atol=tol * 10)
    assert np.allclose(_np(tl.lerp(x, tl.zeros_like(x), 0.25)), 0.75 * a, atol=tol)


def test_reductions_matmul_and_movement(device):
    a = _c((3, 4))
    x = tl.tensor(a, device=device)
    assert np.allclose(_np(x.sum()), a.sum()) and np.allclose(_np(x.mean(0)), a.mean(0))
    assert np.allclose(_np(x.prod(1)), a.prod(1)) and np.allclose(_np(x.prod()), a.prod(), rtol=1e-4)
    assert np.allclose(_np(x.prod(0, keepdim=True)), a.prod(0, keepdims=True))
    assert np.allclose(_np(x.cumsum(1)), a.cumsum(1)) and np.allclose(_np(x.cumprod(1)), a.cumprod(1), rtol=1e-4)
    assert np.allclose(_np(x @ x.t()), a @ a.T, atol=1e-5)
    b = _c((2, 4, 3, 5), np.complex128)
    y, z = tl.tensor(b, device=device), tl.tensor(b, device=device).transpose(-1, -2)
    assert np.allclose(_np(y @ z), b @ b.transpose(0, 1, 3, 2))
    assert np.allclose(_np(y.transpose(0, 1) @ z.transpose(0, 1)), (b @ b.transpose(0, 1, 3, 2)).transpose(1, 0, 2, 3))
    assert np.allclose(_np(tl.matmul(y[:, 0], z[:, 0])), b[:, 0] @ b[:, 0].transpose(0, 2, 1))
    assert np.array_equal(_np(tl.cat([x, x], 1)), np.concatenate([a, a], 1))
    assert np.array_equal(_np(tl.stack([x, x])), np.stack([a, a]))
    assert np.array_equal(_np(x[1:, ::2]), a[1:, ::2]) and np.array_equal(_np(x.t().contiguous()), a.T)
    idx = np.array([[0, 1], [2, 3], [1, 1]])
    ti = tl.tensor(idx, device=device)
    assert np.array_equal(_np(x.gather(1, ti)), np.take_along_axis(a, idx, 1))
    assert np.array_equal(_np(x[tl.tensor([2, 0], device=device)]), a[[2, 0]])
    assert np.array_equal(_np(x.index_select(1, tl.tensor([3, 0], device=device))), a[:, [3, 0]])
    assert np.array_equal(_np(x.flip(0)), a[::-1]) and np.array_equal(_np(x.roll(1, 1)), np.roll(a, 1, 1))
    assert np.array_equal(_np(x.roll(3)), np.roll(a, 3)) and np.array_equal(_np(x.t().roll(5)), np.roll(a.T, 5))
    m = np.array([[0, 1j, 2, 0], [3 + 1j, 0, 0, 1j]], dtype=np.complex64)
    mt = tl.tensor(m, device=device)
    assert mt.count_nonzero().item() == 4 and _np(mt.count_nonzero(1)).tolist() == [2, 2]
    assert not mt.all().item() and _np(mt.any(1)).tolist() == [True, True]
    assert _np(mt.nonzero()).tolist() == np.argwhere(m).tolist()
    s0 = tl.tensor(1 + 2j, device=device)
    assert s0.cumsum(0).item() == 1 + 2j and s0.cumprod(0).item() == 1 + 2j
    c = x.clone()
    c.cumprod_(1)
    assert np.allclose(_np(c), a.cumprod(1), rtol=1e-4)
    assert np.array_equal(_np(x.triu()), np.triu(a)) and np.array_equal(_np(x[x.abs() > 1]), a[np.abs(a) > 1])
    s = tl.zeros(3, 4, dtype=tl.cfloat, device=device).scatter(1, ti, x[:, :2])
    want = np.zeros((3, 4), np.complex64)
    for i in range(3):
        for j in range(2):
            want[i, idx[i, j]] = a[i, j]
    assert np.array_equal(_np(s), want)
    q = x.clone()
    q[tl.tensor([0, 2], device=device)] = 7j
    q.index_put_((tl.tensor([1], device=device),), tl.tensor([1 + 1j], device=device), accumulate=True)
    want = a.copy()
    want[[0, 2]] = 7j
    want[1] += 1 + 1j
    assert np.allclose(_np(q), want)


def test_torch_refusals(device):
    x = tl.tensor([1j, 2], device=device)
    for fn, cls, msg in ((lambda: x < 1, NotImplementedError, "lt_cpu"), (lambda: x.max(), NotImplementedError, "max_all"),
                         (lambda: x.amin(), NotImplementedError, "min_values"), (lambda: x.argmax(), RuntimeError, "argmax"),
                         (lambda: x.sort(), RuntimeError, "Sort does not support complex"),
                         (lambda: x.topk(1), RuntimeError, "topk"), (lambda: x.clamp(0, 1), NotImplementedError, "clamp"),
                         (lambda: x.floor(), NotImplementedError, "floor is not supported for complex inputs"),
                         (lambda: x.sign(), NotImplementedError, "torch.sgn"),
                         (lambda: tl.maximum(x, x), RuntimeError, "maximum not implemented for complex"),
                         (lambda: x.cummax(0), NotImplementedError, "cummax"), (lambda: x % 2, NotImplementedError, "remainder")):
        with pytest.raises(cls, match=msg):
            fn()


def _pair(torch, data):
    return torch.tensor(data, requires_grad=True), tl.tensor(data, requires_grad=True)


@pytest.mark.parametrize("name", ["abs", "real_imag", "angle", "mul", "mul_real", "holomorphic", "view_as_real",
                                  "complex", "polar", "sgn", "conj", "matmul", "div_pow", "sum_mean_prod"])
def test_gradients_match_torch(torch, name):
    z = [[1 + 2j, 3 - 1j], [0.5j, -2 + 0.3j]]
    r = [[1.0, 2.0], [3.0, -4.0]]
    progs = {
        "abs": ((z,), lambda L, a: a.abs().sum()),
        "real_imag": ((z,), lambda L, a: a.real.sum() + (a.imag ** 2).sum()),
        "angle": ((z,), lambda L, a: a.angle().sum()),
        "mul": ((z, z), lambda L, a, b: (a * b).abs().sum()),
        "mul_real": ((z, r), lambda L, a, b: (a * b).abs().sum()),
        "holomorphic": ((z,), lambda L, a: (a.exp() / a).sin().tanh().log().abs().sum()),
        "view_as_real": ((z,), lambda L, a: (L.view_as_real(a) ** 3).sum()),
        "complex": ((r, r), lambda L, a, b: L.complex(a, b).sqrt().abs().sum()),
        "polar": ((r, r), lambda L, a, b: (L.polar(a, b) ** 2).real.sum()),
        "sgn": ((z,), lambda L, a: (a.sgn() * a.sgn()).real.sum()),
        "conj": ((z,), lambda L, a: (a.conj() * a * a).imag.sum()),
        "matmul": ((z, z), lambda L, a, b: (a @ b).abs().sum()),
        "div_pow": ((z, z), lambda L, a, b: ((a / b) ** 2).abs().sum()),
        "sum_mean_prod": ((z,), lambda L, a: a.sum(0).abs().sum() + a.mean().real + a.prod(1).imag.sum()),
    }
    data, f = progs[name]
    pairs = [_pair(torch, d) for d in data]
    f(torch, *(p[0] for p in pairs)).backward()
    f(tl, *(p[1] for p in pairs)).backward()
    for t, g in pairs:
        assert g.grad.dtype.name == str(t.grad.dtype).split(".")[1]
        assert np.allclose(g.grad.numpy(), t.grad.resolve_conj().numpy(), atol=1e-6), name


def test_gradcheck_complex():
    z = tl.tensor(_c((2, 3), np.complex128), requires_grad=True)
    assert tl.autograd.gradcheck(lambda a: (a * a.conj().exp()).sgn() * a.abs(), (z,))
    r = tl.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    assert tl.autograd.gradcheck(lambda a, b: tl.view_as_real(tl.polar(a.abs() + 0.1, b)), (r, r.detach().clone()
                                                                                           .requires_grad_()))


def test_gradients_on_cuda(cuda):
    a = _c((3, 3), np.complex128)
    x = tl.tensor(a, device=cuda, requires_grad=True)
    (x * x.exp()).abs().sum().backward()
    xc = tl.tensor(a, requires_grad=True)
    (xc * xc.exp()).abs().sum().backward()
    assert np.allclose(x.grad.cpu().numpy(), xc.grad.numpy())


def test_complex_gradients_without_touching_complex_ops_first():
    """The complex derivative rules are installed at import, not on the first complex_ops call."""
    import subprocess
    import sys
    code = ("import tensorlab as tl\nx = tl.tensor([1+1j, 2-1j], requires_grad=True)\n(x * x).abs().sum().backward()\n"
            "print(x.grad.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([(2 + 2j), (4 - 2j)])


@pytest.mark.torch_oracle
def test_conjugate_transposes_conjugate(device, torch):
    """mH, H and adjoint() conjugate complex matrices (values and gradients as torch's); real ones are views."""
    v = np.array([[1 + 2j, 3j], [1, 2 - 1j]], dtype=np.complex64)
    for name in ("mH", "H", "adjoint"):
        x = tl.tensor(v, device=device, requires_grad=True)
        tx = torch.tensor(v, requires_grad=True)
        y = getattr(x, name)
        ty = getattr(tx, name)
        y, ty = (y(), ty()) if callable(y) else (y, ty)
        np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().resolve_conj().numpy())
        y.abs().sum().backward()
        ty.abs().sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)
    r = tl.ones(2, 3, device=device)
    assert r.mH._base is r and r.adjoint().shape == (3, 2)
