"""Creation ops: tensor / as_tensor / from_numpy, empty / zeros / ones / full (+ _like),
arange, linspace, eye, empty_strided."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _warn, autograd_hooks, backends, dtypes, layout as L
from .. import layouts as _layouts
from ..device import CPU
from ..default_device import factory_device as canonical  # device=None: the default device
from ..storage import ReadOnlyStorage, UntypedStorage
from ..tensor import Tensor
from ._common import empty_like_layout, empty_tensor, interned, sizes_or_keyword


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return autograd_hooks.created(t)


def _dt(dtype, default=None, op=None):
    if dtype is None:
        return default if default is not None else dtypes.get_default_dtype()
    return dtypes.as_dtype(dtype, op)


def _host_values(data, dtype=None):
    """Python data -> (NumPy array, inferred DType) with torch's inference rules and errors.
    `dtype` is the explicit target, if any: huge integers are fine for a floating target."""
    if isinstance(data, np.ndarray):
        return data, dtypes.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        arr = np.asarray(data)
        return arr, dtypes.from_numpy_dtype(arr.dtype)
    data = _unwrap_tensors(data)
    try:
        arr = np.array(data)
    except (ValueError, TypeError, OverflowError):
        arr = None
    kind = "O" if arr is None else arr.dtype.kind  # (dtype.kind: comparing dtypes costs a microsecond)
    if kind in "OUSV" or (kind == "u" and arr.itemsize == 8 and not _has_np(data)) or \
            (kind == "f" and arr.itemsize == 8 and arr.size and type(_first_leaf(data)) is not float
             and not _has_np(data) and np.fmax.reduce(np.abs(arr).ravel()) >= 2.0 ** 63):  # fmax skips NaN quietly
        # (NumPy turns int64 and uint64-sized Python ints into float64: those may be overflowing ints)
        arr = _python_values(data, dtype)  # the slow path: torch's errors, or integers beyond int64
    if arr.dtype.kind == "f" and arr.dtype == np.float64 and not _has_np_float64(data):
        return arr, dtypes.get_default_dtype()
    if arr.dtype.kind in "iu" and arr.dtype != np.uint8 and arr.dtype.itemsize < 8 and not _has_np(data):
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "c" and not _has_np(data):  # Python complex numbers: the default complex dtype
        return arr, dtypes.get_default_complex_dtype()
    return arr, dtypes.from_numpy_dtype(arr.dtype)


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _python_values(data, dtype):
    """Nested Python data NumPy would not take as numbers, checked by torch's rules: the shape
    comes from the first elements, every sequence must match it (ValueError), a scalar where a
    sequence belongs or the reverse is a TypeError, a leaf that is no number cannot infer a dtype
    (RuntimeError; a str: ValueError), and an integer outside int64 overflows (ValueError)
    unless the result is floating."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"tensor(): new(): invalid data type '{type(data).__name__}': pass numbers")
    shape = []
    x = data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if len(shape) > L.MAX_DIMS:
            raise ValueError(f"tensor(): too many dimensions '{type(x).__name__}': the data nests deeper than "
                             f"{L.MAX_DIMS} levels, tensorlab's limit (NumPy's); flatten it")
        if not x:
            break
        x = x[0]
    if isinstance(x, str):  # torch infers the shape from the first elements and takes a str for a sequence
        raise ValueError(f"tensor(): too many dimensions 'str': strings are not numbers ({x!r})")
    leaves = []
    _collect(data, shape, 0, leaves)
    target = None if dtype is None else dtypes.as_dtype(dtype, "tensor")
    floating = False
    huge = False
    for v in leaves:
        if isinstance(v, (str, bytes)):
            raise TypeError(f"tensor(): new(): invalid data type '{type(v).__name__}' ({v!r}): pass numbers")
        if isinstance(v, bool) or isinstance(v, (np.bool_, np.integer)):
            continue
        if isinstance(v, int):
            big = not _LONG_MIN <= v <= _LONG_MAX
            huge = huge or big
            if target is not None and not target.is_floating_point and target is not dtypes.bool_:
                if big:  # torch converts element by element: the first bad one decides the error
                    raise ValueError(f"tensor(): Overflow when unpacking long long: {v} is outside int64")
                _check_int_range(np.array([v]), target)
        elif isinstance(v, (float, np.floating)):
            floating = True
            if target is not None and not target.is_floating_point and target is not dtypes.bool_:
                _check_int_range(np.array([v], dtype=np.float64), target)
        elif isinstance(v, (complex, np.complexfloating)):
            floating = True
        elif dtype is not None:  # torch converts each element to the given dtype: a TypeError
            raise TypeError(f"tensor(): must be real number, not {type(v).__name__}")
        else:
            raise RuntimeError(f"tensor(): Could not infer dtype of {type(v).__name__}; data must be numbers, "
                               "nested sequences of numbers, or NumPy arrays")
    if target is not None:  # torch converts each element to the given dtype, the inferred one otherwise
        floating = target.is_floating_point
        if target is dtypes.bool_:
            return np.array([bool(v) for v in leaves], dtype=np.bool_).reshape(shape)
    if huge and not floating:
        raise ValueError("tensor(): Overflow when unpacking long long: the data holds an integer outside int64 "
                         f"[{_LONG_MIN}, {_LONG_MAX}]; pass dtype=tensorlab.float64 to store it as a float")
    # float() raises OverflowError for an integer beyond float64's range, as torch does
    flat = np.array([float(v) if floating else v for v in leaves], dtype=np.float64 if floating else None)
    return flat.reshape(shape)


