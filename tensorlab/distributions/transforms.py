"""torch.distributions.transforms: invertible maps with log-abs-det-Jacobians."""
from __future__ import annotations

import functools
import math
import operator
import weakref

import tensorlab as tl
import tensorlab.nn.functional as F

from . import constraints
from .utils import _sum_rightmost, broadcast_all, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "Transform",
    "identity_transform",
]

# a constraint-valued property of a continuous transform (domain / codomain depending on the instance)
_continuous = constraints.dependent_property(is_discrete=False)


def _numel(shape):
    return functools.reduce(operator.mul, tuple(shape), 1)


def _rank_lifted(c, rank):
    """`c` reinterpreted so that it covers `rank` rightmost dims (unchanged when it already does)."""
    extra = rank - c.event_dim
    return constraints.independent(c, extra) if extra > 0 else c


def _real_of_rank(rank):
    return constraints.independent(constraints.real, rank) if rank else constraints.real


def _need_dims(shape, n):
    if len(shape) < n:
        raise ValueError("Too few dimensions on input")


def _shape_of(v):
    return tuple(v.shape) if isinstance(v, tl.Tensor) else ()


class Transform:
    """An invertible (or at least computable) map y = f(x) with log|det J|.

    `cache_size=1` remembers the last (x, y) pair so that inverting a sample returns the exact input.
    Subclasses implement `_call`, `_inverse`, `log_abs_det_jacobian` and set `domain`/`codomain`."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._memo = (None, None)  # last (input, output) pair when caching
        self._inv = None
        super().__init__()

    def __getstate__(self):
        # the weak link to the inverse cannot be pickled; it is rebuilt on demand
        return {**self.__dict__, "_inv": None}

    @property
    def event_dim(self):
        """Deprecated: the domain's and codomain's event_dim when they agree."""
        d_in, d_out = self.domain.event_dim, self.codomain.event_dim
        if d_in != d_out:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return d_in

    def _make_inverse(self):
        return _InverseTransform(self)

    @property
    def inv(self):
        """The inverse transform (cached weakly so that t.inv.inv is t)."""
        alive = self._inv() if self._inv is not None else None
        if alive is None:
            alive = self._make_inverse()
            self._inv = weakref.ref(alive)
        return alive

    @property
    def sign(self):
        """+1 or -1 for monotone transforms: whether the map increases."""
        raise NotImplementedError(f"{type(self).__name__} has no sign")

    def _recreate(self, cache_size):
        """A copy of this transform with another cache size (subclasses with arguments override)."""
        if type(self).__init__ is not Transform.__init__:
            raise NotImplementedError(f"{type(self)}.with_cache is not implemented")
        return type(self)(cache_size=cache_size)

    def with_cache(self, cache_size=1):
        """This transform with the given cache size."""
        return self if cache_size == self._cache_size else self._recreate(cache_size)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def _through_memo(self, arg, fn, slot):
        """fn(arg), reusing / refreshing the one-pair cache; `slot` says which side of the pair arg is."""
        if not self._cache_size:
            return fn(arg)
        if self._memo[slot] is arg:
            return self._memo[1 - slot]
        res = fn(arg)
        self._memo = (arg, res) if slot == 0 else (res, arg)
        return res

    def __call__(self, x):
        """y = f(x), using the cache when it holds x."""
        return self._through_memo(x, self._call, 0)

    def _inv_call(self, y):
        return self._through_memo(y, self._inverse, 1)

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not implement the forward map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} does not implement the inverse map")

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| for the pair (x, y)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_abs_det_jacobian")

    def __repr__(self):
        return f"{type(self).__name__}()"

    def forward_shape(self, shape):
        """The output shape for an input of `shape`."""
        return shape

    def inverse_shape(self, shape):
        """The input shape for an output of `shape`."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a Transform, sharing its cache."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # a strong reference: the forward transform is what we wrap

    @property
    def inv(self):
        return self._inv

    @_continuous
    def domain(self):
        """The constraint on the transform's inputs."""
        return self.inv.codomain

    @_continuous
    def codomain(self):
        """The constraint on the transform's outputs."""
        return self.inv.domain

    @property
    def bijective(self):
        return self.inv.bijective

    @property
    def sign(self):
        return self.inv.sign

    def with_cache(self, cache_size=1):
        """The inverse of the cached transform."""
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self.inv == other.inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self.inv!r})"

    def __call__(self, x):
        return self.inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        """-log|det J| of the forward transform at (y, x)."""
        return self.inv.log_abs_det_jacobian(y, x).neg()

    def forward_shape(self, shape):
        return self.inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self.inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Apply `parts` in order."""

    def __init__(self, parts, cache_size=0):
        chain = [p.with_cache(cache_size) for p in parts] if cache_size else list(parts)
        super().__init__(cache_size)
        self.parts = chain

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _input_rank(self):
        """Event rank the first part must see for the last part's codomain to be covered."""
        rank = self.parts[-1].codomain.event_dim
        for p in self.parts[::-1]:
            rank = max(p.domain.event_dim, rank + p.domain.event_dim - p.codomain.event_dim)
        return rank

    def _output_rank(self):
        rank = self.parts[0].domain.event_dim
        for p in self.parts:
            rank = max(p.codomain.event_dim, rank + p.codomain.event_dim - p.domain.event_dim)
        return rank

    @_continuous
    def domain(self):
        """The constraint on the transform's inputs."""
        if len(self.parts) == 0:
            return constraints.real
        return _rank_lifted(self.parts[0].domain, self._input_rank())

    @_continuous
    def codomain(self):
        """The constraint on the transform's outputs."""
        if len(self.parts) == 0:
            return constraints.real
        return _rank_lifted(self.parts[-1].codomain, self._output_rank())

    @functools.cached_property
    def bijective(self):
        return all(part.bijective for part in self.parts)

    @functools.cached_property
    def sign(self):
        return functools.reduce(operator.mul, (p.sign for p in self.parts), 1)

    def _make_inverse(self):
        back = ComposeTransform([p.inv for p in self.parts[::-1]])
        back._inv = weakref.ref(self)
        return back

    def _recreate(self, cache_size):
        return type(self)(self.parts, cache_size)

    def __call__(self, x):
        return functools.reduce(lambda v, p: p(v), self.parts, x)

    def log_abs_det_jacobian(self, x, y):
        """Sum of the parts' log-det-Jacobians, each summed over the event dims it does not cover."""
        if len(self.parts) == 0:
            return tl.zeros_like(x)
        # the chain of intermediate values x -> ... -> y
        points = [x]
        for p in self.parts[:-1]:
            points.append(p(points[-1]))
        points.append(y)
        rank = self.domain.event_dim
        total = None
        for k, p in enumerate(self.parts):
            term = _sum_rightmost(p.log_abs_det_jacobian(points[k], points[k + 1]), rank - p.domain.event_dim)
            total = term if total is None else total + term
            rank += p.codomain.event_dim - p.domain.event_dim
        return total

    def forward_shape(self, shape):
        return functools.reduce(lambda s, p: p.forward_shape(s), self.parts, shape)

    def inverse_shape(self, shape):
        return functools.reduce(lambda s, p: p.inverse_shape(s), self.parts[::-1], shape)

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """`base_transform` with `reinterpreted_batch_ndims` extra dims treated as event dims (its
    log-det-Jacobian summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform.with_cache(cache_size), \
            reinterpreted_batch_ndims

    def _recreate(self, cache_size):
        return type(self)(self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    def _lift(self, c):
        return constraints.independent(c, self.reinterpreted_batch_ndims)

    @_continuous
    def domain(self):
        """The constraint on the transform's inputs."""
        return self._lift(self.base_transform.domain)

    @_continuous
    def codomain(self):
        """The constraint on the transform's outputs."""
        return self._lift(self.base_transform.codomain)

    # monotonicity, bijectivity and shapes are those of the wrapped transform
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def _call(self, x):
        _need_dims(x.shape, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y):
        _need_dims(y.shape, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        """The base log-det-Jacobian summed over the reinterpreted dims."""
        inner = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(inner, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshape the rightmost `in_shape` dims to `out_shape` (same number of elements)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tl.Size(in_shape), tl.Size(out_shape)
        if _numel(self.in_shape) != _numel(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    def _recreate(self, cache_size):
        return type(self)(self.in_shape, self.out_shape, cache_size)

    @constraints.dependent_property
    def domain(self):
        """The constraint on the transform's inputs."""
        rank = len(self.in_shape)
        return constraints.independent(constraints.real, rank)

    @constraints.dependent_property
    def codomain(self):
        """The constraint on the transform's outputs."""
        rank = len(self.out_shape)
        return constraints.independent(constraints.real, rank)

    @staticmethod
    def _retail(t, old, new):
        lead = tuple(t.shape)[:t.dim() - len(old)]
        return t.reshape(lead + tuple(new))

    def _call(self, x):
        return self._retail(x, self.in_shape, self.out_shape)

    def _inverse(self, y):
        return self._retail(y, self.out_shape, self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        """Zeros over the batch shape (a reshape preserves volume)."""
        return x.new_zeros(tuple(x.shape)[:x.dim() - len(self.in_shape)])

    @staticmethod
    def _swap_tail(shape, old, new):
        _need_dims(shape, len(old))
        k = len(shape) - len(old)
        if tuple(shape[k:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {shape[k:]} but got {old}")
        return tl.Size(tuple(shape[:k]) + tuple(new))

    def forward_shape(self, shape):
        return self._swap_tail(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap_tail(shape, self.out_shape, self.in_shape)


class _ComparedByType:
    """Mixin for parameterless transforms: any two instances of the class are equal."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__


def _as_tensors(*values):
    return values if all(isinstance(v, tl.Tensor) for v in values) else broadcast_all(*values)


def _open_unit(t):
    """Clamp into the open interval (0, 1) as far as the dtype resolves it."""
    info = tl.finfo(t.dtype)
    return t.clamp(min=info.tiny, max=1.0 - info.eps)


class ExpTransform(_ComparedByType, Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        """log|exp'(x)| = x."""
        return x


class PowerTransform(Transform):
    """y = x ** exponent (x positive)."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        self.exponent = _as_tensors(exponent)[0]

    def _recreate(self, cache_size):
        return type(self)(self.exponent, cache_size)

    @functools.cached_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** self.exponent.reciprocal()

    def log_abs_det_jacobian(self, x, y):
        """log|exponent * y / x|."""
        return (y / x * self.exponent).abs().log()

    def forward_shape(self, shape):
        return tl.broadcast_shapes(shape, _shape_of(self.exponent))

    inverse_shape = forward_shape


class SigmoidTransform(_ComparedByType, Transform):
    """y = sigmoid(x)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _open_unit(x.sigmoid())

    def _inverse(self, y):
        p = _open_unit(y)
        return p.log() - (-p).log1p()

    def log_abs_det_jacobian(self, x, y):
        """log sigmoid'(x) = -softplus(-x) - softplus(x)."""
        return -(F.softplus(x) + F.softplus(-x))


class SoftplusTransform(_ComparedByType, Transform):
    """y = log(1 + exp(x))."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        # log(exp(y) - 1) = y + log(1 - exp(-y))
        return y + (-(-y).expm1()).log()

    def log_abs_det_jacobian(self, x, y):
        """log softplus'(x) = -softplus(-x)."""
        return F.softplus(-x).neg()


class TanhTransform(_ComparedByType, Transform):
    """y = tanh(x)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return tl.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        """log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|."""
        return (math.log(2.0) - x - F.softplus(x * -2.0)) * 2.0


class AbsTransform(_ComparedByType, Transform):
    """y = |x| (not bijective; the inverse picks the positive root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _equal_params(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    ta = a if isinstance(a, tl.Tensor) else tl.tensor(a)
    tb = b if isinstance(b, tl.Tensor) else tl.tensor(b)
    return bool((ta == tb).all())


class AffineTransform(Transform):
    """y = loc + scale * x, over `event_dim` rightmost dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self._event_dim = event_dim
        self.loc, self.scale = loc, scale

    @property
    def event_dim(self):
        return self._event_dim

    @_continuous
    def domain(self):
        """The constraint on the transform's inputs."""
        return _real_of_rank(self._event_dim)

    @_continuous
    def codomain(self):
        """The constraint on the transform's outputs."""
        return _real_of_rank(self._event_dim)

    def _recreate(self, cache_size):
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        return _equal_params(self.loc, other.loc) and _equal_params(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self):
        s = self.scale
        if isinstance(s, tl.Tensor):
            return s.sign()
        return (s > 0) - (s < 0)

    def _call(self, x):
        return x * self.scale + self.loc

    def _inverse(self, y):
        return (y - self.loc).div(self.scale)

    def log_abs_det_jacobian(self, x, y):
        """log|scale|, broadcast to x's shape and summed over the event dims."""
        s = self.scale
        logs = s.abs().log() if isinstance(s, tl.Tensor) else tl.full_like(x, math.log(abs(s)))
        target = tuple(x.shape)
        k = self._event_dim
        if k:
            logs = logs.reshape(tuple(logs.shape)[:logs.dim() - k] + (-1,)).sum(-1)
            target = target[:len(target) - k]
        return logs.expand(target)

    def forward_shape(self, shape):
        return tl.broadcast_shapes(shape, _shape_of(self.loc), _shape_of(self.scale))

    inverse_shape = forward_shape


def _exclusive_cumprod_pad(t):
    """Shift the last dim right by one, filling with 1 (products / remainders 'before' each entry)."""
    return F.pad(t[..., :-1], [1, 0], value=1)


class CorrCholeskyTransform(Transform):
    """Unconstrained vector of length D(D-1)/2 -> Cholesky factor of a D x D correlation matrix."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = tl.finfo(x.dtype).eps
        # partial correlations in (-1, 1), laid out in the strict lower triangle
        z = vec_to_tril_matrix(x.tanh().clamp(min=eps - 1, max=1 - eps), diag=-1)
        d = z.shape[-1]
        # each row is built by stick breaking: entry j gets z_j times the length left over by entries < j
        left = _exclusive_cumprod_pad((1 - z.square()).sqrt().cumprod(-1))
        return (z + tl.eye(d, dtype=z.dtype, device=z.device)) * left

    def _inverse(self, y):
        left = _exclusive_cumprod_pad(1 - (y * y).cumsum(dim=-1))
        z = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return 0.5 * (z.log1p() - (-z).log1p())

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """Sum of the tanh Jacobian and the stick-breaking Jacobian."""
        remaining = tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2)
        sticks = remaining.log().sum(-1) * 0.5
        squash = ((math.log(2.0) - x - F.softplus(x * -2)) * 2).sum(dim=-1)
        return sticks + squash

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        m = shape[-1]
        d = round(0.5 + math.sqrt(0.25 + 2 * m))
        if d * (d - 1) != 2 * m:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tl.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        _need_dims(shape, 2)
        d = shape[-1]
        if shape[-2] != d:
            raise ValueError("Input is not square")
        return tl.Size(tuple(shape[:-2]) + ((d * d - d) // 2,))


class SoftmaxTransform(_ComparedByType, Transform):
    """Unconstrained vector -> simplex by exp and normalization (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        return shape

    inverse_shape = forward_shape


def _stick_shift(k, like):
    """log of (k, k-1, ..., 1): centres the stick-breaking map so 0 goes to the uniform simplex point."""
    return tl.arange(k, 0, -1, dtype=like.dtype, device=like.device).log()


class StickBreakingTransform(_ComparedByType, Transform):
    """Unconstrained vector of length K-1 -> simplex of length K by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        frac = _open_unit((x - _stick_shift(x.shape[-1], x)).sigmoid())
        rest = (1 - frac).cumprod(-1)
        return F.pad(frac, [0, 1], value=1) * F.pad(rest, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        rest = (1 - head.cumsum(-1)).clamp(min=tl.finfo(y.dtype).tiny)
        return head.log() - rest.log() + _stick_shift(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        """Sum over the sticks of log(z (1 - z)) + log of the remaining stick."""
        u = x - _stick_shift(x.shape[-1], x)
        return (F.logsigmoid(u) - u + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        return tl.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        _need_dims(shape, 1)
        return tl.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _map_diagonal(m, fn):
    """Strict lower triangle of m kept, diagonal replaced by fn(diagonal), upper part zeroed."""
    diag = m.diagonal(dim1=-2, dim2=-1)
    return tl.diag_embed(fn(diag)) + m.tril(-1)


class LowerCholeskyTransform(_ComparedByType, Transform):
    """Square matrix -> lower-triangular with positive diagonal (strict lower part kept, diagonal exp'd)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return _map_diagonal(x, tl.exp)

    def _inverse(self, y):
        return _map_diagonal(y, tl.log)


class PositiveDefiniteTransform(_ComparedByType, Transform):
    """Square matrix -> positive definite matrix L L^T with L = LowerCholeskyTransform(x)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        low = _map_diagonal(x, tl.exp)
        return low @ low.mT

    def _inverse(self, y):
        return _map_diagonal(tl.linalg.cholesky(y), tl.log)


def _checked_transforms(tseq, cache_size, owner):
    seq = list(tseq)
    if any(not isinstance(t, Transform) for t in seq):
        raise TypeError(f"{owner}: every element of tseq must be a Transform")
    return [t.with_cache(cache_size) for t in seq] if cache_size else seq


class CatTransform(Transform):
    """Apply `tseq[i]` to the i-th piece (of size `lengths[i]`) of `dim`."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        pieces = _checked_transforms(tseq, cache_size, "CatTransform")
        super().__init__(cache_size)
        self.transforms = pieces
        self.lengths = [1] * len(pieces) if lengths is None else list(lengths)
        if len(self.lengths) != len(pieces):
            raise ValueError(f"CatTransform: got {len(pieces)} transforms but {len(self.lengths)} lengths")
        self.dim = dim

    @functools.cached_property
    def event_dim(self):
        return max(tr.event_dim for tr in self.transforms)

    @functools.cached_property
    def length(self):
        return sum(self.lengths)

    def _recreate(self, cache_size):
        return type(self)(self.transforms, self.dim, self.lengths, cache_size)

    def _fits(self, t):
        return -t.dim() <= self.dim < t.dim() and t.size(self.dim) == self.length

    def _check(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise IndexError(f"CatTransform: dim {self.dim} out of range for a tensor of {x.dim()} dims")
        if not self._fits(x):
            raise ValueError(f"CatTransform: size {x.size(self.dim)} of dim {self.dim} differs from the sum of "
                             f"lengths {self.length}")

    def _pieces(self, t):
        """(transform, slice of t) for each piece along dim."""
        offsets = [0]
        for n in self.lengths:
            offsets.append(offsets[-1] + n)
        return [(tr, t.narrow(self.dim, a, n)) for tr, a, n in zip(self.transforms, offsets, self.lengths)]

    def _call(self, x):
        self._check(x)
        return tl.cat([tr(part) for tr, part in self._pieces(x)], dim=self.dim)

    def _inverse(self, y):
        self._check(y)
        return tl.cat([tr.inv(part) for tr, part in self._pieces(y)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        """Each piece's log-det-Jacobian, concatenated (or summed when the dim is an event dim)."""
        self._check(x)
        if not self._fits(y):
            raise ValueError("CatTransform: x and y do not match the transform's pieces")
        top = self.event_dim
        terms = []
        for (tr, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            terms.append(_sum_rightmost(tr.log_abs_det_jacobian(xs, ys), top - tr.event_dim))
        # position of `dim` among the jacobian's dims (negative: still a batch dim there)
        where = (self.dim if self.dim < 0 else self.dim - x.dim()) + top
        if where < 0:
            return tl.cat(terms, dim=where)
        return sum(terms[1:], terms[0])

    @property
    def bijective(self):
        return all(tr.bijective for tr in self.transforms)

    @constraints.dependent_property
    def domain(self):
        """The constraint on the transform's inputs."""
        return constraints.cat([tr.domain for tr in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        """The constraint on the transform's outputs."""
        return constraints.cat([tr.codomain for tr in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Apply `tseq[i]` to the i-th slice of `dim`."""

    def __init__(self, tseq, dim=0, cache_size=0):
        members = _checked_transforms(tseq, cache_size, "StackTransform")
        super().__init__(cache_size)
        self.transforms = members
        self.dim = dim

    def _recreate(self, cache_size):
        return type(self)(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        n = len(self.transforms)
        if not -z.dim() <= self.dim < z.dim():
            raise IndexError(f"StackTransform: dim {self.dim} out of range for a tensor of {z.dim()} dims")
        if z.size(self.dim) != n:
            raise ValueError(f"StackTransform: size {z.size(self.dim)} of dim {self.dim} differs from the number "
                             f"of transforms {n}")
        return z.unbind(self.dim)

    def _per_slice(self, fn, *tensors):
        cols = [self._slice(t) for t in tensors]
        return tl.stack([fn(tr, *args) for tr, *args in zip(self.transforms, *cols)], dim=self.dim)

    def _call(self, x):
        return self._per_slice(lambda tr, v: tr(v), x)

    def _inverse(self, y):
        return self._per_slice(lambda tr, v: tr.inv(v), y)

    def log_abs_det_jacobian(self, x, y):
        """Each slice's log-det-Jacobian, stacked along `dim`."""
        return self._per_slice(lambda tr, a, b: tr.log_abs_det_jacobian(a, b), x, y)

    @property
    def bijective(self):
        return all(tr.bijective for tr in self.transforms)

    @constraints.dependent_property
    def domain(self):
        """The constraint on the transform's inputs."""
        return constraints.stack([tr.domain for tr in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        """The constraint on the transform's outputs."""
        return constraints.stack([tr.codomain for tr in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): maps the distribution's support onto [0, 1]."""

    bijective = True
    sign = +1
    codomain = constraints.unit_interval

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The constraint on the transform's inputs."""
        return self.distribution.support

    def _recreate(self, cache_size):
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x):
        dist = self.distribution
        return dist.cdf(x)

    def _inverse(self, y):
        dist = self.distribution
        return dist.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        """The distribution's log density at x (the cdf's derivative)."""
        dist = self.distribution
        return dist.log_prob(x)
