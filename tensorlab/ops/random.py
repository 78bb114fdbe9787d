"""Random numbers: generators, rand/randn/randint/randperm, the in-place samplers
(uniform_, normal_, random_, bernoulli_, exponential_), bernoulli and normal.

Every backend draws from one counter-based generator, Philox4x32-10 (Salmon et al., "Parallel
Random Numbers: As Easy as 1, 2, 3", SC11; Random123), so the CPU (NumPy) and CUDA backends
produce the same numbers from the same (seed, offset). The exact definition:

Word stream. A generator's state is (seed, offset): a 64-bit seed and a 64-bit count of 128-bit
counter blocks already used. A call reads words W[0], W[1], ... where W[4*b + j] (j = 0..3) is
output word j of philox4x32_10(counter, key) with
    counter = (lo32(offset + b), hi32(offset + b), 0, 0)    (offset + b taken modulo 2^64)
    key     = (lo32(seed), hi32(seed)).
A call that reads `w` words advances the offset by ceil(w / 4) blocks, so consecutive calls never
share a block and re-seeding (offset 0) reproduces them. Element i of the output (in the
tensor's logical row-major order, whatever its strides) reads:

    uniform U_i  float64 output:  ((W[2i] | W[2i+1] << 32) >> 11) * 2^-53          (2 words)
                 other dtypes:    (W[i] >> 8) * 2^-24                             (1 word)
    rand / uniform_(a, b): U_i * (b - a) + a (multiply, then add: no FMA) in the compute type
                 (float64 for a float64 output, float32 for the others, a and b - a rounded to
                 it once), rounded to the dtype; a result >= b becomes a.
    randn / normal_(m, s): Box-Muller on uniform pairs: r = sqrt(-2 log(1 - U_2k)),
                 t = 2 pi U_2k+1, element 2k = m + s * r cos t, element 2k+1 = m + s * r sin t;
                 float64 output: in float64 (libm); other dtypes: in float32 with the log and
                 sin/cos polynomials of kernels/tensorlab/random_math.cuh (correctly rounded float32
                 operations only, reproduced by backends/cpu/random_math.py); an odd count still
                 reads the last pair whole.
    randint / random_ over [low, high): range R = high - low; X_i = W[i] when R < 2^32, else
                 (W[2i] | W[2i+1] << 32); value = low + X_i % R modulo 2^64 (R = 2^64: low + X_i).
    bernoulli:   1 if U_i < p_i else 0, always with the 53-bit U_i (2 words), compared in float64.
    exponential_(l): float64: -log(U_i + 2^-54) / l in float64; other dtypes: -log(V_i + 2^-24) / l
                 in float32 (random_math.cuh's log), V_i = (W[i] >> 9) * 2^-23 (exact in float32).
    randperm(n): keys K_i = W[2i] | W[2i+1] << 32; out[j] = index of the j-th smallest key, ties
                 by index (a stable sort).

Every result is bit-identical across backends except float64 normal and exponential values, which
agree to the rounding of libm's float64 log/sin/cos (almost always bit-identical). Since issue 37
the float32/float16/bfloat16 samplers compute in float32 (no FP64 in their kernels): their normal
and exponential values differ from the earlier float64-math values for the same seed, uniform_(a, b)
by at most an ulp where (a, b) != (0, 1); float64 streams, rand(), randint, bernoulli, randperm and
random_fills (cauchy_, log_normal_, geometric_: float64 draws, so their transforms stay bit-identical
across backends) are unchanged.
"""
from __future__ import annotations

import operator
import os
import threading

from .. import _warn
from .. import layouts as _layouts
from .. import autograd_hooks, dtypes, layout as L
from ..device import CPU, canonical
from ..tensor import Tensor
from . import registry
from ._common import check_writable, empty_like_layout, output, same_device
from .registry import NONE, OpDef

