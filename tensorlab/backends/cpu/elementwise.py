"""CPU elementwise primitives: `unary`, `binary` and `ternary` run a named kernel over tensors
whose shapes broadcast to the output's, writing the preallocated output in place.

The front end has already validated everything that does not depend on values and chosen two
dtypes: the output's, and `compute` (torch's "opmath" type: float16/bfloat16 compute in float32).
Each kernel reads its operands in `compute`, writes the output only in its last step (so an
output that is also an input is read completely first) and rounds once into the output dtype.
The CUDA backend implements the same three primitives with one functor per kernel name.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ... import _faults, dtypes
from . import parallel as _par
from .memory import array

__all__ = ("unary", "binary", "ternary")

_U = "unsafe"  # the front end already checked castability; NumPy must not re-check it
_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_PY_TYPES = frozenset((bool, int, float, complex))  # the front end hands numbers over as exactly these

_extobj_contextvar = _par._extobj_contextvar
_rows_state = _par.rows_state
_ROW_BUF_ELEMS = _par.ROW_BUF_ELEMS
if _extobj_contextvar is not None:  # np.errstate costs ~1.5 us a call; setting its context variable ~0.1 us
    _quiet_on = partial(_extobj_contextvar.set, _par.QUIET)  # C calls, no Python frame
    _quiet_off = _extobj_contextvar.reset
else:  # pragma: no cover - other NumPy versions
    def _quiet_on():
        es = np.errstate(all="ignore")
        es.__enter__()
        return es

    def _quiet_off(es):
        es.__exit__(None, None, None)


_wrap_scalar = dtypes.wrap_scalar
_fault_plans = _faults._plans  # _faults.hit's "is any plan installed" test, read here without the call


def _operand(x, dt):
    if type(x) in _PY_TYPES:
        return _wrap_scalar(x, dt)
    return None if x is None else array(x)


def _cast(x, dt):
    return x.astype(dt, copy=False) if isinstance(x, np.ndarray) else x


def _row_buffer(o):
    """This thread's NumPy ufunc buffer as long as o's rows where that is faster
    (parallel.rows_state); the caller's _quiet_off(token) puts the previous state back."""
    st = _rows_state(o)
    if st is not None:
        _extobj_contextvar.set(st)


def row_buffered(o, fn, *args):
    """fn(*args) with this thread's ufunc buffer as long as o's rows where that is faster
    (parallel.rows_state): for the row-wise composites elsewhere in the backend (softmax, layer
    norm) whose ufunc calls are elementwise and whose sums are BLAS products (a pairwise sum's
    bits could depend on the buffer)."""
    return _par.buffered(_rows_state(o) if o.size >= _ROW_BUF_ELEMS else None, fn, *args)


def _launch(kernel, op, o, args, dt, params):
    token = _quiet_on()
    try:
        check = _CHECKS.get(op)
        if check is not None and dt.kind in "iub" and o.size:  # an empty result divides nothing (torch)
            check(args, dt)
        _faults.hit("launch")
        if o.size >= _ROW_BUF_ELEMS:
            _row_buffer(o)
        if o.size >= _par.elem_min:
            _split(kernel, o, args, dt, params)
        else:
            kernel(o, *args, dt, **params)
    finally:
        _quiet_off(token)


def unary(out, op, x, compute, **params):
    """out = op(x), computed in `compute`."""
    dt = compute.np
    o = array(out)
    a = array(x)
    uf = _PLAIN_UNARY.get(op)
    if uf is not None and not params and o.dtype is dt and a.dtype is dt:
        token = _quiet_on()  # _launch inlined: every operand already has the compute dtype
        try:
            if _fault_plans:
                _faults.hit("launch")
            if o.size >= _ROW_BUF_ELEMS:
                _row_buffer(o)
            if o.size >= _par.elem_min:
                _split_plain(uf, o, (a,))
            else:
                uf(a, out=o)
        finally:
            _quiet_off(token)
        return
    _launch(_UNARY[op], op, o, (a,), dt, params)


def binary(out, op, a, b, compute, **params):
    """out = op(a, b); `a`/`b` are tensors or Python numbers (converted to `compute` here)."""
    dt = compute.np
    o = array(out)
    x = _wrap_scalar(a, dt) if type(a) in _PY_TYPES else array(a)
    if type(b) in _PY_TYPES:
        try:  # dtypes.wrap_scalar, inlined for `tensor op number`
            y = dt.type(b)
        except OverflowError:
            y = _wrap_scalar(b, dt)
    else:
        y = array(b)
    if op in _CHECKS:
        _launch(_BINARY[op], op, o, (x, y), dt, params)
        return
    token = _quiet_on()  # _launch inlined: this is every arithmetic operator's path
    try:
        if _fault_plans:
            _faults.hit("launch")
        uf = _PLAIN_BINARY.get(op)
        if uf is not None and not params and o.dtype is dt and x.dtype is dt and y.dtype is dt:
            n = o.size
            if n >= _par.TILED_MIN and not (x.flags.c_contiguous and y.flags.c_contiguous):
                o, x, y = _c_frame(o, x, y)
                _row_buffer(o)
                if n >= _par.elem_min:
                    _split_plain(uf, o, (x, y))
                elif not (_aliased_last(x) or _aliased_last(y)) or not _par.tiled(
                        lambda out, *xs: uf(*xs, out=out), o, (x, y), lambda out, *xs: uf(*xs, out=out, order="C")):
                    uf(x, y, out=o)
            else:
                if n >= _ROW_BUF_ELEMS:
                    if n >= _ROWS_MIN:
                        o, x, y = _long_rows(o, x, y)
                    _row_buffer(o)
                if n >= _par.elem_min:
                    _split_plain(uf, o, (x, y))
                else:
                    uf(x, y, out=o)  # the kernel's ufunc: operands of one dtype select the same loop
        elif o.size >= _par.elem_min:
            _split(_BINARY[op], o, (x, y), dt, params)
        else:
            _BINARY[op](o, x, y, dt, **params)
    finally:
        _quiet_off(token)


