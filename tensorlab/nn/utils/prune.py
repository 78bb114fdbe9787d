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
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs) (see the module docstring); returns the hook."""
        old_method = None
        found = []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                found.append(k)
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module} "
                                     f"(got {tuple(importance_scores.shape)}, parameter {tuple(orig.shape)})")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            default_mask = _tl.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        # the mask first: a method that fails leaves the module as it was
        mask = method.compute_mask(importance_scores, default_mask=default_mask)
        for k in found:
            del module._forward_pre_hooks[k]
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t * the mask this method computes (from importance_scores when given)."""
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(t.shape):
                raise AssertionError("importance_scores should have the same shape as tensor t")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _tl.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: module.<name> becomes the parameter <name>_orig holding the
        pruned values; <name>_orig and <name>_mask go away."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor; its mask is the last method's mask
    computed over what the earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1:
            methods = list(args[0])
            if methods:
                self._tensor_name = methods[0]._tensor_name
            for m in methods:
                self.add_pruning_method(m)
        else:
            for m in args:
                self.add_pruning_method(m)

    def add_pruning_method(self, method):
        """Append a method (it must prune the same tensor name)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask over the part of t that default_mask keeps, merged into default_mask."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype).clone()
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            keep = default_mask == 1
            partial = method.compute_mask(t[keep], default_mask=default_mask[keep])
            new_mask[keep] = partial.to(dtype=new_mask.dtype)
            return new_mask
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {n_dims}")
            others = [d for d in range(n_dims) if d != dim]
            keep_channel = (default_mask.sum(dim=others) != 0) if others else default_mask != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
            partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
            new_mask[slc] = partial.to(dtype=new_mask.dtype)
            return new_mask
        if kind == "global":
            return method.compute_mask(t, default_mask=default_mask).to(dtype=new_mask.dtype)
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones): the pruning layout without any change."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        """default_mask unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Add the identity pruning to module.<name>."""
        return super().apply(module, name)


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"torch.Size({list(t.shape)}) with {t.dim()} dims")


def _validate_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size torch.Size({list(t.shape)})")


def _nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _zero_flat(mask, indices):
    flat = mask.reshape(-1).clone()
    flat[indices] = 0
    return flat.reshape(mask.shape)


class RandomUnstructured(BasePruningMethod):
    """Prune `amount` (a fraction, or a count) of the entries, chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """default_mask with `amount` random entries set to zero."""
        size = t.numel()
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        mask = default_mask.clone()
        if k != 0:
            prob = _tl.rand_like(t, dtype=_tl.float32) if not t.is_floating_point() else _tl.rand_like(t)
            mask = _zero_flat(mask, _tl.topk(prob.reshape(-1), k=k).indices)
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        """Prune module.<name> with RandomUnstructured(amount)."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune `amount` (a fraction, or a count) of the entries: those of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """default_mask with the `amount` smallest |t| entries set to zero."""
        size = t.numel()
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        mask = default_mask.clone()
        if k != 0:
            mask = _zero_flat(mask, _tl.topk(t.abs().reshape(-1), k=k, largest=False).indices)
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prune module.<name> with L1Unstructured(amount) (ranked by importance_scores when given)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Ones on the kept channels (times default_mask)."""
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        if k == 0:
            return default_mask
        prob = _tl.rand(size, device=t.device)
        threshold = _tl.kthvalue(prob, k=k).values
        keep = prob > threshold
        mask = _tl.zeros_like(t)
        slc = [slice(None)] * t.dim()
        slc[self.dim] = keep
        mask[tuple(slc)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Prune module.<name> with RandomStructured(amount, dim)."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim`: those of smallest L`n` norm (n as torch.norm's p)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Ones on the channels of largest norm (times default_mask)."""
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        keep_n = size - k
        _validate_amount(k, size)
        dims = list(range(t.dim()))
        dim = dims[self.dim]
        dims.remove(dim)
        norm = _tl.norm(t, p=self.n, dim=dims)
        top = _tl.topk(norm, k=keep_n, largest=True)
        if k == 0:
            return default_mask
        mask = _tl.zeros_like(t)
        slc = [slice(None)] * t.dim()
        slc[dim] = top.indices
        mask[tuple(slc)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prune module.<name> with LnStructured(amount, n, dim)."""
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with the existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        """default_mask * the given mask."""
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"CustomFromMask: the mask has shape {tuple(self.mask.shape)} but the tensor has "
                                 f"shape {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        """Prune module.<name> with the given mask."""
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Apply the Identity pruning to module.<name>; returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` random entries of module.<name>; returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of module.<name> of smallest magnitude; returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels along `dim` of module.<name>; returns module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels along `dim` of module.<name> of smallest L`n` norm; returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` as one vector with an unstructured method
    (e.g. L1Unstructured, amount=...): each tensor then gets its part of the global mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", None) if hasattr(m, n + "_mask")
                                         else _tl.ones_like(getattr(m, n)) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + n].view_as(param))
        pointer += n


def custom_from_mask(module, name, mask):
    """Prune module.<name> with `mask` (ones kept); returns module."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of module.<name> permanent and remove its hook; returns module."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether any module in `module`'s tree has a pruning hook."""
    for _, sub in module.named_modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