def _collect(x, shape, dim, leaves):
    if dim == len(shape):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"tensor(): found a sequence at dim {dim} where the first elements have only {dim} "
                            f"dimensions: '{type(x).__name__}' object cannot be interpreted as a number")
        leaves.append(x)
        return
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"tensor(): not a sequence: expected a sequence of length {shape[dim]} at dim {dim}, "
                        f"got {type(x).__name__}")
    if len(x) != shape[dim]:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(x)})")
    for y in x:
        _collect(y, shape, dim + 1, leaves)


def _check_int_range(arr, dt):
    """torch checks Python numbers stored into an integral dtype: out of range (uint8 takes
    -255..255, wrapping the negatives), NaN or infinite raises instead of wrapping."""
    if arr.size == 0 or dt.is_floating_point or dt is dtypes.bool_ or dt.category == 3:
        return
    ii = np.iinfo(dt.np)
    lo, hi = (-int(ii.max), int(ii.max)) if dt is dtypes.uint8 else (int(ii.min), int(ii.max))
    if arr.dtype.kind == "f":  # the float itself is compared (torch: -0.5 overflows uint8, 127.5 int8)
        lo = int(ii.min)  # and a negative float does not wrap into uint8 (an int does)
        if not np.isfinite(arr).all():
            bad = arr[~np.isfinite(arr)].flat[0]
        else:
            bad = None if arr.min() >= lo and arr.max() <= hi else (arr.min() if arr.min() < lo else arr.max())
    elif arr.dtype.kind in "iu":
        mn, mx = int(arr.min()), int(arr.max())
        bad = None if mn >= lo and mx <= hi else (mn if mn < lo else mx)
    else:
        return
    if bad is not None:
        raise RuntimeError(f"tensor(): value cannot be converted to type {dt.name} without overflow: {bad} is "
                           f"outside [{lo}, {hi}]")


def _has_np(data):
    return isinstance(_first_leaf(data), (np.generic, np.ndarray))