def ternary(out, op, a, b, c, compute, **params):
    """out = op(a, b, c); operands as for `binary`, and None for an absent clamp bound."""
    dt = compute.np
    _launch(_TERNARY[op], op, array(out), (_operand(a, dt), _operand(b, dt), _operand(c, dt)), dt, params)


def _split(kernel, o, args, dt, params):
    """A large op: the kernel over pieces of the output on the CPU pool (parallel.py), or once
    when the output overlaps an operand."""
    if not _par.elementwise(kernel, o, args, (dt,), params, key=_cost_key(kernel, o, args, dt, params)):
        kernel(o, *args, dt, **params)


def _cost_key(kernel, o, args, dt, params):
    """What the pool's cost estimate is kept under (parallel.elementwise): the kernel, the compute
    and output dtypes, the operands' dtypes and the parameters' names (not their values: a learning
    rate that changes every step would make a new key each time)."""
    return (kernel, dt, o.dtype) + tuple(getattr(a, "dtype", None) for a in args) + tuple(params)


def _aliased_last(a):
    """Whether `a` steps along its last axis by a nonzero multiple of parallel.ALIASED bytes: the one
    case where tiles beat NumPy's order below the pool's threshold (a cheap test before tiled())."""
    return isinstance(a, np.ndarray) and a.ndim > 1 and a.strides[-1] and not a.strides[-1] % _par.ALIASED


def _c_frame(o, *args):
    """(o, *args) with every axis reversed when o is F-contiguous (torch's layout for x.T + x) and
    each operand is an array of o's shape or a scalar: the same elements, but NumPy then iterates
    along the C-contiguous reversed output (about 2x faster than its own order for F-order outputs,
    measured 300^2 to 2000^2); the operands unchanged otherwise."""
    if o.ndim < 2 or o.flags.c_contiguous or not o.flags.f_contiguous:
        return (o,) + args
    if any(isinstance(a, np.ndarray) and a.ndim and a.shape != o.shape for a in args):
        return (o,) + args
    return (o.T,) + tuple(a.T if isinstance(a, np.ndarray) else a for a in args)


_ROWS_MIN = 1 << 18  # elements from which a row-broadcast operand is tiled into longer rows
_ROW_TILE = 1 << 14  # elements of a tiled row at most


