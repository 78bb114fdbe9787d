"""torch.distributions.utils: parameter broadcasting, logits/probs conversion, lazy properties."""
from __future__ import annotations

import math
import numbers
from functools import update_wrapper

import tensorlab as tl
import tensorlab.nn.functional as F

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def is_tensor_like(x):
    """Whether `x` is a tensorlab Tensor."""
    return isinstance(x, tl.Tensor)


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers become tensors of the first tensor's dtype and
    device (the default dtype when there is none).

    Raises ValueError when a value is neither a Tensor nor a number."""
    if not all(isinstance(v, (tl.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "tensorlab.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, tl.Tensor) for v in values):
        options = {"dtype": tl.get_default_dtype()}
        for value in values:
            if isinstance(value, tl.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, tl.Tensor) else tl.tensor(v, **options) for v in values]
    return tl.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """Standard normal samples of `shape`."""
    return tl.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid when `is_binary`, else softmax over the last dimension."""
    if is_binary:
        return tl.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into the open interval (eps, 1 - eps) of their dtype."""
    eps = tl.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log-odds when `is_binary`, else log (clamped away from zero)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return tl.log(ps_clamped) - tl.log1p(-ps_clamped)
    return tl.log(ps_clamped)


class lazy_property:
    """A property computed once per instance on first access and then stored as an attribute.

    Read on the class it behaves as torch's: a plain property (so constraints/dependent checks work)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tl.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """lazy_property read from the class: also a property, so isinstance(x, property) holds."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (offset `diag`) of the last two dims of `mat`, flattened row by row."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"tril_matrix_to_vec: diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = tl.tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., rows, cols]


def _tril_count(n, diag):
    return sum(max(0, min(n, i + diag + 1)) for i in range(n))


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of tril_matrix_to_vec: a square lower-triangular matrix (offset `diag`) holding `vec`."""
    length = vec.shape[-1]
    n = int(round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * length + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2))
    if n < 0 or _tril_count(n, diag) != length:
        raise ValueError(f"The size of last dimension is {length} which cannot be expressed as "
                         f"the lower triangular part of a square D x D matrix.")
    rows, cols = tl.tril_indices(n, n, offset=diag, device=vec.device)
    flat = vec.new_zeros(vec.shape[:-1] + (n * n,))
    idx = (rows * n + cols).expand(vec.shape)
    return flat.scatter(-1, idx, vec).reshape(vec.shape[:-1] + (n, n))


_LOG_2 = math.log(2.0)


class _FoldedAtZero:
    """Shared pieces of |X| for X symmetric about 0 (HalfNormal, HalfCauchy): the base density doubled on
    [0, inf), the base cdf/icdf rescaled from (1/2, 1) to (0, 1), and the base entropy less log 2."""

    def _folded_log_density(self, value):
        doubled = self.base_dist.log_prob(value) + _LOG_2
        return tl.where(value >= 0, doubled, tl.full_like(doubled, -math.inf))

    def cdf(self, value):
        """P(|X| <= value) = 2 F(value) - 1."""
        if self._validate_args:
            self._validate_sample(value)
        return self.base_dist.cdf(value) * 2 - 1

    def icdf(self, prob):
        """F^-1((1 + prob) / 2)."""
        return self.base_dist.icdf(0.5 * prob + 0.5)

    def entropy(self):
        """H(X) - log 2."""
        return self.base_dist.entropy() - _LOG_2

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return tl.zeros_like(self.scale)


def _expand_params(dist, cls, batch_shape, _instance, names):
    """expand() for a family whose state is its parameter tensors: the copy gets each of `names` that `dist`
    holds, expanded to `batch_shape` (lazy ones absent from the instance stay lazy), skips argument validation
    and keeps `dist`'s validation flag."""
    from .distribution import Distribution

    out = dist._get_checked_instance(cls, _instance)
    size = tl.Size(batch_shape)
    held = vars(dist)
    for name in names:
        if name in held:
            setattr(out, name, held[name].expand(size))
    if "_param" in held:
        # the tensor the user gave (logits win when both are materialized)
        mine = vars(out)
        out._param = mine["logits"] if "logits" in mine else mine["probs"]
    Distribution.__init__(out, size, dist.event_shape, validate_args=False)
    out._validate_args = dist._validate_args
    return out


def _scalar_or_shape(t, *given):
    """The batch shape of a family built from `given` raw arguments broadcast to `t`: () when all were Python
    numbers."""
    return tl.Size() if all(isinstance(g, numbers.Number) for g in given) else t.size()


def _one_of_probs_logits(probs, logits):
    """("probs" | "logits", the given value), insisting on exactly one."""
    if (logits is None) is (probs is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("logits", logits) if probs is None else ("probs", probs)


def _leading_support(count, ref, batch_shape, expand):
    """0, 1, ..., count-1 (in ref's dtype/device) along a new leading dim, broadcastable over batch_shape."""
    col = tl.arange(count, dtype=ref.dtype, device=ref.device).reshape((count,) + (1,) * len(batch_shape))
    return col.expand((count,) + tuple(batch_shape)) if expand else col
