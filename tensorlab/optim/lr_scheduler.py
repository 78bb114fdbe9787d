"""tensorlab.optim.lr_scheduler: learning-rate (and momentum) schedules with the names,
signatures, value sequences, warnings and state-dict layout of torch.optim.lr_scheduler
(torch 2.13 is the oracle the tests compare against).

How the pieces fit
------------------
All epoch-driven schedulers derive from `LRScheduler`, whose contract is:

* construction records each param group's starting lr as 'initial_lr' (an existing entry is
  kept, so stacked schedulers agree) and copies those into `base_lrs`; it then takes one step,
  entering epoch `last_epoch + 1` (epoch 0 on a fresh run);
* `step()` moves `last_epoch` forward by one and takes the new values from `get_lr()`; the
  built-in schedules compute them from what the groups hold *now* (the `_recurrence` hook), which
  is what lets several schedulers on one optimizer compose;
* `step(epoch)` (deprecated: it warns) jumps to `epoch` and uses `_closed_form`, the value
  derived from `base_lrs` alone where the schedule has one;
* the values are written into the groups (tensor lrs are filled in place, never replaced) and
  a copy of them is what `get_last_lr()` returns.

The optimizer's `step` is wrapped once per optimizer so that a scheduler stepped before it
can warn. A state dict is the scheduler's attributes minus its optimizer, under the attribute
names torch uses, so state dicts can move between the two libraries.
"""
from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, Literal, SupportsFloat
from weakref import ref

from .. import _warn
from ..tensor import Tensor
from .optimizer import Optimizer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
    "LRScheduler",
]

inf = math.inf

# The user-facing texts are torch's, word for word: code that filters warnings by message, and
# the tests that compare with torch, depend on them.
EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)
_ADJUST_LR_DOCS = "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
_STEP_ORDER_MESSAGE = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule. "
    f"See more details at {_ADJUST_LR_DOCS}"
)
_STEP_REPLACED_MESSAGE = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    f"`lr_scheduler.step()`. See more details at {_ADJUST_LR_DOCS}"
)
_GET_LR_MESSAGE = "To get the last learning rate computed by the scheduler, please use `get_last_lr()`."
_NO_INITIAL_LR_MESSAGE = (
    "param 'initial_lr' is not specified in param_groups[{}] when resuming scheduler with last_epoch >= 0.\n"
    "This typically happens when:\n"
    "1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer state\n"
    "2. You're using last_epoch >= 0 for a fresh training run (not recommended)"
)

# Marker on a wrapped optimizer.step, and the flag that wrapper raises on the optimizer.
_STEP_WATCHED = "_tl_lr_scheduler_watches"
_OPTIMIZER_STEPPED = "_opt_called"


# --------------------------------------------------------------------------------------------
# Param-group values
# --------------------------------------------------------------------------------------------

def _own_copy(value):
    """`value`, cloned if it is a tensor, so that later in-place updates cannot reach it."""
    return value.clone() if isinstance(value, Tensor) else value


def _read(optimizer, key):
    """Every param group's `key`, as copies."""
    return [_own_copy(group[key]) for group in optimizer.param_groups]


def _write(group, key, value):
    """Set group[key]. A tensor entry keeps its identity and receives the value in place (the
    user may hold it, e.g. a tensor lr given to a compiled step); a 1-element tensor value is
    used as a scalar."""
    held = group[key]
    if not isinstance(held, Tensor):
        group[key] = value
        return
    if isinstance(value, Tensor) and value.dim() != 0:
        value = value.squeeze()
    held.fill_(value)


def _per_group(name, optimizer, value):
    """`value` for each param group: a list or tuple must name one per group, anything else is
    repeated. Tensors are cloned, one clone per group."""
    count = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has {count}.")
        values = list(value)
    else:
        values = [value] * count
    return [_own_copy(v) for v in values]


def _require_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


# --------------------------------------------------------------------------------------------
# Momentum cycling (CyclicLR, OneCycleLR)
# --------------------------------------------------------------------------------------------

