"""torch's non-uniform samplers: _standard_gamma (with its reparameterization gradient), _sample_dirichlet,
poisson, binomial, and _standard_gamma_grad.

Every sampler is a rejection method written over tensorlab's uniform/normal draws, vectorized: each
element gets a fixed number of candidates, drawn in a few rounds of `_PER_ROUND` (so scratch memory is a
small multiple of the output), and keeps the first accepted one; the sample is produced on the tensor's
device with no host wait (no data-dependent loop). The candidate counts make a fallback (all candidates
rejected) less likely than 1e-12 per element; the fallback is the candidate distribution's centre rounded,
never garbage. Draws come from the `generator` (default: tensorlab's).
"""
from __future__ import annotations

from ..tensor import Tensor

FUNCTIONS = ("_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet", "poisson", "binomial")

_PER_ROUND = 4      # candidates (or waiting-time steps) drawn at once per element
_GAMMA_ROUNDS = 4   # 16 candidates: Marsaglia-Tsang accepts with probability >= 0.95
_PTRS_ROUNDS = 4    # 16 candidates: Hormann's PTRS/BTRS accept with probability >= 0.85 in their ranges
_INVERSION_ROUNDS = 12  # 48 waiting-time steps for means < 10: P(more than 48 events) < 1e-15


def _tl():
    import tensorlab as tl
    return tl


