"""Tensor: metadata and the Python protocol. Op methods are bound from the ops modules' METHODS
tables (tensorlab/ops/__init__.py), so this file holds no op logic."""
from __future__ import annotations

from typing import NamedTuple

from . import backends, dtypes, layout as L
from .layout import Layout, Size
from .storage import UntypedStorage, write_lock
from .sync import host_wait


class Meta(NamedTuple):
    """Everything `set_`/`resize_` may change, in one immutable record. A tensor's `_meta` is only
    ever replaced by a single assignment, so a reader sees the old record or the new, never a mix."""

    storage: UntypedStorage
    layout: Layout


class VersionCounter:
    """Shared by a tensor and its views; bumped once per successful in-place write."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value=0):
        self.value = value

    def bump(self):
        self.value += 1


class MemoryFormat:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tensorlab.{self.name}"


contiguous_format = MemoryFormat("contiguous_format")
channels_last = MemoryFormat("channels_last")
channels_last_3d = MemoryFormat("channels_last_3d")
preserve_format = MemoryFormat("preserve_format")

meta_write_lock = write_lock  # one lock for writers of _meta and of storage buffers; readers never lock


class Tensor:
    """A typed, device-resident, strided view over an untyped storage, with torch.Tensor's semantics: views
    share storage and version counter, in-place ops bump it, autograd records through it; a failed op leaves
    it exactly as it was. Ops are attached as methods at import (tensorlab/ops/); tensor.pyi lists them."""
    # _hview: None, or [None or (meta, buffer, dtype, NumPy view)]: the CPU backend's cached view of
    # the tensor, used only while meta, buffer and dtype are still the tensor's (backends/cpu/
    # memory.array checks all three); pinned copies share the list with their tensor
    __slots__ = ("_meta", "_dtype", "_vc", "_requires_grad", "_base", "_hview", "_pin", "__dict__", "__weakref__")
    # _pin: None, or the pinned copy the ops' fast paths made last (ops/elementwise._pin_of), reused
    # while its record, dtype and version counter are still this tensor's
    # autograd's fields: class-level defaults, set on the instance (its __dict__) only where they
    # differ, so every op's output and pinned operand is built with six stores, not eleven (_base
    # stays a slot: every view sets it)
    _grad = None
    _grad_fn = None
    _retains_grad = False
    _hooks = None
    _inference = False

    # -- construction -------------------------------------------------------------------------
    def __new__(cls, *args, dtype=None, device=None):
        """tl.Tensor(2, 3) -> uninitialized default-dtype tensor; tl.Tensor([..]) -> a copy (as torch)."""
        from .ops import creation
        dt = dtype or dtypes.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int):
            return creation.tensor(args[0], dtype=dt, device=device)
        return creation.empty(*args, dtype=dt, device=device)

    @classmethod
    def _make(cls, storage, lay, dtype, vc=None, requires_grad=False):
        return _new(cls, _meta_new(Meta, (storage, lay)), dtype, vc, requires_grad)

    def _view_of(self, lay, dtype=None, meta=None):
        """A tensor sharing this one's storage and version counter with a new layout. `meta` is the
        record `lay` was computed from: its storage is the one the view shares, so a concurrent
        set_ cannot pair one state's layout with another's storage (the caller reads `_meta` once)."""
        storage = (self._meta if meta is None else meta).storage
        t = _new(Tensor, _meta_new(Meta, (storage, lay)), dtype or self._dtype, self._vc, False)
        base = self._base
        t._base = self if base is None else base
        return t

    def _publish(self, storage, lay):
        """The last step of every metadata change: one assignment of a complete record."""
        self._meta = _meta_new(Meta, (storage, lay))
        self._hview = None  # never keep an old buffer alive through the cached view
        self._pin = None  # nor an old storage through the ops' remembered pin

    # -- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return self._meta.layout.shape

    def size(self, dim=None):
        shape = self._meta.layout.shape
        if dim is None:
            return shape
        return shape[L.wrap_dim(dim, len(shape), "size")]

    def stride(self, dim=None):
        lay = self._meta.layout
        if dim is None:
            return lay.stride
        return lay.stride[L.wrap_dim(dim, len(lay.shape), "stride")]

    def storage_offset(self):
        return self._meta.layout.offset

    def untyped_storage(self):
        return self._meta.storage

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._meta.storage.device

    @property
    def is_cuda(self):
        return self._meta.storage.device.type == "cuda"

    @property
    def is_cpu(self):
        return self._meta.storage.device.type == "cpu"

    @property
    def layout(self):
        """torch's tensor layout: tl.strided (sparse tensors, tensorlab/sparse, say sparse_coo or sparse_csr)."""
        from .layouts import strided
        return strided

    is_sparse = is_sparse_csr = is_mkldnn = is_quantized = is_meta = is_nested = False

    def dim(self):
        return len(self._meta.layout.shape)

    @property
    def ndim(self):
        return len(self._meta.layout.shape)

    def ndimension(self):
        return self.dim()

    def numel(self):
        return L.prod(self._meta.layout.shape)

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._dtype.itemsize

    def data_ptr(self):
        storage, lay = self._meta
        return storage.data_ptr() + lay.offset * self._dtype.itemsize

    def is_contiguous(self, memory_format=contiguous_format):
        lay = self._meta.layout
        if memory_format is contiguous_format:
            return L.is_contiguous(lay.shape, lay.stride)
        if memory_format in (channels_last, channels_last_3d):
            want = 4 if memory_format is channels_last else 5
            return len(lay.shape) == want and L.is_channels_last(lay.shape, lay.stride)
        raise RuntimeError(f"is_contiguous: memory_format must be contiguous_format, channels_last or "
                           f"channels_last_3d, got {memory_format!r}")

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.category == 3  # dtypes._COMPLEX

    def is_signed(self):
        return self._dtype.is_signed

    @property
    def _version(self):
        return self._vc.value

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.category == 3):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients "
                               f"(got {self._dtype})")
        if not requires_grad and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, g):
        self._grad = g

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def _backend(self):
        dev = self._meta.storage.device
        return backends.cpu if dev.type == "cpu" else backends.get(dev)

    # -- Python protocol ----------------------------------------------------------------------
    def __rdiv__(self, other):
        """torch's Tensor.__rdiv__ (Python 2's name, kept by torch): other / self."""
        return self.__rtruediv__(other)

    def __len__(self):
        shape = self._meta.layout.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        if not self._meta.layout.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def item(self):
        return self._item("item")

    def _item(self, reason):
        """item() as a host sync named `reason` (bool(t), float(t), an index, ...)."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        arr = self._host(reason)
        if arr.size != 1:  # another thread resized self between the check and the read
            raise RuntimeError(f"a Tensor with {arr.size} elements cannot be converted to Scalar")
        return _to_python(arr.reshape(()), self._dtype)

    def tolist(self):
        return _to_python(self._host("tolist"), self._dtype)

    def __bool__(self):
        n = self.numel()
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._item("bool"))

    def __float__(self):
        v = self._item("float")
        if type(v) is complex:  # torch: a complex value does not convert to a real one
            raise RuntimeError(f"value cannot be converted to type double without overflow (float() of the complex "
                               f"value {v}; take .real or .abs() first)")
        return float(v)

    def __int__(self):
        v = self._item("int")
        if type(v) is complex:
            raise RuntimeError(f"value cannot be converted to type int64_t without overflow (int() of the complex "
                               f"value {v}; take .real or .abs() first)")
        return int(v)

    def __index__(self):
        if self._dtype.is_floating_point or self._dtype is dtypes.bool_ or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._item("index"))

    def __complex__(self):
        return complex(self.item())

    __hash__ = object.__hash__

    def numpy(self, *, force=False):
        return _interop_arrays().numpy(self, force)

    def __array__(self, dtype=None, copy=None):
        return _interop_arrays().array(self, dtype, copy)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _interop_arrays().array_ufunc(ufunc, method, inputs, kwargs)

    @property
    def __array_interface__(self):
        return _interop_arrays().array_interface(self)

    @property
    def __cuda_array_interface__(self):
        return _interop_arrays().cuda_array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _interop_dlpack().to_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _interop_dlpack().dlpack_device(self)

    def _host(self, reason):
        """Values as a NumPy array; on CUDA this is a host synchronization named `reason`."""
        dev = self._meta.storage.device
        if dev.type == "cpu":
            return backends.cpu.array(self)
        host_wait(reason, dev)
        return self._backend.to_host(self)

    def __repr__(self):
        from .printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self.dim() == 0 and spec:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, proto):
        meta = self._meta
        if meta.storage.device.type == "cpu":
            from . import shared_memory
            name = shared_memory.segment_name(meta.storage._buf)
            if name is not None:  # shared memory: the receiver maps the same bytes
                lay = meta.layout
                return (shared_memory.rebuild_shared, (name, meta.storage._buf.nbytes, tuple(lay.shape),
                                                       tuple(lay.stride), lay.offset, self._dtype.name,
                                                       self._requires_grad))
        from .ops.creation import rebuild_tensor
        return (rebuild_tensor, (self.detach().cpu().numpy().copy(), self._dtype.name, str(self.device),
                           self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        t = self.detach().clone()
        t._requires_grad = self._requires_grad
        memo[id(self)] = t
        return t


_meta_new = tuple.__new__  # Meta(storage, layout) without NamedTuple's Python-level __new__
_object_new = object.__new__


def _new(cls, meta, dtype, vc, requires_grad):
    """A tensor over `meta` (vc None: a new version counter), every slot set: the one constructor."""
    if vc is None:
        vc = _object_new(VersionCounter)
        vc.value = 0
    t = _object_new(cls)
    t._meta = meta
    t._dtype = dtype
    t._vc = vc
    t._requires_grad = requires_grad
    t._base = None
    t._hview = None
    t._pin = None
    return t


def _to_python(arr, dtype):
    """NumPy values to Python scalars / nested lists (bfloat16 and float16 through float32)."""
    if dtype is dtypes.bfloat16 or dtype is dtypes.float16:
        arr = arr.astype("float32")
    return arr.tolist()


def _interop_arrays():
    from .interop import arrays
    return arrays


def _interop_dlpack():
    from .interop import dlpack
    return dlpack


from ._tensor_names import install as _install_names  # noqa: E402  (is_xpu, is_nonzero, ...: tensorlab/_tensor_names.py)
_install_names(Tensor)
