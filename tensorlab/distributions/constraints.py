"""torch.distributions.constraints: objects that say where a parameter or a sample may live.

Each constraint's `check(value)` returns a bool tensor over the batch (event dimensions reduced), computed on
the value's device; nothing here waits for the device.
"""
from __future__ import annotations

import tensorlab as tl

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
    "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite", "positive_definite",
    "positive_integer", "real", "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval",
]


class Constraint:
    """A region of the real line (or of a product space) that values must lie in.

    `is_discrete` says whether the region is countable, `event_dim` how many rightmost dimensions make up one
    point; `check(value)` returns a bool tensor of shape `value.shape[:value.dim() - event_dim]`."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """Bool tensor: which batch elements of `value` satisfy the constraint."""
        raise NotImplementedError(f"{type(self).__name__}.check: a subclass of Constraint must define check()")

    def __repr__(self):
        # the private classes are named _Foo; they print as Foo()
        return f"{type(self).__name__[1:]}()"


def _all_over_last(ok, n):
    """Reduce the `n` rightmost dims of a bool tensor with all()."""
    for _ in range(n):
        ok = ok.all(-1)
    return ok


def _whole(value):
    return value % 1 == 0


# ---- placeholders for parameter-dependent supports ------------------------------------------------------

class _Dependent(Constraint):
    """Placeholder for a support that depends on other parameters; it cannot be checked."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim
        super().__init__()

    @staticmethod
    def _known(v, what):
        if v is NotImplemented:
            raise NotImplementedError(f".{what} cannot be determined statically")
        return v

    @property
    def is_discrete(self):
        return self._known(self._is_discrete, "is_discrete")

    @property
    def event_dim(self):
        return self._known(self._event_dim, "event_dim")

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A dependent constraint with the given static attributes."""
        keep = lambda new, old: old if new is NotImplemented else new  # noqa: E731
        return _Dependent(is_discrete=keep(is_discrete, self._is_discrete),
                          event_dim=keep(event_dim, self._event_dim))

    def check(self, x):
        """A dependent constraint cannot be checked: raises ValueError."""
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether `constraint` is a (placeholder) dependent constraint."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint depending on the distribution's parameters; on the class it
    stands as a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        """Decorate `fn` as the property's getter."""
        return type(self)(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


# ---- wrappers around another constraint -----------------------------------------------------------------

class _Wrapping(Constraint):
    """Shared by constraints built on one `base_constraint`: discreteness comes from the base."""

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete


class _IndependentConstraint(_Wrapping):
    """`base_constraint` with `reinterpreted_batch_ndims` batch dimensions turned into event dimensions."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent(): base_constraint must be a Constraint, "
                            f"got {type(base_constraint).__name__}")
        n = reinterpreted_batch_ndims
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"independent(): reinterpreted_batch_ndims must be a non-negative int, got {n!r}")
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, n
        super().__init__()

    @property
    def event_dim(self):
        return self.reinterpreted_batch_ndims + self.base_constraint.event_dim

    def check(self, value):
        """Checks the base constraint, then reduces the reinterpreted dimensions with all()."""
        n = self.reinterpreted_batch_ndims
        ok = self.base_constraint.check(value)
        if ok.dim() < n:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_over_last(ok, n)

    def __repr__(self):
        return f"{type(self).__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(_Wrapping):
    """The support of a MixtureSameFamily: the component's constraint with the mixture dimension reduced."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("MixtureSameFamilyConstraint: base_constraint must be a Constraint")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        """Checks `value` (with a component dimension added) against every component and reduces it."""
        k = self.event_dim
        ok = self.base_constraint.check(value.unsqueeze(-1 - k))
        if value.dim() < k:
            raise ValueError(f"Expected value.dim() >= {k} but got {value.dim()}")
        # whatever dims the check kept beyond the value's batch dims are the component dim (+ leftovers)
        return _all_over_last(ok, ok.dim() - (value.dim() - k))

    def __repr__(self):
        return f"{type(self).__name__}({self.base_constraint!r})"


# ---- scalar regions given by bounds ---------------------------------------------------------------------

class _Bounded(Constraint):
    """Constraints defined by named bounds (`lower_bound` / `upper_bound`), printed as Name(bound=value, ...).

    Subclasses list their bounds in `_bounds` and implement `_inside(value)`; integer variants also require
    whole numbers."""

    _bounds = ()
    _integer = False

    def __init__(self, *args, **kwargs):
        if len(args) > len(self._bounds):
            raise TypeError(f"{type(self).__name__[1:]} takes {len(self._bounds)} bounds")
        given = dict(zip(self._bounds, args))
        for name, v in kwargs.items():
            if name not in self._bounds or name in given:
                raise TypeError(f"{type(self).__name__[1:]}: unexpected or repeated argument {name!r}")
            given[name] = v
        missing = [n for n in self._bounds if n not in given]
        if missing:
            raise TypeError(f"{type(self).__name__[1:]}: missing {', '.join(missing)}")
        for name in self._bounds:
            setattr(self, name, given[name])
        super().__init__()

    @property
    def is_discrete(self):
        return self._integer

    def check(self, value):
        ok = self._inside(value)
        return _whole(value) & ok if self._integer else ok

    def __repr__(self):
        shown = ", ".join(f"{n}={getattr(self, n)}" for n in self._bounds)
        return f"{type(self).__name__[1:]}({shown})"


class _IntegerInterval(_Bounded):
    _bounds, _integer = ("lower_bound", "upper_bound"), True

    def _inside(self, v):
        return (v >= self.lower_bound) & (v <= self.upper_bound)


class _IntegerLessThan(_Bounded):
    _bounds, _integer = ("upper_bound",), True

    def _inside(self, v):
        return v <= self.upper_bound


class _IntegerGreaterThan(_Bounded):
    _bounds, _integer = ("lower_bound",), True

    def _inside(self, v):
        return v >= self.lower_bound


class _GreaterThan(_Bounded):
    _bounds = ("lower_bound",)

    def _inside(self, v):
        return v > self.lower_bound


class _GreaterThanEq(_Bounded):
    _bounds = ("lower_bound",)

    def _inside(self, v):
        return v >= self.lower_bound


class _LessThan(_Bounded):
    _bounds = ("upper_bound",)

    def _inside(self, v):
        return v < self.upper_bound


class _Interval(_Bounded):
    _bounds = ("lower_bound", "upper_bound")

    def _inside(self, v):
        return (v >= self.lower_bound) & (v <= self.upper_bound)


class _HalfOpenInterval(_Bounded):
    _bounds = ("lower_bound", "upper_bound")

    def _inside(self, v):
        return (v >= self.lower_bound) & (v < self.upper_bound)


# ---- other scalar and vector regions --------------------------------------------------------------------

def _zero_or_one(v):
    return (v == 0) | (v == 1)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return _zero_or_one(value)


class _Real(Constraint):
    def check(self, value):
        return value == value  # false for NaN only


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value):
        return _zero_or_one(value).all(-1) & (value.sum(-1) == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        sums_to_one = (value.sum(-1) - 1).abs() < 1e-6
        return sums_to_one & (value >= 0).all(-1)


class _Multinomial(Constraint):
    """Nonnegative integer vectors summing to at most `upper_bound` (torch checks the sum with <=)."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x.sum(-1) <= self.upper_bound) & (x >= 0).all(-1)


# ---- matrix regions -------------------------------------------------------------------------------------

def _is_lower(m):
    return (m == m.tril()).flatten(-2).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _is_lower(value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        diag_ok = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return diag_ok & _is_lower(value)


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        n = value.size(-1)
        slack = 10 * n * tl.finfo(value.dtype).eps
        rows_unit = ((tl.linalg.norm(value.detach(), dim=-1) - 1.0).abs() <= slack).all(-1)
        return rows_unit & _LowerCholesky().check(value)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        r, c = value.shape[-2], value.shape[-1]
        return tl.full(value.shape[:-2], r == c, dtype=tl.bool, device=value.device)


class _Symmetric(_Square):
    # each refinement runs only when every matrix passed the coarser check (it may need square input)
    def _refined(self, value):
        return tl.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)

    def check(self, value):
        coarse = _Square.check(self, value)
        return self._refined(value) if bool(coarse.all()) else coarse


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        coarse = _Symmetric.check(self, value)
        return (tl.linalg.eigvalsh(value) >= 0).all(-1) if bool(coarse.all()) else coarse


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        coarse = _Symmetric.check(self, value)
        return tl.linalg.cholesky_ex(value).info == 0 if bool(coarse.all()) else coarse


# ---- piecewise along a dimension ------------------------------------------------------------------------

def _constraint_list(cseq, who):
    seq = list(cseq)
    if any(not isinstance(c, Constraint) for c in seq):
        raise TypeError(f"{who}(): every element of cseq must be a Constraint")
    return seq


def _check_dim(who, dim, value):
    if not -value.dim() <= dim < value.dim():
        raise IndexError(f"{who} constraint: dim {dim} out of range for a value of {value.dim()} dims")


class _Pieces(Constraint):
    @property
    def is_discrete(self):
        return any(part.is_discrete for part in self.cseq)


class _Cat(_Pieces):
    """Applies `cseq[i]` to the i-th piece of `dim` (pieces of sizes `lengths`)."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = _constraint_list(cseq, "cat")
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat(): got {len(self.cseq)} constraints but {len(self.lengths)} lengths")
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self):
        return max(part.event_dim for part in self.cseq)

    def check(self, value):
        _check_dim("cat", self.dim, value)
        results, offset = [], 0
        for part, n in zip(self.cseq, self.lengths):
            results.append(part.check(value.narrow(self.dim, offset, n)))
            offset += n
        return tl.cat(results, self.dim)