def _has_np_float64(data):
    leaf = _first_leaf(data)
    return isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype == np.float64


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def _unwrap_tensors(data, depth=0):
    if isinstance(data, Tensor):
        if data.numel() == 1 and data.dim() == 0:
            return data.item()
        return data.tolist()
    if isinstance(data, (list, tuple)):
        if depth >= L.MAX_DIMS:  # before Python's recursion limit: torch's ValueError for deep data
            raise ValueError(f"tensor(): too many dimensions '{type(data).__name__}': the data nests deeper than "
                             f"{L.MAX_DIMS} levels, tensorlab's limit (NumPy's); flatten it")
        if any(isinstance(x, (Tensor, list, tuple)) for x in data):
            return [_unwrap_tensors(x, depth + 1) for x in data]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested sequences, scalars, NumPy arrays, tensors)."""
    if isinstance(data, Tensor):
        t = data.detach().to(device=device if device is not None else data.device,
                             dtype=dtype if dtype is not None else data.dtype, copy=True)
        return _finish(t, requires_grad)
    if dtype is not None:
        _dt(dtype, op="tensor")  # the dtype argument is checked before the data
    arr, inferred = _host_values(data, dtype)
    dt = _dt(dtype, inferred)
    if dtype is not None and not isinstance(data, (np.ndarray, np.generic)):
        _check_int_range(arr, dt)
        if arr.dtype.kind == "c" and not dt.is_complex and dt is not dtypes.bool_:
            # Python complex numbers into a real dtype: torch's TypeErrors (it never drops the imaginary part)
            raise TypeError("must be real number, not complex" if dt.is_floating_point else
                            "'complex' object cannot be interpreted as an integer")
    dev = canonical(device)
    t = empty_tensor(arr.shape, dt, dev)
    if dev.type == "cpu":
        backends.cpu.copy_from_host(t, _cast_host(arr, dt))
    else:
        from .transfer import upload
        upload(t, _cast_host(arr, dt))  # a blocking upload: a named sync, as in torch
    if pin_memory:
        t = t.pin_memory()
    return _finish(t, requires_grad)


def _cast_host(arr, dt):
    if arr.dtype == dt.np:
        return arr
    with np.errstate(invalid="ignore", over="ignore"):
        return arr.astype(dt.np)


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` when possible (a tensor, or a NumPy array on the CPU), else copy."""
    from ..interop.arrays import as_tensor_foreign  # __cuda_array_interface__, DLPack, __array_interface__
    shared = as_tensor_foreign(data, dtype, device)
    if shared is not None:
        return shared
    if isinstance(data, Tensor):
        return data.to(device=device if device is not None else data.device,
                       dtype=dtype if dtype is not None else data.dtype)
    if isinstance(data, np.ndarray):
        dev = canonical(device)
        dt = _dt(dtype, dtypes.from_numpy_dtype(data.dtype))
        if dev.type == "cpu" and dt.np == data.dtype and all(s >= 0 for s in data.strides):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A CPU tensor sharing `ndarray`'s memory; its storage is not resizable."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = dtypes.from_numpy_dtype(ndarray.dtype)
    if not ndarray.flags.writeable:
        _warn.warn("The given NumPy array is not writable; tensorlab shares its memory, so the tensor is "
                   "read-only too: writing to it raises RuntimeError. You may want to copy the array "
                   "(np.array(arr) or tensorlab.tensor(arr)) if you need to write.", UserWarning)
    buf, shape, strides = backends.cpu.wrap_numpy(ndarray)
    storage = (UntypedStorage if ndarray.flags.writeable else ReadOnlyStorage)._wrap(buf, CPU, False)
    return Tensor._make(storage, interned(L.Layout(L.Size(shape), strides, 0), make=True), dt)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    arr = np.frombuffer(buffer, dtype=dtypes.as_dtype(dtype).np, count=count, offset=offset)
    return _finish(from_numpy(arr), requires_grad)


def _size_args(size, op):
    if not size:  # torch.zeros() is an error; the 0-dim tensor is zeros(())
        raise TypeError(f"{op}() missing 1 required positional argument: \"size\" (pass () for a 0-dim tensor)")
    return L.normalize_shape(size, op)


