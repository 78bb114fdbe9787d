"""tensorlab.nn.utils.parametrize: express a parameter or buffer of a module as a function of other
tensors, with torch.nn.utils.parametrize's layout and semantics.

register_parametrization(module, "weight", P) moves the tensor to
module.parametrizations.weight.original (a ParametrizationList holding P), replaces the module's class
by a subclass "Parametrized<Class>" whose `weight` property computes P(original) at every read, and
whose setter runs the right_inverse chain into original. state_dict keys therefore read
"parametrizations.weight.original" (or original0, original1, ... when right_inverse returns several
tensors). Within `cached()` each parametrized tensor is computed once per (module, name)."""
from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Sequence

from ...tensor import Tensor
from .._grad import no_grad
from ..container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]


# ----------------------------------------------------------------------------------------------------
# the cached() context: a per-thread memo of computed tensors, alive while any context is open

class _Memo(threading.local):
    def __init__(self):
        self.open = 0
        self.table = {}


_MEMO = _Memo()


@contextlib.contextmanager
def cached():
    """Within this context, each parametrized tensor is computed once (at its first read) and the
    same tensor returned at every later read; the cache empties when the outermost context exits."""
    if not _MEMO.open:
        _MEMO.table = {}
    _MEMO.open += 1
    try:
        yield
    finally:
        _MEMO.open -= 1
        if not _MEMO.open:
            _MEMO.table = {}


# ----------------------------------------------------------------------------------------------------
# helpers

def _attach(owner, key, tensor):
    """Register tensor on owner as a parameter when it is one, else as a buffer."""
    (owner.register_parameter if isinstance(tensor, Parameter) else owner.register_buffer)(key, tensor)


def _overwrite(dest, src):
    """dest takes src's value, keeping dest's identity (an optimizer holding dest sees the change)."""
    if src is not dest:
        with no_grad():
            dest.set_(src.detach() if src.requires_grad else src)


def _slot(index):
    return f"original{index}"


def _kind(value):
    return type(value).__name__


def _inverse_through(chain, value, tolerate_missing):
    """value sent back through chain's right_inverse methods (last first). A member without one is
    skipped (tolerate_missing) or an error; a NotImplementedError is skipped when tolerated."""
    for member in reversed(list(chain)):
        inverse = getattr(member, "right_inverse", None)
        if inverse is None:
            if tolerate_missing:
                continue
            raise RuntimeError(f"parametrization {_kind(member)} does not implement right_inverse.")
        if not tolerate_missing:
            value = inverse(value)
            continue
        try:
            value = inverse(value)
        except NotImplementedError:
            pass
    return value


