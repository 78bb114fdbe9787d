"""nn.Buffer (torch >= 2.5): a tensor marked as module state; assigning one as a Module attribute
registers it as a buffer (persistent or not). As in torch, Buffer(x) returns a plain tensor
(x detached) carrying the mark, and isinstance(t, nn.Buffer) reads the mark."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor


class _BufferMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): argument 'data' must be a Tensor, not {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
