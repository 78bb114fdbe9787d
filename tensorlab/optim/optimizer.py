"""Optimizer: torch.optim.Optimizer's parameter groups, per-parameter state, zero_grad and
state_dict / load_state_dict. Subclasses implement step()."""
from __future__ import annotations

import copy
import functools
import inspect
import threading
from collections import defaultdict
from itertools import chain

from .. import _warn
from .._journal import Journal
from ..storage import write_lock as _storage_write_lock
from ..nn._grad import enable_grad, typename, zero_grads
from ..ops.creation import zeros_like
from ..tensor import Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


_LOCK_GUARD = threading.Lock()


def _optimizer_lock(opt):
    """The optimizer's own re-entrant lock (made on first use, so optimizers rebuilt by pickle or
    deepcopy get one too): step, zero_grad and load_state_dict of one optimizer never interleave."""
    lock = opt.__dict__.get("_step_lock")
    if lock is None:
        with _LOCK_GUARD:
            lock = opt.__dict__.setdefault("_step_lock", threading.RLock())
    return lock


def _validate_step(opt):
    """Everything step() will read, checked before anything moves: each gradient has its
    parameter's shape and device, each per-parameter state tensor that is not a scalar too."""
    name = type(opt).__name__
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            g = p._grad
            if g is None:
                continue
            if g.shape != p.shape:
                raise RuntimeError(f"{name}.step: the gradient of parameter {pi} of param group {gi} has shape "
                                   f"{list(g.shape)} but the parameter has shape {list(p.shape)}; nothing was "
                                   "updated (assign a gradient of the parameter's shape)")
            if g.device != p.device:
                raise RuntimeError(f"{name}.step: the gradient of parameter {pi} of param group {gi} is on {g.device} "
                                   f"but the parameter is on {p.device}; nothing was updated")
            state = opt.state.get(p)
            if state:
                for k, v in state.items():
                    if isinstance(v, Tensor) and v.dim() and (v.shape != p.shape or v.device != p.device) \
                            and k not in _FACTORED_KEYS:
                        raise RuntimeError(
                            f"{name}.step: state {k!r} of parameter {pi} of param group {gi} has shape "
                            f"{list(v.shape)} on {v.device} but the parameter has shape {list(p.shape)} on "
                            f"{p.device}; nothing was updated (load a state saved for this parameter)")


def _refuse_sparse_grads(opt):
    """torch's refusal of sparse gradients (tensorlab/sparse) by the optimizers that take dense ones only,
    before any fast path reads a gradient's bytes."""
    for group in opt.param_groups:
        for p in group["params"]:
            g = p._grad
            if g is not None and g.is_sparse and not opt._sparse_grads_ok(group):
                name = type(opt).__name__
                raise RuntimeError(f"{name} does not support sparse gradients" if name not in ("Adam", "AdamW") else
                                   "Adam does not support sparse gradients, please consider SparseAdam instead")


def _journal_step(opt, journal):
    """Record what a step may write: each parameter with a gradient, its state dict and state
    tensors (a parameter without state loses what the failed step created)."""
    state = opt.state
    for group in opt.param_groups:
        for p in group["params"]:
            if p._grad is None:
                continue
            journal.tensor(p)
            st = state.get(p)
            if st is None:
                journal.on_rollback(functools.partial(state.pop, p, None))
                continue
            journal.mapping(st)
            for v in st.values():
                if isinstance(v, Tensor):
                    journal.tensor(v)
                elif isinstance(v, (list, tuple)):
                    journal.tensors(x for x in v if isinstance(x, Tensor))


