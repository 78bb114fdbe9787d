"""PyTorch's checkpoint format without PyTorch: tl.save writes, tl.load reads the zip files of
torch.save (torch >= 1.6, "_use_new_zipfile_serialization"), so state_dicts travel both ways.

The format: a zip archive (stored, not compressed; every record's bytes start on a 64-byte
boundary) whose records sit under one folder (the file's stem, or "archive" for a file object):
data.pkl (the object, pickle protocol 2, every storage a persistent id
('storage', torch.<Type>Storage, key, location, numel)), data/<key> (each storage's raw
little-endian bytes), byteorder, version, .format_version, .storage_alignment,
.data/serialization_id. A tensor is torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, backward_hooks); a Parameter is torch._utils._rebuild_parameter(
tensor, requires_grad, backward_hooks). Tensors over one storage share it in the file and again
after loading (tied weights stay tied; views keep offset and strides).

weights_only=True (the default, as torch >= 2.6) unpickles with an allowlist: containers,
tensors, parameters, dtypes, sizes, devices, storages, and what add_safe_globals/safe_globals
added. Anything else in the file is refused with its name before it runs (pickle.UnpicklingError
with torch's wording); BUILD is allowed only on OrderedDicts and allowlisted types: tensors and
parameters are built only through their constructors (no _dtype/_meta/_vc from a file), sizes,
strides and offsets must be ints, every storage is checked against the bytes of the record that
backs it before it is allocated, compressed records inflate within MAX_DECOMPRESSION_RATIO (or
MAX_DECOMPRESSED_BYTES), and whatever a malformed file provokes surfaces as RuntimeError (the zip)
or pickle.UnpicklingError (the pickle). Counter, defaultdict (builtin factories) and complex load
too, so that everything tl.save writes (optimizers, schedulers) loads under the default. A stream
holding several checkpoints: the first is read, and the stream is left at the next.
weights_only=False runs the pickle as torch does (only for files you trust).

tl.save takes one consistent snapshot (the pickle and a copy of every storage, in one hold of
storage.write_lock, so each record's CRC is over the bytes written) and replaces a path atomically
(_replace_atomically)."""
from __future__ import annotations

import _compat_pickle
import collections
import io
import os
import pickle
import struct
import stat
import sys
import tempfile
import threading
import uuid
import zipfile
import zlib

import numpy as np

from ..layouts import TensorLayout
from .. import dtypes
from ..device import Device, canonical
from ..layout import Layout, Size, check_bounds
from ..storage import write_lock

__all__ = ("save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL")

DEFAULT_PROTOCOL = 2
_ALIGN = 64
_MAX_DIMS = 64  # torch's limit on a tensor's dimensions

MAX_DECOMPRESSION_RATIO = 64
"""tl.load reads compressed zip records (torch.save never writes them; other tools may) only when
their inflated size is at most this many times their compressed size (or 1 MiB, whichever is
larger): a zip bomb is refused before it is inflated."""
MAX_DECOMPRESSED_BYTES = None
"""When set (an int), the explicit bound on a compressed record's inflated size, instead of the ratio."""

# torch's storage classes (the persistent id names one) and the dtype each holds
_STORAGE_DTYPES = {"FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64, "HalfStorage": dtypes.float16,
                   "BFloat16Storage": dtypes.bfloat16, "ByteStorage": dtypes.uint8, "CharStorage": dtypes.int8,
                   "ShortStorage": dtypes.int16, "IntStorage": dtypes.int32, "LongStorage": dtypes.int64,
                   "BoolStorage": dtypes.bool_, "ComplexFloatStorage": dtypes.complex64,
                   "ComplexDoubleStorage": dtypes.complex128}
_STORAGE_OF = {dt: name for name, dt in _STORAGE_DTYPES.items()}
_FOREIGN_STORAGES = {"UInt16Storage": "uint16", "UInt32Storage": "uint32", "UInt64Storage": "uint64",
                     "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
                     "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
                     "Float8_e4m3fnStorage": "float8_e4m3fn", "Float8_e5m2Storage": "float8_e5m2",
                     "Float8_e4m3fnuzStorage": "float8_e4m3fnuz", "Float8_e5m2fnuzStorage": "float8_e5m2fnuz"}
_DTYPE_NAMES = {"float32": dtypes.float32, "float": dtypes.float32, "float64": dtypes.float64,
                "double": dtypes.float64, "float16": dtypes.float16, "half": dtypes.float16,
                "bfloat16": dtypes.bfloat16, "uint8": dtypes.uint8, "int8": dtypes.int8, "int16": dtypes.int16,
                "short": dtypes.int16, "int32": dtypes.int32, "int": dtypes.int32, "int64": dtypes.int64,
                "long": dtypes.int64, "bool": dtypes.bool_, "complex64": dtypes.complex64,
                "cfloat": dtypes.complex64, "complex128": dtypes.complex128, "cdouble": dtypes.complex128}


