"""tensorlab.nn.utils.prune: torch.nn.utils.prune's pruning methods and their module layout.

Pruning module.<name> moves the parameter to <name>_orig, adds the buffer <name>_mask (ones where kept)
and a forward pre-hook (the method object) that sets module.<name> = <name>_orig * <name>_mask before
every call. Pruning the same tensor again combines the methods in a PruningContainer: the new method
computes its mask over the entries (unstructured), channels (structured) or whole tensor (global) that
the earlier masks kept. `remove` makes the pruned tensor permanent (a plain parameter again)."""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import tensorlab as _tl

from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured",
           "random_structured", "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


# ----------------------------------------------------------------------------------------------------
# small helpers shared by the methods

def _hooks_for(module, name):
    """[(key, hook)] of the pruning pre-hooks of module.<name>."""
    return [(key, h) for key, h in module._forward_pre_hooks.items()
            if isinstance(h, BasePruningMethod) and h._tensor_name == name]


def _same_shape(a, b):
    return tuple(a.shape) == tuple(b.shape)


def _check_amount(amount):
    """The constructor check: a fraction in [0, 1] or a non-negative count."""
    is_count = isinstance(amount, numbers.Integral)
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    fraction = None if is_count else float(amount)
    if (is_count and amount < 0) or (fraction is not None and (fraction < 0.0 or fraction > 1.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _how_many(amount, total):
    """How many of `total` units `amount` prunes (a count is taken as is, a fraction is rounded)."""
    if isinstance(amount, numbers.Integral):
        if amount > total:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={total}")
        return int(amount)
    return round(amount * total)


def _check_structured(t, dim):
    if t.dim() < 2:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"torch.Size({list(t.shape)}) with {t.dim()} dims")
    if not -t.dim() <= dim < t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size torch.Size({list(t.shape)})")


def _zero_entries(mask, flat_positions):
    """A copy of mask with the given flat positions set to 0."""
    out = mask.clone().reshape(-1)
    out[flat_positions] = 0
    return out.reshape(mask.shape)


def _channel_mask(like, axis, channels, base):
    """Ones on `channels` (indices or a bool selector) along `axis`, zeros elsewhere, times base."""
    out = _tl.zeros_like(like)
    where = tuple(channels if d == axis else slice(None) for d in range(like.dim()))
    out[where] = 1
    return out * base.to(dtype=out.dtype)


# ----------------------------------------------------------------------------------------------------
# the method protocol

class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) gives the new mask; the object is also the
    forward pre-hook that recomputes the pruned tensor."""

    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as t) that this method gives, starting from default_mask."""

    def apply_mask(self, module):
        """<name>_orig * <name>_mask of `module`."""
        label = self._tensor_name
        if label is None:
            raise AssertionError(f"Module {module} has to be pruned")
        kept = getattr(module, f"{label}_mask")
        full = getattr(module, f"{label}_orig")
        return full * kept.to(dtype=full.dtype)

    @classmethod
    def _install(cls, module, name, args, kwargs, importance_scores):
        """The body of apply: build the method, chain it after an existing one, write the layout."""
        existing = _hooks_for(module, name)
        if len(existing) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        fresh = cls(*args, **kwargs)
        fresh._tensor_name = name
        hook = fresh
        if existing:
            previous = existing[0][1]
            if not isinstance(previous, PruningContainer):
                previous = PruningContainer(previous)
            previous.add_pruning_method(fresh)
            hook = previous
        current = getattr(module, name)
        if importance_scores is None:
            importance_scores = current
        elif not _same_shape(importance_scores, current):
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module} "
                                 f"(got {tuple(importance_scores.shape)}, parameter {tuple(current.shape)})")
        chained = isinstance(hook, PruningContainer)
        start = getattr(module, f"{name}_mask").detach().clone() if chained else _tl.ones_like(current)
        # computed before anything changes: a method that raises leaves the module untouched
        new_mask = hook.compute_mask(importance_scores, default_mask=start)
        for key, _ in existing:
            module._forward_pre_hooks.pop(key)
        if not chained:
            module.register_parameter(f"{name}_orig", current)
            module._parameters.pop(name)
        module.register_buffer(f"{name}_mask", new_mask)
        hook(module, None)
        module.register_forward_pre_hook(hook)
        return hook

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs) (see the module docstring); returns the hook."""
        return cls._install(module, name, args, kwargs, importance_scores)

    def prune(self, t, default_mask=None, importance_scores=None):
        """t * the mask this method computes (from importance_scores when given)."""
        scores = t if importance_scores is None else importance_scores
        if not _same_shape(scores, t):
            raise AssertionError("importance_scores should have the same shape as tensor t")
        start = _tl.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=start)

    def remove(self, module):
        """Make the pruning permanent: module.<name> becomes the parameter <name>_orig holding the
        pruned values; <name>_orig and <name>_mask go away."""
        label = self._tensor_name
        if label is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module).data
        module.__dict__.pop(label, None)
        keeper = module._parameters.pop(f"{label}_orig")
        module._buffers.pop(f"{label}_mask")
        keeper.data = pruned
        setattr(module, label, keeper)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor; its mask is the last method's mask
    computed over what the earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            only = args[0]
            members = list(only) if isinstance(only, Iterable) else [only]
            if members:
                self._tensor_name = members[0]._tensor_name
        else:
            members = list(args)
        for member in members:
            self.add_pruning_method(member)

    def add_pruning_method(self, method):
        """Append a method (it must prune the same tensor name)."""
        if method is not None:
            if not isinstance(method, BasePruningMethod):
                raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
            if method._tensor_name != self._tensor_name:
                raise ValueError("Can only add pruning methods acting on the parameter named "
                                 f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods = (*self._pruning_methods, method)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        yield from self._pruning_methods

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def _selector(self, newest, t, default_mask):
        """The index into t of what the earlier masks left for `newest` to prune."""
        kind = newest.PRUNING_TYPE
        if kind == "unstructured":
            return default_mask == 1
        if kind != "structured":
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        if not hasattr(newest, "dim"):
            raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                 "defined.")
        rank = t.dim()
        axis = newest.dim if newest.dim >= 0 else newest.dim + rank
        if axis < 0:
            raise IndexError(f"Index is out of bounds for tensor of size {rank}")
        reduce_over = [d for d in range(rank) if d != axis]
        alive = default_mask.sum(dim=reduce_over) != 0 if reduce_over else default_mask != 0
        return tuple(alive if d == axis else slice(None) for d in range(rank))

    def compute_mask(self, t, default_mask):
        """The last method's mask over the part of t that default_mask keeps, merged into default_mask."""
        newest = self._pruning_methods[-1]
        combined = default_mask.to(dtype=t.dtype).clone()
        if newest.PRUNING_TYPE == "global":
            return newest.compute_mask(t, default_mask=default_mask).to(dtype=combined.dtype)
        sel = self._selector(newest, t, default_mask)
        sub_mask = newest.compute_mask(t[sel], default_mask=default_mask[sel])
        combined[sel] = sub_mask.to(dtype=combined.dtype)
        return combined