_F = "random"
registry.register(*(
    OpDef(name, _F, prim, NONE, differentiable=False, inplace=name.endswith("_"))
    for prim, names in (("philox_uniform", ("rand", "rand_like", "uniform_")),
                        ("philox_normal", ("randn", "randn_like", "normal_", "normal")),
                        ("philox_randint", ("randint", "randint_like", "random_")),
                        ("philox_bernoulli", ("bernoulli", "bernoulli_")),
                        ("philox_exponential", ("exponential_",)),
                        ("philox_randperm", ("randperm",)))
    for name in names))

_MASK64 = (1 << 64) - 1
_DEFAULT_SEED = 67280421310721  # torch's seed for a new Generator
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}  # exactly representable integers: 2^digits


class Generator:
    """A Philox4x32-10 generator for one device: state (seed, offset), see the module docstring."""

    def __init__(self, device="cpu"):
        self._device = canonical(device)
        self._lock = threading.Lock()
        self._seed = _DEFAULT_SEED
        self._offset = 0

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        self._set(_check_seed(seed), 0)
        return self

    def seed(self):
        """Seed from the OS's entropy and return the seed."""
        s = _random_seed()
        self._set(s, 0)
        return s

    def initial_seed(self):
        return self._seed

    def get_offset(self):
        return self._offset

    def set_offset(self, offset):
        offset = operator.index(offset)
        if not 0 <= offset <= _MASK64:
            raise RuntimeError(f"set_offset: offset must be in [0, 2^64), got {offset}")
        with self._lock:
            self._offset = offset
        return self

    def get_state(self):
        """A CPU uint8 tensor of 16 bytes: the seed then the offset, each 64-bit little-endian."""
        from .creation import tensor
        with self._lock:
            raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return tensor(list(raw), dtype=dtypes.uint8)

    def set_state(self, new_state):
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a tensorlab.uint8 tensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dtypes.uint8:
            raise TypeError(f"RNG state must be a tensorlab.uint8 tensor (from get_state()), got {new_state.dtype}")
        if new_state.numel() != 16:
            raise RuntimeError(f"Expected a Philox generator state of 16 bytes (seed and offset, 8 bytes each, as "
                               f"get_state() returns) but found the input RNG state size to be {new_state.numel()}")
        raw = bytes(new_state.reshape(-1).tolist() if new_state.dim() != 1 else new_state.tolist())
        self._set(int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))
        return self

    def clone_state(self):
        g = Generator(self._device)
        with self._lock:
            g._seed, g._offset = self._seed, self._offset
        return g

    def _set(self, seed, offset):
        with self._lock:
            self._seed, self._offset = seed, offset

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self._seed, self._offset))


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._set(seed, offset)
    return g


def _check_seed(seed):
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            seed = operator.index(seed)
        except TypeError:
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}") from None
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError(f"Overflow when unpacking long long: a seed must be in [-2^63, 2^64), got {seed}")
    return seed & _MASK64


def _random_seed():
    return int.from_bytes(os.urandom(8), "little")


# -- default generators ---------------------------------------------------------------------------
default_generator = Generator(CPU)
default_generator.seed()  # like torch, a process starts from a nondeterministic seed
_defaults = {CPU: default_generator}
_global_seed = None  # the last tl.manual_seed / tl.seed, for default generators created later


def _default_for(device):
    g = _defaults.get(device)
    if g is None:
        g = Generator(device)
        g._set(_random_seed() if _global_seed is None else _global_seed, 0)
        g = _defaults.setdefault(device, g)
    return g


def manual_seed(seed):
    """Seed the default generator of every device; returns the CPU default generator."""
    global _global_seed
    s = _check_seed(seed)
    _global_seed = s
    for g in list(_defaults.values()):
        g._set(s, 0)
    return default_generator