# -- writing -------------------------------------------------------------------------------------
class _Global:
    """A name pickled as GLOBAL module.name (torch's functions and classes, which need not exist here)."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):  # pickle's save_reduce asks for a callable; this one is never called
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint, not a function")


class _StorageRef:
    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage = storage
        self.dtype = dtype


def _write_global(pickler, obj, module, name):
    pickler.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
    pickler.memoize(obj)


def _save_global(pickler, obj):
    _write_global(pickler, obj, obj.module, obj.name)


def _save_dtype(pickler, obj):
    _write_global(pickler, obj, "torch", obj.name)


class _Pickler(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()
    dispatch[_Global] = _save_global
    dispatch[dtypes.DType] = _save_dtype

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}  # id(storage) -> (key, storage, dtype)
        self._globals = {}

    def _g(self, module, name):
        key = (module, name)
        g = self._globals.get(key)
        if g is None:  # one object per name: pickle's memo writes the GLOBAL once
            g = self._globals[key] = _Global(module, name)
        return g

    def persistent_id(self, obj):
        if type(obj) is not _StorageRef:
            return None
        storage, dt = obj.storage, obj.dtype
        entry = self.storages.get(id(storage))
        if entry is None:
            entry = self.storages[id(storage)] = (str(len(self.storages)), storage, dt)
        elif entry[2] is not dt:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types: "
                               f"one storage is viewed as {entry[2]} and as {dt}; save a .clone() of one of them")
        dev = storage.device
        location = "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"
        return ("storage", self._g("torch", _STORAGE_OF[dt]), entry[0], location, storage.nbytes() // dt.itemsize)

    def reducer_override(self, obj):
        from ..nn.parameter import Parameter
        from ..tensor import Tensor
        if isinstance(obj, Tensor) and (obj.is_sparse or obj.is_sparse_csr):  # torch's _rebuild_sparse_tensor
            from ..sparse._convert import reduce_args
            layout, data = reduce_args(obj)
            return (self._g("torch._utils", "_rebuild_sparse_tensor"), (obj.layout, data))
        if isinstance(obj, TensorLayout):  # torch.serialization._get_layout("torch.sparse_coo")
            return (self._g("torch.serialization", "_get_layout"), (f"torch.{obj.name}",))
        if isinstance(obj, Tensor):
            storage, lay = obj._meta
            if isinstance(obj, Parameter):
                data = Tensor._make(storage, lay, obj._dtype)
                return (self._g("torch._utils", "_rebuild_parameter"),
                        (data, obj.requires_grad, collections.OrderedDict()))
            return (self._g("torch._utils", "_rebuild_tensor_v2"),
                    (_StorageRef(storage, obj._dtype), lay.offset, tuple(lay.shape), tuple(lay.stride),
                     obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, Size):
            return (self._g("torch", "Size"), (tuple(obj),))
        if isinstance(obj, Device):
            return (self._g("torch", "device"), (str(obj),))
        return NotImplemented


def _storage_bytes(storage):
    """A private copy of the storage's bytes on the host (a CUDA storage is copied: a named host
    wait, via cpu()). Callers hold write_lock, so the copy is one state of the storage."""
    from ..tensor import Tensor
    n = storage.nbytes()
    if storage.device.type == "cpu":
        return np.array(storage._buf[:n], dtype=np.uint8, copy=True).data
    t = Tensor._make(storage, Layout(Size((n,)), (1,), 0), dtypes.uint8)
    return memoryview(t.cpu().numpy())


def _padding(offset, name_len, size):
    """The local header's extra field that starts the record's bytes on a 64-byte boundary
    (torch's "FB" padding record); zipfile adds a 20-byte zip64 field for big records."""
    zip64 = 20 if size * 1.05 > zipfile.ZIP64_LIMIT else 0
    pad = -(offset + 30 + name_len + zip64) % _ALIGN
    if pad == 0:
        return b""
    if pad < 4:
        pad += _ALIGN
    return b"FB" + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)


def _write_record(zf, bio, name, data):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.extra = _padding(bio.tell(), len(name.encode("utf-8")), len(data))
    zf.writestr(info, data)


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save `obj` (tensors, parameters, state_dicts, containers) to `f` (a path or a writable
    binary file) in PyTorch's zip checkpoint format: torch.load(f, weights_only=True) reads it."""
    if not _use_new_zipfile_serialization:
        raise RuntimeError("tensorlab.save writes PyTorch's zip format only (_use_new_zipfile_serialization=True); "
                           "the legacy format is not supported")
    if pickle_module is not pickle:
        raise ValueError("tensorlab.save: only the standard pickle module can write PyTorch's format")
    if sys.byteorder != "little":
        raise RuntimeError("tensorlab.save: checkpoints are written on little-endian machines only")
    data = io.BytesIO()
    p = _Pickler(data, pickle_protocol)
    # One consistent snapshot: the pickle (every layout and storage size) and a private copy of
    # every storage's bytes are taken in one hold of storage.write_lock, the lock writers of
    # buffers and metadata take; each record's CRC is then computed over the copy that is written.
    with write_lock:
        p.dump(obj)
        blobs = [(key, _storage_bytes(storage)) for key, storage, _ in
                 sorted(p.storages.values(), key=lambda e: int(e[0]))]
    pkl = data.getvalue()
    del data, p
    prefix = _archive_name(f)

    def write(out):
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
            _write_record(zf, out, f"{prefix}/data.pkl", pkl)
            _write_record(zf, out, f"{prefix}/.format_version", b"1")
            _write_record(zf, out, f"{prefix}/.storage_alignment", str(_ALIGN).encode())
            if not _disable_byteorder_record:
                _write_record(zf, out, f"{prefix}/byteorder", b"little")
            for key, blob in blobs:
                _write_record(zf, out, f"{prefix}/data/{key}", blob)
            _write_record(zf, out, f"{prefix}/version", b"3\n")
            _write_record(zf, out, f"{prefix}/.data/serialization_id",
                          str(uuid.uuid4().int).rjust(40, "0")[:40].encode())

    if isinstance(f, (str, os.PathLike)):
        _replace_atomically(os.fspath(f), write)
    else:  # a file object: written in one piece, as torch writes it (no rename is possible)
        bio = io.BytesIO()
        write(bio)
        f.write(bio.getbuffer())


def _umask():
    """The process's umask, read without changing it where /proc tells it."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    old = os.umask(0o22)
    os.umask(old)
    return old


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # a platform without directory handles
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace_atomically(path, write):
    """Write a checkpoint to `path` so that a crash or kill at any moment leaves the old file or
    the new one, whole: write(file) fills a temporary file in the same directory, which is
    flushed, fsynced and renamed over `path`; then the directory is fsynced. The old file's inode
    survives the rename, so tensors mapped from it (tl.load(mmap=True)) keep their bytes. A path
    that names something other than a regular file (/dev/null, a FIFO) is written in place; a
    symbolic link is followed, as open() would."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(target, "wb") as fh:
            write(fh)
        return
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError:  # no such directory (open() raises torch's error, naming the path), or a writable
        # file in a directory we may not create files in: written in place
        with open(target, "wb") as fh:
            write(fh)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


# -- the allowlist ---------------------------------------------------------------------------------
_safe_lock = threading.Lock()
_user_globals = {}  # "module.name" -> object