def empty(*sizes, size=None, dtype=None, device=None, layout=None, requires_grad=False, memory_format=None, pin_memory=False,
          out=None):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "empty", "size")
    if layout is not None:
        _layouts.check(layout, "empty")
    dt = _dt(dtype, op="empty")  # torch parses every argument before it looks at the sizes' values
    shape = _size_args(size, "empty")
    dev = canonical(device)
    stride = None
    if memory_format is not None:
        from ..tensor import channels_last, channels_last_3d
        if memory_format in (channels_last, channels_last_3d):
            stride = L.channels_last_strides(shape)
    if out is not None:
        from .resize import resize_
        return resize_(out, *shape)
    t = empty_tensor(shape, dt, dev, stride)
    if pin_memory:
        t = t.pin_memory()
    return _finish(t, requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False):
    if layout is not None:
        _layouts.check(layout, "empty_strided")
    dt = _dt(dtype, op="empty_strided")
    shape = _size_args((size,), "empty_strided")
    stride = L.normalize_shape((stride,), "empty_strided")
    if len(stride) != len(shape):
        raise RuntimeError(f"empty_strided: dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    L.check_numel(shape)
    stride = L.unit_dims_restrided(shape, stride)
    if any(s < 0 for s in stride) and 0 not in shape:  # with no element no stride is ever used
        raise RuntimeError(f"empty_strided: negative strides are not supported (sizes={list(shape)}, "
                           f"strides={list(stride)}); create the tensor with positive strides and flip() it")
    return _finish(empty_tensor(shape, dt, canonical(device), stride), requires_grad)


def _filled(shape, value, dt, dev, requires_grad):
    t = empty_tensor(shape, dt, dev)
    backends.get(dev).fill(t, value)
    return _finish(t, requires_grad)


def zeros(*sizes, size=None, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "zeros", "size")
    if layout is not None:
        _layouts.check(layout, "zeros")
    dt = _dt(dtype, op="zeros")
    if out is not None:
        return _fill_out(out, _size_args(size, "zeros"), 0)
    return _filled(_size_args(size, "zeros"), 0, dt, canonical(device), requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "ones", "size")
    if layout is not None:
        _layouts.check(layout, "ones")
    dt = _dt(dtype, op="ones")
    if out is not None:
        return _fill_out(out, _size_args(size, "ones"), 1)
    return _filled(_size_args(size, "ones"), 1, dt, canonical(device), requires_grad)


def _fill_out(out, shape, value):
    from ._common import output
    o = output(out, shape, out.dtype, out.device, "fill")
    backends.get(out.device).fill(o.tensor, value)
    return o.finish()


def _checked(value, dt, op):
    from .elementwise import _checked as checked
    return checked(value, dt, op)


def _scalar_default_dtype(value):
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, numbers.Integral):
        return dtypes.int64
    if isinstance(value, numbers.Real):
        return dtypes.get_default_dtype()
    if isinstance(value, numbers.Complex):
        return dtypes.get_default_complex_dtype()
    raise TypeError(f"full(): fill_value must be a number, got {type(value).__name__}")