def _atomic_step(fn):
    """Wrap an Optimizer subclass's step(): under the optimizer's lock, run the closure, check every
    gradient and state, then run the update under an undo journal, so that a failure anywhere in
    it leaves every parameter and state tensor as it was (and the exception propagates)."""
    if getattr(fn, "_tl_atomic", False):
        return fn
    params = list(inspect.signature(fn).parameters)
    takes_closure = len(params) >= 2 and params[1] == "closure"

    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        with _optimizer_lock(self):
            if self.__dict__.get("_tl_stepping"):
                return fn(self, *args, **kwargs)  # a subclass's step calling super().step()
            closure = None
            if takes_closure and len(args) <= 1 and set(kwargs) <= {"closure"}:
                closure = args[0] if args else kwargs.get("closure")
                loss = self._closure_loss(closure)
                args, kwargs = (), {}
            self.__dict__["_tl_stepping"] = True
            try:
                # the update holds storage.write_lock, which tl.save copies storages under: a checkpoint
                # taken while another thread trains holds one step's values, never half a step
                with _storage_write_lock:
                    _refuse_sparse_grads(self)
                    fast = getattr(self, "_tl_fast_step", None)
                    if fast is not None and fast():
                        # the whole step in a form that cannot fail once it writes (optim/_adam_cpu.py,
                        # _sgd_cpu.py), taken only when every gradient and state has its parameter's
                        # shape, dtype and device (what _validate_step checks)
                        return loss if closure is not None else None
                    _validate_step(self)
                    with Journal() as journal:
                        _journal_step(self, journal)
                        result = fn(self, *args, **kwargs)
            finally:
                self.__dict__["_tl_stepping"] = False
            return loss if closure is not None else result

    step._tl_atomic = True
    return step


class Optimizer:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _atomic_step(cls.__dict__["step"])

    def _sparse_grads_ok(self, group):
        """Whether step() takes sparse COO gradients for this group (SparseAdam; torch's others refuse)."""
        return False

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        # named parameters ((name, tensor) pairs, as named_parameters() yields) keep their names
        tensors = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {typename(p)}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or getattr(p, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            _warn.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                       "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information")
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current_group_txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current_group_txt} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        params = [p for g in self.param_groups for p in g["params"]]
        with _optimizer_lock(self), Journal() as journal:
            if not set_to_none:
                # a sparse gradient's zero_ swaps in new parts whole (tensorlab/sparse): nothing to copy
                journal.tensors(p._grad for p in params if p._grad is None or not p._grad.is_sparse)
            # a failure restores the gradients' values and which parameters had one
            saved = [(p, p._grad) for p in params]
            journal.on_rollback(functools.partial(_restore_grads, saved))
            zero_grads(params, set_to_none)

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__}.step: Optimizer subclasses must implement step()")

    @staticmethod
    def _gradients(group):
        """(p, p detached, its gradient detached and negated when the group maximizes) for each
        parameter of `group` that has a gradient."""
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            grad = grad.detach()
            yield p, p.detach(), -grad if group["maximize"] else grad

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state_dict -----------------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: per-parameter state}, 'param_groups': [group with 'params' as
        indices]}. Indices number the parameters in group order; tensors are not copied."""
        mapping = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                mapping.setdefault(id(p), len(mapping))
            packed["params"] = [mapping[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore state and hyperparameters saved by state_dict(). State tensors are copied to
        each parameter's device (and dtype, for floating parameters; 'step' is kept as is), so
        later steps never write into the dict that was loaded."""
        with _optimizer_lock(self):
            self._load_state_dict(state_dict)

    def _load_state_dict(self, state_dict):
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict) \
                or not isinstance(state_dict.get("param_groups"), (list, tuple)):
            raise TypeError(f"{type(self).__name__}.load_state_dict: expected a dict with a 'state' dict and a "
                            f"'param_groups' list (as state_dict() returns), got {typename(state_dict)}")
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if not all(isinstance(s, dict) and isinstance(s.get("params"), (list, tuple)) for s in saved_groups):
            raise TypeError(f"{type(self).__name__}.load_state_dict: every saved param group must be a dict with a "
                            "'params' list")
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        for g, s in zip(groups, saved_groups):
            _check_group_values(self, g, s)
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                _check_param_state(self, k, param, v)
                # torch: the saved group's capturable / fused decide where 'step' goes
                group = next((g for g in saved_groups if k in g["params"]), {})
                state[param] = _cast(param, v, step_on_device=bool(group.get("capturable") or group.get("fused")))
            else:
                state[k] = v
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"