class _Stack(_Pieces):
    """Applies `cseq[i]` to the i-th slice of `dim`."""

    def __init__(self, cseq, dim=0):
        self.cseq = _constraint_list(cseq, "stack")
        self.dim = dim
        super().__init__()

    @property
    def event_dim(self):
        deepest = max(part.event_dim for part in self.cseq)
        # a negative dim reaching into the event dims adds one
        return deepest + 1 if self.dim + deepest < 0 else deepest

    def check(self, value):
        _check_dim("stack", self.dim, value)
        slices = value.unbind(self.dim)
        return tl.stack([part.check(s) for part, s in zip(self.cseq, slices)], self.dim)


# ---- public names (torch's) -----------------------------------------------------------------------------

dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean, one_hot, real, simplex = _Boolean(), _OneHot(), _Real(), _Simplex()
nonnegative_integer, positive_integer = _IntegerGreaterThan(0), _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real_vector = _IndependentConstraint(real, 1)
positive, nonnegative = _GreaterThan(0.0), _GreaterThanEq(0.0)
greater_than, greater_than_eq, less_than = _GreaterThan, _GreaterThanEq, _LessThan
interval, half_open_interval = _Interval, _HalfOpenInterval
unit_interval = _Interval(0.0, 1.0)
multinomial = _Multinomial
lower_triangular, lower_cholesky, corr_cholesky = _LowerTriangular(), _LowerCholesky(), _CorrCholesky()
square, symmetric = _Square(), _Symmetric()
positive_semidefinite, positive_definite = _PositiveSemidefinite(), _PositiveDefinite()
cat, stack = _Cat, _Stack