def seed():
    """Seed every default generator from the OS's entropy; returns the seed."""
    s = _random_seed()
    manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU default generator's state (a uint8 tensor, see Generator.get_state)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _generator(generator, device, op):
    if generator is None:
        return _default_for(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be tensorlab.Generator, not {type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(f"{op}: Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'; create it with tl.Generator(device='{device.type}')")
    return generator


def _launch(gen, words, primitive, out, *params):
    """Run one backend primitive at the generator's offset; the offset advances only when it succeeds."""
    if out.numel() == 0:
        return
    with gen._lock:
        seed_, offset = gen._seed, gen._offset
        getattr(out._backend, primitive)(out, seed_, offset, *params)
        gen._offset = (offset + (words + 3) // 4) & _MASK64


# -- parameter checks -----------------------------------------------------------------------------
def _check_floating(op, kernel, dtype):
    if not dtype.is_floating_point:
        raise RuntimeError(f'"{kernel}" not implemented for \'{dtype.torch_name}\': {op} samples a continuous '
                           f"distribution and needs a floating point dtype (float16, bfloat16, float32, float64), "
                           f"got {dtype}")


def _bounds(dtype):
    """The inclusive range of values a dtype holds."""
    if dtype is dtypes.bool_:
        return 0, 1
    if dtype.is_floating_point:
        m = dtypes.finfo(dtype).max
        return -m, m
    ii = dtypes.iinfo(dtype)
    return ii.min, ii.max


def _default_high(dtype):
    """random_'s exclusive upper end when `to` is not given: [0, 2^digits] for floats, [0, max] for integers."""
    if dtype.is_floating_point:
        return (1 << _DIGITS[dtype.name]) + 1
    return _bounds(dtype)[1] + 1


def _check_from_to(low, high, dtype, op):
    """torch's random_ checks: from < to, both ends held by the dtype, and (floats) a warning where
    integers stop being exact."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    lo, hi = _bounds(dtype)
    if not lo <= low <= hi:
        raise RuntimeError(f"{op}: from is out of bounds for {dtype}: from={low} is not in [{lo}, {hi}]")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"{op}: to - 1 is out of bounds for {dtype}: to - 1 = {high - 1} is not in [{lo}, {hi}]")
    if dtype.is_floating_point:
        lim = 1 << _DIGITS[dtype.name]
        if not (-lim <= low <= lim and -lim <= high - 1 <= lim):
            _warn.warn(f"{op}: [from, to - 1] = [{low}, {high - 1}] is out of bounds [-(2^{_DIGITS[dtype.name]}), "
                       f"2^{_DIGITS[dtype.name]}]. Due to precision limitations {dtype} can support discrete "
                       "uniform distribution only within this range.", UserWarning)


def _int_arg(x, op, name, pos):
    if isinstance(x, float):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not float")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not {type(x).__name__}") from None


def _number(x, op, name):
    if isinstance(x, Tensor):
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        try:
            return float(x)
        except (TypeError, ValueError):
            raise TypeError(f"{op}(): argument '{name}' must be a number, not {type(x).__name__}") from None
    return x


def _is_double(dtype):
    return dtype is dtypes.float64


# -- the samplers (fill an existing tensor; no checks of the target) -------------------------------
def _complex_parts(t):
    """A complex tensor's (..., 2) float view (the random kernels fill real dtypes); others as they are."""
    if t.dtype.category == 3:
        from .complex_ops import view_as_real
        return view_as_real(t)
    return t


def _fill_uniform(t, low, high, gen):
    _launch(gen, t.numel() * (2 if _is_double(t.dtype) else 1), "philox_uniform", t, low, high)


def _fill_normal(t, mean, std, gen):
    pairs = (t.numel() + 1) // 2
    _launch(gen, 2 * pairs * (2 if _is_double(t.dtype) else 1), "philox_normal", t, mean, std)


def _fill_randint(t, low, high, gen):
    _launch(gen, t.numel() * (2 if high - low >= 1 << 32 else 1), "philox_randint", t, low, high)


def _fill_exponential(t, lambd, gen):
    _launch(gen, t.numel() * (2 if _is_double(t.dtype) else 1), "philox_exponential", t, lambd)


# -- in-place ops ---------------------------------------------------------------------------------
def _inplace(self, op, fill, *params, generator=None):
    check_writable(self, op)
    autograd_hooks.check_inplace(self, op)
    fill(self, *params, _generator(generator, self.device, op))
    self._vc.bump()
    autograd_hooks.record_inplace(self, op, ())
    return self


def _from_to_kwargs(args, kwargs, op, defaults):
    """(from, to) from positional args and the keywords 'from'/'to' ('from' is a Python keyword)."""
    names = ("from", "to")
    vals = dict(zip(names, defaults))
    if len(args) > 2:
        raise TypeError(f"{op}() takes at most 2 positional arguments ({len(args)} given)")
    vals.update(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{op}() got an unexpected keyword argument '{k}'")
        vals[k] = v
    return vals["from"], vals["to"]


def uniform_(self, *args, generator=None, **kwargs):
    """uniform_(from=0, to=1, *, generator=None): fill with U[from, to)."""
    low, high = _from_to_kwargs(args, kwargs, "uniform_", (0.0, 1.0))
    low, high = _number(low, "uniform_", "from"), _number(high, "uniform_", "to")
    _check_floating("uniform_", "check_uniform_bounds", self.dtype)
    lo, hi = _bounds(self.dtype)
    if not lo <= low <= hi:
        raise RuntimeError(f"uniform_: from is out of bounds for {self.dtype}: from={low} is not in [{lo}, {hi}]")
    if not lo <= high <= hi:
        raise RuntimeError(f"uniform_: to is out of bounds for {self.dtype}: to={high} is not in [{lo}, {hi}]")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    if high - low > hi:
        raise RuntimeError(f"uniform_ expects to-from <= the largest {self.dtype} ({hi}), but found to={high} and "
                           f"from={low} which result in to-from to exceed the limit")
    return _inplace(self, "uniform_", _fill_uniform, low, high, generator=generator)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    mean, std = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    _check_floating("normal_", "normal_kernel", self.dtype)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _inplace(self, "normal_", _fill_normal, mean, std, generator=generator)


def random_(self, *args, generator=None, **kwargs):
    """random_(), random_(to), random_(from, to): integers in [from, to - 1]; without `to`, up to the
    largest value of the dtype (2^digits for floating types, whose integers are exact up to there)."""
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]
    else:
        low, high = _from_to_kwargs(args, kwargs, "random_", (0, None))
    low = _int_arg(low, "random_", "from", 1)
    high = _default_high(self.dtype) if high is None else _int_arg(high, "random_", "to", 2)
    _check_from_to(low, high, self.dtype, "random_")
    return _inplace(self, "random_", _fill_randint, low, high, generator=generator)


def _check_prob_tensor(p, target, op):
    if not p.dtype.is_floating_point:
        raise RuntimeError(f'"{op}" not implemented for \'{p.dtype.torch_name}\': the probability tensor must have '
                           f"a floating point dtype, got {p.dtype}")
    same_device(op, target, p)
    meta = p._meta
    lay = meta.layout
    stride = L.expand_strides(lay.shape, lay.stride, target.shape, op)
    return p._view_of(L.Layout(L.Size(target.shape), stride, lay.offset), meta=meta)


def _fill_bernoulli(t, p, gen):
    _launch(gen, 2 * t.numel(), "philox_bernoulli", t, p)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 where a uniform draw is below p (a number, or a tensor broadcastable to self), else 0."""
    if isinstance(p, Tensor):
        p = _check_prob_tensor(p, self, "bernoulli_")
    else:
        p = _number(p, "bernoulli_", "p")
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _inplace(self, "bernoulli_", _fill_bernoulli, p, generator=generator)


def exponential_(self, lambd=1.0, *, generator=None):
    lambd = _number(lambd, "exponential_", "lambd")
    if not self.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self.dtype.torch_name}")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _inplace(self, "exponential_", _fill_exponential, lambd, generator=generator)


# -- factories ------------------------------------------------------------------------------------
def _target(op, shape, dtype, device, out):
    """(Output, generator device) for a factory: out= decides the device and dtype when given."""
    from ..default_device import factory_device
    dev = out.device if out is not None and device is None else factory_device(device)
    return output(out, shape, dtype, dev, op), dev


def _finish(o, requires_grad, pin_memory=False):
    t = o.finish()
    if pin_memory:
        t = t.pin_memory()
    if requires_grad:
        t.requires_grad_(True)
    return autograd_hooks.created(t)


def _shape(size, kw_size, op):
    if kw_size is not None:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        size = (kw_size,)
    return L.normalize_shape(size, op)


def _factory_dtype(dtype, out):
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    return out.dtype if out is not None else dtypes.get_default_dtype()


def rand(*size, generator=None, out=None, dtype=None, device=None, layout=None, requires_grad=False,
         pin_memory=False, **kw):
    """Uniform samples in [0, 1)."""
    if layout is not None:
        _layouts.check(layout, "rand")
    shape = _shape(size, kw.pop("size", None), "rand")
    _no_extra(kw, "rand")
    dt = _factory_dtype(dtype, out)
    if dt.category != 3:  # complex: real and imaginary parts each uniform in [0, 1), as torch
        _check_floating("rand", "check_uniform_bounds", dt)
    o, dev = _target("rand", shape, dt, device, out)
    _fill_uniform(_complex_parts(o.tensor), 0.0, 1.0, _generator(generator, dev, "rand"))
    return _finish(o, requires_grad, pin_memory)


def randn(*size, generator=None, out=None, dtype=None, device=None, layout=None, requires_grad=False,
          pin_memory=False, **kw):
    """Standard normal samples."""
    if layout is not None:
        _layouts.check(layout, "randn")
    shape = _shape(size, kw.pop("size", None), "randn")
    _no_extra(kw, "randn")
    dt = _factory_dtype(dtype, out)
    if dt.category != 3:  # complex: real and imaginary parts each N(0, 1/2) (unit variance), as torch
        _check_floating("randn", "normal_kernel", dt)
    o, dev = _target("randn", shape, dt, device, out)
    t = o.tensor
    _fill_normal(_complex_parts(t), 0.0, 0.5 ** 0.5 if t is not _complex_parts(t) else 1.0,
                 _generator(generator, dev, "randn"))
    return _finish(o, requires_grad, pin_memory)


def _no_extra(kw, op):
    for k in kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{k}'")


def _randint_args(args, low, high, size):
    """torch's randint(high, size) / randint(low, high, size) with any of them as keywords."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args) + 1} given)")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low = 0 if low is None else _int_arg(low, "randint", "low", 0)
    high = _int_arg(high, "randint", "high", 1)
    if isinstance(size, int) or not hasattr(size, "__iter__"):
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not {type(size).__name__}")
    return low, high, L.normalize_shape((size,), "randint")


def randint(*args, low=None, high=None, size=None, generator=None, out=None, dtype=None, device=None, layout=None,
            requires_grad=False, pin_memory=False):
    """randint(low=0, high, size): integers in [low, high), int64 unless dtype= says otherwise."""
    if layout is not None:
        _layouts.check(layout, "randint")
    low, high, shape = _randint_args(args, low, high, size)
    dt = dtypes.int64 if dtype is None and out is None else _factory_dtype(dtype, out)
    _check_from_to(low, high, dt, "randint")
    o, dev = _target("randint", shape, dt, device, out)
    _fill_randint(o.tensor, low, high, _generator(generator, dev, "randint"))
    return _finish(o, requires_grad, pin_memory)


def _like(input, dt, device, memory_format):
    return empty_like_layout(input, dt, input.device if device is None else canonical(device), memory_format)


def rand_like(input, *, generator=None, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "rand_like")
    dt = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    _check_floating("rand_like", "check_uniform_bounds", dt)
    t = _like(input, dt, device, memory_format)
    _fill_uniform(t, 0.0, 1.0, _generator(generator, t.device, "rand_like"))
    return t.requires_grad_(True) if requires_grad else t


def randn_like(input, *, generator=None, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, memory_format=None):
    if layout is not None:
        _layouts.check(layout, "randn_like")
    dt = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    _check_floating("randn_like", "normal_kernel", dt)
    t = _like(input, dt, device, memory_format)
    _fill_normal(t, 0.0, 1.0, _generator(generator, t.device, "randn_like"))
    return t.requires_grad_(True) if requires_grad else t


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False,
                 memory_format=None):
    """randint_like(input, high) or randint_like(input, low, high); the dtype defaults to input's."""
    if layout is not None:
        _layouts.check(layout, "randint_like")
    if high is None:
        low, high = 0, low
    low, high = _int_arg(low, "randint_like", "low", 1), _int_arg(high, "randint_like", "high", 2)
    dt = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    _check_from_to(low, high, dt, "randint_like")
    t = _like(input, dt, device, memory_format)
    _fill_randint(t, low, high, _generator(generator, t.device, "randint_like"))
    return t.requires_grad_(True) if requires_grad else t


def randperm(n, *, generator=None, out=None, dtype=None, device=None, layout=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of 0 .. n-1 (int64 unless dtype= says otherwise)."""
    if layout is not None:
        _layouts.check(layout, "randperm")
    n = _int_arg(n, "randperm", "n", 0)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    dt = dtypes.int64 if dtype is None and out is None else _factory_dtype(dtype, out)
    if dt is dtypes.bool_:
        raise RuntimeError("\"randperm\" not implemented for 'Bool': use an integer or floating point dtype")
    top = (1 << _DIGITS[dt.name]) if dt.is_floating_point else _bounds(dt)[1]
    if n - 1 > top:
        raise RuntimeError(f"randperm: n={n} is too large for {dt}: the largest index {n - 1} cannot be represented "
                           f"exactly (at most {top}); use a wider dtype such as tensorlab.int64")
    o, dev = _target("randperm", (n,), dt, device, out)
    _launch(_generator(generator, dev, "randperm"), 2 * n, "philox_randperm", o.tensor)
    return _finish(o, requires_grad, pin_memory)


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draws 1 with probability `input` (elementwise), or with probability p when p is given;
    the result has input's shape and dtype."""
    if p is None:
        probs = _check_prob_tensor(input, input, "bernoulli")
    else:
        probs = _number(p, "bernoulli", "p")
        if not 0.0 <= probs <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={probs}")
    if out is None:
        t = empty_like_layout(input)
        _fill_bernoulli(t, probs, _generator(generator, t.device, "bernoulli"))
        return t
    o, dev = _target("bernoulli", input.shape, input.dtype, None, out)
    same_device("bernoulli", input, out)
    _fill_bernoulli(o.tensor, probs, _generator(generator, dev, "bernoulli"))
    return o.finish()


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None, layout=None,
           requires_grad=False, pin_memory=False):
    """normal(mean, std, size) with numbers; or elementwise with tensor mean and/or std (broadcast)."""
    if layout is not None:
        _layouts.check(layout, "normal")
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mt or st):
        if size is None:
            raise TypeError("normal(): with number mean and std, the argument 'size' is required")
        mean, std = _number(mean, "normal", "mean"), _number(std, "normal", "std")
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        dt = _factory_dtype(dtype, out)
        _check_floating("normal", "normal_kernel", dt)
        o, dev = _target("normal", L.normalize_shape((size,), "normal"), dt, device, out)
        _fill_normal(o.tensor, mean, std, _generator(generator, dev, "normal"))
        return _finish(o, requires_grad)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal(): size, dtype, device and requires_grad are only accepted with number mean and std; "
                        "with tensor mean or std the result takes their shape, dtype and device")
    dev = same_device("normal", mean, std)
    dt = mean.dtype if mt else std.dtype
    _check_floating("normal", "normal_kernel", dt)
    if st:
        if std.numel() and bool((std < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    shape = L.broadcast_shapes(*(x.shape for x in (mean, std) if isinstance(x, Tensor)))
    o, _ = _target("normal", shape, dt, dev if out is None else None, out)
    z = o.tensor
    _fill_normal(z, 0.0, 1.0, _generator(generator, dev, "normal"))
    z.mul_(std).add_(mean)
    return o.finish()


FUNCTIONS = ("Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
             "set_rng_state", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
             "bernoulli", "normal")
METHODS = {"uniform_": uniform_, "normal_": normal_, "random_": random_, "bernoulli_": bernoulli_,
           "bernoulli": bernoulli, "exponential_": exponential_}