def _name_of(obj):
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def add_safe_globals(safe_globals):
    """Allow these globals in weights_only loads: each an object, or (object, "module.name") for
    one saved under another name (torch.serialization.add_safe_globals)."""
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals: expected a list of globals, got {type(safe_globals).__name__}")
    with _safe_lock:
        for g in safe_globals:
            if isinstance(g, tuple):
                if len(g) != 2 or not isinstance(g[1], str):
                    raise ValueError(f"add_safe_globals: a tuple must be (object, 'module.name'), got {g!r}")
                _user_globals[g[1]] = g[0]
            else:
                _user_globals[_name_of(g)] = g


def get_safe_globals():
    with _safe_lock:
        return [g if _name_of(g) == n else (g, n) for n, g in _user_globals.items()]


def clear_safe_globals():
    with _safe_lock:
        _user_globals.clear()


class safe_globals:
    """`with tensorlab.serialization.safe_globals([...]):` allows these globals inside the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals
        self._saved = None

    def __enter__(self):
        with _safe_lock:
            self._saved = dict(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        with _safe_lock:
            _user_globals.clear()
            _user_globals.update(self._saved)


# -- reading -------------------------------------------------------------------------------------
class _StorageType:
    """What GLOBAL torch.<X>Storage resolves to: the dtype it names (or the foreign dtype's name)."""

    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self):
        return f"torch.{self.name}"


class _Typed(collections.namedtuple("_Typed", "storage dtype")):
    """A storage as the file types it: the bytes and the dtype its tensors read them as."""


def _ints(value, what, fn):
    """A size/stride tuple from the file: a tuple or list of Python ints (2.5 is refused, not
    truncated; torch's set_ refuses it too)."""
    if not isinstance(value, (tuple, list, Size)):
        raise pickle.UnpicklingError(f"{fn}: {what} must be a tuple of ints, got {type(value).__name__}")
    if len(value) > _MAX_DIMS:
        raise pickle.UnpicklingError(f"{fn}: {what} has {len(value)} dimensions; at most {_MAX_DIMS} are supported")
    for n in value:
        if not isinstance(n, int):
            raise pickle.UnpicklingError(f"{fn}: {what} must be a tuple of ints, but element {n!r} is "
                                         f"{type(n).__name__}")
    return tuple(int(n) for n in value)


