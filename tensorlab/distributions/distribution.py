"""torch.distributions.distribution: the Distribution base class."""
from __future__ import annotations

import warnings

import tensorlab as tl

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _all_true(valid):
    """Host-side answer to "is every element true?" (the wait is the user's validate_args request)."""
    return bool(valid.all())


class Distribution:
    """Abstract base class for probability distributions (torch.distributions.Distribution).

    Subclasses set `arg_constraints`, `support`, and implement `sample`/`rsample`, `log_prob`, `entropy`,
    the moments and `expand`. Argument validation (on by default, as in torch under `__debug__`) checks
    every parameter against its constraint in `__init__` and every value passed to `log_prob`/`cdf`."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions created afterwards without validate_args=."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=tl.Size(), event_shape=tl.Size(), validate_args=None):
        self._batch_shape = tl.Size(batch_shape)
        self._event_shape = tl.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # skip checking lazily-constructed args
                value = getattr(self, param)
                valid = constraint.check(value)
                if not _all_true(valid):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with its batch dimensions expanded to `batch_shape` (parameters are views)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement expand")

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """Dict from parameter names to the constraints their values satisfy."""
        raise NotImplementedError(f"{type(self).__name__} does not define arg_constraints")

    @property
    def support(self):
        """The constraint describing where samples live."""
        raise NotImplementedError(f"{type(self).__name__} does not define support")

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=tl.Size()):
        """A sample of shape `sample_shape + batch_shape + event_shape`, outside the autograd graph."""
        with tl.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=tl.Size()):
        """A reparameterized sample: gradients flow back to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def sample_n(self, n):
        """Deprecated: `sample((n,))`."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(tl.Size((n,)))

    def log_prob(self, value):
        """The log of the probability density/mass function at `value`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value):
        """The cumulative distribution function at `value`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        """The inverse cumulative distribution function at `value`."""
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True):
        """Every value of a discrete support, along a new leading dimension."""
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def entropy(self):
        """The entropy of the distribution, batched over batch_shape."""
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        """exp(entropy)."""
        return tl.exp(self.entropy())

    def _extended_shape(self, sample_shape=tl.Size()):
        if not isinstance(sample_shape, tl.Size):
            sample_shape = tl.Size(sample_shape)
        return tl.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, tl.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = tl.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        valid = support.check(value)
        if not _all_true(valid):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in param_names)
        return self.__class__.__name__ + "(" + args + ")"
