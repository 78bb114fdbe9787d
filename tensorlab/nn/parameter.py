"""Parameter: a Tensor subclass that Module.__setattr__ registers. It shares the storage and
version counter of the tensor it wraps (as torch's `_make_subclass`), and requires grad by
default. Results of ops on a Parameter are plain Tensors."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor


class Parameter(Tensor):
    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be a Tensor, not {type(data).__name__}; "
                            f"wrap values with tensorlab.tensor(...) first")
        storage, lay = data._meta
        p = cls._make(storage, lay, data._dtype, data._vc)
        p.requires_grad_(requires_grad)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


from .uninitialized import UninitializedBuffer, UninitializedParameter  # noqa: E402,F401  (torch.nn.parameter's)