def _flag(value, what, fn):
    if not isinstance(value, bool):
        raise pickle.UnpicklingError(f"{fn}: {what} must be a bool, got {type(value).__name__} {value!r}")
    return value


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    """A tensor built only through Tensor._make over a storage this load read, after its layout
    (ints only) has been checked against the storage's bytes."""
    from ..tensor import Tensor
    fn = "_rebuild_tensor_v2"
    if not isinstance(storage, _Typed):
        raise pickle.UnpicklingError(f"{fn}: expected a storage, got {type(storage).__name__}")
    dt = storage.dtype
    shape = _ints(size, "size", fn)
    strides = _ints(stride, "stride", fn)
    if not isinstance(storage_offset, int):
        raise pickle.UnpicklingError(f"{fn}: storage_offset must be an int, got {type(storage_offset).__name__} "
                                     f"{storage_offset!r}")
    off = int(storage_offset)
    requires_grad = _flag(requires_grad, "requires_grad", fn)
    if len(shape) != len(strides):
        raise pickle.UnpicklingError(f"{fn}: size {list(shape)} and stride {list(strides)} differ in length")
    untyped = storage.storage
    check_bounds(shape, strides, off, dt.itemsize, untyped.nbytes(), "tensorlab.load")
    t = Tensor._make(untyped, Layout(Size(shape), strides, off), dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    """A Parameter built through its constructor. torch's _rebuild_parameter_with_state passes
    the Python attributes of a Parameter subclass in `state`; tensorlab's Parameter has none, and
    state naming an attribute of the class or an internal one (_dtype, _meta, _vc, ...) is refused."""
    from ..nn.parameter import Parameter
    from ..tensor import Tensor
    fn = "_rebuild_parameter"
    if type(data) is not Tensor:
        raise pickle.UnpicklingError(f"{fn}: expected a tensor, got {type(data).__name__}")
    requires_grad = _flag(requires_grad, "requires_grad", fn)
    slots = None
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
        state, slots = state
    if slots:
        raise pickle.UnpicklingError(f"{fn}: the file sets slot state {_keys(slots)} on a Parameter; a weights_only "
                                     "load builds parameters only through their constructor")
    if state and not isinstance(state, dict):
        raise pickle.UnpicklingError(f"{fn}: Parameter state must be a dict, got {type(state).__name__}")
    extra = dict(state or {})
    bad = [k for k in extra if not isinstance(k, str) or k.startswith("_") or hasattr(Parameter, k)]
    if bad:
        raise pickle.UnpicklingError(f"{fn}: the file sets internal attributes {bad} on a Parameter; a "
                                     "weights_only load builds parameters only through their constructor")
    p = Parameter(data.detach(), requires_grad=requires_grad)
    if extra:
        p.__dict__.update(extra)
    return p


def _keys(state):
    """The attribute names a BUILD/state value would set (dict state, or (dict, slots))."""
    parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
    names = [str(k) for part in parts if isinstance(part, dict) for k in part]
    return sorted(names) if names else repr(state)


def _rebuild_tensor_v1(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _encode(obj, encoding="latin1", errors="strict"):
    """_codecs.encode as protocol 2 pickles bytes (encode(str, 'latin1')): text codecs only."""
    if encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii") or not isinstance(obj, str):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r} is not allowed in a weights_only load")
    return obj.encode(encoding, errors)


def _size(*args):
    if len(args) > 1:
        raise pickle.UnpicklingError(f"torch.Size takes one tuple of ints, got {len(args)} arguments")
    return Size(_ints(args[0], "torch.Size", "torch.Size") if args else ())


class _Factory:
    """A builtin type named in a file as a defaultdict's default_factory: usable only there."""

    __slots__ = ("type",)

    def __init__(self, tp):
        self.type = tp

    def __call__(self, *args):
        raise pickle.UnpicklingError(f"builtins.{self.type.__name__} may only be a collections.defaultdict's "
                                     "default_factory in a weights_only load")


_FACTORIES = {tp.__name__: _Factory(tp) for tp in (list, dict, int, float, str, tuple, bool)}


def _defaultdict(factory=None, *args):
    """collections.defaultdict as pickle writes it (default_factory, then SETITEMS): the factory
    must be None or a plain builtin container/number type."""
    if args:
        raise pickle.UnpicklingError("collections.defaultdict: only (default_factory,) is accepted")
    if factory in (set, frozenset):  # allowlisted as themselves (sets pickle through them)
        return collections.defaultdict(factory)
    if factory is not None and not isinstance(factory, _Factory):
        raise pickle.UnpicklingError(f"collections.defaultdict: default_factory {factory!r} is not allowed in a "
                                     "weights_only load (None or a builtin type: list, dict, set, int, ...)")
    return collections.defaultdict(None if factory is None else factory.type)


class _Bytearray:
    """builtins.bytearray from a file: from bytes or text (as pickle writes one), or a length no
    larger than the file's own pickle (no allocation the file does not pay for)."""

    def __init__(self):
        self.limit = 0

    def __call__(self, *args):
        if args and isinstance(args[0], int) and not isinstance(args[0], bool):
            if not 0 <= args[0] <= self.limit:
                raise pickle.UnpicklingError(f"builtins.bytearray({args[0]}): a weights_only load does not allocate "
                                             f"more than the pickle's own size ({self.limit} bytes) from a length")
        elif args and not isinstance(args[0], (bytes, str, list, tuple)):
            raise pickle.UnpicklingError(f"builtins.bytearray of {type(args[0]).__name__} is not allowed in a "
                                         "weights_only load")
        return bytearray(*args)


def _device(*args):
    from ..device import device
    return device(*args)


def _get_layout(name):
    """torch.serialization._get_layout: "torch.sparse_coo" -> the layout value."""
    from .. import layouts
    short = str(name).split(".")[-1]
    lay = getattr(layouts, short, None)
    if not isinstance(lay, TensorLayout):
        raise pickle.UnpicklingError(f"_get_layout: unknown layout {name!r}")
    return lay


def _rebuild_sparse_tensor(layout, data):
    """torch._utils._rebuild_sparse_tensor: a COO (indices, values, size, is_coalesced) or CSR (crow, col,
    values, size) tensor, its invariants checked (a file may hold anything)."""
    from ..sparse._convert import rebuild_from_parts
    return rebuild_from_parts(layout, data)


def _builtin_allowlist():
    table = {("collections", "OrderedDict"): collections.OrderedDict,
             ("collections", "Counter"): collections.Counter,
             ("collections", "defaultdict"): _defaultdict,
             ("builtins", "complex"): complex,
             ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor"): _rebuild_tensor_v1,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
             ("torch", "Size"): _size, ("torch", "device"): _device,
             ("_codecs", "encode"): _encode,
             ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
             ("builtins", "slice"): slice,
             ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
             ("torch.serialization", "_get_layout"): _get_layout}
    for name, dt in _STORAGE_DTYPES.items():
        table[("torch", name)] = _StorageType(name, dt)
    for name, foreign in _FOREIGN_STORAGES.items():
        table[("torch", name)] = _StorageType(name, foreign)
    for name, dt in _DTYPE_NAMES.items():
        table[("torch", name)] = dt
    return table


_ALLOWED = _builtin_allowlist()

_HEADER = ("Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only "
           "if you trust the source of the checkpoint. \n\t(1) Re-running `tensorlab.load` with `weights_only` set to "
           "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the file "
           "from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
           "steps in the following error message.\nWeightsUnpickler error: ")


class _UserError(Exception):
    """An exception raised by the caller's own code during a load (map_location): re-raised as is."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


class _Loader(pickle._Unpickler):
    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, file, archive, prefix, map_location, weights_only, mmap_path=None, **pickle_load_args):
        super().__init__(file, **pickle_load_args)  # encoding=, errors=, fix_imports= as pickle takes them
        self._mmap_path = mmap_path
        self._archive = archive
        self._zf = archive.zf
        self._prefix = prefix
        self._map = map_location
        self._weights_only = weights_only
        self._storages = {}
        self._bytearray = _Bytearray()
        self._bytearray.limit = len(file.getbuffer())
        with _safe_lock:
            self._user = dict(_user_globals)

    def find_class(self, module, name):
        if self.proto < 3:  # protocol 2 names Python 2's modules (__builtin__.set): pickle's own mapping
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        obj = _ALLOWED.get((module, name))
        if obj is not None:
            return obj
        if module == "builtins" and name == "bytearray":
            return self._bytearray
        user = self._user.get(f"{module}.{name}")
        if user is not None:
            return user
        if self._weights_only:
            if module == "builtins" and name in _FACTORIES:
                return _FACTORIES[name]
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by default. Please use "
                f"`tensorlab.serialization.add_safe_globals([{name}])` or the "
                f"`tensorlab.serialization.safe_globals([{name}])` context manager to allowlist this global if you "
                "trust this class/function.")
        if module == "torch" or module.startswith("torch."):
            raise pickle.UnpicklingError(f"tensorlab.load: the checkpoint names {module}.{name}, which tensorlab does "
                                         "not provide (it reads tensors, parameters, dtypes, sizes and devices)")
        return super().find_class(module, name)

    def load_build(self):
        """BUILD (state set on an object after it is made): tensorlab's tensors and parameters are
        built only through their constructors, so no BUILD reaches them from a weights_only file
        (it could set _dtype, _meta, _vc, ...); OrderedDicts take their attribute dict
        (state_dict()._metadata); allowlisted user types as pickle does."""
        from ..tensor import Tensor
        state = self.stack[-1]
        inst = self.stack[-2]
        if self._weights_only:
            if isinstance(inst, Tensor):
                names = _keys(state)
                raise pickle.UnpicklingError(
                    f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals` "
                    f"through their constructors, but the file sets state {names} on a {type(inst).__name__} (a "
                    "weights_only load does not set tensorlab's internal attributes from a file)")
            if type(inst) is collections.OrderedDict:
                if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                    raise pickle.UnpicklingError(f"Can only build an OrderedDict from a dict of attribute names, but got "
                                                 f"{type(state).__name__}")
            elif type(inst) not in self._user.values():
                raise pickle.UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                             f"`add_safe_globals`, but got {type(inst)}")
        if type(inst) is collections.OrderedDict and isinstance(state, dict):
            self.stack.pop()
            inst.__dict__.update(state)  # state_dict()._metadata
            return
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def load_bytearray8(self):
        """BYTEARRAY8 (protocol 5) allocates its length before reading: a length beyond the
        pickle's own size is refused first."""
        n, = struct.unpack("<Q", self.read(8))
        if n > self._bytearray.limit:
            raise pickle.UnpicklingError(f"BYTEARRAY8 of {n} bytes in a pickle of {self._bytearray.limit} bytes")
        b = bytearray(n)
        self.readinto(b)
        self.append(b)

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8

    def persistent_load(self, saved_id):
        if not (isinstance(saved_id, tuple) and len(saved_id) == 5 and saved_id[0] == "storage"):
            raise pickle.UnpicklingError(f"tensorlab.load: unexpected persistent id {saved_id!r} (expected "
                                         "('storage', type, key, location, numel))")
        _, stype, key, location, numel = saved_id
        if not isinstance(stype, _StorageType) or not isinstance(key, str) or not isinstance(location, str) \
                or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"tensorlab.load: malformed storage record {saved_id!r}")
        if isinstance(stype.dtype, str):
            raise RuntimeError(f"tensorlab.load: the checkpoint holds a torch.{stype.name} ({stype.dtype}), a dtype "
                               "tensorlab does not have; convert those tensors in PyTorch before saving")
        dt = stype.dtype
        typed = self._storages.get(key)
        if typed is None:
            typed = self._storages[key] = _Typed(self._read_storage(key, location, numel * dt.itemsize), dt)
        elif typed.dtype is not dt:
            typed = _Typed(typed.storage, dt)
        return typed

    def _record(self, key, nbytes):
        """The zip entry of storage `key`, checked to hold `nbytes` before anything is allocated."""
        name = f"{self._prefix}/data/{key}"
        try:
            info = self._zf.getinfo(name)
        except KeyError:
            raise RuntimeError(f"tensorlab.load: the checkpoint has no record data/{key} for one of its storages "
                               "(the file is truncated or damaged)") from None
        self._archive.check(info)
        if info.file_size < nbytes:
            raise RuntimeError(f"tensorlab.load: record data/{key} holds {info.file_size} bytes but its storage needs "
                               f"{nbytes} (the file is truncated or damaged)")
        return info

    def _read_storage(self, key, location, nbytes):
        from ..storage import UntypedStorage
        if self._mmap_path is not None:
            return _place(self._mapped(key, nbytes), location, self._map)
        info = self._record(key, nbytes)
        raw = self._archive.read(info)
        if len(raw) < nbytes:
            raise RuntimeError(f"tensorlab.load: record data/{key} holds {len(raw)} bytes but its storage needs {nbytes} "
                               "(the file is truncated or damaged)")
        cpu = UntypedStorage(nbytes, device="cpu")
        if nbytes:
            cpu._buf[:] = np.frombuffer(raw, dtype=np.uint8, count=nbytes)
        return _place(cpu, location, self._map)

    def _mapped(self, key, nbytes):
        """mmap=True: the record's bytes mapped copy-on-write from the file (torch maps them
        MAP_PRIVATE too), as a storage that is not resizable; nothing is read until it is used."""
        from ..device import CPU
        from ..storage import UntypedStorage
        info = self._record(key, nbytes)
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(f"tensorlab.load(mmap=True): record data/{key} is compressed; it cannot be mapped")
        start = self._archive.data_offset(info)
        if nbytes == 0:
            return UntypedStorage(0, device="cpu")
        if start + nbytes > self._archive.end:
            raise RuntimeError(f"tensorlab.load(mmap=True): record data/{key} reaches past the end of the file "
                               "(the file is truncated or damaged)")
        mapped = np.memmap(self._mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(nbytes,))
        return UntypedStorage._wrap(mapped.view(np.ndarray), CPU, False)


