"""torch.distributions.constraint_registry: biject_to / transform_to, constraint -> Transform registries."""
from __future__ import annotations

import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A registry from constraint types to factories building a Transform onto that constraint."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register `factory(constraint) -> Transform` for a Constraint subclass (or an instance's class).

        Usable as a decorator: `@registry.register(my_constraint)`."""
        if factory is None:
            def _deco(fn):
                return self.register(constraint, fn)
            return _deco
        key = type(constraint) if isinstance(constraint, constraints.Constraint) else constraint
        if not (isinstance(key, type) and issubclass(key, constraints.Constraint)):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[key] = factory
        return factory

    def __call__(self, constraint):
        """The Transform from unconstrained space onto `constraint`; NotImplementedError when none is known."""
        make = self._registry.get(type(constraint))
        if make is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return make(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


# ---- factories (each takes the constraint instance) ----------------------------------------------

def _identity(c):
    return transforms.identity_transform


def _exp(c):
    return transforms.ExpTransform()


def _shifted_exp(c):
    """exp, then shift away from the bound (reflected for an upper bound)."""
    if isinstance(c, constraints.less_than):
        anchor, sign = c.upper_bound, -1
    else:
        anchor, sign = c.lower_bound, 1
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(anchor, sign)])


def _squashed(c):
    """sigmoid onto (0, 1), then stretched onto [lo, hi] unless that is already the unit interval."""
    lo, hi = c.lower_bound, c.upper_bound
    unit = all(isinstance(v, numbers.Number) for v in (lo, hi)) and (lo, hi) == (0, 1)
    sig = transforms.SigmoidTransform()
    if unit:
        return sig
    return transforms.ComposeTransform([sig, transforms.AffineTransform(lo, hi - lo)])


def _fixed(cls):
    return lambda c: cls()


def _per_event(reg):
    def build(c):
        return transforms.IndependentTransform(reg(c.base_constraint), c.reinterpreted_batch_ndims)
    return build


def _concat(reg):
    def build(c):
        return transforms.CatTransform([reg(part) for part in c.cseq], c.dim, c.lengths)
    return build


def _stacked(reg):
    def build(c):
        return transforms.StackTransform([reg(part) for part in c.cseq], c.dim)
    return build


_SHARED = [
    (constraints.real, _identity),
    (constraints.positive, _exp),
    (constraints.nonnegative, _exp),
    (constraints.greater_than, _shifted_exp),
    (constraints.greater_than_eq, _shifted_exp),
    (constraints.less_than, _shifted_exp),
    (constraints.interval, _squashed),
    (constraints.half_open_interval, _squashed),
    (constraints.corr_cholesky, _fixed(transforms.CorrCholeskyTransform)),
]
for _c, _f in _SHARED:
    biject_to.register(_c, _f)
    transform_to.register(_c, _f)

for _reg in (biject_to, transform_to):
    _reg.register(constraints.independent, _per_event(_reg))
    _reg.register(constraints.cat, _concat(_reg))
    _reg.register(constraints.stack, _stacked(_reg))

# bijective onto the simplex needs stick breaking; softmax is onto but not one-to-one
biject_to.register(constraints.simplex, _fixed(transforms.StickBreakingTransform))
transform_to.register(constraints.simplex, _fixed(transforms.SoftmaxTransform))
transform_to.register(constraints.lower_cholesky, _fixed(transforms.LowerCholeskyTransform))
transform_to.register(constraints.positive_definite, _fixed(transforms.PositiveDefiniteTransform))
transform_to.register(constraints.positive_semidefinite, _fixed(transforms.PositiveDefiniteTransform))

del _c, _f, _reg