def _uses_beta1(optimizer):
    """Whether the cycled momentum is the optimizer's beta1 (Adam family) rather than its
    'momentum'; an optimizer with neither cannot cycle momentum."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group, value, use_beta1):
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum_cycle(optimizer, highs, lows, use_beta1):
    """A fresh run starts at the high momentum; both bounds are recorded in each group too."""
    for group, high, low in zip(optimizer.param_groups, highs, lows, strict=True):
        _set_momentum(group, high, use_beta1)
        group["max_momentum"] = high
        group["base_momentum"] = low


# --------------------------------------------------------------------------------------------
# Small shared pieces
# --------------------------------------------------------------------------------------------

def _cosine_between(start, end, angle):
    """Half a cosine wave from `start` (angle 0) down to `end` (angle pi)."""
    return end + (start - end) * (1 + math.cos(angle)) / 2


def _callable_state(fn):
    """What a state dict can keep of a user callable: the attribute dict of a callable object;
    None for a plain function or lambda (and for no callable at all)."""
    if fn is None or isinstance(fn, types.FunctionType):
        return None
    return fn.__dict__.copy()


def _restore_callable(fn, saved):
    if saved is not None:
        fn.__dict__.update(saved)


@contextmanager
def _raised(obj, flag):
    """obj.<flag> is True inside the block, False after it."""
    setattr(obj, flag, True)
    try:
        yield
    finally:
        setattr(obj, flag, False)


def _watch_optimizer_steps(optimizer):
    """Replace optimizer.step by a wrapper that notes on the optimizer that it ran. Done once
    per optimizer however many schedulers share it; the wrapper refers to the optimizer weakly,
    so the optimizer does not keep itself alive through its own attribute."""
    current = optimizer.step
    if getattr(current, _STEP_WATCHED, False):
        return
    function = getattr(current, "__func__", None)  # None: step was already replaced by a plain callable
    owner = ref(optimizer)

    @wraps(function if function is not None else current)
    def watched_step(*args, **kwargs):
        opt = owner()
        setattr(opt, _OPTIMIZER_STEPPED, True)
        if function is None:
            return current(*args, **kwargs)
        return function(opt, *args, **kwargs)

    setattr(watched_step, _STEP_WATCHED, True)
    optimizer.step = watched_step


# --------------------------------------------------------------------------------------------
# The base class
# --------------------------------------------------------------------------------------------

def _journal_scheduler(journal, sched, seen):
    """Record what a scheduler's step may change: its attributes, its optimizer's param groups
    (tensor entries' values too) and, for SequentialLR / ChainedScheduler, its members'."""
    if id(sched) in seen:
        return
    seen.add(id(sched))
    journal.mapping(sched.__dict__)
    for group in getattr(getattr(sched, "optimizer", None), "param_groups", ()):
        journal.mapping(group)
        journal.tensors(v for v in group.values() if isinstance(v, Tensor))
    for member in sched.__dict__.get("_schedulers", ()):
        _journal_scheduler(journal, member, seen)


def _atomic_scheduler_step(fn):
    """A scheduler's step, all-or-nothing: a failure (an lr_lambda that raises, a bad metric)
    leaves the scheduler, its members and the optimizer's lrs as they were."""
    if getattr(fn, "_tl_atomic", False):
        return fn

    @wraps(fn)
    def step(self, *args, **kwargs):
        from .._journal import Journal
        with Journal() as journal:
            _journal_scheduler(journal, self, set())
            return fn(self, *args, **kwargs)
    step._tl_atomic = True
    return step


class LRScheduler:
    """Base class of the epoch-driven schedulers.

    A subclass describes its schedule through hooks that read `self.last_epoch` (already moved
    to the epoch being entered):

    * `_recurrence()`: the new lr of every group, given the lrs the groups hold now;
    * `_closed_form()`: the lr of every group at that epoch from `base_lrs` only, used by
      `step(epoch)`; by default the same as `get_lr()`.

    As in torch, a subclass may instead override `get_lr()` itself (and `_get_closed_form_lr()`
    for step(epoch)).
    """

    # True while step() is collecting new values: a get_lr() call at any other time comes from
    # the user, who most likely wants get_last_lr() instead.
    _get_lr_called_within_step = False
    # True during the step the constructor takes.
    _is_initial = False
    # Attributes holding user callables (one, or a list), which cannot go into a state dict as
    # such: the dict keeps _callable_state() of each and loading updates the callables in place.
    _callable_fields: tuple[str, ...] = ()

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", _own_copy(group["lr"]))
        else:
            for index, group in enumerate(groups):
                if "initial_lr" not in group:
                    raise KeyError(_NO_INITIAL_LR_MESSAGE.format(index))
        self.base_lrs: list[float | Tensor] = _read(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _watch_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """The step taken at construction (SequentialLR also uses it to start a member)."""
        self._step_count = 0
        with _raised(self, "_is_initial"):
            self.step()

    # -- values ---------------------------------------------------------------------------

    def get_last_lr(self) -> list[float | Tensor]:
        """The lrs the last step wrote into the param groups (copies: editing them changes nothing)."""
        return self._last_lr

    def get_lr(self) -> list[float | Tensor]:
        """The lrs for the epoch being entered, one per param group. step() calls this; a call
        from anywhere else warns and returns the value one step ahead of the current one."""
        if not self._get_lr_called_within_step:
            _warn.warn(_GET_LR_MESSAGE, UserWarning)
        return self._recurrence()

    def _recurrence(self) -> list[float | Tensor]:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def _closed_form(self) -> list[float | Tensor]:
        # a subclass written for torch names its closed form _get_closed_form_lr
        torch_style = getattr(self, "_get_closed_form_lr", None)
        return torch_style() if torch_style is not None else self.get_lr()

    # -- stepping -------------------------------------------------------------------------

    def step(self, epoch: int | None = None) -> None:
        """Enter the next epoch (or `epoch`, deprecated) and update the param groups' lrs."""
        if self._step_count == 1:
            self._check_call_order()
        self._step_count += 1
        if epoch is not None:
            _warn.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self._enter_epoch(epoch)

    def _check_call_order(self) -> None:
        """On the first step after construction: the optimizer must have stepped already."""
        if not getattr(self.optimizer.step, _STEP_WATCHED, False):
            _warn.warn(_STEP_REPLACED_MESSAGE, UserWarning)
        elif not getattr(self.optimizer, _OPTIMIZER_STEPPED, False):
            _warn.warn(_STEP_ORDER_MESSAGE, UserWarning)

    def _enter_epoch(self, epoch: int | None = None) -> None:
        """Move to the next epoch (epoch None) or to `epoch` and apply that epoch's lrs."""
        with _raised(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                lrs = self.get_lr()
            else:
                self.last_epoch = epoch
                lrs = self._closed_form()
        self._apply(lrs)

    def _apply(self, lrs) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            _write(group, "lr", lr)
        self._last_lr: list[float | Tensor] = _read(self.optimizer, "lr")

    # -- state ----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute but the optimizer, under torch's names."""
        return {key: self._export(key, value) for key, value in vars(self).items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state from a state_dict() of this scheduler type (ours or torch's). The
        given dict is not modified."""
        for key, value in state_dict.items():
            self._import(key, value)

    def _export(self, key: str, value):
        if key not in self._callable_fields:
            return value
        if isinstance(value, list):
            return [_callable_state(fn) for fn in value]
        return _callable_state(value)

    def _import(self, key: str, value) -> None:
        if key not in self._callable_fields:
            self.__dict__[key] = value
            return
        held = getattr(self, key)
        if isinstance(held, list):
            for fn, saved in zip(held, value):
                _restore_callable(fn, saved)
        else:
            _restore_callable(held, value)


LRScheduler.step = _atomic_scheduler_step(LRScheduler.step)
LRScheduler.__init_subclass__ = classmethod(
    lambda cls, **kw: "step" in cls.__dict__ and setattr(cls, "step", _atomic_scheduler_step(cls.__dict__["step"])))


class _LRScheduler(LRScheduler):
    """The base class's older name, kept (as torch keeps it) for existing subclasses."""


# --------------------------------------------------------------------------------------------
# Schedules written as multiplicative factors
# --------------------------------------------------------------------------------------------

class _FactorSchedule(LRScheduler):
    """A schedule given by two factors for the epoch being entered:

    * `_step_factor()`: what the current lr is multiplied by (None: left as it is; a list: one
      factor per group);
    * `_total_factor()`: what `base_lrs` are multiplied by to reach that epoch directly.
    """

    def _recurrence(self):
        factors = self._for_each_group(self._step_factor())
        return [lr if f is None else lr * f for lr, f in zip(_read(self.optimizer, "lr"), factors, strict=True)]

    def _closed_form(self):
        factors = self._for_each_group(self._total_factor())
        return [base * f for base, f in zip(self.base_lrs, factors, strict=True)]

    def _for_each_group(self, factor):
        return factor if isinstance(factor, list) else [factor] * len(self.optimizer.param_groups)


def _lambdas_per_group(optimizer, lr_lambda):
    count = len(optimizer.param_groups)
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * count
    if len(lr_lambda) != count:
        raise ValueError(f"Expected {count} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch); `lr_lambda` is one function for every group or a
    list with one per group."""

    _callable_fields = ("lr_lambdas",)

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.lr_lambdas: list[Callable[[int], float]] = _lambdas_per_group(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def _recurrence(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_FactorSchedule):
    """Each step multiplies the lr by lr_lambda(epoch) (one function, or one per group); the
    constructor's step leaves it unchanged."""

    _callable_fields = ("lr_lambdas",)

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.lr_lambdas: list[Callable[[int], float]] = _lambdas_per_group(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        if self._is_initial:
            return None
        return [fn(self.last_epoch) for fn in self.lr_lambdas]

    # torch has no closed form here: step(epoch) applies the epoch's factor to the current lr.
    _closed_form = LRScheduler._closed_form


class StepLR(_FactorSchedule):
    """lr = initial_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        epoch = self.last_epoch
        return self.gamma if epoch != 0 and epoch % self.step_size == 0 else None

    def _total_factor(self):
        return self.gamma ** (self.last_epoch // self.step_size)


class MultiStepLR(_FactorSchedule):
    """lr = initial_lr * gamma ** (milestones passed); a milestone given k times counts k times."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        hits = self.milestones.get(self.last_epoch, 0)
        return self.gamma ** hits if hits else None

    def _total_factor(self):
        return self.gamma ** bisect_right(sorted(self.milestones.elements()), self.last_epoch)


class ConstantLR(_FactorSchedule):
    """lr = initial_lr * factor for the first `total_iters` epochs, initial_lr afterwards."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if not 0 <= factor <= 1.0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        if self.last_epoch == 0:
            return self.factor
        if self.last_epoch == self.total_iters:
            return 1.0 / self.factor
        return None

    def _total_factor(self):
        return self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)


class LinearLR(_FactorSchedule):
    """The factor on initial_lr moves in a straight line from start_factor to end_factor over
    `total_iters` epochs and stays at end_factor."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1.0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if not 0 <= end_factor <= 1.0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        epoch = self.last_epoch
        if epoch == 0:
            return self.start_factor
        if self._is_initial or epoch > self.total_iters:
            return None
        # ratio of the factor at `epoch` to the factor one epoch earlier
        slope = self.end_factor - self.start_factor
        return 1.0 + slope / (self.total_iters * self.start_factor + (epoch - 1) * slope)

    def _total_factor(self):
        done = min(self.total_iters, self.last_epoch)
        return self.start_factor + (self.end_factor - self.start_factor) * done / self.total_iters


class ExponentialLR(_FactorSchedule):
    """lr = initial_lr * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        # the constructor's step (also when resuming) must not decay the lr once more
        return None if self._is_initial else self.gamma

    def _total_factor(self):
        return self.gamma ** self.last_epoch


class PolynomialLR(_FactorSchedule):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _step_factor(self):
        epoch, total = self.last_epoch, self.total_iters
        if self._is_initial or epoch > total:
            return None
        return ((1.0 - epoch / total) / (1.0 - (epoch - 1) / total)) ** self.power

    def _total_factor(self):
        return (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power


# --------------------------------------------------------------------------------------------
# Cosine schedules
# --------------------------------------------------------------------------------------------

class CosineAnnealingLR(LRScheduler):
    """lr follows a cosine from initial_lr (epoch 0) down to eta_min (epoch T_max) and back up,
    with period 2 * T_max. Each step rescales the current lr's distance to eta_min, so that
    it composes with other schedulers as torch's does."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def _recurrence(self):
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        current = _read(self.optimizer, "lr")
        if self._is_initial:
            return current
        if self._step_count == 1 and epoch > 0:
            # only the constructor's step taken, at a later epoch (resumed; reached by a direct
            # get_lr() call, as step() counts itself first): the point on the curve itself
            return [_cosine_between(base, low, epoch * math.pi / period) for base in self.base_lrs]
        if (epoch - 1 - period) % (2 * period) == 0:
            # leaving the bottom of the curve, where the ratio below would divide by zero
            rise = (1 - math.cos(math.pi / period)) / 2
            return [lr + (base - low) * rise for lr, base in zip(current, self.base_lrs, strict=True)]
        ratio = (1 + math.cos(math.pi * epoch / period)) / (1 + math.cos(math.pi * (epoch - 1) / period))
        return [ratio * (lr - low) + low for lr in current]

    def _closed_form(self):
        return [_cosine_between(base, self.eta_min, math.pi * self.last_epoch / self.T_max)
                for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine from initial_lr down to eta_min over T_i epochs, then a restart at initial_lr;
    T_i starts at T_0 and is multiplied by T_mult at each restart. step(epoch) is a supported
    way to drive it (fractional epochs included) and does not warn."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0  # length of the current cycle
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch  # epochs since the last restart
        super().__init__(optimizer, last_epoch)

    def _recurrence(self):
        return [_cosine_between(base, self.eta_min, math.pi * self.T_cur / self.T_i) for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        else:
            self._locate(epoch)
        self.last_epoch = math.floor(epoch)
        with _raised(self, "_get_lr_called_within_step"):
            lrs = self.get_lr()
        self._apply(lrs)

    def _locate(self, epoch) -> None:
        """Set T_cur and T_i for an absolute epoch."""
        first, growth = self.T_0, self.T_mult
        if epoch < first:
            self.T_i, self.T_cur = first, epoch
        elif growth == 1:
            self.T_cur = epoch % first
        else:
            # n full cycles span first * (growth**n - 1) / (growth - 1) epochs
            n = int(math.log(epoch / first * (growth - 1) + 1, growth))
            self.T_cur = epoch - first * (growth ** n - 1) / (growth - 1)
            self.T_i = first * growth ** n


# --------------------------------------------------------------------------------------------
# Schedulers made of schedulers
# --------------------------------------------------------------------------------------------

class _Composite(LRScheduler):
    """Shared by SequentialLR and ChainedScheduler: checks on the members, and a state dict
    that holds each member's own state dict, in order, under '_schedulers'."""

    def _check_members(self, schedulers, optimizer) -> None:
        kind = type(self).__name__
        for index, member in enumerate(schedulers):
            if not hasattr(member, "optimizer"):
                raise TypeError(f"{kind} at index {index} should have `optimizer` as its attribute.")
            if isinstance(member, ReduceLROnPlateau):
                raise ValueError(
                    f"{kind} does not support `ReduceLROnPlateau` scheduler as it "
                    "requires additional kwargs to be specified when calling `step`, "
                    f"but got one at index {index} in the given schedulers sequence.")
            if optimizer != member.optimizer:
                raise ValueError(
                    f"{kind} expects all schedulers to belong to the same optimizer, but "
                    f"got scheduler {type(member).__name__} at index {index} has {member.optimizer}, "
                    f"which is different from {type(optimizer).__name__}.")

    def _export(self, key, value):
        if key == "_schedulers":
            return [member.state_dict() for member in value]
        return super()._export(key, value)

    def _import(self, key, value) -> None:
        if key != "_schedulers":
            super()._import(key, value)
            return
        for index, saved in enumerate(value):
            self._schedulers[index].load_state_dict(saved)


class SequentialLR(_Composite):
    """Hands the schedule from one scheduler to the next at the given milestones: before
    milestones[0] schedulers[0] runs, and so on; each one starts from its own epoch 0."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        self._check_members(schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Every member took its constructor step on the optimizer: start again from the
        # initial lrs, and replay the first step for the member that owns epoch 0 only.
        for group in optimizer.param_groups:
            _write(group, "lr", group["initial_lr"])
        self.recursive_undo()
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Move every scheduler inside `sched` (this one by default), at any depth, one epoch back."""
        pending = [self if sched is None else sched]
        while pending:
            item = pending.pop()
            members = getattr(item, "_schedulers", None)
            if members is not None:
                pending.extend(members)
            elif hasattr(item, "last_epoch"):
                item.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        active = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            active._enter_epoch(0)  # its first epoch: start its schedule afresh
        else:
            active.step()
        self._last_lr = active.get_last_lr()


class ChainedScheduler(_Composite):
    """Steps all its schedulers at every step(), in order; as each multiplies the lr the
    others left, their effects combine."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        self._check_members(schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _read(schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        for member in self._schedulers:
            member.step()
        self._last_lr = _read(self._schedulers[-1].optimizer, "lr")


# --------------------------------------------------------------------------------------------
# Metric-driven
# --------------------------------------------------------------------------------------------

class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lrs by `factor` (not below min_lr) when the metric given to step() has
    not improved for more than `patience` epochs, then waits `cooldown` epochs before counting
    again. Improvement is relative or absolute (threshold_mode) in the direction `mode` says;
    a cut smaller than `eps` is skipped."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        count = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != count:
                raise ValueError(f"expected {count} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * count
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _read(optimizer, "lr")
        self._set_comparison(mode, threshold, threshold_mode)
        self._start_watching()

    def _set_comparison(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = inf if mode == "min" else -inf  # the starting 'best'
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _start_watching(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _improves_on(self, value, best) -> bool:
        relative = self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (best * (1.0 - self.threshold) if relative else best - self.threshold)
        return value > (best * (self.threshold + 1.0) if relative else best + self.threshold)

    def step(self, metrics: SupportsFloat, epoch=None) -> None:  # type: ignore[override]
        value = float(metrics)  # a 0-dim tensor works too
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            _warn.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
        self.last_epoch = epoch

        if self._improves_on(value, self.best):
            self.best = value
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # epochs in cooldown do not count against the metric
        if self.num_bad_epochs > self.patience:
            self._cut_lrs()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _read(self.optimizer, "lr")

    def _cut_lrs(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized "
                    f"({len(self.min_lrs)}), usually due to a new "
                    "param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length "
                    "of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                _write(group, "lr", new)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._set_comparison(self.mode, self.threshold, self.threshold_mode)


# --------------------------------------------------------------------------------------------
# Cyclical schedules (stepped per batch)
# --------------------------------------------------------------------------------------------

class CyclicLR(LRScheduler):
    """The lr rises from base_lr to max_lr over step_size_up steps and falls back over
    step_size_down; the amplitude is scaled per cycle (triangular: constant, triangular2:
    halved each cycle) or per step (exp_range: gamma ** step), or by a custom scale_fn.
    Momentum (beta1 for Adam-like optimizers) cycles the opposite way."""

    _callable_fields = ("_scale_fn_custom",)

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _require_optimizer(optimizer)
        lows = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, lr in zip(optimizer.param_groups, lows, strict=True):
                _write(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size  # share of a cycle spent rising
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._fix_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                _start_momentum_cycle(optimizer, self.max_momentums, self.base_momentums, self.use_beta1)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = lows

    def _fix_scale_mode(self) -> None:
        """The built-in modes decide what their scale is a function of."""
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude multiplier at x (a cycle number or a step, per scale_mode)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def _recurrence(self):
        step = self.last_epoch
        cycle = math.floor(1 + step / self.total_size)
        position = 1.0 + step / self.total_size - cycle  # in [0, 1) within the cycle
        if position <= self.step_ratio:
            height = position / self.step_ratio
        else:
            height = (position - 1) / (self.step_ratio - 1)
        amplitude = self.scale_fn(cycle if self.scale_mode == "cycle" else step)
        lrs = [low + (high - low) * height * amplitude
               for low, high in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums,
                                        strict=True):
                _set_momentum(group, high - (high - low) * height * amplitude, self.use_beta1)
        return lrs

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._fix_scale_mode()


def _one_cycle_phases(total_steps, pct_start, three_phase):
    """The phases of the 1cycle policy in torch's state-dict layout: the last step of each and
    the param-group keys its lr and its momentum travel between."""
    fields = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
    warm_up = (float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
    if three_phase:
        rows = [warm_up,
                (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    else:
        rows = [warm_up, (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
    return [dict(zip(fields, row)) for row in rows]


class OneCycleLR(LRScheduler):
    """The 1cycle policy, stepped per batch: the lr climbs from max_lr / div_factor to max_lr
    during the first pct_start of total_steps, then anneals to initial_lr / final_div_factor
    (three_phase: back to the initial lr first, then down), by cosine or linearly; momentum
    moves the opposite way between max_momentum and base_momentum."""

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _require_optimizer(optimizer)
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy

        peaks = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, peaks):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                _start_momentum_cycle(optimizer, highs, lows, self.use_beta1)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, progress):
        """The value `progress` (0 to 1) of the way from start to end."""
        if self._anneal_func_type == "cos":
            return _cosine_between(start, end, math.pi * progress)
        return (end - start) * progress + start

    def _phase_at(self, step):
        """The phase `step` falls in, and how far through it (0 to 1) the step is."""
        begin = 0.0
        for phase in self._schedule_phases[:-1]:
            if step <= phase["end_step"]:
                break
            begin = phase["end_step"]
        else:
            phase = self._schedule_phases[-1]
        return phase, (step - begin) / (phase["end_step"] - begin)

    def _recurrence(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        phase, progress = self._phase_at(step)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], progress))
            if self.cycle_momentum:
                momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], progress)
                _set_momentum(group, momentum, self.use_beta1)
        return lrs