def _describe(t):
    return t.dtype, tuple(t.shape)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (applied in order) and the tensor(s) they start from:
    `original` (or original0, original1, ... when the last right_inverse returns a sequence)."""

    def __init__(self, modules, original, unsafe=False):
        members = list(modules)
        if not members:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(members)
        self.unsafe = unsafe
        before_dtype, before_shape = _describe(original)
        with no_grad():
            start = _inverse_through(self, original, tolerate_missing=True)
        single = isinstance(start, Tensor)
        if not single and not isinstance(start, Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {_kind(start)}")
        self.is_tensor = single
        self.ntensors = len(start) if not single else 1
        if single:
            self._adopt_single(original, start)
        else:
            self._adopt_many(original, start)
        if not unsafe:
            self._check_forward(before_dtype, before_shape)

    def _adopt_single(self, original, start):
        if start.dtype != original.dtype:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                             f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {start.dtype}")
        _overwrite(original, start)  # original keeps its identity (and its Parameter-ness)
        _attach(self, "original", original)

    def _adopt_many(self, original, pieces):
        wants_grad = original.requires_grad
        as_param = isinstance(original, Parameter)
        for index, piece in enumerate(pieces):
            if not isinstance(piece, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                 f"Got element {index} of the sequence with type {_kind(piece)}.")
            held = piece.detach()
            held = Parameter(held, wants_grad) if as_param else held.requires_grad_(wants_grad)
            _attach(self, _slot(index), held)

    def _check_forward(self, dtype, shape):
        produced = self()
        if not isinstance(produced, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {_kind(produced)}.")
        got_dtype, got_shape = _describe(produced)
        if got_dtype != dtype:
            raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                             "`unsafe` flag is enabled.\n"
                             f"unparametrized dtype: {dtype}\nparametrized dtype: {got_dtype}")
        if got_shape != shape:
            raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                             "`unsafe` flag is enabled.\n"
                             f"unparametrized shape: {shape}\nparametrized shape: {got_shape}")

    def _sources(self):
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, _slot(i)) for i in range(self.ntensors))

    def right_inverse(self, value):
        """Run the right_inverse chain (last parametrization first) and store the result in original."""
        with no_grad():
            result = _inverse_through(self, value, tolerate_missing=False)
            if self.is_tensor:
                self._store_single(result)
            else:
                self._store_many(result)

    def _store_single(self, result):
        target = self.original
        if not isinstance(result, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {_kind(result)}")
        if result.dtype != target.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {result.dtype} while "
                             f"`original` has dtype {target.dtype}")
        _overwrite(target, result)

    def _store_many(self, result):
        if not isinstance(result, Sequence):
            raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {_kind(result)}.")
        if len(result) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(result)}.")
        for index, (target, piece) in enumerate(zip(self._sources(), result)):
            if not isinstance(piece, Tensor):
                raise ValueError(f"`right_inverse` must return a sequence of tensors. Got element {index} of "
                                 f"type {_kind(piece)}")
            if piece.dtype != target.dtype:
                raise ValueError(f"Tensor {index} returned by `right_inverse` has dtype {piece.dtype} while "
                                 f"`original{index}` has dtype {target.dtype}")
            _overwrite(target, piece)

    def forward(self):
        """The parametrized tensor: the parametrizations applied in order to the original(s)."""
        head, *tail = list(self)
        out = head(*self._sources())
        for member in tail:
            out = member(out)
        return out


# ----------------------------------------------------------------------------------------------------
# the per-instance subclass that carries the properties

def _refuse_pickle(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _subclass_of(base, name):
    return type(name, (base,), {"__getstate__": _refuse_pickle, "__deepcopy__": _copy_parametrized})


def _copy_parametrized(self, memo):
    done = memo.get(id(self))
    if done is not None:
        return done
    own_cls = type(self)
    twin = own_cls.__new__(own_cls)
    memo[id(self)] = twin
    twin.__dict__ = copy.deepcopy(self.__dict__, memo)
    # a class of the copy's own: the properties live on the class, one per parametrized name
    fresh_cls = _subclass_of(own_cls.__mro__[1], own_cls.__name__)
    for key in twin.parametrizations.keys():
        setattr(fresh_cls, key, _accessor(key))
    twin.__class__ = fresh_cls
    return twin


def _accessor(tensor_name):
    """The property that stands for module.<tensor_name>."""

    def read(self):
        replaced = self.__dict__.get("_tl_functional_overrides")
        if replaced and tensor_name in replaced:  # stateless.functional_call's value replaces the parametrization
            return replaced[tensor_name]
        compute = self.parametrizations[tensor_name]
        if not _MEMO.open:
            return compute()
        slot = (id(self), tensor_name)
        hit = _MEMO.table.get(slot)
        if hit is None:
            hit = _MEMO.table[slot] = compute()
        return hit

    def write(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    return property(read, write, doc=f"the parametrized tensor {tensor_name!r}")


# ----------------------------------------------------------------------------------------------------
# the public functions

def is_parametrized(module, tensor_name=None):
    """Whether `module` has any parametrization (or one on `tensor_name`)."""
    table = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(table, ModuleDict):
        return False
    return bool(len(table)) if tensor_name is None else tensor_name in table


def _vet_extra(module, tensor_name, parametrization):
    """The checks of a second parametrization on an already parametrized name (safe mode)."""
    current = getattr(module, tensor_name)
    mapped = parametrization(current)
    if not isinstance(mapped, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {_kind(mapped)}.")
    (cur_dtype, cur_shape), (new_dtype, new_shape) = _describe(current), _describe(mapped)
    if new_dtype != cur_dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {cur_dtype}\n"
                         f"parametrization(module.{tensor_name}).dtype: {new_dtype}")
    if new_shape != cur_shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {cur_shape}\n"
                         f"parametrization(module.{tensor_name}).shape: {new_shape}")
    inverse = getattr(parametrization, "right_inverse", None)
    if inverse is None:
        return
    try:
        back = inverse(mapped)
    except NotImplementedError:
        return
    if not isinstance(back, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {_kind(back)}")
    if _describe(back) != (cur_dtype, cur_shape):
        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                         f"dtype and shape as module.{tensor_name}, unless the `unsafe` flag is "
                         f"enabled.\nmodule.{tensor_name}: {cur_dtype} {cur_shape}\n"
                         f"returned: {back.dtype} {tuple(back.shape)}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> parametrization(original) (see the module docstring); a second
    registration on the same name is applied after the first. Returns module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _vet_extra(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe = chain.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        plain = type(module)
        module.__class__ = _subclass_of(plain, f"Parametrized{plain.__name__}")
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = chain
    setattr(type(module), tensor_name, _accessor(tensor_name))
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on `tensor_name`: the tensor becomes a plain parameter/buffer
    again, holding the current parametrized value (leave_parametrized=True) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        keeper = chain.original
        if leave_parametrized:
            with no_grad():
                final = getattr(module, tensor_name)
            _overwrite(keeper, final)
    elif leave_parametrized:
        final = getattr(module, tensor_name)
        keeper = Parameter(final.detach(), True) if final.requires_grad else final.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                         "in terms of a sequence of tensors.")
    plain = type_before_parametrizations(module)
    delattr(type(module), tensor_name)
    module.parametrizations.pop(tensor_name)
    _attach(module, tensor_name, keeper)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = plain
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    cls = type(module)
    return cls.__bases__[0] if is_parametrized(module) else cls


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations of `from_module` (all, or the one on tensor_name) and their
    original tensors to `to_module`, registering on to_module the names it lacks. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    wanted = [tensor_name] if tensor_name is not None else list(from_module.parametrizations.keys())
    for key in wanted:
        if not hasattr(to_module, key):
            setattr(to_module, key, Parameter(getattr(from_module, key)))
        source_chain = from_module.parametrizations[key]
        for member in source_chain:
            register_parametrization(to_module, key, member)
        target_chain = to_module.parametrizations[key]
        with no_grad():
            for dst, src in zip(target_chain._sources(), source_chain._sources()):
                _overwrite(dst, src)
    return to_module
