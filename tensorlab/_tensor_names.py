"""Tensor attributes torch's Tensor has that scripts test and never need in a tensorlab run: the
device-kind flags of backends tensorlab does not have (is_xpu, is_mps, ...: always False, as
torch's are for a CPU or CUDA tensor) and the small predicates (is_nonzero, is_same_size,
is_set_to, is_neg, is_distributed, is_shared, share_memory_). Installed on Tensor once by tensor.py."""
from __future__ import annotations

# torch.Tensor's device-kind properties for devices tensorlab has no backend for
OTHER_DEVICE_FLAGS = ("is_xpu", "is_mps", "is_ipu", "is_vulkan", "is_maia", "is_mtia", "is_xla")


def _false(self):
    return False


def is_nonzero(self):
    """Whether the single element is nonzero (torch's RuntimeError for zero or several elements)."""
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item() != 0)


def is_same_size(self, other):
    """Whether `other` has this tensor's shape."""
    return tuple(self.shape) == tuple(other.shape)


def is_set_to(self, tensor):
    """Whether both tensors view the same storage with the same offset, shape and strides."""
    a, b = self._meta, tensor._meta
    return (a.storage is b.storage and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def is_neg(self):
    """False: tensorlab has no lazy negation bit (negation is always materialized)."""
    return False


def is_distributed(self):
    """False: a tensorlab tensor always lives on one device of one process."""
    return False


def is_shared(self):
    """Whether other processes can see this tensor's memory: CUDA memory is (as torch reports), a CPU
    storage once share_memory_() moved it into shared memory (tensorlab/shared_memory.py)."""
    if self.device.type == "cuda":
        return True
    from .shared_memory import is_shared as _in_segment
    return _in_segment(self._meta.storage._buf)


def share_memory_(self):
    """Move the CPU storage into shared memory (a no-op when it is there already, and for CUDA
    tensors): pickled to another process (multiprocessing's spawn, queues), the tensor then maps the
    same memory instead of carrying a copy. Returns self."""
    if self.device.type == "cpu":
        from .shared_memory import share
        share(self._meta.storage)
    return self


# torch's alias names of existing ops (torch.absolute is torch.abs, ...): method and in-place method
OP_ALIASES = {"absolute": "abs", "divide": "div", "multiply": "mul", "subtract": "sub", "negative": "neg",
              "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
              "arctan2": "atan2", "fix": "trunc"}


def install_aliases(tensor_cls):
    """Tensor.absolute = Tensor.abs, ... (called once the ops' methods are on Tensor: _torch_names.py)."""
    for alias, base in OP_ALIASES.items():
        for suffix in ("", "_"):
            if alias + suffix not in tensor_cls.__dict__ and hasattr(tensor_cls, base + suffix):
                setattr(tensor_cls, alias + suffix, getattr(tensor_cls, base + suffix))


def install(tensor_cls):
    for name in OTHER_DEVICE_FLAGS:
        if name not in tensor_cls.__dict__:
            setattr(tensor_cls, name, property(_false, doc=f"False: tensorlab has no {name[3:]} backend."))
    for fn in (is_nonzero, is_same_size, is_set_to, is_neg, is_distributed, is_shared, share_memory_):
        if fn.__name__ not in tensor_cls.__dict__:
            setattr(tensor_cls, fn.__name__, fn)