class _Window(io.RawIOBase):
    """Bytes [start, end) of a seekable file, as a file of its own (the first checkpoint of a
    stream that holds several)."""

    def __init__(self, fh, start, end):
        super().__init__()
        self._fh, self._start, self._end, self._pos = fh, start, end, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=0):
        base = {0: 0, 1: self._pos, 2: self._end - self._start}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read(self, n=-1):
        left = max(0, self._end - self._start - self._pos)
        n = left if n is None or n < 0 else min(n, left)
        self._fh.seek(self._start + self._pos)
        data = self._fh.read(n)
        self._pos += len(data)
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


def _archive_end(fh, start):
    """Where the zip archive that begins at `start` ends (past its end-of-central-directory
    record), found by walking its records; None when a record's size is not in its header (a
    data descriptor: zipfile then reads the stream to its end)."""
    def at(pos, n):
        fh.seek(pos)
        b = fh.read(n)
        if len(b) != n:
            raise zipfile.BadZipFile("the archive ends inside a record")
        return b

    pos = start
    while True:
        sig = at(pos, 4)
        if sig == b"PK\x03\x04":
            head = at(pos, 30)
            flags, = struct.unpack("<H", head[6:8])
            csize, = struct.unpack("<I", head[18:22])
            nlen, xlen = struct.unpack("<HH", head[26:30])
            if flags & 8:
                return None
            if csize == 0xFFFFFFFF:
                extra = at(pos + 30 + nlen, xlen)
                csize = None
                i = 0
                while i + 4 <= len(extra):
                    tag, size = struct.unpack("<HH", extra[i:i + 4])
                    if tag == 1 and size >= 16:
                        csize, = struct.unpack("<Q", extra[i + 12:i + 20])
                        break
                    i += 4 + size
                if csize is None:
                    raise zipfile.BadZipFile("a zip64 record without its sizes")
            pos += 30 + nlen + xlen + csize
        elif sig == b"PK\x01\x02":
            head = at(pos, 46)
            n, m, k = struct.unpack("<HHH", head[28:34])
            pos += 46 + n + m + k
        elif sig == b"PK\x06\x06":
            size, = struct.unpack("<Q", at(pos + 4, 8))
            pos += 12 + size
        elif sig == b"PK\x06\x07":
            pos += 20
        elif sig == b"PK\x05\x06":
            head = at(pos, 22)
            return pos + 22 + struct.unpack("<H", head[20:22])[0]
        else:
            raise zipfile.BadZipFile(f"no zip record at offset {pos - start}")


