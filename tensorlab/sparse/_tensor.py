"""SparseTensor: torch's sparse COO and CSR tensors as a Tensor subclass that holds its parts (indices and
values, or crow/col indices and values) as dense tensors. Its `_meta` is a stand-in record with the
sparse tensor's shape and device over a storage that has no bytes: metadata reads (shape, device, dim)
work, and any dense op that reaches for the bytes raises torch's NotImplementedError naming the op and
the layout. Autograd flows through the values tensor: a sparse leaf that requires grad is a leaf
values tensor, and its .grad is the sparse tensor of its indices and the values' gradient."""
from __future__ import annotations

import sys

from .. import layouts
from ..layout import Layout, Size, contiguous_strides
from ..tensor import Meta, Tensor, VersionCounter

_PKG = __name__.rsplit(".", 2)[0]  # "tensorlab"


def _entry_op():
    """The public tensorlab callable the user's code called: the innermost frame whose caller is outside
    the package (names the op in a dense op's refusal of a sparse operand)."""
    f = sys._getframe(2)
    name = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == _PKG or mod.startswith(_PKG + ".")):
            break
        name = _function_name(f)
        f = f.f_back
    return name or "op"


def _function_name(frame):
    """The __name__ of the function running in `frame` (generated ops share one code object and differ in
    their closure: found through the referrers of the code; an error path, so the scan's cost is fine)."""
    code = frame.f_code
    if not code.co_freevars:
        return code.co_name
    import gc
    loc = frame.f_locals
    for fn in gc.get_referrers(code):
        if getattr(fn, "__code__", None) is code and fn.__closure__ and all(
                c.cell_contents is loc.get(v) for c, v in zip(fn.__closure__, code.co_freevars)):
            return fn.__name__
    return code.co_name


def backend_name(layout, device):
    dev = "CUDA" if device.type == "cuda" else "CPU"
    return ("Sparse" if layout is layouts.sparse_coo else "SparseCsr") + dev


def unsupported(op, layout, device, exc=NotImplementedError):
    return exc(f"Could not run '{op}' with arguments from the '{backend_name(layout, device)}' backend: "
               f"tensorlab's {layout.name} tensors support construction, coalesce, to_dense, mm/addmm, sum, "
               f"softmax, add/sub/mul by a scalar; call .to_dense() to use {op} on the dense tensor")


class _NoBytes:
    """The storage of a sparse tensor's stand-in Meta: it knows its device and has no bytes."""

    __slots__ = ("device", "_layout")

    def __init__(self, device, layout):
        self.device = device
        self._layout = layout

    def _refuse(self, *_):
        raise unsupported(_entry_op(), self._layout, self.device)

    _buf = property(_refuse)
    data_ptr = nbytes = resize_ = _refuse

    def resizable(self):
        return False