# ----------------------------------------------------------------------------------------------------
# the concrete methods

class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones): the pruning layout without any change."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        """default_mask unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Add the identity pruning to module.<name>."""
        return cls._install(module, name, (), {}, None)


class RandomUnstructured(BasePruningMethod):
    """Prune `amount` (a fraction, or a count) of the entries, chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """default_mask with `amount` random entries set to zero."""
        count = _how_many(self.amount, t.numel())
        if not count:
            return default_mask.clone()
        draw = _tl.rand_like(t) if t.is_floating_point() else _tl.rand_like(t, dtype=_tl.float32)
        return _zero_entries(default_mask, _tl.topk(draw.reshape(-1), k=count).indices)

    @classmethod
    def apply(cls, module, name, amount):
        """Prune module.<name> with RandomUnstructured(amount)."""
        return cls._install(module, name, (), {"amount": amount}, None)


class L1Unstructured(BasePruningMethod):
    """Prune `amount` (a fraction, or a count) of the entries: those of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """default_mask with the `amount` smallest |t| entries set to zero."""
        count = _how_many(self.amount, t.numel())
        if not count:
            return default_mask.clone()
        smallest = _tl.topk(t.abs().reshape(-1), k=count, largest=False).indices
        return _zero_entries(default_mask, smallest)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prune module.<name> with L1Unstructured(amount) (ranked by importance_scores when given)."""
        return cls._install(module, name, (), {"amount": amount}, importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        """Ones on the kept channels (times default_mask)."""
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _how_many(self.amount, channels)
        if not count:
            return default_mask
        scores = _tl.rand(channels, device=t.device)
        cutoff = _tl.kthvalue(scores, k=count).values
        return _channel_mask(t, self.dim, scores > cutoff, default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Prune module.<name> with RandomStructured(amount, dim)."""
        return cls._install(module, name, (), {"amount": amount, "dim": dim}, None)


class LnStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim`: those of smallest L`n` norm (n as torch.norm's p)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        """Ones on the channels of largest norm (times default_mask)."""
        _check_structured(t, self.dim)
        axis = self.dim % t.dim()
        channels = t.shape[axis]
        count = _how_many(self.amount, channels)
        if not count:
            return default_mask
        norms = _tl.norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != axis])
        survivors = _tl.topk(norms, k=channels - count, largest=True).indices
        return _channel_mask(t, axis, survivors, default_mask)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prune module.<name> with LnStructured(amount, n, dim)."""
        return cls._install(module, name, (), {"amount": amount, "n": n, "dim": dim}, importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with the existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        """default_mask * the given mask."""
        if not _same_shape(default_mask, self.mask):
            raise AssertionError(f"CustomFromMask: the mask has shape {tuple(self.mask.shape)} but the tensor has "
                                 f"shape {tuple(default_mask.shape)}")
        return self.mask.to(dtype=default_mask.dtype) * default_mask

    @classmethod
    def apply(cls, module, name, mask):
        """Prune module.<name> with the given mask."""
        return cls._install(module, name, (), {"mask": mask}, None)


# ----------------------------------------------------------------------------------------------------
# the functional API

def identity(module, name):
    """Apply the Identity pruning to module.<name>; returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` random entries of module.<name>; returns module."""
    RandomUnstructured.apply(module, name, amount=amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of module.<name> of smallest magnitude; returns module."""
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels along `dim` of module.<name>; returns module."""
    RandomStructured.apply(module, name, amount=amount, dim=dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels along `dim` of module.<name> of smallest L`n` norm; returns module."""
    LnStructured.apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` as one vector with an unstructured method
    (e.g. L1Unstructured, amount=...): each tensor then gets its part of the global mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    pairs = list(parameters)
    scores_by_pair = {} if importance_scores is None else importance_scores
    if not isinstance(scores_by_pair, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    tensors = [getattr(mod, attr) for mod, attr in pairs]
    flat_scores = parameters_to_vector([scores_by_pair.get(pair, tensor) for pair, tensor in zip(pairs, tensors)])
    flat_start = parameters_to_vector([getattr(mod, f"{attr}_mask") if hasattr(mod, f"{attr}_mask")
                                       else _tl.ones_like(tensor) for (mod, attr), tensor in zip(pairs, tensors)])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"
    chain = PruningContainer(method)
    flat_mask = chain.compute_mask(flat_scores, flat_start)
    offset = 0
    for (mod, attr), tensor in zip(pairs, tensors):
        width = tensor.numel()
        CustomFromMask.apply(mod, attr, flat_mask[offset:offset + width].view_as(tensor))
        offset += width


def custom_from_mask(module, name, mask):
    """Prune module.<name> with `mask` (ones kept); returns module."""
    CustomFromMask.apply(module, name, mask=mask)
    return module


def remove(module, name):
    """Make the pruning of module.<name> permanent and remove its hook; returns module."""
    found = _hooks_for(module, name)
    if not found:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")
    key, hook = found[0]
    hook.remove(module)
    module._forward_pre_hooks.pop(key)
    return module


def is_pruned(module):
    """Whether any module in `module`'s tree has a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for _, sub in module.named_modules() for h in sub._forward_pre_hooks.values())
