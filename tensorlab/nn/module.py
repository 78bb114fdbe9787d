"""Module: torch.nn.Module's registration, traversal, conversion and state_dict machinery.

Parameters, buffers and child modules live in three ordered dicts filled by __setattr__, so
`parameters()` and `state_dict()` list them in registration order, module by module, exactly
as torch does for the same architecture."""
from __future__ import annotations

import functools
import itertools
from collections import OrderedDict, namedtuple

from .. import _warn, dtypes
from ..ops.copy import parse_to
from ..tensor import Tensor
from ._grad import no_grad, typename, zero_grads
from .buffer import Buffer
from .hooks import BackwardHook, RemovableHandle
from .parameter import Parameter

_EXTRA_STATE = "_extra_state"
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join((spaces * " ") + ln for ln in lines)


def _check_member_name(kind, name, owner, table):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\"" + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(owner, name) and name not in table:
        raise KeyError(f"attribute '{name}' already exists")


def _restore_extra_state(module, old):
    try:
        module.set_extra_state(old)
    except Exception:  # noqa: BLE001 - the load's own exception is the one to report
        pass


class Module:
    """Base class of every layer: subclasses assign Parameters and Modules as attributes in
    __init__ and define forward()."""

    training: bool
    _version = 1  # state_dict metadata, as torch's

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        for name in _HOOK_DICTS:
            d[name] = OrderedDict()

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())
        if any(self.__dict__[name] for name in _HOOK_DICTS):
            self.__dict__["_has_hooks"] = True
        self.__dict__.setdefault("_non_persistent_buffers_set", set())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # True once a forward/backward hook was registered on this module (sticky: a removed hook
    # leaves it set, and _call_with_hooks then finds the dicts empty): __call__'s one read
    _has_hooks = False

    def __call__(self, *args, **kwargs):
        if not self._has_hooks:
            return self.forward(*args, **kwargs)
        return _call_with_hooks(self, args, kwargs)

    # -- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (a non-tuple is wrapped in one); with_kwargs=True:
        hook(module, args, kwargs) -> None or (new_args, new_kwargs). Runs before forward()."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        self.__dict__["_has_hooks"] = True
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output)) -> None or a
        new output. always_call=True: also called when forward() raised."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        self.__dict__["_has_hooks"] = True
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, when the outputs' gradients are known."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        self.__dict__["_has_hooks"] = True
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input, once the gradients with
        respect to the module's inputs are computed."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        self.__dict__["_has_hooks"] = True
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    # -- registration ---------------------------------------------------------------------------
    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_member_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            f"(tensorlab.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             f"the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_member_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            f"(tensorlab Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if "_modules" not in self.__dict__:
            raise AttributeError("cannot assign module before Module.__init__() call")
        _check_member_name("module", name, self, self._modules)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_member(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                f"(tensorlab.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_member(name, d, self._parameters, self._buffers)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                f"(tensorlab.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                f"(tensorlab.nn.Buffer, tensorlab Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_member(self, name, *tables):
        for table in tables:
            table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            members = d.get(table)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # -- traversal ------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, members_of, prefix, recurse, remove_duplicate):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in members_of(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _attribute_at(self, target):
        """(owning submodule, name, value) for a dotted path such as "encoder.layers.0.weight"."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod, name, getattr(mod, name)

    def get_parameter(self, target):
        _, name, param = self._attribute_at(target)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        mod, name, buffer = self._attribute_at(target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes ----------------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        zero_grads(self.parameters(), set_to_none)

    def compile(self, *args, **kwargs):
        """torch's in-place Module.compile(): tensorlab is eager, so this validates the arguments
        as tl.compile does (backend "eager" only, a one-time note) and changes nothing."""
        from .._compile import compile as _compile
        _compile(self, *args, **kwargs)

    # -- conversion -----------------------------------------------------------------------------
    def _apply(self, fn):
        """fn applied to every parameter, gradient and buffer. Parameters keep their identity
        (their payload is swapped, as torch's `param.data = fn(param)`), so an optimizer built
        before `.to()` still updates the converted tensors."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)  # keeps param's identity: optimizers holding it see the change
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        non_blocking = kwargs.pop("non_blocking", False)
        memory_format = kwargs.pop("memory_format", None)
        unknown = set(kwargs) - {"device", "dtype"}
        if unknown:
            raise TypeError(f"to() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        device, dtype = parse_to(args, kwargs)
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")

        def convert(t):
            dt = dtype if t.is_floating_point() else None
            if memory_format is not None and t.dim() in (4, 5):  # torch: only 4-d/5-d members change layout
                return t.to(device=device, dtype=dt, non_blocking=non_blocking, memory_format=memory_format)
            return t.to(device=device, dtype=dt, non_blocking=non_blocking)
        return self._apply(convert)

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._cast_floating(dtypes.float32)

    def double(self):
        return self._cast_floating(dtypes.float64)

    def half(self):
        return self._cast_floating(dtypes.float16)

    def bfloat16(self):
        return self._cast_floating(dtypes.bfloat16)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def share_memory(self):
        """Every parameter, gradient and buffer moved into shared memory (Tensor.share_memory_), so
        processes given this module (multiprocessing, Hogwild training) update the same tensors."""
        return self._apply(lambda t: t.share_memory_())

    # -- state_dict -----------------------------------------------------------------------------
    def _local_state(self):
        """This module's own parameters and persistent buffers, in state_dict order."""
        bufs = ((k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set)
        return [(k, v) for k, v in itertools.chain(self._parameters.items(), bufs) if v is not None]

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        for name, t in self._local_state():
            destination[prefix + name] = t if keep_vars else t.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        local = dict(self._local_state())
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected tensorlab.Tensor or '
                              f"Tensor-like object from checkpoint but received {type(src)}")
                continue
            if param.dim() == 0 and src.dim() == 1 and src.shape[0] == 1:
                src = src[0]  # checkpoints from before 0-dim tensors stored scalars as shape [1]
            if src.shape != param.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {src.shape} from checkpoint, "
                              f"the shape in current model is {param.shape}.")
                continue
            plan.append((self, name, param, src))
        extra_key = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                plan.append((self, _EXTRA_STATE, None, state_dict[extra_key]))
            else:
                missing.append(extra_key)
        elif extra_key in state_dict:
            unexpected.append(extra_key)
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)
                if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local):
                    unexpected.append(key)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                sub = {k: v for k, v in state_dict.items() if k.startswith(child_prefix)}
                child._plan_load(sub, child_prefix, plan, missing, unexpected, errors)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy (or with assign=True, install) the state_dict's tensors into this module's
        parameters and persistent buffers. Every key and shape is checked before anything is
        written, so a failed load leaves the module unchanged (torch copies the matching
        entries before it raises)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        plan, missing, unexpected, errors = [], [], [], []
        self._plan_load(state_dict, "", plan, missing, unexpected, errors)
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        from .._journal import Journal
        from ..ops._common import check_writable
        tensors = [p for p in plan if p[2] is not None]
        extras = [p for p in plan if p[2] is None]
        if not assign:
            for module, name, target, src in tensors:
                check_writable(target, f"load_state_dict ({name!r} of {type(module).__name__})")
        # everything checked: the copies (and extra states, last) run under an undo journal, so a
        # failure anywhere (a copy, a set_extra_state that raises) leaves the module as it was
        with no_grad(), Journal() as journal:
            for module, name, target, src in tensors:
                if assign:
                    journal.mapping(module._parameters if name in module._parameters else module._buffers)
                else:
                    journal.tensor(target)
            for module, name, target, src in tensors:
                if assign:
                    if isinstance(target, Parameter):
                        src = Parameter(src, requires_grad=target.requires_grad)
                    if name in module._parameters:
                        module._parameters[name] = src
                    else:
                        module._buffers[name] = src
                else:
                    target.detach().copy_(src)
            for module, _, _, src in extras:
                old = module.get_extra_state()
                module.set_extra_state(src)
                journal.on_rollback(functools.partial(_restore_extra_state, module, old))
        return _IncompatibleKeys(missing, unexpected)

    def get_extra_state(self):
        """Override (with set_extra_state) to store non-tensor state in state_dict under
        "<prefix>_extra_state"."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # -- repr -----------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _call_with_hooks(module, args, kwargs):
    """torch's Module._call_impl when the module has hooks: pre-hooks (may replace args/kwargs),
    full backward hooks set up around the inputs, forward, forward hooks (may replace the output),
    then the outputs wrapped for the backward hooks. Forward hooks registered with always_call=True
    still run when forward() (or an earlier hook) raised."""
    result = None
    called = set()
    try:
        for hook_id, hook in list(module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                r = hook(module, args, kwargs)
                if r is not None:
                    if isinstance(r, tuple) and len(r) == 2:
                        args, kwargs = r
                    else:
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
            else:
                r = hook(module, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw_hook = None
        if module._backward_hooks or module._backward_pre_hooks:
            bw_hook = BackwardHook(module, list(module._backward_hooks.values()),
                                   list(module._backward_pre_hooks.values()))
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in list(module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called:
                called.add(hook_id)
            if hook_id in module._forward_hooks_with_kwargs:
                r = hook(module, args, kwargs, result)
            else:
                r = hook(module, args, result)
            if r is not None:
                result = r
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                _warn.warn(f"For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                           f"but received {type(result)}")
            result = bw_hook.setup_output_hook(result)
        return result
    except Exception:
        for hook_id, hook in list(module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called and hook_id not in called:
                try:
                    if hook_id in module._forward_hooks_with_kwargs:
                        r = hook(module, args, kwargs, result)
                    else:
                        r = hook(module, args, result)
                    if r is not None:
                        result = r
                except Exception as e:
                    _warn.warn("module forward hook with ``always_call=True`` raised an exception that was silenced as "
                               f"another error was raised in forward: {e}")
        raise