def _long_rows(o, x, y):
    """(o, x, y) for a C-contiguous o and operands that are o itself in shape (C-contiguous) or a
    C-contiguous row broadcast over o's leading dims (a bias): o viewed as rows k times longer
    and the row operand tiled k times, k in (64, 32, 16, 8) with k rows within _ROW_TILE elements
    (NumPy's per-row iteration of a broadcast operand makes `a + row` ~2x a plain add; 1Mi:
    163 -> 115 us). The same elements in the same places; unchanged where that does not apply."""
    if not o.flags.c_contiguous or o.ndim < 2:
        return o, x, y
    row = None
    for a in (x, y):
        if not isinstance(a, np.ndarray) or not a.ndim:
            continue
        if a.shape == o.shape:
            if not a.flags.c_contiguous:
                return o, x, y
        elif row is None and a.flags.c_contiguous and a.ndim < o.ndim and a.shape == o.shape[o.ndim - a.ndim:]:
            row = a
        else:
            return o, x, y
    if row is None:
        return o, x, y
    length = row.size
    rows = o.size // length
    k = next((k for k in (64, 32, 16, 8) if rows % k == 0 and k * length <= _ROW_TILE), None)
    if k is None:
        return o, x, y
    tiled_row = np.empty((k, length), row.dtype)
    np.copyto(tiled_row, row.reshape(1, length))
    tiled_row = tiled_row.reshape(-1)
    shape = (rows // k, k * length)

    def view(a):
        if a is row:
            return tiled_row
        return a.reshape(shape) if isinstance(a, np.ndarray) and a.ndim else a
    return o.reshape(shape), view(x), view(y)


def _split_plain(uf, o, args):
    if not _par.elementwise(lambda out, *xs: uf(*xs, out=out), o, args,
                            ordered=lambda out, *xs: uf(*xs, out=out, order="C"),
                            key=_cost_key(uf, o, args, None, ())):
        uf(*args, out=o)


# -- value checks that must run before anything is written --------------------------------------

def _no_zero_divisor(args, dt):
    b = args[1]
    if isinstance(b, np.ndarray) and b.dtype != dt:
        b = b.astype(dt)  # the divisor as the kernel will see it: int8 // tensor(256) divides by 0
    if not (b != 0).all():
        raise RuntimeError("ZeroDivisionError")  # torch's exact text for integer division by zero


_CHECKS = {k: _no_zero_divisor for k in ("div_trunc", "div_floor", "remainder", "fmod")}


# -- kernels ------------------------------------------------------------------------------------

def _ufunc(uf):
    """A kernel that is one NumPy ufunc evaluated in the compute dtype."""
    if uf.nin == 1:
        def k(o, a, dt):
            uf(a, out=o, dtype=dt, casting=_U)
    else:
        def k(o, a, b, dt):
            uf(a, b, out=o, dtype=dt, casting=_U)
    k.__name__ = uf.__name__
    return k


def _predicate(uf):
    """A ufunc with a bool result (comparisons, isnan, logical_*): inputs read in the compute dtype."""
    if uf.nin == 1:
        def k(o, a, dt):
            uf(a, out=o, signature=(dt, _BOOL), casting=_U)
    else:
        def k(o, a, b, dt):
            uf(a, b, out=o, signature=(dt, dt, _BOOL), casting=_U)
    k.__name__ = uf.__name__
    return k


def _store(o, r):
    np.copyto(o, r, casting=_U)


def _integral_identity(uf):
    """floor/ceil/trunc/round: integers are already integral (and NumPy would return floats)."""
    def k(o, a, dt):
        if dt.kind in "iub":
            _store(o, a)
        else:
            uf(a, out=o, dtype=dt, casting=_U)
    return k


def _sign(o, a, dt):
    if dt.kind == "b":
        _store(o, a)
        return
    r = np.sign(a, dtype=dt, casting=_U)
    if dt.kind == "f":
        r = np.where(np.isnan(r), dt.type(0), r)  # torch: sign(nan) = (0 < nan) - (nan < 0) = 0
    _store(o, r)


def _abs(o, a, dt):
    if dt.kind == "c":  # complex -> its real modulus (the output is the real dtype)
        np.absolute(a if not isinstance(a, np.ndarray) else a.astype(dt, copy=False), out=o, casting=_U)
    else:
        np.absolute(a, out=o, dtype=dt, casting=_U)


def _rsqrt(o, a, dt):
    np.divide(dt.type(1), np.sqrt(a, dtype=dt), out=o, casting=_U)


def _reciprocal(o, a, dt):
    np.divide(dt.type(1), a, out=o, dtype=dt, casting=_U)


def _sigmoid(o, a, dt):
    t = np.exp(np.negative(a, dtype=dt, casting=_U))
    t += dt.type(1)
    np.divide(dt.type(1), t, out=o, casting=_U)


def _silu(o, a, dt):
    t = np.exp(np.negative(a, dtype=dt, casting=_U))
    t += dt.type(1)
    np.divide(a, t, out=o, dtype=dt, casting=_U)


def _keep_input_at_ties(o, x, dt):
    """Where the result equals the input (a bound or 0 equal to it), the input itself, as torch's
    `x < lo ? lo : x`: relu(-0.0) and clamp(-0.0, 0, 1) keep -0.0 (NumPy's maximum gives +0.0)."""
    if dt.kind not in "iub":
        x = _cast(x, dt)
        # equal values with other bits are only ±0: look at the zeros alone (a mask over every
        # element makes copyto branch on random data, ~10x the cost of the op itself)
        zero = np.equal(x, 0)
        if zero.any():
            np.copyto(o, x, where=zero & np.equal(o, x))


def _before_write(o, x, dt):
    """x, copied when the op writes over it (in place) and needs it afterwards for the ties."""
    if dt.kind not in "iub" and isinstance(x, np.ndarray) and np.may_share_memory(o, x):
        return x.copy()
    return x


_CONST_ROW = _par.ROW_BUF_MAX  # NumPy's buffer length: rows this long go to the loop in place (4096: 13 vs 8.8 us at 64Ki)
_const_rows = {}  # (dtype, value bits) -> a read-only row of _CONST_ROW copies of the value


def _const_row(a, value, dt):
    """`value` (a scalar of dtype dt) as an operand for np.maximum/np.minimum against `a`: a row of
    copies broadcast along a's last dim when a is an array of dtype dt whose last dim fits the row,
    else the scalar itself. NumPy's max/min with a scalar operand take a loop about 3x slower
    than with an array operand; the result is the same."""
    v = dt.type(value)
    if not isinstance(a, np.ndarray) or a.dtype != dt or not a.ndim or a.shape[-1] > _CONST_ROW or v != v:
        return v
    key = (dt, v.tobytes())
    r = _const_rows.get(key)
    if r is None:
        r = np.full(_CONST_ROW, v, dt)
        r.flags.writeable = False
        if len(_const_rows) < 64:  # the common bounds (0, 1, 6, ...); any other value: a fresh row
            _const_rows[key] = r
    return r[:a.shape[-1]]


def _extreme_const(uf, x, value, dt, out=None):
    """uf(x, value) for np.maximum/np.minimum and a scalar value, against a row of copies
    (_const_row); a long contiguous x (any shape: its elements in order) goes as rows of _CONST_ROW
    plus a tail (shorter rows against a broadcast row go through NumPy's buffer: a (128, 512) relu
    took 32 us, 26 us so)."""
    if x.size > _CONST_ROW and x.flags.c_contiguous and x.dtype == dt and \
            (out is None or (out.flags.c_contiguous and out.shape == x.shape and out.dtype == dt)):
        if out is None:
            out = np.empty_like(x)
        shape = out.shape
        x, out = x.reshape(-1), out.reshape(-1)
        bulk = x.size - x.size % _CONST_ROW
        rows = x[:bulk].reshape(-1, _CONST_ROW)
        uf(rows, _const_row(rows, value, dt), out=out[:bulk].reshape(-1, _CONST_ROW), dtype=dt, casting=_U)
        if bulk < x.size:
            uf(x[bulk:], dt.type(value), out=out[bulk:], dtype=dt, casting=_U)
        return out.reshape(shape)
    return uf(x, _const_row(x, value, dt), out=out, dtype=dt, casting=_U)


def _relu(o, a, dt):
    a = _before_write(o, a, dt)
    _extreme_const(np.maximum, a, 0, dt, o)
    _keep_input_at_ties(o, a, dt)


def _round(o, a, dt, decimals=0):
    if dt.kind in "iub":
        _store(o, a)
    elif decimals == 0:
        np.rint(a, out=o, dtype=dt, casting=_U)
    elif decimals > 0:  # torch: nearbyint(x * 10^d) / 10^d, in the compute type
        ten = dt.type(10.0 ** decimals)
        np.divide(np.rint(np.multiply(a, ten, dtype=dt)), ten, out=o, casting=_U)
    else:
        ten = dt.type(10.0 ** -decimals)
        np.multiply(np.rint(np.divide(a, ten, dtype=dt)), ten, out=o, casting=_U)


def _nan_to_num(o, a, dt, nan=0.0, posinf=0.0, neginf=0.0):
    if dt.kind in "iub":
        _store(o, a)
        return
    r = np.array(a, dtype=dt)
    r[np.isnan(r)] = nan
    r[np.isposinf(r)] = posinf
    r[np.isneginf(r)] = neginf
    _store(o, r)


# erf: fdlibm's s_erf.c (rational approximations on four intervals, < 1 ulp in float64),
# evaluated in float64 for every floating dtype.
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)
_ERX = 8.45062911510467529297e-01


