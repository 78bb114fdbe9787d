"""Integer ops written over existing ones: bitwise_left_shift / bitwise_right_shift (multiplication and
floor division by 2**s, wrapping as the dtype does; shifts past the width give 0, or -1 for a negative
value shifted right, as torch) and gcd / lcm (Euclid's steps on whole tensors, a fixed count bounded by
the dtype's width, so no data-dependent host loop)."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from ._composite import overwrite, tl, to_out

_INTEGRAL = (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
_BITS = {dtypes.uint8: 8, dtypes.int8: 8, dtypes.int16: 16, dtypes.int32: 32, dtypes.int64: 64}
# Euclid's algorithm takes at most ~1.44 log2(max) + 2 steps (consecutive Fibonacci numbers are worst)
_EUCLID_STEPS = {8: 14, 16: 26, 32: 49, 64: 95}


_tl = tl


def _operands(op, input, other):
    tl = _tl()
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        input = tl.tensor(input, device=other.device)
    y = other if isinstance(other, Tensor) else tl.tensor(other, device=input.device)
    dt = dtypes.result_type(input, y)
    if dt not in _INTEGRAL and dt is not dtypes.bool_:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{dt.torch_name}'")
    return input.to(dt), y.to(dt), dt


def _finish(r, out, op):
    return to_out(r, out)


def bitwise_left_shift(input, other, *, out=None):
    tl = _tl()
    x, s, dt = _operands("lshift", input, other)
    bits = _BITS.get(dt, 8)
    ok = (s >= 0) & (s < bits)
    sc = tl.where(ok, s, tl.zeros_like(s)).to(dtypes.int64)
    factor = tl.pow(tl.tensor(2, dtype=dtypes.int64, device=x.device), sc).to(dt)  # 2**63 wraps to INT_MIN: fine
    r = tl.where(ok, x * factor, tl.zeros_like(x))
    return _finish(r, out, "bitwise_left_shift")


def bitwise_right_shift(input, other, *, out=None):
    tl = _tl()
    x, s, dt = _operands("rshift", input, other)
    bits = _BITS.get(dt, 8)
    ok = (s >= 0) & (s < bits)
    sc = tl.where(ok, s, tl.zeros_like(s)).to(dtypes.int64)
    wide = x.to(dtypes.int64) if dt is not dtypes.int64 else x
    if dt is dtypes.int64:  # 2**63 does not fit: shift 63 as a sign test
        big = sc >= 63
        sc2 = tl.where(big, tl.zeros_like(sc), sc)
        q = wide.floor_divide(tl.pow(tl.tensor(2, dtype=dtypes.int64, device=x.device), sc2))
        q = tl.where(big, tl.where(wide < 0, tl.full_like(wide, -1), tl.zeros_like(wide)), q)
    else:
        q = wide.floor_divide(tl.pow(tl.tensor(2, dtype=dtypes.int64, device=x.device), sc))
    beyond = tl.where(wide < 0, tl.full_like(wide, -1), tl.zeros_like(wide))
    r = tl.where(ok, q, beyond).to(dt)
    return _finish(r, out, "bitwise_right_shift")


def _gcd(a, b, steps):
    tl = _tl()
    a, b = a.abs(), b.abs()
    zero = tl.zeros_like(b)
    for _ in range(steps):
        nz = b != 0
        safe = tl.where(nz, b, tl.ones_like(b))
        a, b = tl.where(nz, b, a), tl.where(nz, a.remainder(safe), zero)
    return a


def gcd(input, other, *, out=None):
    x, y, dt = _operands("gcd", input, other)
    if dt is dtypes.bool_:
        raise RuntimeError("\"gcd_cpu\" not implemented for 'Bool'")
    return _finish(_gcd(x, y, _EUCLID_STEPS[_BITS[dt]]), out, "gcd")


def lcm(input, other, *, out=None):
    tl = _tl()
    x, y, dt = _operands("lcm", input, other)
    if dt is dtypes.bool_:
        raise RuntimeError("\"lcm_cpu\" not implemented for 'Bool'")
    g = _gcd(x, y, _EUCLID_STEPS[_BITS[dt]])
    safe = tl.where(g == 0, tl.ones_like(g), g)
    r = tl.where(g == 0, tl.zeros_like(g), (x.floor_divide(safe) * y).abs())
    return _finish(r, out, "lcm")


def _inplace(fn, name):
    def f_(input, other):
        return overwrite(input, fn(input, other), name)
    f_.__name__ = name
    return f_


bitwise_left_shift_ = _inplace(bitwise_left_shift, "bitwise_left_shift_")
bitwise_right_shift_ = _inplace(bitwise_right_shift, "bitwise_right_shift_")
gcd_ = _inplace(gcd, "gcd_")
lcm_ = _inplace(lcm, "lcm_")

def _rev(fn):
    return lambda self, other: fn(other, self)


FUNCTIONS = ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "gcd_", "lcm_")
METHODS = {n: globals()[n] for n in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
                                     "bitwise_left_shift_", "bitwise_right_shift_", "gcd_", "lcm_")}
METHODS.update({"__lshift__": bitwise_left_shift, "__rshift__": bitwise_right_shift,
                "__rlshift__": _rev(bitwise_left_shift), "__rrshift__": _rev(bitwise_right_shift),
                "__ilshift__": bitwise_left_shift_, "__irshift__": bitwise_right_shift_})