class SparseTensor(Tensor):
    """A sparse COO (layout tl.sparse_coo) or CSR (tl.sparse_csr) tensor, as torch's."""

    __slots__ = ("_sl", "_ssize", "_idx", "_crow", "_col", "_vals", "_coal", "_sdim", "_fake")

    @classmethod
    def _build(cls, layout, size, values, indices=None, crow=None, col=None, coalesced=False, sparse_dim=None):
        t = object.__new__(cls)
        t._sl = layout
        t._ssize = Size(size)
        t._vals = values
        t._idx = indices
        t._crow = crow
        t._col = col
        t._coal = bool(coalesced)
        t._sdim = (indices.shape[0] if indices is not None else 2) if sparse_dim is None else sparse_dim
        t._fake = Meta(_NoBytes(values.device, layout), Layout(t._ssize, contiguous_strides(t._ssize), 0))
        t._dtype = values._dtype
        vc = object.__new__(VersionCounter)
        vc.value = 0
        t._vc = vc
        t._requires_grad = False
        t._base = None
        t._hview = None
        t._pin = None
        return t

    @property
    def _meta(self):
        return self._fake

    # -- metadata ---------------------------------------------------------------------------------
    @property
    def layout(self):
        return self._sl

    @property
    def is_sparse(self):
        return self._sl is layouts.sparse_coo

    @property
    def is_sparse_csr(self):
        return self._sl is layouts.sparse_csr

    @property
    def dtype(self):
        return self._vals._dtype

    @property
    def device(self):
        return self._vals.device

    def sparse_dim(self):
        """The number of sparse dims (indices' rows; 2 for CSR)."""
        return self._sdim

    def dense_dim(self):
        """The number of dense dims (values' dims after the first)."""
        return len(self._ssize) - self._sdim

    def _nnz(self):
        """The number of specified elements (duplicates counted)."""
        return self._vals.shape[0]

    def is_coalesced(self):
        """Whether the indices are sorted and unique (COO only, as torch)."""
        if self._sl is not layouts.sparse_coo:
            raise RuntimeError(f"is_coalesced expected sparse coordinate tensor layout but got {self._sl.name}")
        return self._coal

    def _coalesced_(self, coalesced):
        """Mark the tensor (un)coalesced without checking (torch's _coalesced_)."""
        self._coal = bool(coalesced)
        return self

    def indices(self):
        """The (sparse_dim, nnz) int64 indices of a coalesced COO tensor (torch refuses an uncoalesced one)."""
        self._need_coo("indices")
        if not self._coal:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx.detach()

    def values(self):
        """The (nnz, *dense) values of a coalesced COO tensor, or of a CSR tensor (autograd flows through)."""
        if self._sl is layouts.sparse_coo and not self._coal:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def _indices(self):
        """The indices as stored (coalesced or not)."""
        self._need_coo("_indices")
        return self._idx.detach()

    def _values(self):
        """The values as stored (coalesced or not); a view of them, as torch's."""
        self._need_coo("_values")
        return self._vals.detach()

    def crow_indices(self):
        """The compressed row indices (m + 1,) of a CSR tensor."""
        self._need_csr("crow_indices")
        return self._crow.detach()

    def col_indices(self):
        """The column indices (nnz,) of a CSR tensor."""
        self._need_csr("col_indices")
        return self._col.detach()

    def _need_coo(self, op):
        if self._sl is not layouts.sparse_coo:
            raise unsupported(f"aten::{op}", self._sl, self.device)

    def _need_csr(self, op):
        if self._sl is not layouts.sparse_csr:
            raise RuntimeError(f"{op} expected sparse row compressed tensor layout but got {self._sl.name}")

    # -- autograd: through the values --------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        g = self._vals.grad if self._vals.is_leaf else None
        if g is None:
            return self._grad  # a sparse tensor stored as a gradient holder's .grad (rare)
        return sparse_grad(self, g.detach(), True)

    @grad.setter
    def grad(self, g):
        if g is None:
            self._vals.grad = None
        self._grad = g

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def is_leaf(self):
        return self._vals.is_leaf

    def detach(self):
        """The same sparse tensor outside the graph (parts shared)."""
        return _like(self, self._vals.detach())

    def clone(self, *, memory_format=None):
        """A copy of indices and values (differentiable through the values)."""
        t = _like(self, self._vals.clone())
        if self._idx is not None:
            t._idx = self._idx.clone()
        else:
            t._crow, t._col = self._crow.clone(), self._col.clone()
        return t

    # -- conversions -------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Device and dtype moves of the parts (indices keep int64)."""
        vals = self._vals.to(*args, **kwargs)
        dev = vals.device
        t = _like(self, vals)
        if self._idx is not None:
            t._idx = self._idx.to(dev)
        else:
            t._crow, t._col = self._crow.to(dev), self._col.to(dev)
        t._fake = Meta(_NoBytes(dev, self._sl), self._fake.layout)
        return t

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def double(self):
        return self.to(dtype=_dt().float64)

    def float(self):
        return self.to(dtype=_dt().float32)

    def type_as(self, other):
        return self.to(dtype=other.dtype)

    # -- what a sparse tensor does not have --------------------------------------------------------
    def stride(self, dim=None):
        raise RuntimeError(f"stride(): {self._sl.name} tensors do not have strides")

    def storage_offset(self):
        raise RuntimeError(f"storage_offset(): {self._sl.name} tensors do not have storage")

    def untyped_storage(self):
        raise RuntimeError(f"untyped_storage(): {self._sl.name} tensors do not have storage")

    def is_contiguous(self, memory_format=None):
        raise RuntimeError(f"is_contiguous(): {self._sl.name} tensors do not have is_contiguous")

    def data_ptr(self):
        raise RuntimeError(f"data_ptr(): {self._sl.name} tensors do not have storage; use values().data_ptr()")

    def numpy(self, *, force=False):
        raise TypeError(f"numpy(): can't convert a {self._sl.name} tensor to numpy; use .to_dense().numpy()")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"__array__: can't convert a {self._sl.name} tensor to numpy; use .to_dense().numpy()")

    def item(self):
        raise unsupported("aten::_local_scalar_dense", self._sl, self.device)

    def tolist(self):
        raise unsupported("aten::tolist", self._sl, self.device)

    def __bool__(self):
        raise unsupported("aten::is_nonzero", self._sl, self.device)

    def __len__(self):
        if not self._ssize:
            raise TypeError("len() of a 0-d tensor")
        return self._ssize[0]

    def __iter__(self):
        raise unsupported("aten::unbind", self._sl, self.device)

    def __repr__(self):
        from ..printing import tensor_repr
        size = tuple(self._ssize)
        extra = ""
        if self._vals.grad_fn is not None:
            extra = f", grad_fn=<{self._vals.grad_fn.name()}>"
        elif self._vals.requires_grad:
            extra = ", requires_grad=True"
        dt = "" if self.dtype is _dt().get_default_dtype() else f", dtype={self.dtype}"
        names = (("indices", self._idx), ("values", self._vals)) if self._sl is layouts.sparse_coo else (
            ("crow_indices", self._crow), ("col_indices", self._col), ("values", self._vals))
        from ..printing import _tensor_str
        lines = []
        for i, (name, part) in enumerate(names):
            head = ("tensor(" if i == 0 else "       ") + name + "="
            part = part.detach()
            if part.numel():  # torch's parts: the values alone, dtype and device said once at the end
                body = "tensor(" + _tensor_str(part._host("repr"), part.dtype.is_floating_point,
                                               len(head) + 7) + ")"
            else:
                body = f"tensor([], size={tuple(part.shape)})" if part.dim() != 1 else "tensor([])"
            lines.append(head + body + ",")
        dev = "" if self.device.type == "cpu" else f"device='{self.device}', "
        lines.append(f"       {dev}size={size}, nnz={self._nnz()}{dt}, layout=tensorlab.{self._sl.name}{extra})")
        return "\n".join(lines)

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def __reduce_ex__(self, proto):
        from ._convert import rebuild_sparse
        if self._sl is layouts.sparse_coo:
            parts = (self._idx.detach().cpu(), self._vals.detach().cpu())
        else:
            parts = (self._crow.detach().cpu(), self._col.detach().cpu(), self._vals.detach().cpu())
        return (rebuild_sparse, (self._sl.name, tuple(self._ssize), parts, self._coal, str(self.device),
                                 self._vals.requires_grad and self._vals.is_leaf))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        t = self.detach().clone()
        if self.requires_grad and self.is_leaf:
            t.requires_grad_()
        memo[id(self)] = t
        return t

    __hash__ = object.__hash__