def _poly(coeffs, z):
    r = np.full_like(z, coeffs[-1])
    for c in coeffs[-2::-1]:
        r *= z
        r += c
    return r


def _erf64(x):
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.empty_like(x)
    small = ax < 0.84375
    z = x[small] * x[small]
    out[small] = x[small] + x[small] * (_poly(_PP, z) / _poly(_QQ, z))
    mid = (ax >= 0.84375) & (ax < 1.25)
    s = ax[mid] - 1.0
    out[mid] = np.copysign(_ERX + _poly(_PA, s) / _poly(_QA, s), x[mid])
    tail = ax >= 1.25
    at = ax[tail]
    s = 1.0 / (at * at)
    near = at < 1 / 0.35
    rs = np.where(near, _poly(_RA, s) / _poly(_SA, s), _poly(_RB, s) / _poly(_SB, s))
    zt = (at.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)  # x with its low word cleared
    r = np.exp(-zt * zt - 0.5625) * np.exp((zt - at) * (zt + at) + rs)
    out[tail] = np.copysign(np.where(at < 6.0, 1.0 - r / at, 1.0), x[tail])
    out[np.isnan(x)] = np.nan
    return out


# float32 erf: a rational function of x^2 (Eigen's and XLA's float erf, x clamped to [-4, 4]),
# evaluated in float64 without branches: within one float32 ulp of erf after the final rounding,
# in ~20 NumPy passes instead of the float64 algorithm's masked regions.
_EA = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
       -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_EB = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
       -1.42647390514189e-02)


def _erf_rational(x):
    """erf(x) for float32-valued x, computed in float64 (a fresh float64 array)."""
    xc = np.clip(x, -4.0, 4.0, dtype=np.float64)  # NaN stays NaN
    x2 = xc * xc
    p = x2 * _EA[0]
    for c in _EA[1:-1]:
        p += c
        p *= x2
    p += _EA[-1]
    p *= xc
    q = x2 * _EB[0]
    for c in _EB[1:-1]:
        q += c
        q *= x2
    q += _EB[-1]
    p /= q
    return p


_CACHE_BLOCK = 1 << 15  # elements per step of a many-pass kernel: its temporaries stay in cache


def _blocked(kernel, o, x):
    """kernel(o, x) (a many-pass elementwise kernel writing o) run over cache-sized pieces of
    contiguous same-shape operands; anything else in one call. Elementwise: the same bits."""
    n = o.size
    if n <= _CACHE_BLOCK or x.shape != o.shape or not (o.flags.c_contiguous and x.flags.c_contiguous):
        kernel(o, x)
        return
    of, xf = o.reshape(-1), x.reshape(-1)
    for i in range(0, n, _CACHE_BLOCK):
        kernel(of[i:i + _CACHE_BLOCK], xf[i:i + _CACHE_BLOCK])


def _erf_f32(o, x):
    _store(o, _erf_rational(x))


def _erf(o, a, dt):
    if dt == np.float32:
        _blocked(_erf_f32, o, np.asarray(a))
        return
    _store(o, _erf64(a))


# 1 + erf(x / sqrt 2) = erfc(-x / sqrt 2) for GELU in float32 as Numerical Recipes' erfcc writes erfc,
# t exp(-z^2 + P(t)) with t = 1 / (1 + |z| / 2), so the negative tail keeps its relative accuracy (1 + erf
# there would cancel). P is a degree-7 least-squares fit at Chebyshev nodes of log(erfc(z) / t) + z^2 over
# |x| <= 14 (t >= 0.168; below gelu(x) is subnormal or x * 1), |error| 8e-7: under the 4e-6 that float32
# rounding of -z^2 near -100 costs, so GELU's accuracy is that of NR's degree-9 fit (max relative error
# 7.8e-6 against float64 erfc) with two Horner steps (four passes) fewer.
_ERFC = (-1.2654808403996913, 0.9986214674469698, 0.3938978411363941, -0.03997701731049778, 0.35123533556776926,
         -1.003223250294325, 0.7531501309958224, -0.18822439886131487)


_ERFC_F32 = tuple(np.float32(c) for c in _ERFC)
_LN2 = 0.69314718055994530942
_ERFC_K = np.float32(2 * 1.41421356237309504880)  # t = 1 / (1 + a / 2) = K / (K + |x|) for a = |x| / sqrt 2
_full_f32 = {}  # value -> a read-only float32 array of _CACHE_BLOCK copies (an operand of np.maximum/minimum)


def _f32_full(value, n):
    """n float32 copies of value as an operand for np.maximum/np.minimum (NumPy's loop with a
    scalar operand is ~5x slower than with an array); a fresh array past _CACHE_BLOCK."""
    if n > _CACHE_BLOCK:
        return np.full(n, value, np.float32)
    r = _full_f32.get(value)
    if r is None:
        r = np.full(_CACHE_BLOCK, value, np.float32)
        r.flags.writeable = False
        _full_f32[value] = r
    return r[:n]


def _erfc_core(x, c0_shift):
    """For a 1-D float32 x: (p, u, s) with u = |min(x, 1e4)|, s = -u^2 / 2, t = 1 / (1 + u / (2 sqrt 2))
    and p = t exp(P(t) + c0_shift + s) = erfc(u / sqrt 2) exp(c0_shift), P by Horner's rule (each
    step one in-place pass over arrays that stay in cache; more accurate than summing powers)."""
    f = np.float32
    c = _ERFC_F32
    u = np.minimum(x, _f32_full(1e4, x.size))  # +inf: erfc underflows to 0 and nothing multiplies inf by it
    np.abs(u, out=u)
    t = np.add(u, _ERFC_K)
    np.divide(_ERFC_K, t, out=t)
    p = np.multiply(t, c[-1])
    for ck in c[-2:0:-1]:
        p += ck
        p *= t
    p += f(_ERFC[0] + c0_shift)
    s = np.multiply(u, f(-0.5))
    s *= u
    p += s
    np.exp(p, out=p)
    p *= t
    return p, u, s


def _gelu_f32(o, x):
    """gelu(x) = max(x, 0) - |x|/2 erfc(|x| / sqrt 2), in float32 (x 1-D, or any shape via a copy)."""
    shape = x.shape
    x = x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)
    p, u, _ = _erfc_core(x, -_LN2)  # erfc(|x| / sqrt 2) / 2
    p *= u                          # |x| / 2 erfc(|x| / sqrt 2)
    direct = o.dtype == np.float32 and o.shape == shape and o.flags.c_contiguous and (
        o.ctypes.data == x.ctypes.data or not np.may_share_memory(o, x))  # read x before writing there
    r = np.maximum(x, _f32_full(0.0, x.size), out=o.reshape(-1) if direct else None)
    r -= p
    if not direct:
        np.copyto(o, r.reshape(shape), casting=_U)


_SQRT1_2 = 0.70710678118654752440
_SQRT_2_PI = 0.79788456080286535588


# Up to this many elements float32 GELU is x/2 erfc(-x / sqrt 2) through SciPy's erfc ufunc (relative error
# ~4e-6, as the polynomial's): 8 elements 2.7 us against 15 us, even at ~1500; above, the polynomial's
# cache-blocked passes win (SciPy's float32 erfc computes in float64: 1M elements 3.8x slower).
_GELU_SCIPY_MAX = 1024
_NEG_SQRT1_2_F32 = np.float32(-0.70710678118654752440)


def _gelu_small_f32(o, x):
    from .special_math import _s  # scipy.special, imported on first use
    with np.errstate(all="ignore"):
        t = _s().erfc(np.multiply(x, _NEG_SQRT1_2_F32, dtype=np.float32))
        t *= x
        np.multiply(t, np.float32(0.5), out=o, casting=_U)


def _gelu(o, a, dt, approximate="none"):
    x = np.asarray(a, dtype=dt)
    if approximate == "tanh":  # torch's order: 0.5 x (1 + tanh(beta (x + kappa x^3))), beta = sqrt(2/pi)
        inner = x * x * x
        inner *= dt.type(0.044715)
        inner += x
        inner *= dt.type(_SQRT_2_PI)
        t = np.tanh(inner)
    elif dt == np.float32:
        if x.size <= _GELU_SCIPY_MAX:  # small: one SciPy erfc call beats the polynomial's dozen passes
            _gelu_small_f32(o, x)
        else:
            _blocked(_gelu_f32, o, x)
        return
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = _erf64(x * dt.type(_SQRT1_2)).astype(dt)
    t += dt.type(1)
    np.multiply(x * dt.type(0.5), t, out=o, casting=_U)


# kernels that are one ufunc evaluated in the compute dtype, with no parameters: when the output
# and every operand already have that dtype, `uf(..., out=o)` selects the same loop
_PLAIN_UNARY = {"neg": np.negative, "abs": np.absolute, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
                "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
                "square": np.square, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
                "bitwise_not": np.invert}
_PLAIN_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div_true": np.true_divide,
                 "atan2": np.arctan2, "bitwise_and": np.bitwise_and,
                 "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}

_UNARY = {
    "neg": _ufunc(np.negative), "abs": _abs, "sign": _sign,
    "exp": _ufunc(np.exp), "exp2": _ufunc(np.exp2), "expm1": _ufunc(np.expm1),
    "log": _ufunc(np.log), "log2": _ufunc(np.log2), "log10": _ufunc(np.log10), "log1p": _ufunc(np.log1p),
    "sqrt": _ufunc(np.sqrt), "rsqrt": _rsqrt, "square": _ufunc(np.square), "reciprocal": _reciprocal,
    "sin": _ufunc(np.sin), "cos": _ufunc(np.cos), "tan": _ufunc(np.tan), "tanh": _ufunc(np.tanh),
    "sigmoid": _sigmoid, "relu": _relu, "gelu": _gelu, "silu": _silu, "erf": _erf,
    "floor": _integral_identity(np.floor), "ceil": _integral_identity(np.ceil),
    "trunc": _integral_identity(np.trunc), "round": _round,
    "isnan": _predicate(np.isnan), "isinf": _predicate(np.isinf), "isfinite": _predicate(np.isfinite),
    "logical_not": _predicate(np.logical_not), "bitwise_not": _ufunc(np.invert), "nan_to_num": _nan_to_num,
}


_1_SQRT_2PI = 0.39894228040143267794


def _gelu_bwd_f32(o, g, x):
    """g (Phi(x) + x phi(x)) in float32, Phi(x) = 1/2 + sign(x) (1/2 - erfc(|x| / sqrt 2) / 2)."""
    f = np.float32
    shape = x.shape
    x = x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)
    p, _, a2 = _erfc_core(x, -_LN2)  # erfc(|x| / sqrt 2) / 2, -x^2 / 2
    np.subtract(f(0.5), p, out=p)
    np.copysign(p, x, out=p)
    p += f(0.5)                      # Phi(x)
    np.exp(a2, out=a2)
    a2 *= x
    a2 *= f(_1_SQRT_2PI)             # x phi(x)
    p += a2
    np.multiply(g, p.reshape(shape), out=o, casting=_U)


def _gelu_bwd_pair(g, x, dt):
    """(g, x) as arrays of dt with o's shape for the blocked kernel, or None."""
    if not (isinstance(g, np.ndarray) and isinstance(x, np.ndarray)) or g.shape != x.shape:
        return None
    return np.asarray(g, dtype=dt), np.asarray(x, dtype=dt)


def _gelu_backward(o, g, x, dt, approximate="none"):
    """GELU's derivative times g, torch's formulas (GeluBackward's CPU kernel) evaluated in dt."""
    if approximate != "tanh" and dt == np.float32:
        pair = _gelu_bwd_pair(g, x, dt)
        if pair is not None and pair[1].shape == o.shape:
            gg, xx = pair
            if o.size <= _CACHE_BLOCK or not (o.flags.c_contiguous and gg.flags.c_contiguous
                                               and xx.flags.c_contiguous):
                if o.ndim == 0:
                    o, gg, xx = o.reshape(1), gg.reshape(1), xx.reshape(1)
                _gelu_bwd_f32(o, gg, xx)
                return
            of, gf, xf = o.reshape(-1), gg.reshape(-1), xx.reshape(-1)
            for i in range(0, o.size, _CACHE_BLOCK):
                j = i + _CACHE_BLOCK
                _gelu_bwd_f32(of[i:j], gf[i:j], xf[i:j])
            return
    x = np.asarray(x, dtype=dt)
    g = np.asarray(g, dtype=dt)
    if approximate == "tanh":
        beta, kappa = dt.type(_SQRT_2_PI), dt.type(0.044715)
        x2 = x * x
        inner = beta * (x + kappa * (x2 * x))
        t = np.tanh(inner)
        left = dt.type(0.5) * x
        right = dt.type(1) + t
        d = dt.type(0.5) * right + left * (dt.type(1) - t * t) * beta * (dt.type(1) + dt.type(3) * kappa * x2)
    else:
        cdf = dt.type(0.5) * (dt.type(1) + _erf64(x * dt.type(_SQRT1_2)).astype(dt))
        pdf = np.exp(x * x * dt.type(-0.5)) * dt.type(_1_SQRT_2PI)
        d = cdf + x * pdf
    np.multiply(g, d, out=o, dtype=dt, casting=_U)


# the activations' gradients as one kernel each, torch's formulas evaluated in dt (a 16-bit
# result rounds once): g the incoming gradient, y the forward's result, x its input; either may be
# a scalar (a broadcast number) or broadcast, so a temporary is written in place only when it is an
# array of the result's shape
def _inplace(t, shape):
    return t if isinstance(t, np.ndarray) and t.shape == shape else None


