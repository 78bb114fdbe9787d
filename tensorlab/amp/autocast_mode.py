"""autocast: per-thread mixed-precision regions, as torch.autocast.

The policy (tensorlab/amp/policy.py) reaches the ops through one wrapper per op function, bound
wherever tensorlab binds the op (module globals, Tensor methods) while at least one enabled
region is open in some thread, and unbound again when the last one closes: with no region open
the ops run unwrapped (zero cost); with one open, each wrapped op pays a thread-local read (a
thread without a region of its own calls straight through). The bindings are found once, on the
first region (install()); binding or unbinding them is a few hundred setattr calls. Inside a wrapped op (and during backward) autocast is suspended for
the ops it calls, as torch's dispatcher excludes the Autocast key below an autocast op."""
from __future__ import annotations

import functools
import sys
import threading

from .. import dtypes
from ..tensor import Tensor
from . import policy as _policy

_ACTIVE = 0  # enabled autocast regions open in any thread; 0: every wrapper calls straight through
_count_lock = threading.Lock()
_local = threading.local()  # .modes: {device_type: dtype or None}, .depth, .suspended, .cache
_DEVICE_TYPES = ("cpu", "cuda")


def _modes():
    m = getattr(_local, "modes", None)
    if m is None:
        m = _local.modes = {"cpu": None, "cuda": None}
        _local.suspended = 0
        _local.depth = 0
        _local.cache = {}
    return m


def is_autocast_available(device_type):
    """True for the device types tensorlab's autocast serves ("cpu", "cuda")."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` (default "cuda") in this thread."""
    return _modes()[device_type or "cuda"] is not None


def get_autocast_dtype(device_type):
    """The dtype an autocast region for `device_type` casts to (its default when none is open)."""
    d = _modes().get(device_type)
    if d is not None:
        return d
    return getattr(dtypes, _policy.DEFAULT_DTYPE[device_type])


def is_autocast_cache_enabled():
    return getattr(_local, "cache_enabled", True)


def clear_autocast_cache():
    _modes()
    _local.cache = {}


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=True): inside the region,
    the ops of tensorlab.amp.policy run in `dtype` (float16 or bfloat16; the device type's default
    when None), in float32, or promoted to their widest input, as torch's. A context manager and a
    decorator; regions nest (an inner region can change the dtype or disable autocast)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'; tensorlab's "
                               f"autocast supports {list(_DEVICE_TYPES)}")
        self.device = device_type
        # dtype=None: the enclosing region's dtype, else the device type's default (torch's get_autocast_dtype)
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        supported = [getattr(dtypes, n) for n in _policy.SUPPORTED_DTYPES[device_type]]
        if enabled and self.fast_dtype not in supported:
            import warnings
            names = ", ".join(f"torch.{n}" for n in _policy.SUPPORTED_DTYPES[device_type])
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not supported. Disabling "
                          f"autocast.\n{device_type.upper()} Autocast only supports dtypes of {names} currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        global _ACTIVE
        install()
        modes = _modes()
        self._prev = modes[self.device]
        self._prev_cache = getattr(_local, "cache_enabled", True)
        modes[self.device] = self.fast_dtype if self._enabled else None
        _local.cache_enabled = self._cache_enabled
        _local.depth += 1
        self._counted = self._enabled
        if self._counted:
            with _count_lock:
                _ACTIVE += 1
                if _ACTIVE == 1:
                    _bind(True)
        return self

    def __exit__(self, *exc):
        global _ACTIVE
        modes = _modes()
        modes[self.device] = self._prev
        _local.cache_enabled = self._prev_cache
        _local.depth -= 1
        if _local.depth == 0:
            _local.cache = {}  # torch drops the cast cache when the outermost region exits
        if self._counted:
            with _count_lock:
                _ACTIVE -= 1
                if _ACTIVE == 0:
                    _bind(False)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return decorate_autocast


# -- casting ------------------------------------------------------------------------------------------
_LOW = None


def _eligible(x, device_type):
    return isinstance(x, Tensor) and x.device.type == device_type and x.dtype.is_floating_point \
        and x.dtype is not dtypes.float64


def _cast(x, dtype, device_type):
    if not _eligible(x, device_type) or x.dtype is dtype:
        return x
    cache = _local.cache if getattr(_local, "cache_enabled", True) else None
    # torch caches casts of leaf tensors that require grad (the weights) within a region
    if cache is not None and x.is_leaf and x.requires_grad:
        hit = cache.get((id(x), dtype))
        if hit is not None and hit[0] is x and hit[2] == x._version:
            return hit[1]
        y = x.to(dtype)
        cache[(id(x), dtype)] = (x, y, x._version)
        return y
    return x.to(dtype)


def _map(args, fn):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)) and a and any(isinstance(t, Tensor) for t in a):
            out.append(type(a)(fn(t) for t in a))
        else:
            out.append(fn(a))
    return out