def _first_archive(fh, start):
    """(_Archive, end) for the first checkpoint of the stream at `start`. zipfile reads the
    archive whose end record closes the stream; when that archive begins later than `start`, the
    stream holds several and the first one ends where its own end record is (found by walking
    its records, or, for records with data descriptors as torch writes them, by looking for the
    first end record that matches its central directory)."""
    fh.seek(0, 2)
    total = fh.tell()
    try:
        archive = _Archive(_Window(fh, start, total))
    except zipfile.BadZipFile:  # the stream's last archive is damaged: the first may still be whole
        first = total - start
    else:
        first = min((info.header_offset for info in archive.zf.infolist()), default=0)
        if first == 0:
            return archive, total
        archive.zf.close()
    end = _archive_end(fh, start)
    if end is None:
        end = _scan_end_record(fh, start, start + first)
    return _Archive(_Window(fh, start, end)), end


def _scan_end_record(fh, start, stop):
    """Offset past the first end-of-central-directory record in [start, stop) that describes an
    archive beginning at `start`."""
    chunk = 1 << 20
    pos = start
    while pos < stop:
        fh.seek(pos)
        block = fh.read(min(chunk + 64, stop - pos + 22))
        i = block.find(b"PK\x05\x06")
        while i >= 0:
            at = pos + i
            fh.seek(at)
            rec = fh.read(22)
            if len(rec) == 22 and _end_record_matches(fh, start, at, rec):
                return at + 22 + struct.unpack("<H", rec[20:22])[0]
            i = block.find(b"PK\x05\x06", i + 1)
            if i > chunk:
                break
        pos += chunk
    raise zipfile.BadZipFile("the stream's first archive has no end record")


def _end_record_matches(fh, start, at, rec):
    """Whether the end record `rec` at `at` closes a central directory that ends right before it
    (or before its zip64 end record and locator, as torch writes them)."""
    size_cd, offset_cd = struct.unpack("<II", rec[12:20])
    if start + offset_cd + size_cd == at:
        return True
    if at - 20 < start:
        return False
    fh.seek(at - 20)
    loc = fh.read(20)
    if loc[:4] != b"PK\x06\x07":
        return False
    z64_at = start + struct.unpack("<Q", loc[8:16])[0]
    fh.seek(z64_at)
    z64 = fh.read(56)
    if len(z64) != 56 or z64[:4] != b"PK\x06\x06":
        return False
    size64, offset64 = struct.unpack("<QQ", z64[40:56])
    return start + offset64 + size64 == z64_at


class _Archive:
    """The zip archive of one checkpoint, with reads bounded by the file's own byte counts."""

    def __init__(self, fh):
        self.fh = fh
        fh.seek(0, 2)
        self.end = fh.tell()
        fh.seek(0)
        self.zf = zipfile.ZipFile(fh)

    def data_offset(self, info):
        head = _at(self.fh, info.header_offset, 30)
        if head[:4] != b"PK\x03\x04":
            raise RuntimeError(f"tensorlab.load: damaged local header for record {info.filename}")
        return info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")

    def check(self, info):
        """Refuse a record whose sizes the file cannot back, before reading it: a stored record
        is as long as it says and inside the file; a compressed one inflates at most
        MAX_DECOMPRESSION_RATIO times (or to MAX_DECOMPRESSED_BYTES)."""
        if info.header_offset + 30 + info.compress_size > self.end:
            raise RuntimeError(f"tensorlab.load: record {info.filename} claims {info.compress_size} bytes, past the end "
                               "of the file (the file is truncated or damaged)")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise RuntimeError(f"tensorlab.load: stored record {info.filename} says {info.file_size} bytes but "
                                   f"holds {info.compress_size} (the file is damaged)")
            return
        if info.compress_type not in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            raise RuntimeError(f"tensorlab.load: record {info.filename} uses an unknown compression "
                               f"({info.compress_type})")
        limit = MAX_DECOMPRESSED_BYTES
        if limit is None:
            limit = max(info.compress_size * MAX_DECOMPRESSION_RATIO, 1 << 20)
        if info.file_size > limit:
            raise RuntimeError(
                f"tensorlab.load: compressed record {info.filename} would inflate from {info.compress_size} to "
                f"{info.file_size} bytes, beyond the limit of {limit} (tensorlab.serialization.MAX_DECOMPRESSION_RATIO "
                f"= {MAX_DECOMPRESSION_RATIO}, MAX_DECOMPRESSED_BYTES = {MAX_DECOMPRESSED_BYTES}); raise them if "
                "you trust the file")

    def read(self, info):
        self.check(info)
        return self.zf.read(info)

    def read_name(self, name):
        return self.read(self.zf.getinfo(name))


def _at(fh, pos, n):
    fh.seek(pos)
    return fh.read(n)


def _cuda_usable(dev):
    from .. import backends
    try:
        backends.get(dev)
    except RuntimeError:
        return False
    return True


def _restore(storage, location):
    """The default placement: the location the file names."""
    dev = canonical(location)
    if dev.type == "cpu":
        return storage
    if not _cuda_usable(dev):
        raise RuntimeError("Attempting to deserialize object on a CUDA device but tensorlab.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use tensorlab.load with "
                           "map_location=tensorlab.device('cpu') to map your storages to the CPU.")
    return _to_device(storage, dev)


def _to_device(storage, dev):
    from ..tensor import Tensor
    if storage.device == dev:
        return storage
    n = storage.nbytes()
    t = Tensor._make(storage, Layout(Size((n,)), (1,), 0), dtypes.uint8).to(dev)
    return t.untyped_storage()