def _tanh_backward(o, g, y, dt):
    t = np.multiply(y, y, dtype=dt, casting=_U)
    t = np.subtract(dt.type(1), t, out=_inplace(t, np.shape(t)))
    np.multiply(g, t, out=o, dtype=dt, casting=_U)


def _sigmoid_backward(o, g, y, dt):
    t = np.subtract(dt.type(1), y, dtype=dt, casting=_U)
    t = np.multiply(g, t, out=_inplace(t, o.shape), dtype=dt, casting=_U)
    np.multiply(t, y, out=o, dtype=dt, casting=_U)


def _threshold_backward(o, g, y, dt):
    """relu's: 0 where the result y <= 0, else g (a NaN result passes g on)."""
    _store(o, np.where(np.less_equal(y, dt.type(0)), dt.type(0), g))


def _silu_backward(o, g, x, dt):
    shape = np.shape(x)  # every temporary below has it
    s = np.empty(shape, dt)
    _sigmoid(s, x, dt)
    t = np.subtract(dt.type(1), s)
    t = np.multiply(t, x, out=_inplace(t, shape), dtype=dt, casting=_U)
    t = np.add(t, dt.type(1), out=_inplace(t, shape))
    np.multiply(np.multiply(g, s, dtype=dt, casting=_U), t, out=o, dtype=dt, casting=_U)


def _add(o, a, b, dt, alpha=None):
    if alpha is not None:
        b = np.multiply(b, dt.type(alpha), dtype=dt, casting=_U)
    np.add(a, b, out=o, dtype=dt, casting=_U)


def _sub(o, a, b, dt, alpha=None):
    if alpha is not None:
        b = np.multiply(b, dt.type(alpha), dtype=dt, casting=_U)
    np.subtract(a, b, out=o, dtype=dt, casting=_U)


def _div_trunc(o, a, b, dt):
    if dt.kind == "f":
        np.trunc(np.true_divide(a, b, dtype=dt), out=o, casting=_U)
        return
    if dt.kind == "u":
        np.floor_divide(a, b, out=o, dtype=dt, casting=_U)
        return
    a, b = np.asarray(a, dtype=dt), np.asarray(b, dtype=dt)
    q = np.floor_divide(a, b)  # C division truncates: floor, plus one when inexact with mixed signs
    inexact = np.not_equal(q * b, a)
    inexact &= np.less(a, 0) != np.less(b, 0)
    np.add(q, inexact, out=o, dtype=dt, casting=_U)


def _pow(o, a, b, dt):
    if dt.kind == "b":  # only a bool tensor to a bool scalar power gets here: x ** True = x, x ** False = 1
        np.logical_or(a, np.logical_not(b), out=o, casting=_U)
        return
    if dt.kind != "i":
        np.power(a, b, out=o, dtype=dt, casting=_U)
        return
    # integer powers: NumPy refuses negative exponents; torch gives 1/a**|b| truncated (0 unless |a| = 1).
    # The sign is the one after the cast to the result dtype: uint8 253 as an int8 exponent is -3.
    b = np.asarray(b).astype(dt, copy=False)
    neg = np.less(b, 0)
    if not neg.any():
        np.power(a, b, out=o, dtype=dt, casting=_U)
        return
    a = np.asarray(a, dtype=dt)
    r = np.power(a, np.maximum(b, dt.type(0)), dtype=dt)
    odd = (b & dt.type(1)).astype(_BOOL)
    inv = np.where(a == 1, dt.type(1), np.where(a == -1, np.where(odd, dt.type(-1), dt.type(1)), dt.type(0)))
    _store(o, np.where(neg, inv, r))


def _extreme(uf):
    """maximum/minimum with NaN propagating and ties going to the first operand, as the CUDA
    kernels (maximum(-0.0, 0.0) is -0.0; torch's CPU answer there depends on its code path)."""
    def k(o, a, b, dt):
        a = _before_write(o, a, dt)
        uf(a, b, out=o, dtype=dt, casting=_U)
        _keep_input_at_ties(o, a, dt)
    k.__name__ = uf.__name__
    return k


_BINARY = {
    "gelu_backward": _gelu_backward, "tanh_backward": _tanh_backward, "sigmoid_backward": _sigmoid_backward,
    "threshold_backward": _threshold_backward, "silu_backward": _silu_backward,
    "add": _add, "sub": _sub, "mul": _ufunc(np.multiply), "div_true": _ufunc(np.true_divide),
    "div_trunc": _div_trunc, "div_floor": _ufunc(np.floor_divide), "remainder": _ufunc(np.remainder),
    "fmod": _ufunc(np.fmod), "pow": _pow, "maximum": _extreme(np.maximum), "minimum": _extreme(np.minimum),
    "atan2": _ufunc(np.arctan2),
    "eq": _predicate(np.equal), "ne": _predicate(np.not_equal), "lt": _predicate(np.less),
    "le": _predicate(np.less_equal), "gt": _predicate(np.greater), "ge": _predicate(np.greater_equal),
    "logical_and": _predicate(np.logical_and), "logical_or": _predicate(np.logical_or),
    "logical_xor": _predicate(np.logical_xor),
    "bitwise_and": _ufunc(np.bitwise_and), "bitwise_or": _ufunc(np.bitwise_or),
    "bitwise_xor": _ufunc(np.bitwise_xor),
}


_SAME_SIZE_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}


