"""UninitializedParameter and UninitializedBuffer (torch.nn.parameter's): placeholders whose shape is
not known yet. A lazy module materializes them from its first input (materialize(shape) gives the
same object a real shape and turns it into a Parameter / plain Tensor in place, so an optimizer built
before the first forward holds the materialized tensor). Until then their shape cannot be read."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor
from .parameter import Parameter

_NO_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
             "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
             "`forward` to initialize the parameters before accessing their attributes.")


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share: materialize(), no shape yet."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give this tensor `shape` (uninitialized values) on `device`/`dtype` (its own by default) and
        turn it into its cls_to_become, in place."""
        device = Tensor.device.__get__(self) if device is None else device
        dtype = self.dtype if dtype is None else dtype
        data = empty(tuple(shape), device=device, dtype=dtype)
        self.data = data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_NO_SHAPE)

    def size(self, dim=None):
        raise RuntimeError(_NO_SHAPE)

    def share_memory_(self):
        raise RuntimeError("Can't call share_memory_() on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def _placeholder(self, t):
        """An uninitialized tensor of this class over t (a converted empty tensor)."""
        out = type(self)(self.requires_grad, t.device, t.dtype)
        return out

    def to(self, *args, **kwargs):
        return self._placeholder(Tensor.to(self, *args, **kwargs))

    def cuda(self, device=None, non_blocking=False):
        return self._placeholder(Tensor.cuda(self, device))

    def cpu(self):
        return self._placeholder(Tensor.cpu(self))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, Tensor.device.__get__(self), self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad, None, self.dtype))


def is_lazy(t):
    """Whether t is an uninitialized parameter or buffer."""
    return isinstance(t, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers on its first forward (then it is a Parameter)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers on its first forward (then it is a plain Tensor)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        data = empty(0, device=device, dtype=dtype)
        storage, lay = data._meta
        t = cls._make(storage, lay, data._dtype, data._vc)
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass
