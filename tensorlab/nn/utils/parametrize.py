"""tensorlab.nn.utils.parametrize: express a parameter or buffer of a module as a function of other
tensors, with torch.nn.utils.parametrize's layout and semantics.

register_parametrization(module, "weight", P) moves the tensor to
module.parametrizations.weight.original (a ParametrizationList holding P), replaces the module's class
by a subclass "Parametrized<Class>" whose `weight` property computes P(original) at every read, and
whose setter runs the right_inverse chain into original. state_dict keys therefore read
"parametrizations.weight.original" (or original0, original1, ... when right_inverse returns several
tensors). Within `cached()` each parametrized tensor is computed once per (module, name)."""
from __future__ import annotations

import collections.abc
import contextlib
import copy
import threading

from ...tensor import Tensor
from .._grad import no_grad
from ..container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_state = threading.local()


def _cache():
    depth = getattr(_cache_state, "depth", 0)
    return _cache_state.values if depth else None


@contextlib.contextmanager
def cached():
    """Within this context, each parametrized tensor is computed once (at its first read) and the
    same tensor returned at every later read; the cache empties when the outermost context exits."""
    depth = getattr(_cache_state, "depth", 0)
    if depth == 0:
        _cache_state.values = {}
    _cache_state.depth = depth + 1
    try:
        yield
    finally:
        _cache_state.depth = depth
        if depth == 0:
            _cache_state.values = {}


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest, src):
    """dest takes src's value, keeping dest's identity (an optimizer holding dest sees the change)."""
    if dest is src:
        return
    with no_grad():
        dest.set_(src.detach() if src.requires_grad else src)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (applied in order) and the tensor(s) they start from:
    `original` (or original0, original1, ... when the last right_inverse returns a sequence)."""

    def __init__(self, modules, original, unsafe=False):
        modules = list(modules)
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                else:
                    originali = originali.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 "`unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}")
            if tuple(z.shape) != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 "`unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\nparametrized shape: {tuple(z.shape)}")

    def right_inverse(self, value):
        """Run the right_inverse chain (last parametrization first) and store the result in original."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_in_place(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                     f"{self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. Got element {i} of "
                                         f"type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                         f"`original{i}` has dtype {original_i.dtype}")
                    _set_in_place(original_i, tensor)

    def forward(self):
        """The parametrized tensor: the parametrizations applied in order to the original(s)."""
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in mods[1:]:
            x = module(x)
        return x


def _getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _deepcopy(self, memo):
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    # the copy gets a class of its own (the properties live on the class, one per parametrized name)
    base = type(self).__bases__[0]
    cls = type(type(self).__name__, (base,), {"__getstate__": _getstate, "__deepcopy__": _deepcopy})
    for name in replica.parametrizations.keys():
        setattr(cls, name, _property(name))
    replica.__class__ = cls
    return replica


def _inject_new_class(module):
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__getstate__": _getstate, "__deepcopy__": _deepcopy})


def _property(tensor_name):
    def get_parametrized(self):
        overrides = self.__dict__.get("_tl_functional_overrides")
        if overrides and tensor_name in overrides:  # stateless.functional_call's value replaces the parametrization
            return overrides[tensor_name]
        parametrization = self.parametrizations[tensor_name]
        values = _cache()
        if values is None:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = values.get(key)
        if tensor is None:
            tensor = values[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)
    return property(get_parametrized, set_original, doc=f"the parametrized tensor {tensor_name!r}")


def is_parametrized(module, tensor_name=None):
    """Whether `module` has any parametrization (or one on `tensor_name`)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> parametrization(original) (see the module docstring); a second
    registration on the same name is applied after the first. Returns module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {tuple(y.shape)}\n"
                                 f"parametrization(module.{tensor_name}).shape: {tuple(x.shape)}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: "
                                         f"{type(z).__name__}")
                    if z.dtype != y.dtype or tuple(z.shape) != tuple(y.shape):
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"dtype and shape as module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}: {y.dtype} {tuple(y.shape)}\n"
                                         f"returned: {z.dtype} {tuple(z.shape)}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = parametrizations
        setattr(module.__class__, tensor_name, _property(tensor_name))
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on `tensor_name`: the tensor becomes a plain parameter/buffer
    again, holding the current parametrized value (leave_parametrized=True) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set_in_place(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations of `from_module` (all, or the one on tensor_name) and their
    original tensors to `to_module`, registering on to_module the names it lacks. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations.keys()) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for p in source:
            register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                _set_in_place(target.original, source.original)
            else:
                for i in range(source.ntensors):
                    _set_in_place(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