# per-parameter state entries that must have their parameter's shape, and the scalar entries
_BUFFER_KEYS = frozenset(("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "acc_delta",
                          "sum", "grad_avg", "prev", "step_size", "ax"))
_FACTORED_KEYS = frozenset(("row_var", "col_var"))  # Adafactor's factored second moments (not p's shape)
_SCALAR_KEYS = frozenset(("step", "mu_product", "eta", "mu"))  # eta, mu: ASGD's 0-dim states


def _check_param_state(opt, index, param, value):
    """An optimizer state the next step could not use is refused at load (ValueError/TypeError),
    before anything changes: buffers of another shape or not tensors, a step that is no number."""
    name = type(opt).__name__
    if not isinstance(value, dict):
        raise TypeError(f"{name}.load_state_dict: the state of parameter {index} must be a dict, got "
                        f"{typename(value)}")
    for k, v in value.items():
        if k in _BUFFER_KEYS:
            if v is None and k == "momentum_buffer":
                continue
            if not isinstance(v, Tensor):
                raise TypeError(f"{name}.load_state_dict: state {k!r} of parameter {index} must be a tensor, got "
                                f"{typename(v)}")
            if v.shape != param.shape:
                raise ValueError(f"{name}.load_state_dict: state {k!r} of parameter {index} has shape "
                                 f"{list(v.shape)}, but the parameter has shape {list(param.shape)}")
            if v.is_complex() and not param.is_complex():
                raise ValueError(f"{name}.load_state_dict: state {k!r} of parameter {index} is complex "
                                 f"({v.dtype}), but the parameter is {param.dtype}")
        elif k in _SCALAR_KEYS:
            if isinstance(v, Tensor):
                if v.numel() != 1 or v.is_complex():
                    raise ValueError(f"{name}.load_state_dict: state {k!r} of parameter {index} must be a real "
                                     f"one-element tensor, got shape {list(v.shape)} {v.dtype}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{name}.load_state_dict: state {k!r} of parameter {index} must be a number or a "
                                f"one-element tensor, got {typename(v)}")


def _is_number(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or (isinstance(v, Tensor) and v.numel() == 1)


def _check_group_values(opt, group, saved):
    """A saved hyperparameter of another kind than the optimizer's (a string lr, betas that are
    not two numbers) is refused at load, not at the next step."""
    name = type(opt).__name__
    for k, cur in group.items():
        if k in ("params", "param_names") or k not in saved:
            continue
        v = saved[k]
        if _is_number(cur) and not _is_number(v):
            raise TypeError(f"{name}.load_state_dict: param group entry {k!r} must be a number, got {typename(v)} "
                            f"({v!r})")
        if isinstance(cur, tuple) and all(_is_number(x) for x in cur) and not (
                isinstance(v, (tuple, list)) and len(v) == len(cur) and all(_is_number(x) for x in v)):
            raise TypeError(f"{name}.load_state_dict: param group entry {k!r} must be {len(cur)} numbers, got "
                            f"{v!r}")


def _restore_grads(saved):
    for p, g in saved:
        p._grad = g


def _cast(param, value, key=None, step_on_device=False):
    """A copy of a saved state value with its tensors on param's device (and dtype); 'step' stays
    where it was saved unless the group is capturable or fused (then float32 on param's device)."""
    if key == "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
        # a step saved as a number (older torch): a tensor, as torch's __setstate__ makes it
        from .. import dtypes
        from ..ops.creation import tensor
        return tensor(float(value), dtype=dtypes.float32, device=param.device if step_on_device else "cpu")
    if isinstance(value, Tensor):
        if key == "step":
            if step_on_device:
                from .. import dtypes
                return value.to(dtype=dtypes.float32, device=param.device, copy=True)
            return value.clone()
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device, copy=True)
        return value.to(device=param.device, copy=True)
    if isinstance(value, dict):
        return {k: _cast(param, v, k, step_on_device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v, None, step_on_device) for v in value)
    return value


