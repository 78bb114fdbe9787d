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
with torch's wording); BUILD is allowed only on OrderedDicts, parameters and allowlisted types.
weights_only=False runs the pickle as torch does (only for files you trust)."""
from __future__ import annotations

import _compat_pickle
import collections
import io
import os
import pickle
import struct
import sys
import threading
import uuid
import zipfile

import numpy as np

from .. import dtypes
from ..device import Device, canonical
from ..layout import Layout, Size, check_bounds

__all__ = ("save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL")

DEFAULT_PROTOCOL = 2
_ALIGN = 64

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
    """The storage's bytes on the host (a CUDA storage is copied: a named host wait, via cpu())."""
    from ..tensor import Tensor
    n = storage.nbytes()
    if storage.device.type == "cpu":
        return memoryview(storage._buf[:n])
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
    p.dump(obj)
    prefix = _archive_name(f)
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", zipfile.ZIP_STORED) as zf:
        _write_record(zf, bio, f"{prefix}/data.pkl", data.getvalue())
        _write_record(zf, bio, f"{prefix}/.format_version", b"1")
        _write_record(zf, bio, f"{prefix}/.storage_alignment", str(_ALIGN).encode())
        if not _disable_byteorder_record:
            _write_record(zf, bio, f"{prefix}/byteorder", b"little")
        for key, storage, _ in sorted(p.storages.values(), key=lambda e: int(e[0])):
            _write_record(zf, bio, f"{prefix}/data/{key}", _storage_bytes(storage))
        _write_record(zf, bio, f"{prefix}/version", b"3\n")
        _write_record(zf, bio, f"{prefix}/.data/serialization_id", str(uuid.uuid4().int).rjust(40, "0")[:40].encode())
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(bio.getbuffer())
    else:
        f.write(bio.getbuffer())


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


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    from ..tensor import Tensor
    if not isinstance(storage, _Typed):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v2: expected a storage, got {type(storage).__name__}")
    dt = storage.dtype
    shape = tuple(int(n) for n in size)
    strides = tuple(int(s) for s in stride)
    off = int(storage_offset)
    if len(shape) != len(strides):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v2: size {list(shape)} and stride {list(strides)} differ in length")
    untyped = storage.storage
    check_bounds(shape, strides, off, dt.itemsize, untyped.nbytes(), "tensorlab.load")
    t = Tensor._make(untyped, Layout(Size(shape), strides, off), dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    from ..nn.parameter import Parameter
    from ..tensor import Tensor
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    p = Parameter(data.detach(), requires_grad=bool(requires_grad))
    if state:
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
            state = state[0] or {}
        if isinstance(state, dict):
            p.__dict__.update({k: v for k, v in state.items() if isinstance(k, str) and not k.startswith("_")})
    return p


def _rebuild_tensor_v1(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _encode(obj, encoding="latin1", errors="strict"):
    """_codecs.encode as protocol 2 pickles bytes (encode(str, 'latin1')): text codecs only."""
    if encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii") or not isinstance(obj, str):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r} is not allowed in a weights_only load")
    return obj.encode(encoding, errors)


def _size(*args):
    return Size(*args)


def _device(*args):
    from ..device import device
    return device(*args)


def _builtin_allowlist():
    table = {("collections", "OrderedDict"): collections.OrderedDict,
             ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor"): _rebuild_tensor_v1,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
             ("torch", "Size"): _size, ("torch", "device"): _device,
             ("_codecs", "encode"): _encode,
             ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "bytearray"): bytearray,
             ("builtins", "slice"): slice}
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


class _Loader(pickle._Unpickler):
    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, file, zf, prefix, map_location, weights_only, mmap_path=None, **pickle_load_args):
        super().__init__(file, **pickle_load_args)  # encoding=, errors=, fix_imports= as pickle takes them
        self._mmap_path = mmap_path
        self._zf = zf
        self._prefix = prefix
        self._map = map_location
        self._weights_only = weights_only
        self._storages = {}
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
        user = self._user.get(f"{module}.{name}")
        if user is not None:
            return user
        if self._weights_only:
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
        from ..nn.parameter import Parameter
        state = self.stack[-1]
        inst = self.stack[-2]
        if self._weights_only and type(inst) not in (collections.OrderedDict, Parameter) and \
                type(inst) not in self._user.values():
            raise pickle.UnpicklingError(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                         f"`add_safe_globals`, but got {type(inst)}")
        if type(inst) is collections.OrderedDict and isinstance(state, dict):
            self.stack.pop()
            inst.__dict__.update(state)  # state_dict()._metadata
            return
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

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

    def _read_storage(self, key, location, nbytes):
        from ..storage import UntypedStorage
        if self._mmap_path is not None:
            return _place(self._mapped(key, nbytes), location, self._map)
        try:
            raw = self._zf.read(f"{self._prefix}/data/{key}")
        except KeyError:
            raise RuntimeError(f"tensorlab.load: the checkpoint has no record data/{key} for one of its storages "
                               "(the file is truncated or damaged)") from None
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
        try:
            info = self._zf.getinfo(f"{self._prefix}/data/{key}")
        except KeyError:
            raise RuntimeError(f"tensorlab.load: the checkpoint has no record data/{key} for one of its storages "
                               "(the file is truncated or damaged)") from None
        if info.compress_type != zipfile.ZIP_STORED or info.file_size < nbytes:
            raise RuntimeError(f"tensorlab.load(mmap=True): record data/{key} is compressed or shorter than its "
                               f"storage ({info.file_size} < {nbytes} bytes)")
        with open(self._mmap_path, "rb") as fh:
            fh.seek(info.header_offset)
            head = fh.read(30)
        if head[:4] != b"PK\x03\x04":
            raise RuntimeError(f"tensorlab.load(mmap=True): damaged local header for record data/{key}")
        start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        if nbytes == 0:
            return UntypedStorage(0, device="cpu")
        mapped = np.memmap(self._mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(nbytes,))
        return UntypedStorage._wrap(mapped.view(np.ndarray), CPU, False)


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
        r = map_location(storage, location)
        if r is None:
            return _restore(storage, location)
        if not isinstance(r, UntypedStorage):
            raise TypeError(f"map_location returned {type(r).__name__}; it must return an UntypedStorage or None")
        return r
    raise TypeError(f"map_location must be None, a str, a tensorlab.device, a dict or a callable, got "
                    f"{type(map_location).__name__}")


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


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
    if head[:4] != b"PK\x03\x04":
        raise _legacy_error(head)
    fh.seek(start)
    if not fh.seekable():
        fh = io.BytesIO(fh.read())
    with zipfile.ZipFile(fh) as zf:
        names = zf.namelist()
        prefix = names[0].split("/", 1)[0]
        try:
            pkl = zf.read(f"{prefix}/data.pkl")
        except KeyError:
            raise RuntimeError(f"tensorlab.load: the archive has no {prefix}/data.pkl: not a PyTorch checkpoint") from None
        try:
            order = zf.read(f"{prefix}/byteorder").decode()
        except KeyError:
            order = "little"
        if order != "little":
            raise RuntimeError(f"tensorlab.load: the checkpoint was written {order}-endian; tensorlab reads "
                               "little-endian checkpoints only")
        loader = _Loader(io.BytesIO(pkl), zf, prefix, map_location, weights_only, mmap_path, **pickle_load_args)
        if not weights_only:
            return loader.load()
        try:
            return loader.load()
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(_HEADER + str(e)) from None
