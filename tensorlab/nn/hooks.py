"""Module hooks: the removable handle every register_*_hook returns (torch.utils.hooks.RemovableHandle)
and the full backward hook machinery (torch.utils.hooks.BackwardHook), which wraps a module's input
and output tensors in an identity autograd Function so the engine's node hooks see the gradients
with respect to the module's inputs and outputs."""
from __future__ import annotations

import weakref
from collections import OrderedDict

from .. import _warn
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor


class RemovableHandle:
    """A handle that removes one hook from its dict(s) with .remove(), or at the end of a `with`."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2] if d is not None) if len(state) > 2 else ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class BackwardHookFunction(Function):
    """Identity on every tensor argument: its node is where a module's gradients are observed."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if isinstance(a, Tensor) and not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(indices, values, size):
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class BackwardHook:
    """One forward call's full backward hooks: grad_outputs are caught on the outputs' identity
    node, the user's hooks run on the inputs' identity node with (module, grad_input, grad_output)
    and may replace grad_input; when no input needs grad they run at the outputs' node with
    grad_input all None (torch's rule)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                return None
            res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, but "
                                       f"expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)
        grad_fn.register_hook(hook)

    @staticmethod
    def _apply_on_tensors(fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        grad_fns = [t.grad_fn for t in new if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        fn(grad_fns[0])
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        res, idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result):
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                for pre in self.user_pre_hooks:
                    new = pre(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != len(self.grad_outputs):
                        raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                           f"but expected {len(self.grad_outputs)}")
                    self.grad_outputs = tuple(new)
                local = self.grad_outputs
                if self.input_tensors_index is None:
                    _warn.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                               "since no inputs require gradients. See "
                               "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                               "#torch.nn.Module.register_full_backward_hook for more details.")
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                               "return None or None for all gradients.")
                    self.grad_outputs = None
                return tuple(local[i] for i in self.output_tensors_index)
            grad_fn.register_hook(hook)

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