# -- implementation keywords (foreach, fused, capturable, differentiable) -------------------------
# tensorlab has one implementation of each update; `foreach` and `fused` are accepted and checked as
# torch checks them and select the same arithmetic (fused groups keep their step counters on the
# parameter's device, as torch). `capturable` (CUDA only) keeps step counters on the device and
# computes the bias corrections from them as tensors (torch's capturable branch: no host read),
# `differentiable` runs step() with grad mode on, writing into the parameters themselves so that
# autograd records the update (Adam's tensor-step branch, as torch).
CAPTURABLE_DEVICES = ["cuda"]
FUSED_DEVICES = ["cuda", "cpu"]


def _check_fused_flags(fused, foreach, differentiable):
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_param(p):
    if not (p.device.type in FUSED_DEVICES and p.is_floating_point()):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{FUSED_DEVICES} but {p.dtype} and {p.device.type}")


def _check_capturable(p, *scalars, what="params and state_steps"):
    if not (p.device.type in CAPTURABLE_DEVICES and all(s.device.type == p.device.type for s in scalars)):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: {CAPTURABLE_DEVICES}.")


def _scalar_state(p, group, value):
    """A float32 0-dim state scalar (step, mu_product): on the CPU, as torch keeps it, unless the
    group is capturable or fused (then on the parameter's device)."""
    from .. import dtypes
    from ..ops.creation import tensor
    on_device = group.get("capturable") or group.get("fused")
    return tensor(float(value), dtype=dtypes.float32, device=p.device if on_device else "cpu")


def _grad_mode(optimizer):
    """torch's _use_grad_for_differentiable: step() runs with grad mode = defaults['differentiable']."""
    from ..autograd import set_grad_enabled
    return set_grad_enabled(bool(optimizer.defaults.get("differentiable", False)))


def _params_and_grads(group):
    """(p, the tensor to update, its gradient, negated when the group maximizes) for each parameter
    with a gradient: detached (autograd unaware of the update) unless the group is differentiable."""
    differentiable = group.get("differentiable", False)
    maximize = group["maximize"]
    for p in group["params"]:
        grad = p._grad
        if grad is None:
            continue
        if differentiable:
            yield p, p, (-grad if maximize else grad)
            continue
        # step() runs under no_grad (_grad_mode): in-place updates of p itself record nothing, so
        # only a gradient that is part of a graph (create_graph) is detached
        if grad._requires_grad:
            grad = grad.detach()
        yield p, p, (-grad if maximize else grad)


_NAMES = {"eps": "epsilon"}  # torch's words in "Invalid epsilon value"


def _check_nonnegative(**values):
    """torch's hyperparameter checks, in the order given: ValueError 'Invalid <name> value: v'."""
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"Invalid {_NAMES.get(name, name)} value: {v}")


def _check_betas(betas):
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _group_defaults(optimizer, **defaults):
    """__setstate__'s part for state pickled by an older torch: options it did not have yet."""
    for group in optimizer.param_groups:
        for k, v in defaults.items():
            group.setdefault(k, v)


def _first_state(state, p, group, *buffers):
    """A parameter's state at its first step: the step counter and zero buffers named `buffers`."""
    if not state:
        state["step"] = _scalar_state(p, group, 0.0)
        for name in buffers:
            state[name] = zeros_like(p)


def _count_step(p, group, step):
    """step += 1 (a capturable group's step must live with its parameter first)."""
    if group["capturable"]:
        _check_capturable(p, step)
    step.add_(1)


def _decay(grad, param, weight_decay, lr=None, decoupled=False):
    """L2 weight decay as torch adds it to the gradient, or decoupled (AdamW's) on the parameter."""
    if weight_decay == 0:
        return grad
    if decoupled:
        param.mul_(1 - lr * weight_decay)
        return grad
    return grad.add(param, alpha=weight_decay)


def _adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2):
    """Adam's running first and second moments of the gradient, in place."""
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _value(x):
    """A hyperparameter as a Python number (a 1-element tensor lr is read once per step)."""
    return x.item() if isinstance(x, Tensor) else x