def sparse_grad(s, g, accumulated=False):
    """The gradient of sparse `s` from its values' gradient `g`: torch's gradient of a sparse input is masked by
    its coalesced pattern, one entry per position (every duplicate of a position got that same gradient)."""
    g = _like(s, g)
    if s._sl is layouts.sparse_coo and not s._coal:
        from ._convert import coalesce
        c = coalesce(g)
        cnt = coalesce(_like(s, s._vals.detach().new_ones(s._vals.shape)))
        out = _like(c, c._vals / cnt._vals)
        out._coal = not accumulated  # torch marks its .grad uncoalesced (autograd.grad's result: coalesced)
        return out
    return g


def grad_inputs(ins):
    """autograd.grad with sparse inputs: their values in their place, and the function that turns the values'
    gradients back into sparse ones (autograd/engine.py)."""
    swapped = [x._vals if isinstance(x, SparseTensor) else x for x in ins]

    def wrap(res):
        return tuple(sparse_grad(x, g) if isinstance(x, SparseTensor) and g is not None else g
                     for x, g in zip(ins, res))
    return swapped, wrap


def _like(s, values):
    """`s`'s structure over other values (same indices objects)."""
    return SparseTensor._build(s._sl, s._ssize, values, s._idx, s._crow, s._col, s._coal, s._sdim)


def _dt():
    from .. import dtypes
    return dtypes


# Tensor methods that read nothing but the stand-in metadata, or that this class defines: kept; every
# other public Tensor method refuses by name (installed once the ops have bound theirs: see install()).
_KEEP = {"size", "dim", "ndimension", "numel", "nelement", "element_size", "is_floating_point", "is_complex",
         "is_signed", "register_hook", "retain_grad", "backward", "get_device", "type", "new_empty", "new_zeros",
         "new_ones", "new_full", "new_tensor", "is_set_to", "share_memory_", "is_shared", "is_pinned"}


def install():
    """Give every public Tensor method that SparseTensor does not define a refusal naming the op and layout
    (torch: "Could not run 'aten::<op>' with arguments from the 'SparseCPU' backend")."""
    own = set(SparseTensor.__dict__)
    for name in dir(Tensor):
        if name in own or name in _KEEP or (name.startswith("_") and not (
                name.startswith("__") and name.endswith("__"))):
            continue
        attr = getattr(Tensor, name, None)
        if not callable(attr) or isinstance(attr, type):
            continue
        if name.startswith("__") and name not in _DUNDER_OPS:
            continue
        setattr(SparseTensor, name, _refusal(name))


_DUNDER_OPS = {"__abs__", "__and__", "__or__", "__xor__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__",
               "__eq__", "__ne__", "__getitem__", "__setitem__", "__pow__", "__rpow__", "__mod__", "__floordiv__",
               "__rfloordiv__", "__rtruediv__", "__rsub__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
               "__lshift__", "__rshift__", "__pos__", "__rmatmul__"}


def _refusal(name):
    op = name.strip("_") if name.startswith("__") else name

    def refuse(self, *args, **kwargs):
        if name in ("__eq__", "__ne__") and not isinstance(args[0] if args else None, Tensor) and args and \
                not isinstance(args[0], (int, float, complex, bool)):
            return NotImplemented
        raise unsupported(f"aten::{op}", self._sl, self.device)

    refuse.__name__ = name
    refuse.__doc__ = f"{name} is not supported on sparse tensors (torch's NotImplementedError); use to_dense()."
    return refuse