def _device_type(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            for t in a:
                if isinstance(t, Tensor):
                    return t.device.type
    return None


def _apply(name, fn, args, kwargs):
    modes = _local.modes
    dev = _device_type(args, kwargs)
    target = modes.get(dev) if dev is not None else None
    kind = _policy.POLICY[dev].get(name) if target is not None else None
    if kind is None:
        return fn(*args, **kwargs)
    if kind == _policy.LOWER:
        dtype = target
    elif kind == _policy.FP32:
        if name in _policy.DTYPE_ARG and kwargs.get("dtype") is not None:
            dtype = None
        else:
            dtype = dtypes.float32
    else:  # PROMOTE: the widest floating dtype among the tensor arguments
        dtype = None
        for t in _flat(args, kwargs):
            if isinstance(t, Tensor) and t.dtype.is_floating_point:
                dtype = t.dtype if dtype is None else dtypes.promote_types(dtype, t.dtype)
        if dtype is not None:
            def cast_promote(x):
                if isinstance(x, Tensor) and x.device.type == dev and x.dtype.is_floating_point \
                        and x.dtype is not dtype:
                    return x.to(dtype)
                return x
            args = _map(args, cast_promote)
            kwargs = dict(zip(kwargs, _map(kwargs.values(), cast_promote)))
            dtype = None
    if dtype is not None:
        if kind == _policy.FP32:
            def cast(x):
                return x.to(dtype) if _eligible(x, dev) and x.dtype is not dtype else x
        else:
            def cast(x):
                return _cast(x, dtype, dev)
        args = _map(args, cast)
        kwargs = dict(zip(kwargs, _map(kwargs.values(), cast)))
    _local.suspended += 1
    try:
        return fn(*args, **kwargs)
    finally:
        _local.suspended -= 1


def _flat(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _wrap(name, fn):
    def autocast_op(*args, **kwargs):
        if not _ACTIVE or getattr(_local, "suspended", 1):
            return fn(*args, **kwargs)
        return _apply(name, fn, args, kwargs)
    functools.update_wrapper(autocast_op, fn)
    autocast_op.__autocast_wrapped__ = fn
    return autocast_op


def _suspending(fn):
    """Backward runs with autocast off (torch's engine does not carry the Autocast key)."""
    def run_without_autocast(*args, **kwargs):
        if not _ACTIVE:
            return fn(*args, **kwargs)
        _modes()
        _local.suspended += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _local.suspended -= 1
    functools.update_wrapper(run_without_autocast, fn)
    run_without_autocast.__autocast_wrapped__ = fn
    return run_without_autocast


# -- installation -----------------------------------------------------------------------------------------
_installed = None
_install_lock = threading.Lock()


def _lookup(name):
    import tensorlab
    if name.startswith("linalg_"):
        return getattr(tensorlab.linalg, name[7:], None)
    if name.startswith("fft_"):
        fft = getattr(tensorlab, "fft", None)
        return getattr(fft, name[4:], None) if fft is not None else None
    found = []
    for owner in (tensorlab, tensorlab.nn.functional, tensorlab.Tensor):
        f = getattr(owner, name, None) if owner is not tensorlab.Tensor else owner.__dict__.get(name)
        if callable(f) and not isinstance(f, type):
            found.append(f)
    return found


def install():
    """Wrap every op of the policy wherever tensorlab binds it (module globals, Tensor methods);
    done once per process, on the first autocast region. Returns the names tensorlab lacks."""
    global _installed
    if _installed is not None:
        return _installed
    with _install_lock:
        if _installed is not None:
            return _installed
        import tensorlab
        targets, missing = {}, []
        for name in sorted(_policy.all_names()):
            found = _lookup(name)
            found = found if isinstance(found, list) else ([found] if found is not None else [])
            if not found:
                missing.append(name)
            for f in found:
                targets.setdefault(id(f), (name, f))
        from ..autograd import engine
        wrappers = {k: _wrap(name, f) for k, (name, f) in targets.items()}
        wrappers[id(engine.run_backward)] = _suspending(engine.run_backward)
        owners = [mod for mod_name, mod in list(sys.modules.items())
                  if mod is not None and (mod_name == "tensorlab" or mod_name.startswith("tensorlab."))
                  and not mod_name.startswith("tensorlab.amp")]
        for owner in owners + [tensorlab.Tensor]:
            for attr, value in list(vars(owner).items()):
                w = wrappers.get(id(value))
                if w is not None and w.__autocast_wrapped__ is value:
                    _BINDINGS.append((owner, attr, value, w))
        _installed = tuple(missing)
        return _installed


_BINDINGS = []  # (owner, attribute, the op function, its autocast wrapper)


def _bind(on):
    """Put the wrappers in place of the ops (on) or the ops back (off); under _count_lock."""
    for owner, attr, fn, wrapper in _BINDINGS:
        setattr(owner, attr, wrapper if on else fn)