def _check_float(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not t.dtype.is_floating_point:
        # torch's class for a dtype its kernel has no instantiation for
        raise NotImplementedError(f"{op}: not implemented for {t.dtype} '{name}': it needs a floating point "
                                  f"tensor (convert it with .float() or .double())")


def _work_dtype(dtype):
    tl = _tl()
    return tl.float64 if dtype == tl.float64 else tl.float32


def _first_accepted(candidates, accepted):
    """(the first candidate along dim 0 whose `accepted` flag is set, whether there is one)."""
    tl = _tl()
    idx = accepted.to(tl.uint8).argmax(0, keepdim=True)
    return candidates.gather(0, idx).squeeze(0), accepted.any(0)


def _rejection(rounds, draw, fallback):
    """Run `draw()` -> (candidates, accepted), each of shape (_PER_ROUND,) + shape, `rounds` times; every
    element keeps its first accepted candidate over all rounds, `fallback` where none was accepted."""
    tl = _tl()
    result, done = fallback, None
    for _ in range(rounds):
        pick, found = _first_accepted(*draw())
        take = found if done is None else found & ~done
        result = tl.where(take, pick, result)
        done = found if done is None else done | found
    return result


def _gamma_sample(alpha, generator):
    """Standard Gamma(alpha) samples (alpha > 0) by Marsaglia and Tsang, boosted for alpha < 1."""
    tl = _tl()
    shape = tuple(alpha.shape)
    dt = alpha.dtype
    small = alpha < 1
    a = tl.where(small, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    k = (_PER_ROUND,) + shape

    def draw():
        x = tl.randn(k, dtype=dt, device=alpha.device, generator=generator)
        u = tl.rand(k, dtype=dt, device=alpha.device, generator=generator)
        v = (1 + c * x) ** 3
        vpos = v > 0
        logv = tl.where(vpos, v, tl.ones_like(v)).log()
        return d * v, vpos & (u.log() < 0.5 * x * x + d - d * v + d * logv)

    g = _rejection(_GAMMA_ROUNDS, draw, d)
    boost = tl.rand(shape, dtype=dt, device=alpha.device, generator=generator)
    g = tl.where(small, g * boost.pow(1.0 / alpha), g)
    g = tl.where(alpha > 0, g, tl.full_like(g, float("nan")))
    return g.clamp(min=tl.finfo(dt).tiny)


def _standard_gamma_grad(self, output):
    """d sample / d alpha of a standard Gamma(alpha) sample `output` (implicit reparameterization):
    -(dF/dalpha) / f(x), F the regularized lower incomplete gamma function, computed in float64 (the
    alpha-derivative of F by a central difference)."""
    tl = _tl()
    _check_float("_standard_gamma_grad", "self", self)
    _check_float("_standard_gamma_grad", "output", output)
    a = self.detach().to(tl.float64)
    x = output.detach().to(tl.float64)
    a, x = tl.broadcast_tensors(a, x)
    h = 1e-5 * a.clamp(min=1.0)
    lo = (a - h).clamp(min=1e-300)
    dF = (tl.igamma(a + h, x) - tl.igamma(lo, x)) / (a + h - lo)
    log_pdf = (a - 1) * x.log() - x - tl.lgamma(a)
    grad = -dF / log_pdf.exp()
    grad = tl.where(grad.isfinite(), grad, tl.zeros_like(grad))
    return grad.to(tl.promote_types(self.dtype, output.dtype))


class _StandardGamma:
    _fn = None

    @classmethod
    def fn(cls):
        if cls._fn is None:
            from ..autograd.function import Function

            class StandardGamma(Function):
                @staticmethod
                def forward(ctx, alpha, generator):
                    wd = _work_dtype(alpha.dtype)
                    out = _gamma_sample(alpha.to(wd), generator).to(alpha.dtype)
                    ctx.save_for_backward(alpha, out)
                    return out

                @staticmethod
                def backward(ctx, grad):
                    alpha, out = ctx.saved_tensors
                    return grad * _standard_gamma_grad(alpha, out).to(grad.dtype), None

            cls._fn = StandardGamma
        return cls._fn


def _standard_gamma(input, generator=None):
    """Samples from Gamma(input, 1), one per element of `input` (differentiable in `input` through the
    implicit reparameterization gradient, as torch's)."""
    _check_float("_standard_gamma", "input", input)
    return _StandardGamma.fn().apply(input, generator)


def _sample_dirichlet(input, generator=None):
    """Samples from Dirichlet(input) over the last dimension: normalized Gamma(input) draws."""
    tl = _tl()
    _check_float("_sample_dirichlet", "input", input)
    if input.dim() < 1:
        raise RuntimeError("_sample_dirichlet: input must have at least one dimension (the simplex)")
    with tl.no_grad():
        g = _gamma_sample(input.to(_work_dtype(input.dtype)), generator)
        s = g / g.sum(-1, keepdim=True)
        return s.clamp(min=tl.finfo(s.dtype).tiny).to(input.dtype)


def _count_arrivals(rounds, gaps, limit):
    """How many partial sums of the gap sequence (drawn `_PER_ROUND` at a time by `gaps()`) stay <= limit."""
    count, total = None, None
    for _ in range(rounds):
        g = gaps()
        partial = g.cumsum(0) if total is None else g.cumsum(0) + total
        n = (partial <= limit).to(limit.dtype).sum(0)
        count = n if count is None else count + n
        total = partial[-1]
    return count


def _poisson_sample(lam, generator):
    tl = _tl()
    shape = tuple(lam.shape)
    dt, dev = lam.dtype, lam.device
    k_shape = (_PER_ROUND,) + shape
    # small means: count unit-rate arrivals before time lam (exponential waiting times)
    small = _count_arrivals(_INVERSION_ROUNDS,
                            lambda: tl.empty(k_shape, dtype=dt, device=dev).exponential_(generator=generator), lam)
    # large means: Hormann's transformed rejection with squeeze (PTRS)
    big_lam = lam.clamp(min=10.0)
    slam = big_lam.sqrt()
    loglam = big_lam.log()
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_invalpha = (1.1239 + 1.1328 / (b - 3.4)).log()
    vr = 0.9277 - 3.6224 / (b - 2)
    floor_v = 1e-300 if dt == tl.float64 else 1e-38

    def draw():
        u = tl.rand(k_shape, dtype=dt, device=dev, generator=generator) - 0.5
        v = tl.rand(k_shape, dtype=dt, device=dev, generator=generator)
        us = (0.5 - u.abs()).clamp(min=1e-12)
        k = ((2 * a / us + b) * u + big_lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0) | ((us < 0.013) & (v > us))
        kk = k.clamp(min=0)
        lhs = v.clamp(min=floor_v).log() + log_invalpha - (a / (us * us) + b).log()
        rhs = -big_lam + kk * loglam - tl.lgamma(kk + 1)
        return k, quick | (~bad & (lhs <= rhs))

    large = _rejection(_PTRS_ROUNDS, draw, big_lam.floor())
    out = tl.where(lam >= 10, large, small)
    return tl.where(lam >= 0, out, tl.full_like(out, float("nan")))


def poisson(input, generator=None):
    """Samples from Poisson(input), one per element (input holds the rates, >= 0)."""
    tl = _tl()
    _check_float("poisson", "input", input)
    with tl.no_grad():
        return _poisson_sample(input.detach().to(_work_dtype(input.dtype)), generator).to(input.dtype)


def _binomial_sample(n, p, generator):
    tl = _tl()
    shape = tuple(n.shape)
    dt, dev = n.dtype, n.device
    k_shape = (_PER_ROUND,) + shape
    flip = p > 0.5
    q = tl.where(flip, 1 - p, p)
    # small n*q: successes are the geometric waiting times (trials to a success) that fit into n trials
    tiny = tl.finfo(dt).tiny
    log1mq = tl.where(q > 0, (-q).log1p(), tl.full_like(q, -1.0))

    def gaps():
        u = tl.empty(k_shape, dtype=dt, device=dev).uniform_(tiny, 1, generator=generator)
        return (u.log() / log1mq).floor() + 1

    small = _count_arrivals(_INVERSION_ROUNDS, gaps, n)
    small = tl.where(q > 0, small, tl.zeros_like(small))
    # large n*q: Hormann's BTRS
    qq = q.clamp(min=1e-12, max=0.5)
    nn = tl.where(n * qq >= 10, n, tl.full_like(n, 1e4))
    spq = (nn * qq * (1 - qq)).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * qq
    c = nn * qq + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = (qq / (1 - qq)).log()
    m = ((nn + 1) * qq).floor()
    h = tl.lgamma(m + 1) + tl.lgamma(nn - m + 1)
    floor_v = 1e-300 if dt == tl.float64 else 1e-38

    def draw():
        uu = tl.rand(k_shape, dtype=dt, device=dev, generator=generator) - 0.5
        v = tl.rand(k_shape, dtype=dt, device=dev, generator=generator)
        us = (0.5 - uu.abs()).clamp(min=1e-12)
        k = ((2 * a / us + b) * uu + c).floor()
        in_range = (k >= 0) & (k <= nn)
        quick = in_range & (us >= 0.07) & (v <= vr)
        kk = k.clamp(min=0).minimum(nn)
        lv = (v * alpha / (a / (us * us) + b)).clamp(min=floor_v).log()
        return k, quick | (in_range & (lv <= h - tl.lgamma(kk + 1) - tl.lgamma(nn - kk + 1) + (kk - m) * lpq))

    large = _rejection(_PTRS_ROUNDS, draw, (nn * qq).floor())
    out = tl.where(n * q >= 10, large, small)
    out = tl.where(flip, n - out, out)
    ok = (n >= 0) & (p >= 0) & (p <= 1)
    return tl.where(ok, out, tl.full_like(out, float("nan")))


def binomial(count, prob, generator=None):
    """Samples from Binomial(count, prob), one per element of the broadcast inputs."""
    tl = _tl()
    for name, t in (("count", count), ("prob", prob)):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: {t.dtype}")
    if count.device != prob.device:
        raise RuntimeError(f"binomial: count and prob must be on the same device, got {count.device} and "
                           f"{prob.device}")
    if count.dtype != prob.dtype:
        raise RuntimeError(f"binomial: count and prob must have the same dtype, got {count.dtype} and "
                           f"{prob.dtype}")
    with tl.no_grad():
        n, p = tl.broadcast_tensors(count.detach(), prob.detach())
        wd = _work_dtype(count.dtype)
        return _binomial_sample(n.to(wd), p.to(wd), generator).to(count.dtype)