def _place(storage, location, map_location):
    from ..storage import UntypedStorage
    if map_location is None:
        return _restore(storage, location)
    if isinstance(map_location, dict):
        return _restore(storage, map_location.get(location, location))
    if isinstance(map_location, (str, Device)):
        return _restore(storage, str(map_location))
    if callable(map_location):
        try:
            r = map_location(storage, location)
        except Exception as e:
            raise _UserError(e) from None
        if r is None:
            return _restore(storage, location)
        if not isinstance(r, UntypedStorage):
            raise TypeError(f"map_location returned {type(r).__name__}; it must return an UntypedStorage or None")
        return r
    raise TypeError(f"map_location must be None, a str, a tensorlab.device, a dict or a callable, got "
                    f"{type(map_location).__name__}")


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001


class _PlainUnpickler(pickle._Unpickler):
    """The legacy format's small records (magic number, protocol, system info, storage keys): data only, no
    globals, no persistent ids."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"tensorlab.load: a legacy checkpoint header names {module}.{name}; it holds "
                                     "only numbers, strings, lists and dicts")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("tensorlab.load: a persistent id in a legacy checkpoint header")


class _LegacyLoader(_Loader):
    """The legacy main pickle: the zip loader's rules (weights_only allowlist, no BUILD on tensors, bounded
    bytearrays), storages from `storages` (key -> CPU UntypedStorage already filled), or, in the first pass
    (storages=None), allocated empty on the CPU within the bytes the file has left."""

    def __init__(self, file, size, storages, budget, map_location, weights_only, **pickle_load_args):
        pickle._Unpickler.__init__(self, file, **pickle_load_args)
        self._mmap_path = None
        self._map = map_location
        self._weights_only = weights_only
        self._storages = {}
        self._bytearray = _Bytearray()
        self._bytearray.limit = size
        with _safe_lock:
            self._user = dict(_user_globals)
        self._filled = storages
        self._budget = budget       # [bytes the file has left for storage data]
        self.found = {}             # key -> (dtype, numel, location): the first pass's record

    def persistent_load(self, saved_id):
        if not (isinstance(saved_id, tuple) and len(saved_id) in (5, 6) and saved_id[0] == "storage"):
            raise pickle.UnpicklingError(f"tensorlab.load: unexpected persistent id {saved_id!r} in a legacy checkpoint "
                                         "(expected ('storage', type, key, location, numel, view_metadata))")
        _, stype, key, location, numel = saved_id[:5]
        if len(saved_id) == 6 and saved_id[5] is not None:
            raise RuntimeError("tensorlab.load: the legacy checkpoint uses storage views (torch before 1.0); load and "
                               "re-save it with torch")
        if not isinstance(stype, _StorageType) or not isinstance(key, str) or not isinstance(location, str) \
                or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"tensorlab.load: malformed storage record {saved_id!r}")
        if isinstance(stype.dtype, str):
            raise RuntimeError(f"tensorlab.load: the checkpoint holds a torch.{stype.name} ({stype.dtype}), a dtype "
                               "tensorlab does not have; convert those tensors in PyTorch before saving")
        dt = stype.dtype
        typed = self._storages.get(key)
        if typed is not None:
            return typed if typed.dtype is dt else _Typed(typed.storage, dt)
        from ..storage import UntypedStorage
        nbytes = numel * dt.itemsize
        if self._filled is None:  # first pass: the storage, empty, within what the file can hold
            if nbytes + 8 > self._budget[0]:
                raise RuntimeError(f"tensorlab.load: a storage of {nbytes} bytes in a legacy checkpoint with "
                                   f"{self._budget[0]} bytes left (the file is truncated or damaged)")
            self._budget[0] -= nbytes + 8
            self.found[key] = (dt, numel, location)
            cpu = UntypedStorage(nbytes, device="cpu")
            typed = self._storages[key] = _Typed(cpu, dt)
            return typed
        typed = self._storages[key] = _Typed(_place(self._filled[key], location, self._map), dt)
        return typed


def _load_legacy(data, map_location, weights_only, pickle_load_args):
    """torch's legacy (pre-1.6) format: pickles of the magic number, the protocol, the system info and the
    object (storages as persistent ids), a pickle of the storage keys, then each storage as an int64 element
    count and its bytes. Read with the zip format's rules: the object pickle runs under the same allowlist;
    every storage is checked against the bytes the file has before it is allocated; storages are filled from
    the file before a second run of the object pickle places them (map_location), so no tensor sees an empty
    one."""
    f = io.BytesIO(data)

    def header(what):
        try:
            return _PlainUnpickler(f).load()
        except (pickle.UnpicklingError, RuntimeError):
            raise
        except Exception as e:
            raise RuntimeError(f"tensorlab.load: the legacy checkpoint's {what} is damaged ({type(e).__name__}: {e})") \
                from e

    if header("magic number") != _LEGACY_MAGIC:
        raise RuntimeError("tensorlab.load: not a legacy PyTorch checkpoint (wrong magic number)")
    if header("protocol") != _LEGACY_PROTOCOL:
        raise RuntimeError("tensorlab.load: a legacy checkpoint of an unknown protocol version")
    info = header("system information")
    if not isinstance(info, dict) or info.get("little_endian") is not True:
        raise RuntimeError("tensorlab.load: a big-endian legacy checkpoint; load and re-save it with torch")
    start = f.tell()

    def run(loader):
        try:
            return loader.load()
        except (RuntimeError, pickle.UnpicklingError, EOFError, MemoryError, _UserError):
            raise
        except Exception as e:  # a damaged pickle: pickle's own errors (UnicodeDecodeError, KeyError, ...)
            raise pickle.UnpicklingError(f"tensorlab.load: the legacy checkpoint's object pickle is damaged "
                                         f"({type(e).__name__}: {e})") from e

    first = _LegacyLoader(f, len(data), None, [len(data) - start], map_location, weights_only, **pickle_load_args)
    run(first)
    keys = header("storage key list")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys) or set(keys) != set(first.found):
        raise RuntimeError("tensorlab.load: the legacy checkpoint's storage keys do not match its storages (the "
                           "file is truncated or damaged)")
    filled = {}
    for key in keys:
        dt, numel, _ = first.found[key]
        head = f.read(8)
        if len(head) < 8:
            raise RuntimeError("tensorlab.load: the legacy checkpoint ends inside its storage data (the file is "
                               "truncated)")
        count, = struct.unpack("<q", head)
        if count != numel:
            raise RuntimeError(f"tensorlab.load: legacy storage {key} declares {count} elements, its tensors "
                               f"{numel} (the file is damaged)")
        nbytes = numel * dt.itemsize
        raw = f.read(nbytes)
        if len(raw) < nbytes:
            raise RuntimeError("tensorlab.load: the legacy checkpoint ends inside its storage data (the file is "
                               "truncated)")
        cpu = first._storages[key].storage
        if nbytes:
            cpu._buf[:] = np.frombuffer(raw, dtype=np.uint8, count=nbytes)
        filled[key] = cpu
    f.seek(start)
    second = _LegacyLoader(f, len(data), filled, None, map_location, weights_only, **pickle_load_args)
    return run(second)


def _is_legacy(head):
    magic = pickle.dumps(_LEGACY_MAGIC, protocol=2)[2:-1]
    return head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") and head[2:2 + len(magic)] == magic


def _legacy_error(head):
    magic = pickle.dumps(_LEGACY_MAGIC, protocol=2)[2:-1]  # torch's legacy files begin with this number pickled
    if head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") and head[2:2 + len(magic)] == magic:
        what = "PyTorch's legacy (pre-1.6, non-zip) serialization format"
    elif head[257:262] == b"ustar":
        what = "PyTorch's legacy tar serialization format"
    elif head[:1] == b"\x80":
        what = "a plain pickle, not a PyTorch checkpoint (nor its legacy pre-1.6 format)"
    else:
        what = "neither a zip archive nor a format tensorlab knows"
    return RuntimeError(f"tensorlab.load: the file is in {what}; tensorlab reads the zip checkpoints torch.save writes "
                        "since torch 1.6. Re-save it with torch: torch.save(torch.load(f), f2) (the default "
                        "_use_new_zipfile_serialization=True).")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load an object saved by torch.save or tensorlab.save (PyTorch's zip format). weights_only=True
    (the default) refuses every global outside the allowlist (see the module docstring);
    map_location: None (where the file says), a device or str, a dict of locations, or a callable
    (storage, location) -> storage or None. mmap=True (f a path): CPU storages map the file's
    bytes copy-on-write instead of reading them (writes stay in memory, as torch's MAP_PRIVATE)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("tensorlab.load: only the standard pickle module is supported")
    if weights_only is None:
        weights_only = True
    if mmap:
        if not isinstance(f, (str, os.PathLike)):
            raise ValueError("f must be a file path in order to use the mmap argument")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load(fh, map_location, weights_only, os.fspath(f) if mmap else None, pickle_load_args)
    return _load(f, map_location, weights_only, None, pickle_load_args)


def _load(fh, map_location, weights_only, mmap_path, pickle_load_args):
    start = fh.tell() if fh.seekable() else 0
    head = fh.read(512)
    if not head:  # torch's EOFError, with what it means
        raise EOFError("tensorlab.load: the file is empty (0 bytes): nothing was saved to it, or its save was cut "
                       "short before the first byte; there is no checkpoint in it to read")
    if len(head) < 4 and b"PK\x03\x04".startswith(head):
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                           f"(tensorlab.load: the file is truncated: {len(head)} bytes of a zip archive)")
    if head[:4] != b"PK\x03\x04":
        if _is_legacy(head):  # torch's pre-1.6 format: read whole (such files are small), with the same rules
            rest = head + fh.read()
            try:
                return _load_legacy(rest, map_location, weights_only, pickle_load_args)
            except _UserError as e:
                raise e.error from None
        raise _legacy_error(head)
    if fh.seekable():
        fh.seek(start)
    else:
        fh = io.BytesIO(head + fh.read())
        start = 0
    try:
        archive, end = _first_archive(fh, start)
    except NotImplementedError as e:  # zipfile's "not supported" (a damaged header's flags)
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (tensorlab.load: the file is "
                           "truncated or damaged)") from e
    except (RuntimeError, MemoryError):
        raise
    except Exception as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {type(e).__name__}: {e} (tensorlab.load: "
                           "the file is truncated or damaged)") from e
    try:
        result = _read_archive(archive, map_location, weights_only, mmap_path, pickle_load_args)
    except NotImplementedError as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (tensorlab.load: the file is "
                           "truncated or damaged)") from e
    except _UserError as e:
        raise e.error from None
    finally:
        archive.zf.close()
    fh.seek(end)  # a stream holding several checkpoints: the next load reads the next one
    return result


def _read_archive(archive, map_location, weights_only, mmap_path, pickle_load_args):
    zf = archive.zf
    try:
        names = zf.namelist()
        if not names:
            raise RuntimeError("tensorlab.load: the archive is empty: not a PyTorch checkpoint")
        prefix = names[0].split("/", 1)[0]
        try:
            info = zf.getinfo(f"{prefix}/data.pkl")
        except KeyError:
            raise RuntimeError(f"tensorlab.load: the archive has no {prefix}/data.pkl: not a PyTorch checkpoint") from None
        pkl = archive.read(info)
        try:
            order_info = zf.getinfo(f"{prefix}/byteorder")
        except KeyError:
            order = "little"
        else:
            order = archive.read(order_info)[:16].decode("ascii", "replace")
    except (RuntimeError, MemoryError):
        raise
    except Exception as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {type(e).__name__}: {e} (tensorlab.load: "
                           "the file is truncated or damaged)") from e
    if order != "little":
        raise RuntimeError(f"tensorlab.load: the checkpoint was written {order}-endian; tensorlab reads "
                           "little-endian checkpoints only")
    loader = _Loader(io.BytesIO(pkl), archive, prefix, map_location, weights_only, mmap_path, **pickle_load_args)
    if not weights_only:
        return loader.load()
    try:
        return loader.load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(_HEADER + str(e)) from None
    except (RuntimeError, MemoryError, _UserError):
        raise
    except Exception as e:  # whatever else a malformed pickle provokes is the file's fault
        raise pickle.UnpicklingError(f"{_HEADER}the pickle is malformed: {type(e).__name__}: {e}") from e
