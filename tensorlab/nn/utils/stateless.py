"""tensorlab.nn.utils.stateless: functional_call (deprecated in torch in favor of torch.func.functional_call,
which is the same function: tensorlab.func.functional_call) and _reparametrize_module, the context
that swaps a module's tensors for the given ones and restores them on exit."""
from __future__ import annotations

import contextlib

from ... import _warn

__all__ = ["functional_call"]


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False, stack_weights=False):
    """Within: module's parameters/buffers (and parametrized tensors) named in the dict read as the
    given tensors; everything is restored on exit."""
    from ...func import _swapped
    with _swapped(module, parameters_and_buffers, tie_weights, strict):
        yield


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced by the given tensors
    (deprecated: FutureWarning, as torch; the same as tensorlab.func.functional_call)."""
    _warn.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
               "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
               "replacement.", FutureWarning)
    from ...func import functional_call as _functional_call
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