def _where(o, cond, x, y, dt):
    ity = _SAME_SIZE_INT.get(dt.itemsize)
    if ity is None or o.dtype != dt or not isinstance(cond, np.ndarray) or cond.dtype != _BOOL:
        _store(o, np.where(cond, _cast(x, dt), _cast(y, dt)))
        return
    # a branch-free select on the bits, y ^ ((x ^ y) & -cond): np.where branches per element and
    # costs ~15x as much on a mask without runs (relu's backward, dropout)
    # (the mask: negated in int8, then widened with its sign: a ufunc casting int8 to the wider
    # type on the fly runs a buffered loop, slower than the two plain passes)
    xi = np.asarray(x, dtype=dt).view(ity)
    yi = np.asarray(y, dtype=dt).view(ity)
    if yi.ndim == 0 and yi == 0:  # where(cond, x, 0): x & -cond, one pass fewer twice
        np.bitwise_and(xi, np.negative(cond.view(np.int8)).astype(ity), out=o.view(ity))
        return
    if xi.ndim == 0 and xi == 0:  # where(cond, 0, y) (relu's backward): y & (cond - 1)
        np.bitwise_and(yi, np.subtract(cond.view(np.int8), np.int8(1)).astype(ity), out=o.view(ity))
        return
    t = np.bitwise_xor(xi, yi)
    t = np.bitwise_and(t, np.negative(cond.view(np.int8)).astype(ity))
    np.bitwise_xor(t, yi, out=o.view(ity))


def _clamp(o, x, lo, hi, dt):
    # max then min, as torch: NaN anywhere propagates, and min > max gives max
    x = _before_write(o, x, dt)
    if lo is not None and not isinstance(lo, np.ndarray):
        lo = _const_row(x, lo, dt)
    if hi is not None and not isinstance(hi, np.ndarray):
        hi = _const_row(x, hi, dt)
    if lo is None:
        np.minimum(x, hi, out=o, dtype=dt, casting=_U)
    elif hi is None:
        np.maximum(x, lo, out=o, dtype=dt, casting=_U)
    else:
        np.minimum(np.maximum(x, lo, dtype=dt), hi, out=o, dtype=dt, casting=_U)
    _keep_input_at_ties(o, x, dt)


def _lerp(o, x, end, w, dt):
    # torch's two-sided formula: exact at both ends (weight 0 gives x, weight 1 gives end)
    x = np.asarray(x, dtype=dt)
    end = np.asarray(end, dtype=dt)
    w = np.asarray(w, dtype=dt)
    d = end - x
    _store(o, np.where(np.abs(w) < dt.type(0.5), x + w * d, end - d * (dt.type(1) - w)))


def _addcmul(o, x, t1, t2, dt, value=1):
    p = np.multiply(np.multiply(t1, dt.type(value), dtype=dt, casting=_U), t2, dtype=dt, casting=_U)
    np.add(x, p, out=o, dtype=dt, casting=_U)


def _addcdiv(o, x, t1, t2, dt, value=1):
    p = np.true_divide(np.multiply(t1, dt.type(value), dtype=dt, casting=_U), t2, dtype=dt, casting=_U)
    np.add(x, p, out=o, dtype=dt, casting=_U)


def _masked_fill(o, x, mask, value, dt):
    _store(o, np.where(mask, _cast(value, dt), _cast(x, dt)))


def _gelu_backward_out(o, g, x, y, dt):
    """g (Phi(x) + x phi(x)) with Phi(x) = gelu(x) / x read off the forward's result y (0.5 at x = 0;
    CPU float32 gelu keeps its relative accuracy in the negative tail, so the quotient does) and
    phi(x) = exp(-x^2 / 2) / sqrt(2 pi): no erfc to evaluate again. + 0 turns a -0 factor into +0
    (torch's cdf + x * pdf there)."""
    if o.ndim == 0:  # NumPy's 0-d results are scalars, which the in-place steps below refuse
        o, g, x, y = o.reshape(1), np.reshape(g, 1), np.reshape(x, 1), np.reshape(y, 1)
    x = np.asarray(x, dtype=dt)
    cdf = np.array(np.divide(y, x, dtype=dt, casting=_U), ndmin=1)  # operands may broadcast
    zero = np.equal(x, 0)
    if zero.any():
        cdf[np.broadcast_to(zero, cdf.shape)] = 0.5
    pdf = np.square(x)
    pdf *= dt.type(-0.5)
    np.exp(pdf, out=pdf)
    pdf *= dt.type(_1_SQRT_2PI)
    pdf *= x
    cdf += pdf
    cdf += dt.type(0)
    np.multiply(g, cdf, out=o, dtype=dt, casting=_U)


_TERNARY = {"where": _where, "clamp": _clamp, "lerp": _lerp, "addcmul": _addcmul, "addcdiv": _addcdiv,
            "masked_fill": _masked_fill, "gelu_backward_out": _gelu_backward_out}

from .special_math import BINARY as _SPECIAL_BINARY, UNARY as _SPECIAL_UNARY  # noqa: E402
_UNARY.update(_SPECIAL_UNARY)
_BINARY.update(_SPECIAL_BINARY)
unary.kernels = frozenset(_UNARY)
binary.kernels = frozenset(_BINARY)
ternary.kernels = frozenset(_TERNARY)