def full(size, fill_value, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    if layout is not None:
        _layouts.check(layout, "full")
    if dtype is not None:
        _dt(dtype, op="full")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = _dt(dtype, _scalar_default_dtype(fill_value), "full")
    shape = _size_args((size,), "full")
    if out is not None:
        return _fill_out(out, shape, _checked(fill_value, out.dtype, "full"))
    # torch checks the value against the dtype (2**63 into int64 raises; wrapping is NumPy's)
    return _filled(shape, _checked(fill_value, dt, "full"), dt, canonical(device), requires_grad)


def _like(t, dtype, device, memory_format):
    return empty_like_layout(t, _dt(dtype, t.dtype), canonical(device) if device is not None else t.device,
                             memory_format)


def empty_like(input, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "empty_like")
    return _finish(_like(input, dtype, device, memory_format), requires_grad)


def _filled_like(input, value, dtype, device, requires_grad, memory_format):
    t = _like(input, dtype, device, memory_format)
    t._backend.fill(t, value)
    return _finish(t, requires_grad)


def zeros_like(input, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "zeros_like")
    return _filled_like(input, 0, dtype, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "ones_like")
    return _filled_like(input, 1, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "full_like")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = input.dtype if dtype is None else _dt(dtype, op="full_like")
    if isinstance(fill_value, numbers.Number):
        fill_value = _checked(fill_value, dt, "full_like")  # torch checks here, float16 included
    return _filled_like(input, fill_value, dtype, device, requires_grad, memory_format)


def _num(x, op, name, bools=True):
    if isinstance(x, Tensor):
        x = x.item()
    if isinstance(x, bool) and bools:  # arange/linspace take bools as 0 and 1 (arange(False, True, True) is [0])
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{op}(): argument '{name}' must be a number, got {type(x).__name__}")
    if isinstance(x, numbers.Integral) and x < _LONG_MIN:
        raise OverflowError(f"{op}(): argument '{name}' = {x} is below int64's range; pass it as a float")
    return x


def arange(start, end=None, step=1, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    """Values start, start+step, ... below end; int64 unless an argument is a float (torch)."""
    if layout is not None:
        _layouts.check(layout, "arange")
    want = _out_dtype("arange", None if dtype is None else _dt(dtype, op="arange"), out)
    if end is None:
        start, end = 0, start
    start, end, step = (_num(start, "arange", "start"), _num(end, "arange", "end"), _num(step, "arange", "step"))
    is_float = any(isinstance(x, float) for x in (start, end, step))
    dt = want or (dtypes.get_default_dtype() if is_float else dtypes.int64)
    if dt.category == 3:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt.torch_name}' (tensorlab.arange: make a "
                                  "real range and convert it, e.g. tensorlab.arange(n).to(tensorlab.complex64))")
    if dt is dtypes.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool': arange of bool is not supported; "
                                  "make an integer range and compare it")
    for x in (start, end, step):  # integral ranges compute in int64: every argument must convert
        if not dt.is_floating_point and not (x != x or _LONG_MIN <= x <= _LONG_MAX):
            raise RuntimeError(f"arange: value cannot be converted to type int64_t without overflow: {x}")
    if step == 0 or step != step:
        raise RuntimeError("arange: step must be nonzero")
    for x, name in ((start, "start"), (end, "end")):
        if not math.isfinite(x):
            raise RuntimeError(f"arange: unsupported range: {start} -> {end} ({name} is not finite)")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dt.is_floating_point:  # torch counts a floating range in double, whatever the arguments' types
        n = math.ceil((float(end) - float(start)) / float(step))
    elif not is_float:
        n = -((start - end) // step)
    else:  # torch computes an integral range from the truncated bounds and step: int64 counts with
        # them, the narrower types count in double (arange(0.5, dtype=int32) has one element, 0)
        fstart, fend, fstep = start, end, step
        start, end, step = int(start), int(end), int(step)
        if dt is dtypes.int64:
            if step == 0:
                raise ValueError(f"arange: step must be nonzero (step {fstep} truncates to 0 in int64)")
            n = -((start - end) // step)
        else:
            n = math.ceil((fend - fstart) / fstep)
    n = max(int(n), 0)
    if dt.is_floating_point:  # the backends take the C type: a Python int beyond int64 would not fit
        start, step = float(start), float(step)
    return _generate("arange", (n,), dt, device, requires_grad, out, lambda t: t._backend.arange(t, start, step))


def _generate(op, shape, dt, device, requires_grad, out, write):
    """Allocate (or validate and, atomically, resize `out`) and let `write` fill the result."""
    if out is not None:
        from ._common import output
        o = output(out, shape, out.dtype, out.device, op)
        write(o.tensor)
        return o.finish()
    t = empty_tensor(shape, dt, canonical(device))
    write(t)
    return _finish(t, requires_grad)


def _out_dtype(op, want, out):
    """torch computes a range in out's dtype; an explicit dtype must be out's."""
    if not isinstance(out, Tensor):
        return want
    if want is not None and want is not out.dtype:
        raise RuntimeError(f"{op}: dtype {want.torch_name} does not match dtype of out parameter "
                           f"({out.dtype.torch_name}); pass dtype={out.dtype} or drop it")
    return out.dtype


def linspace(start, end, steps, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    if layout is not None:
        _layouts.check(layout, "linspace")
    dt = _out_dtype("linspace", None if dtype is None else _dt(dtype, op="linspace"), out) or _dt(None)
    if isinstance(steps, Tensor) and steps.dim() == 0 and not steps.dtype.is_floating_point:
        steps = steps.item()
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):  # every argument's type first
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    steps = int(steps)
    if not _LONG_MIN <= steps <= _LONG_MAX:
        raise ValueError(f"linspace(): Overflow when unpacking long long: steps={steps} is outside int64")
    start, end = _num(start, "linspace", "start"), _num(end, "linspace", "end")
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    if dt is dtypes.bool_ and steps > 1:  # (torch writes 0 or 1 steps without a kernel)
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    if steps:  # torch converts the bounds to the dtype first: overflow is an error, an int wraps into uint8
        start, end = _checked(start, dt, "linspace"), _checked(end, dt, "linspace")
    return _generate("linspace", (steps,), dt, device, requires_grad, out,
                     lambda t: t._backend.linspace(t, start, end))


def eye(n, m=None, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    if layout is not None:
        _layouts.check(layout, "eye")
    n = int(_num(n, "eye", "n", bools=False))
    m = n if m is None else int(_num(m, "eye", "m", bools=False))
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    return _generate("eye", (n, m), _dt(dtype), device, requires_grad, out, lambda t: t._backend.eye(t))


def rebuild_tensor(arr, dtype_name, device, requires_grad):
    t = tensor(arr, dtype=dtypes.by_name(dtype_name), device=device)
    return _finish(t, requires_grad)


FUNCTIONS = ("tensor", "as_tensor", "from_numpy", "frombuffer", "empty", "empty_strided", "zeros", "ones", "full",
             "empty_like", "zeros_like", "ones_like", "full_like", "arange", "linspace", "eye")
METHODS = {}
