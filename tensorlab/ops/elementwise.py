"""Elementwise ops: unary, binary (tensor or Python number on either side, broadcasting) and the
ternary family (where, clamp, lerp, addcmul, addcdiv, masked_fill), with their in-place forms,
out= and the Python operators.

Every op is one row of the tables below. One generic path per arity turns a row into the public
function, its in-place form and methods: check operands, promote (torch's result_type and the
row's promotion kind), broadcast, allocate (or validate the out=/in-place target), record
autograd, then call ONE backend primitive (`unary`/`binary`/`ternary`) with the row's kernel
name and the dtype to compute in (float16/bfloat16 compute in float32 and round once).
Everything that can fail is checked before anything is written.
"""
from __future__ import annotations

import math
import numbers

from .. import _warn
from .. import autograd_hooks, backends, dtypes, layout as L
from ..tensor import Tensor
from ..tensor import _new as _new_tensor
from ..tensor import Meta
from ..storage import UntypedStorage
from ._common import _SAFE_NUMEL, _cpu_allocate, _cpu_allocate_view, _object_new, _tuple_new
from . import registry as R
from . import complex_rules as _complex_rules
from ._common import (_CONTIGUOUS, check_cast, check_no_partial_overlap, check_writable, empty_tensor, output,
                      pinned, same_device)

_BOOL, _I64, _F32 = dtypes.bool_, dtypes.int64, dtypes.float32
_cpu = backends.cpu  # the CPU backend package (its primitives are looked up on it per call)
_HALVES = (dtypes.float16, dtypes.bfloat16)
_PY = (bool, int, float, complex)
_DEF, _KEEP, _I2F, _ALWAYS_BOOL = R.DEFAULT, R.KEEP, R.INT_TO_FLOAT, R.ALWAYS_BOOL

# which common dtypes an op accepts
ANY, NO_BOOL, INTEGRAL, FLOATING = "any", "no_bool", "integral", "floating"

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")
_SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.")
_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")
_POS_BOOL = "The `+` operator, on a bool tensor is not supported."
_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


class _Op:
    """What the generic paths need from a row, as plain attributes (read on every call)."""

    __slots__ = ("name", "iname", "kernel", "prim", "promotion", "accepts", "bool_error", "bool_to",
                 "scalar_other", "scalar_input", "_types", "_ok")

    def __init__(self, name, kernel, prim, promotion, accepts=ANY, bool_error=None, bool_to=None,
                 scalar_other=True, scalar_input=False):
        self.name = name
        self.iname = name + "_"  # the in-place form's name, as its messages spell it
        self.kernel = kernel
        self.prim = prim
        self.promotion = promotion
        self.accepts = accepts
        self.bool_error = bool_error
        self.bool_to = bool_to
        self.scalar_other = scalar_other
        self.scalar_input = scalar_input
        self._types = {}
        self._ok = {}  # (common, default dtype) -> types(common), for dtypes the op supports

    def ready(self, common):
        """types(common) after supports(common): the two steps of an op without out=, memoized
        for the dtypes the op supports (an unsupported one raises each time)."""
        key = (common, dtypes._default_dtype)
        r = self._ok.get(key)
        if r is None:
            r = self.types(common)
            self.supports(common)
            self._ok[key] = r
        return r

    def types(self, common):
        """(result dtype, compute dtype) for the promoted input dtype `common`. Whether the op
        supports `common` at all is checked later (`supports`), after the shape and cast checks,
        in torch's order."""
        key = (common, dtypes._default_dtype)
        r = self._types.get(key)
        if r is None:
            r = self._types[key] = self._resolve(common)
        return r

    def supports(self, common):
        if common.category == 3:  # complex: ops/complex_rules.py's table
            _complex_rules.check(self.name, common)
            return
        if self.accepts is not ANY:
            _check_accepts(self, common)

    def _resolve(self, common):
        if common is _BOOL and self.bool_to is not None:
            common = self.bool_to
        kind = self.promotion
        if kind is _ALWAYS_BOOL:
            res = _BOOL
        elif kind is _I2F and not (common.is_floating_point or common.category == 3):
            res = common = dtypes.get_default_dtype()
        elif common.category == 3 and self.name in _complex_rules.REAL_RESULT:
            res = common.to_real()
        else:
            res = common
        return res, (_F32 if common in _HALVES else common)


def _check_accepts(op, dt):
    acc = op.accepts
    if acc is ANY:
        return
    if dt is _BOOL and op.bool_error is not None:
        raise RuntimeError(op.bool_error)
    if acc is NO_BOOL:
        bad, hint = dt is _BOOL, "convert the bool tensor first, e.g. x.to(tensorlab.int64)"
    elif acc is INTEGRAL:
        bad, hint = dt.is_floating_point, "it takes integer or bool tensors only"
    else:
        bad, hint = not dt.is_floating_point, "pass floating point tensors, e.g. x.float()"
    if bad:
        raise NotImplementedError(f'"{op.name}" not implemented for \'{dt.torch_name}\' '
                                  f'(tensorlab.{dt.name}); {hint}')


# -- operands, promotion, scalar arguments ------------------------------------------------------

def _number(x):
    """x as a Python bool/int/float/complex when it is a number (NumPy scalars too), else None."""
    if type(x) in _PY or type(x) is complex:
        return x
    if isinstance(x, (Tensor, str)):
        return None
    if getattr(x, "dtype", None) is not None and getattr(x, "shape", None) == () and hasattr(x, "item"):
        x = x.item()  # NumPy scalars (and 0-d arrays)
        return x if type(x) in _PY or type(x) is complex else None
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    return None


def _operand(op, x, pos, arg, scalar_ok):
    """A binary operand as a Tensor or Python number; TypeError (torch's wording) otherwise."""
    if isinstance(x, Tensor):
        return x
    v = _number(x)
    if v is None or not scalar_ok:
        want = "Tensor or Number" if scalar_ok else "Tensor"
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be {want}, not {type(x).__name__}")
    return v


_RT = {}


def _key(x):
    if isinstance(x, Tensor):
        return x._dtype if x._meta.layout.shape else (x._dtype,)  # zero-dim tensors rank below dimensioned
    return type(x)


def _promote(*xs):
    """dtypes.result_type, memoized on (dtype, zero-dim) / Python type of each operand."""
    key = tuple(_key(x) for x in xs if x is not None) + (dtypes._default_dtype,)
    r = _RT.get(key)
    if r is None:
        r = _RT[key] = dtypes.result_type(*(x for x in xs if x is not None))
    return r


def _promote2(a, b):
    """_promote for two operands, without the generic tuple building (the binary hot path)."""
    key = (_key(a), _key(b), dtypes._default_dtype)
    r = _RT.get(key)
    if r is None:
        r = _RT[key] = dtypes.result_type(a, b)
    return r


_LIMITS = {}


def _limits(dt):
    r = _LIMITS.get(dt)
    if r is None:
        if dt.is_floating_point:
            r = (None, dtypes.finfo(dt).max)
        else:
            ii = dtypes.iinfo(dt)
            r = (-ii.max if not dt.is_signed else ii.min, ii.max)
        r = _LIMITS[dt] = r
    return r


def _checked(value, dt, op):
    """A scalar argument (alpha, value, clamp bounds, fill values) as a Python number that `dt`
    holds; RuntimeError when it overflows `dt`, as torch checks scalar arguments (torch's one-element
    CPU fill shortcut stores a float16/bfloat16 overflow as inf: a divergence row)."""
    if dt is _BOOL:
        return bool(value)
    if dt.category == 3:
        return complex(value)
    if type(value) is complex:
        raise RuntimeError(f"{op}: value cannot be converted to type {dt.name} without overflow "
                           f"(a complex value {value} into a real tensor)")
    lo, hi = _limits(dt)
    if dt.is_floating_point:
        v = float(value)
        if math.isfinite(v) and not -hi <= v <= hi:
            raise RuntimeError(f"{op}: value cannot be converted to type {dt.name} without overflow "
                               f"(the largest tensorlab.{dt.name} is {hi})")
        return v
    if isinstance(value, float):  # a float is compared as a float, against the dtype's own range
        ii = dtypes.iinfo(dt)      # (torch: -0.5 overflows uint8 and 127.5 int8; only an int wraps)
        if not (math.isfinite(value) and ii.min <= value <= ii.max):
            raise RuntimeError(f"{op}: value cannot be converted to type {dt.name} without overflow "
                               f"({value} is outside [{ii.min}, {ii.max}])")
    v = int(value)
    if not lo <= v <= hi:
        raise RuntimeError(f"{op}: value cannot be converted to type {dt.name} without overflow "
                           f"({v} is outside [{lo}, {hi}])")
    return v % (hi + 1) if v < 0 and not dt.is_signed else v  # unsigned wraps negatives, as torch


def _scalar_arg(value, op, arg):
    v = _number(value)
    if v is None:
        raise TypeError(f"{op}(): argument '{arg}' must be Number, not {type(value).__name__}")
    return v


def _host_scalars(operands, dev):
    """Zero-dim CPU tensors in an op on another device go to the kernel as numbers (as torch)."""
    return tuple(x.item() if isinstance(x, Tensor) and x._meta.storage.device != dev else x for x in operands)


# -- operands at the common dtype ---------------------------------------------------------------
# torch casts every operand to the op's common dtype before computing (Python numbers become 0-dim
# tensors of that dtype), and computes float16/bfloat16 in float32. The backends convert operands
# straight to the compute dtype, which is the same thing for every common dtype but the two halves:
# there an operand of another dtype is rounded to the half first (bf16 3.75 % 0.001 divides by
# bf16(0.001); int32 2**31-1 // float16 divides float16 inf), and a result stored into an out= of
# another dtype is rounded to the half on its way (exp(bf16, out=float32) is bf16's e).
_NON_VALUE = {"where": (0,), "masked_fill": (1,)}  # operands that are masks, not values


def _at_common(d, common, operands, dev):
    skip = _NON_VALUE.get(d.name, ())
    out = []
    for i, x in enumerate(operands):
        if x is None or i in skip:
            pass
        elif isinstance(x, Tensor):
            if x._dtype is not common:
                t = empty_tensor(x._meta.layout.shape, common, dev)
                (_cpu if dev.type == "cpu" else backends.get(dev)).copy(t, x)
                x = t
        elif type(x) is not bool:
            x = dtypes.round_to(x, common)
        out.append(x)
    return tuple(out)


def _cast_target(d, common, res):
    """The dtype torch's iterator casts inputs to: the result's, or the inputs' common dtype for
    comparisons and other bool-valued ops."""
    return common if d.promotion is _ALWAYS_BOOL else res


def _launch(d, dev, target, operands, common, res, comp, params):
    """The primitive over `operands` into `target`, with torch's rounding at a half common dtype."""
    fn = _fn(d, dev)
    if common in _HALVES:
        operands = _at_common(d, common, operands, dev)
        if res is common and target._dtype is not res:
            tmp = empty_tensor(target._meta.layout.shape, res, dev)
            fn(tmp, d.kernel, *operands, comp, **params)
            (_cpu if dev.type == "cpu" else backends.get(dev)).copy(target, tmp)
            return
    fn(target, d.kernel, *operands, comp, **params)

# -- the generic execution step, shared by every arity ------------------------------------------

def _grad_enabled():
    impl = autograd_hooks._impl
    if impl is None:
        return False
    enabled = getattr(impl, "is_grad_enabled", None)
    return True if enabled is None else enabled()


def _fn(d, dev):
    """The backend primitive of row `d` for device `dev`."""
    return getattr(_cpu if dev.type == "cpu" else backends.get(dev), d.prim)


# ops whose number arguments torch takes as parameters (clamp's bounds, lerp's weight), not as wrapped
# 0-dim operands: they do not keep the output from copying its inputs' layout
_SCALAR_PARAMS = frozenset({"clamp", "lerp", "pow"})
# ops torch computes as a contiguous clone of the (expanded) input, then in place (masked_fill)
_CONTIGUOUS_OUT = frozenset({"masked_fill"})


def _out_stride(shape, operands, name=None, common=None):
    """The output's strides by torch's TensorIterator rule (None: contiguous): it keeps the inputs'
    memory order, so (x.permute(...) + 1).stride() is x's and a later .view behaves as in torch.
    Number operands count as torch's wrapped 0-dim tensors unless the op takes them as parameters.
    An input of another dtype than `common` counts with the layout its cast to `common` has (torch's
    CPU iterator casts such inputs first, with .to()'s preserve_format layout)."""
    if name in _CONTIGUOUS_OUT:
        return None
    hit = _CONTIGUOUS.get((shape,))
    plain = None if hit is None else hit[0]  # the one contiguous Layout new tensors of this shape share
    lays, scalars, fresh = [], 0, True
    for x in operands:
        if isinstance(x, Tensor):
            lay = x._meta.layout
            if common is not None and x._dtype is not common:
                lay = L.cast_layout(lay)
            fresh = fresh and lay is plain
            lays.append(lay)
        elif x is not None:
            scalars += 1
    if fresh:  # every tensor operand contiguous in the output's shape (the common case): contiguous
        return None
    return L.elementwise_strides(shape, tuple(lays), 0 if name in _SCALAR_PARAMS else scalars)


# ops whose out= must have the result's dtype exactly (torch casts into out= for the others), with
# torch's words for each
_FOUND = "Found dtype {out} but expected {res}"
_EXACT_OUT = {**{n: _FOUND for n in ("abs", "neg", "floor", "ceil", "round", "trunc", "sign", "bitwise_not",
                                     "clamp")},
              "where": "Expected out type to be {res} but got {out}",
              "nan_to_num": "nan_to_num: dtype of out: {out} should be same as input: {res}"}


def _run(d, common, operands, shape, dev, params, inputs, out, pins=None):
    """Allocate (or validate `out`), launch one primitive, publish, record autograd. `operands` are
    pinned (one record each for the whole op), `inputs` the caller's tensors (for autograd), `pins`
    maps id(input) -> its pin, so an out= that is also an input is written as the record read."""
    name = d.name
    if out is None:
        r = d._ok.get((common, dtypes._default_dtype)) or d.ready(common)
        t = empty_tensor(shape, r[0], dev, _out_stride(shape, operands, name, _cast_target(d, common, r[0])))
        _launch(d, dev, t, operands, common, r[0], r[1], params)
        return autograd_hooks.record_op(t, name, inputs, operands, d.kernel, params)
    res, comp = d.types(common)
    if any(t._requires_grad for t in inputs) and _grad_enabled():
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    exact = _EXACT_OUT.get(name)
    if exact is not None and isinstance(out, Tensor) and out._dtype is not res:
        raise RuntimeError(exact.format(op=name, out=out._dtype.torch_name, res=res.torch_name))
    pin = None if pins is None else pins.get(id(out))
    o = output(out, shape, res, dev, name, tuple(x for x in operands if isinstance(x, Tensor)),
               stride=_out_stride(shape, operands, name, _cast_target(d, common, res)),
               out_meta=None if pin is None else pin._meta)
    d.supports(common)
    _launch(d, dev, o.tensor, operands, common, res, comp, params)
    return o.finish()


def _run_inplace(d, common, self, target, operands, shape, dev, params, inputs, others, pins=None):
    """Write op(self, ...) into `target`, self pinned (one read of its metadata, so the layout
    checked here is the layout written even if another thread resizes self): broadcast shape ==
    self's shape, castable result, writable, no partial overlap with an input. The version moves
    once, and only after the write succeeded. `others`: the tensor inputs other than self; `pins`:
    their pinned records (the overlap check must see what the primitive reads)."""
    op = d.iname
    res, comp = d.types(common)
    storage, lay = target._meta
    if shape != lay.shape:
        raise RuntimeError(f"{op}: output with shape {list(lay.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    if res is not self._dtype:  # every dtype casts to itself
        check_cast(res, self._dtype, op)
    check_writable(target, op)
    autograd_hooks.check_inplace(self, op, others)
    pins = others if pins is None else pins
    for x in pins:
        if x._meta.storage is storage:  # only inputs over self's storage can overlap it
            check_no_partial_overlap(target, *(t for t in pins if t._meta.storage is storage), op=op)
            break
    d.supports(common)
    d._ok[(common, dtypes._default_dtype)] = (res, comp)  # supported: ready(common)'s memo, for _binary_'s fast path
    if common in _HALVES:
        _launch(d, dev, target, operands, common, res, comp, params)
    elif params:
        _fn(d, dev)(target, d.kernel, *operands, comp, **params)
    else:
        _fn(d, dev)(target, d.kernel, *operands, comp)
    self._vc.value += 1  # VersionCounter.bump()
    autograd_hooks.record_inplace_op(self, op, inputs, operands, d.kernel, params)
    return self


_NO_PARAMS = {}


# -- unary --------------------------------------------------------------------------------------

def _unary(d, x, out, params=_NO_PARAMS, check=None, inplace=False):
    if not isinstance(x, Tensor):
        raise TypeError(f"{d.name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    common = x._dtype
    if check is not None:
        params = check(common, params)
    if inplace:
        t = pinned(x)
        storage, lay = t._meta
        return _run_inplace(d, common, x, t, (t,), lay.shape, storage.device, params, (x,), ())
    meta = x._meta
    storage, lay = meta
    px = x._pin  # pinned(x, meta): the record the output's shape came from is the one the primitive reads
    if px is None or px._meta is not meta or px._vc is not x._vc or px._dtype is not common:
        px = _pin_of(x, meta)
    if out is not None:
        return _run(d, common, (px,), lay.shape, storage.device, params, (x,), out, {id(x): px})
    r = d._ok.get((common, dtypes._default_dtype)) or d.ready(common)  # _run's no-out= path, inlined
    dev = storage.device
    ul = lay if r[0] is common or d.promotion is _ALWAYS_BOOL else L.cast_layout(lay)
    hit = _CONTIGUOUS.get((lay.shape,))
    t = empty_tensor(lay.shape, r[0], dev,
                     None if hit is not None and hit[0] is ul else L.elementwise_strides(lay.shape, (ul,), 0))
    if params:
        _fn(d, dev)(t, d.kernel, px, r[1], **params)
    else:
        _fn(d, dev)(t, d.kernel, px, r[1])
    if x._requires_grad or autograd_hooks._slow:
        return autograd_hooks.record_op(t, d.name, (x,), (px,), d.kernel, params)
    return t


# -- binary -------------------------------------------------------------------------------------

def _other_device(da, db):
    """Two tensors' devices differ (Device objects are not interned: compare their fields)."""
    return da is not db and (da.type != db.type or da.index != db.index)


def _binary_meta(d, a, b, reflected=False):
    """(a, b, shape, device, common dtype) with numbers normalized and devices checked."""
    if isinstance(a, Tensor):
        sa = a._meta.layout.shape
        dev = a._meta.storage.device
        if isinstance(b, Tensor):
            sb = b._meta.layout.shape
            shape = sa if sa == sb else L.broadcast_shapes(sa, sb)
            common = a._dtype if a._dtype is b._dtype else _promote2(a, b)
            if _other_device(b._meta.storage.device, dev):
                dev = same_device(d.name, a, b)
                if a._meta.storage.device != b._meta.storage.device:
                    a, b = _host_scalars((a, b), dev)
            return a, b, shape, dev, common
        b = _operand(d.name, b, 2, "other", d.scalar_other)
        return a, b, sa, dev, _promote2(a, b)
    if isinstance(b, Tensor):
        a = _operand(d.name, a, 1, "input", d.scalar_input or reflected)
        return a, b, b._meta.layout.shape, b._meta.storage.device, _promote2(a, b)
    raise TypeError(f"{d.name}(): argument 'input' (position 1) must be Tensor, not {type(a).__name__}")


# the binary ops torch also takes as two Python numbers (torch.add(2, 3) is tensor(5))
_TWO_NUMBERS = frozenset(("add", "sub", "mul", "div", "true_divide", "floor_divide"))


def _pin(x):
    """pinned(x): its remembered pin while that is still x's record (_pin_of)."""
    meta = x._meta
    p = x._pin
    if p is None or p._meta is not meta or p._vc is not x._vc or p._dtype is not x._dtype:
        p = _pin_of(x, meta)
    return p


def _pin2(a, b):
    """a and b pinned (one record each for the whole op); the same tensor twice: one pin."""
    pa = _pin(a) if isinstance(a, Tensor) else a
    pb = pa if b is a else _pin(b) if isinstance(b, Tensor) else b
    return pa, pb


def _inputs2(a, b, oa, ob):
    """The caller's tensors behind the operands a, b (pins, or numbers a 0-dim CPU tensor became)."""
    if isinstance(a, Tensor):
        return (oa, ob) if isinstance(b, Tensor) else (oa,)
    return (ob,)


def _pin_of(x, meta):
    """pinned(x, meta), remembered on x (Tensor._pin): a tensor used by op after op (a weight, a
    loop's operand) is pinned once per metadata record. A pin is never published or resized, so
    it stays a valid pin of x while x's record, version counter and dtype are the ones it holds."""
    h = x._hview
    if h is None:
        h = x._hview = [None]
    p = _new_tensor(Tensor, meta, x._dtype, x._vc, False)
    p._hview = h
    x._pin = p
    return p


def _binary(d, a, b, out, params=_NO_PARAMS, check=None, reflected=False):
    if out is None and isinstance(a, Tensor):
        # the common case as one straight line: two tensors of one dtype (not a half), on one Device
        # object, both with the one contiguous Layout of their shape, or such a tensor and a Python
        # number that does not change its dtype; anything else takes the general path below, which
        # makes the same checks (and every failing one) the long way
        ma = a._meta
        lay = ma[1]
        dt = a._dtype
        if isinstance(b, Tensor):
            mb = b._meta
            same = mb[1] is lay and b._dtype is dt and mb[0].device is ma[0].device
            number = False
        else:
            number = same = (type(b) in _PY and d.scalar_other
                             and _RT.get((dt if lay[0] else (dt,), type(b), dtypes._default_dtype)) is dt)
        if same:
            hit = _CONTIGUOUS.get((lay[0],))
            r = d._ok.get((dt, dtypes._default_dtype))
            if hit is not None and hit[0] is lay and r is not None and dt not in _HALVES:
                pa = a._pin  # pinned(a, ma): one record for the checks and the primitive (_pin_of inlined)
                if pa is None or pa._meta is not ma or pa._vc is not a._vc or pa._dtype is not dt:
                    pa = _pin_of(a, ma)
                if number:
                    pb = b
                elif b is a:
                    pb = pa
                else:
                    pb = b._pin
                    if pb is None or pb._meta is not mb or pb._vc is not b._vc or pb._dtype is not dt:
                        pb = _pin_of(b, mb)
                if check is not None:
                    params = check(dt, pa, pb, params)
                dev = ma[0].device
                res = r[0]
                numel = hit[1]
                if dev.type == "cpu" and _cpu.allocate is _cpu_allocate and numel <= _SAFE_NUMEL:
                    # empty_tensor(lay[0], res, dev)'s CPU path, inlined: the buffer, its view, one Meta
                    buf, arr = _cpu_allocate_view(numel * res.itemsize, hit[2], res.np, dev)
                    s = _object_new(UntypedStorage)
                    s._buf = buf
                    s.device = dev
                    s._resizable = True
                    meta = _tuple_new(Meta, (s, lay))
                    t = _new_tensor(Tensor, meta, res, None, False)
                    if arr is not None:
                        t._hview = [(meta, buf, res, arr)]
                    be = _cpu
                else:
                    be = backends.get(dev)
                    t = empty_tensor(lay[0], res, dev)
                fn = getattr(be, d.prim)  # per call: patchable
                if params:
                    fn(t, d.kernel, pa, pb, r[1], **params)
                else:
                    fn(t, d.kernel, pa, pb, r[1])
                if autograd_hooks._slow or a._requires_grad or (not number and b._requires_grad):
                    return autograd_hooks.record_op(t, d.name, (a,) if number else (a, b), (pa, pb), d.kernel,
                                                    params)
                return t
    if type(a) in _PY and type(b) in _PY and d.name in _TWO_NUMBERS:
        # torch.add(2, 3): the first number becomes a 0-dim CPU tensor of its own dtype (int64, the default
        # float dtype, bool); the second stays a number, so the promotion is torch's
        from .creation import tensor
        a = tensor(a)
    oa, ob = a, b
    a, b = _pin2(a, b)
    ma = a._meta if isinstance(a, Tensor) else None
    if ma is not None and isinstance(b, Tensor):  # _binary_meta's two-tensor case, inlined
        mb = b._meta
        shape = ma.layout.shape
        sb = mb.layout.shape
        if shape != sb:
            shape = L.broadcast_shapes(shape, sb)
        common = a._dtype
        if common is not b._dtype:
            common = _promote2(a, b)
        dev = ma.storage.device
        db = mb.storage.device
        if db is not dev and (db.type != dev.type or db.index != dev.index):  # _other_device
            a, b, shape, dev, common = _binary_meta(d, a, b, reflected)
    elif ma is not None and type(b) in _PY and d.scalar_other:  # tensor op Python number, inlined
        shape = ma.layout.shape
        dev = ma.storage.device
        da = a._dtype
        common = _RT.get((da if shape else (da,), type(b), dtypes._default_dtype)) or _promote2(a, b)
    else:
        a, b, shape, dev, common = _binary_meta(d, a, b, reflected)
    if check is not None:
        params = check(common, a, b, params)
    if out is not None:
        return _run(d, common, (a, b), shape, dev, params, _inputs2(a, b, oa, ob), out, {id(oa): a, id(ob): b})
    r = d._ok.get((common, dtypes._default_dtype)) or d.ready(common)  # _run's no-out= path, inlined
    t = empty_tensor(shape, r[0], dev, _out_stride(shape, (a, b), d.name, _cast_target(d, common, r[0])))
    fn = getattr(_cpu if dev.type == "cpu" else backends.get(dev), d.prim)  # looked up per call: patchable
    if common in _HALVES:
        _launch(d, dev, t, (a, b), common, r[0], r[1], params)
    elif params:
        fn(t, d.kernel, a, b, r[1], **params)
    else:
        fn(t, d.kernel, a, b, r[1])
    # operands are tensors or exactly bool/int/float here
    if autograd_hooks._slow or (type(a) not in _PY and oa._requires_grad) or (type(b) not in _PY and ob._requires_grad):
        return autograd_hooks.record_op(t, d.name, _inputs2(a, b, oa, ob), (a, b), d.kernel, params)
    return t


def _binary_(d, self, other, params=_NO_PARAMS, check=None):
    if type(other) in _PY and isinstance(self, Tensor) and d.scalar_other:
        # the common case as one straight line: `tensor op= number` into a writable contiguous tensor
        # of the result's dtype (not a half) that autograd has nothing to say about; anything else
        # takes the general path below, which makes the same checks the long way
        meta = self._meta
        lay = meta[1]
        dt = self._dtype
        if _RT.get((dt if lay[0] else (dt,), type(other), dtypes._default_dtype)) is dt:
            r = d._ok.get((dt, dtypes._default_dtype))
            hit = _CONTIGUOUS.get((lay[0],))
            if (r is not None and r[0] is dt and hit is not None and hit[0] is lay and dt not in _HALVES
                    and not meta[0]._readonly and not (self._requires_grad or self._inference or autograd_hooks._slow
                                                       or self._base is not None)):
                t = self._pin  # pinned(self, meta) (_pin_of inlined)
                if t is None or t._meta is not meta or t._vc is not self._vc or t._dtype is not dt:
                    t = _pin_of(self, meta)
                if check is not None:
                    params = check(dt, t, other, params)
                dev = meta[0].device
                fn = getattr(_cpu if dev.type == "cpu" else backends.get(dev), d.prim)  # per call: patchable
                if params:
                    fn(t, d.kernel, t, other, r[1], **params)
                else:
                    fn(t, d.kernel, t, other, r[1])
                self._vc.value += 1  # VersionCounter.bump(), after the write succeeded
                return self
    if not isinstance(self, Tensor):
        raise TypeError(f"{d.name}_(): argument 'self' must be Tensor, not {type(self).__name__}")
    t = pinned(self)
    po = t if other is self else pinned(other) if isinstance(other, Tensor) else other  # self twice: one pin
    a, b, shape, dev, common = _binary_meta(d, t, po)
    if check is not None:
        params = check(common, a, b, params)
    if isinstance(b, Tensor):
        if other is self:
            return _run_inplace(d, common, self, t, (t, b), shape, dev, params, (self, self), ())
        return _run_inplace(d, common, self, t, (t, b), shape, dev, params, (self, other), (other,), (b,))
    return _run_inplace(d, common, self, t, (t, b), shape, dev, params, (self,), ())


# -- op-specific checks (they run in the meta step, before anything is allocated) ---------------

def _dt_of(x):
    return x._dtype if isinstance(x, Tensor) else _BOOL if type(x) is bool else None


def _alpha(op, common, params):
    if "alpha" not in params:
        return _NO_PARAMS
    alpha = _scalar_arg(params["alpha"], op, "alpha")
    if common.category != 3 and isinstance(alpha, complex):
        raise RuntimeError(f"{op}: For non-complex input tensors, argument alpha must not be a complex number.")
    if not (common.is_floating_point or common.category == 3) and isinstance(alpha, float):
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")
    if common is not _BOOL and type(alpha) is bool:
        raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    return {"alpha": _checked(alpha, common, op)}


def _check_add(common, a, b, params):
    return _alpha("add", common, params)


def _check_sub(common, a, b, params, op="sub"):
    da, db = _dt_of(a), _dt_of(b)
    if da is _BOOL and db is _BOOL:
        raise RuntimeError(_SUB_BOOLS)
    if da is _BOOL or db is _BOOL:
        raise RuntimeError(_SUB_BOOL)
    return _alpha(op, common, params)


def _check_pow(common, a, b, params):
    if not common.is_floating_point and type(b) is int:
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if isinstance(a, Tensor) and common is not _BOOL:
            _checked(b, common, "pow")  # torch: an integral exponent must fit the tensor's dtype
    return params


# -- ternary: each op has its own meta step, then the shared execution --------------------------

def _tensor_arg(x, op, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _shape_of(*xs):
    shapes = [x._meta.layout.shape for x in xs if isinstance(x, Tensor)]
    first = shapes[0]
    for s in shapes[1:]:
        if s != first:
            return L.broadcast_shapes(*shapes)
    return first


def _where_meta(condition, input, other):
    op = "where"
    cond = _tensor_arg(condition, op, "condition", 1)
    if cond._dtype is not _BOOL:
        if cond._dtype is not dtypes.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{cond._dtype.torch_name}")
        _warn.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in "
                   "a future version. Use a boolean condition instead.", UserWarning)
    x = _operand(op, input, 2, "input", True)
    y = _operand(op, other, 3, "other", True)
    common = _promote(x, y)
    if not isinstance(x, Tensor):
        x = _checked(x, common, op)
    if not isinstance(y, Tensor):
        y = _checked(y, common, op)
    return (cond, x, y), common, _NO_PARAMS


def _clamp_meta(input, min, max):
    op = "clamp"
    x = _tensor_arg(input, op, "input", 1)
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    lo = None if min is None else _operand(op, min, 2, "min", True)
    hi = None if max is None else _operand(op, max, 3, "max", True)
    common = _promote(x, lo, hi)
    if lo is not None and not isinstance(lo, Tensor):
        lo = _checked(lo, common, op)
    if hi is not None and not isinstance(hi, Tensor):
        hi = _checked(hi, common, op)
    return (x, lo, hi), common, _NO_PARAMS


def _lerp_meta(input, end, weight):
    op = "lerp"
    x = _tensor_arg(input, op, "input", 1)
    end = _tensor_arg(end, op, "end", 2)
    dt = x._dtype
    if end._dtype is not dt:
        raise RuntimeError(f"lerp: expected dtype {dt.name} for `end` but got dtype {end._dtype.name}")
    if isinstance(weight, Tensor):
        if weight._dtype is not dt and weight.dim() > 0:
            raise RuntimeError(f"lerp: expected dtype {dt.name} for `weight` but got dtype {weight._dtype.name}")
    else:  # (an integral dtype is refused by the kernel table after this, with torch's NotImplementedError)
        weight = _operand(op, weight, 3, "weight", True)
        weight = _checked(weight, dt, op) if dt.is_floating_point else weight
    return (x, end, weight), dt, _NO_PARAMS


def _addc_meta(d, input, tensor1, tensor2, value):
    op = d.name
    x = _tensor_arg(input, op, "input", 1)
    t1 = _tensor_arg(tensor1, op, "tensor1", 2)
    t2 = _tensor_arg(tensor2, op, "tensor2", 3)
    if d is ADDCDIV and not (t1._dtype.is_floating_point or t1._dtype.category == 3) and \
            not (t2._dtype.is_floating_point or t2._dtype.category == 3):
        raise RuntimeError(_ADDCDIV_INT)
    common = _promote(x, t1, t2)
    if isinstance(value, Tensor):
        value = value.item()
    value = _scalar_arg(value, op, "value")
    params = _NO_PARAMS if value == 1 and type(value) is not bool else {"value": _checked(value, common, op)}
    return (x, t1, t2), common, params


def _masked_fill_meta(input, mask, value):
    op = "masked_fill"
    x = _tensor_arg(input, op, "input", 1)
    mask = _tensor_arg(mask, op, "mask", 2)
    if mask._dtype is not _BOOL:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype.torch_name}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
    else:
        value = _checked(_operand(op, value, 3, "value", True), x._dtype, op)
    return (x, mask, value), x._dtype, _NO_PARAMS


def _pins(args, first=None, pin=None):
    """args with every tensor pinned once (`first` pinned as `pin` when given); {id(tensor): pin}."""
    seen = {} if first is None else {id(first): pin}
    res = []
    for x in args:
        if isinstance(x, Tensor):
            p = seen.get(id(x))
            if p is None:
                p = seen[id(x)] = pinned(x)
            x = p
        res.append(x)
    return res, seen


def _ternary(d, meta, args, out):
    originals = {id(x): x for x in args if isinstance(x, Tensor)}
    pargs, seen = _pins(args)
    operands, common, params = meta(*pargs)
    dev = same_device(d.name, *operands)
    operands = _host_scalars(operands, dev)
    back = {id(p): originals[i] for i, p in seen.items()}
    inputs = tuple(back.get(id(x), x) for x in operands if isinstance(x, Tensor))
    return _run(d, common, operands, _shape_of(*operands), dev, params, inputs, out, seen)


def _ternary_(d, meta, self, args):
    if not isinstance(self, Tensor):
        raise TypeError(f"{d.name}_(): argument 'self' must be Tensor, not {type(self).__name__}")
    t = pinned(self)
    originals = {id(x): x for x in args if isinstance(x, Tensor)}
    originals[id(self)] = self
    pargs, seen = _pins(args, self, t)
    operands, common, params = meta(t, *pargs)
    dev = same_device(d.name, *operands)
    operands = _host_scalars(operands, dev)
    back = {id(p): originals[i] for i, p in seen.items()}
    tensors = tuple(x for x in operands[1:] if isinstance(x, Tensor))
    pins = tuple(x for x in tensors if x is not t)
    return _run_inplace(d, common, self, t, operands, _shape_of(*operands), dev, params,
                        (self,) + tuple(back.get(id(x), x) for x in tensors), tuple(back.get(id(x), x) for x in pins),
                        pins)


# -- the op table -------------------------------------------------------------------------------
# unary: name, promotion, accepted dtypes, extra _Op settings. Every unary op has an in-place form
# (name_) and a Tensor method unless listed in _NO_METHOD / _NO_INPLACE.
UNARY = (
    ("neg", _KEEP, NO_BOOL, {"bool_error": _NEG_BOOL}),
    ("abs", _KEEP, NO_BOOL, {}),
    ("sign", _KEEP, ANY, {}),
    ("exp", _I2F, ANY, {}), ("exp2", _I2F, ANY, {}), ("expm1", _I2F, ANY, {}),
    ("log", _I2F, ANY, {}), ("log2", _I2F, ANY, {}), ("log10", _I2F, ANY, {}), ("log1p", _I2F, ANY, {}),
    ("sqrt", _I2F, ANY, {}), ("rsqrt", _I2F, ANY, {}),
    ("square", _DEF, ANY, {"bool_to": _I64}),  # torch: pow(x, 2), so bool -> int64
    ("reciprocal", _I2F, ANY, {}),
    ("sin", _I2F, ANY, {}), ("cos", _I2F, ANY, {}), ("tan", _I2F, ANY, {}), ("tanh", _I2F, ANY, {}),
    ("sigmoid", _I2F, ANY, {}), ("erf", _I2F, ANY, {}),
    ("relu", _KEEP, NO_BOOL, {"bool_error": "Boolean inputs not supported for relu"}),
    ("gelu", _KEEP, FLOATING, {}), ("silu", _KEEP, FLOATING, {}),
    ("floor", _KEEP, NO_BOOL, {}), ("ceil", _KEEP, NO_BOOL, {}), ("round", _KEEP, NO_BOOL, {}),
    ("trunc", _KEEP, NO_BOOL, {}),
    ("isnan", _ALWAYS_BOOL, ANY, {}), ("isinf", _ALWAYS_BOOL, ANY, {}), ("isfinite", _ALWAYS_BOOL, ANY, {}),
    ("logical_not", _ALWAYS_BOOL, ANY, {}),
    ("bitwise_not", _KEEP, INTEGRAL, {}),
    ("nan_to_num", _KEEP, ANY, {}),
)
_NO_INPLACE = {"isnan", "isinf", "isfinite", "gelu", "silu"}
_NO_METHOD = {"gelu", "silu"}
_NOT_DIFFERENTIABLE = {"sign", "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "logical_not",
                       "bitwise_not", "floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                       "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"}

# binary: name, kernels, promotion, accepted dtypes, extra _Op settings
_SCALAR_FIRST = {"scalar_input": True}
_TENSORS_ONLY = {"scalar_other": False}
BINARY = (
    ("add", ("add",), _DEF, ANY, _SCALAR_FIRST),
    ("sub", ("sub",), _DEF, ANY, _SCALAR_FIRST),
    ("rsub", ("sub",), _DEF, ANY, {}),
    ("mul", ("mul",), _DEF, ANY, _SCALAR_FIRST),
    ("div", ("div_true", "div_trunc", "div_floor"), _I2F, ANY, _SCALAR_FIRST),
    ("true_divide", ("div_true",), _I2F, ANY, _SCALAR_FIRST),
    ("floor_divide", ("div_floor",), _DEF, NO_BOOL, _SCALAR_FIRST),
    ("remainder", ("remainder",), _DEF, NO_BOOL, _SCALAR_FIRST),
    ("fmod", ("fmod",), _DEF, NO_BOOL, {}),
    ("pow", ("pow",), _DEF, NO_BOOL, _SCALAR_FIRST),
    ("maximum", ("maximum",), _DEF, ANY, _TENSORS_ONLY),
    ("minimum", ("minimum",), _DEF, ANY, _TENSORS_ONLY),
    ("atan2", ("atan2",), _I2F, ANY, _TENSORS_ONLY),
    ("eq", ("eq",), _ALWAYS_BOOL, ANY, {}), ("ne", ("ne",), _ALWAYS_BOOL, ANY, {}),
    ("lt", ("lt",), _ALWAYS_BOOL, ANY, {}), ("le", ("le",), _ALWAYS_BOOL, ANY, {}),
    ("gt", ("gt",), _ALWAYS_BOOL, ANY, {}), ("ge", ("ge",), _ALWAYS_BOOL, ANY, {}),
    ("logical_and", ("logical_and",), _ALWAYS_BOOL, ANY, _TENSORS_ONLY),
    ("logical_or", ("logical_or",), _ALWAYS_BOOL, ANY, _TENSORS_ONLY),
    ("logical_xor", ("logical_xor",), _ALWAYS_BOOL, ANY, _TENSORS_ONLY),
    ("bitwise_and", ("bitwise_and",), _DEF, INTEGRAL, _SCALAR_FIRST),
    ("bitwise_or", ("bitwise_or",), _DEF, INTEGRAL, _SCALAR_FIRST),
    ("bitwise_xor", ("bitwise_xor",), _DEF, INTEGRAL, _SCALAR_FIRST),
)
_NO_BINARY_INPLACE = {"rsub", "maximum", "minimum"}

# ternary: name, kernel, promotion, accepted dtypes, in-place form
TERNARY = (
    ("where", "where", _DEF, ANY, False),
    ("clamp", "clamp", _DEF, NO_BOOL, True),
    ("lerp", "lerp", _KEEP, FLOATING, True),
    ("addcmul", "addcmul", _DEF, NO_BOOL, True),
    ("addcdiv", "addcdiv", _DEF, ANY, True),
    ("masked_fill", "masked_fill", _KEEP, ANY, True),
)

ROWS = R.register(
    *(R.OpDef(n, "elementwise", "unary", p, n not in _NOT_DIFFERENTIABLE, n not in _NO_INPLACE, (n,))
      for n, p, _, _ in UNARY),
    *(R.OpDef(n, "elementwise", "binary", p, n not in _NOT_DIFFERENTIABLE, n not in _NO_BINARY_INPLACE, k)
      for n, k, p, _, _ in BINARY),
    *(R.OpDef(n, "elementwise", "ternary", p, True, ip, (k,)) for n, k, p, _, ip in TERNARY),
    R.OpDef("clip", "elementwise", "ternary", _DEF, True, True, ("clamp",)),
    R.OpDef("fill_", "elementwise", "fill", R.NONE, True, True),
    R.OpDef("zero_", "elementwise", "fill", R.NONE, True, True),
)

_OPS = {n: _Op(n, n, "unary", p, acc, **kw) for n, p, acc, kw in UNARY}
_OPS.update({n: _Op(n, k[0], "binary", p, acc, **kw) for n, k, p, acc, kw in BINARY})
_OPS.update({n: _Op(n, k, "ternary", p, acc) for n, k, p, acc, _ in TERNARY})
_POW_BOOL_EXPONENT = _Op("pow", "pow", "binary", _DEF, ANY, **_SCALAR_FIRST)  # torch: x ** True = x, x ** False = 1
_DIV_TRUNC = _Op("div", "div_trunc", "binary", _DEF, NO_BOOL, **_SCALAR_FIRST)
_DIV_FLOOR = _Op("div", "div_floor", "binary", _DEF, NO_BOOL, **_SCALAR_FIRST)
WHERE, CLAMP, LERP, ADDCMUL, ADDCDIV, MASKED_FILL = (_OPS[n] for n in ("where", "clamp", "lerp", "addcmul",
                                                                       "addcdiv", "masked_fill"))
ADD, SUB, RSUB, DIV, POW = (_OPS[n] for n in ("add", "sub", "rsub", "div", "pow"))


# -- public functions, generated from the table -------------------------------------------------

_NO_OUT = {"relu", "isnan", "isinf", "isfinite"}  # torch has no out= for these: TypeError, as Python words it


def _make_unary(d, doc=None):
    """(the function, its in-place form) of a unary table row; `doc` replaces the generated docstring."""
    if d.name in _NO_OUT:
        def fn(input):
            return _unary(d, input, None)
    else:
        def fn(input, *, out=None):
            return _unary(d, input, out)

    def fn_(input):
        return _unary(d, input, None, inplace=True)
    fn.__name__, fn_.__name__ = d.name, d.name + "_"
    fn.__doc__ = doc or f"Elementwise {d.name} (torch.{d.name}); promotion: {d.promotion}."
    fn_.__doc__ = f"In-place {d.name}."
    return fn, fn_


def _make_binary(d, doc=None):
    """(the function, its in-place form) of a binary table row; `doc` replaces the generated docstring."""
    def fn(input, other, *, out=None):
        return _binary(d, input, other, out)

    def fn_(self, other):
        return _binary_(d, self, other)
    fn.__name__, fn_.__name__ = d.name, d.name + "_"
    fn.__doc__ = doc or f"Elementwise {d.name} with broadcasting (torch.{d.name}); promotion: {d.promotion}."
    fn_.__doc__ = f"In-place {d.name}."
    return fn, fn_


_GENERATED = {}
for _n, *_ in UNARY:
    if _n not in ("round", "nan_to_num", "gelu", "silu"):
        _GENERATED[_n], _GENERATED[_n + "_"] = _make_unary(_OPS[_n])
for _n, *_ in BINARY:
    if _n not in ("add", "sub", "rsub", "div", "pow"):
        _GENERATED[_n], _GENERATED[_n + "_"] = _make_binary(_OPS[_n])
globals().update(_GENERATED)


# ops with options: thin signatures over the same generic paths

def _round_check(common, params):
    if params and not common.is_floating_point:
        raise NotImplementedError(f'"round" not implemented for \'{common.torch_name}\' with decimals != 0 '
                                  f'(tensorlab.{common.name}); round integer tensors without decimals')
    return params


def _round_params(decimals):
    decimals = int(decimals)
    return {"decimals": decimals} if decimals else _NO_PARAMS


def round(input, *, decimals=0, out=None):  # noqa: A001
    return _unary(_OPS["round"], input, out, _round_params(decimals), _round_check)


def round_(input, *, decimals=0):
    return _unary(_OPS["round"], input, None, _round_params(decimals), _round_check, inplace=True)


def _nan_to_num_check(nan, posinf, neginf):
    def check(common, params):
        if not common.is_floating_point:
            return _NO_PARAMS  # integers and bools have no NaN or infinity: a copy
        big = dtypes.finfo(common).max  # defaults: the input dtype's extremes, as torch
        return {"nan": float(_scalar_arg(nan, "nan_to_num", "nan")),
                "posinf": big if posinf is None else float(_scalar_arg(posinf, "nan_to_num", "posinf")),
                "neginf": -big if neginf is None else float(_scalar_arg(neginf, "nan_to_num", "neginf"))}
    return check


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    return _unary(_OPS["nan_to_num"], input, out, _NO_PARAMS, _nan_to_num_check(nan, posinf, neginf))


def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):
    return _unary(_OPS["nan_to_num"], input, None, _NO_PARAMS, _nan_to_num_check(nan, posinf, neginf), inplace=True)


def gelu(input, approximate="none", *, out=None):
    """torch.nn.functional.gelu: x * Phi(x), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}.")
    params = {"approximate": approximate} if approximate == "tanh" else _NO_PARAMS
    return _unary(_OPS["gelu"], input, out, params)


def silu(input, inplace=False, *, out=None):
    """torch.nn.functional.silu: x * sigmoid(x)."""
    return _unary(_OPS["silu"], input, out, inplace=bool(inplace))


def _alpha_kw(alpha):
    return _NO_PARAMS if type(alpha) is int and alpha == 1 else {"alpha": alpha}


def add(input, other, *, alpha=1, out=None):
    if type(alpha) is int and alpha == 1:
        return _binary(ADD, input, other, out)
    return _binary(ADD, input, other, out, {"alpha": alpha}, _check_add)


def add_(self, other, *, alpha=1):
    if type(alpha) is int and alpha == 1:
        return _binary_(ADD, self, other)
    return _binary_(ADD, self, other, {"alpha": alpha}, _check_add)


def sub(input, other, *, alpha=1, out=None):
    return _binary(SUB, input, other, out, _alpha_kw(alpha), _check_sub)


def sub_(self, other, *, alpha=1):
    return _binary_(SUB, self, other, _alpha_kw(alpha), _check_sub)


def _check_rsub(common, a, b, params):
    return _check_sub(common, a, b, params, "rsub")


def rsub(input, other, *, alpha=1, out=None):
    """other - alpha * input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return _binary(RSUB, other, input, out, _alpha_kw(alpha), _check_rsub, reflected=True)


_DIV_MODES = {None: DIV, "trunc": _DIV_TRUNC, "floor": _DIV_FLOOR}


def _div_op(rounding_mode):
    d = _DIV_MODES.get(rounding_mode) if isinstance(rounding_mode, (str, type(None))) else None
    if d is None:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"{rounding_mode!r}")
    return d


def div(input, other, *, rounding_mode=None, out=None):
    return _binary(_div_op(rounding_mode), input, other, out)


def div_(self, other, *, rounding_mode=None):
    return _binary_(_div_op(rounding_mode), self, other)


def _pow_op(exponent):
    return _POW_BOOL_EXPONENT if type(exponent) is bool else POW


def pow(input, exponent, *, out=None):  # noqa: A001
    return _binary(_pow_op(exponent), input, exponent, out, _NO_PARAMS, _check_pow)


def pow_(self, exponent):
    return _binary_(_pow_op(exponent), self, exponent, _NO_PARAMS, _check_pow)


_MISSING = object()


def where(condition, input=_MISSING, other=_MISSING, *, out=None):
    """torch.where(condition, input, other); torch.where(condition) is nonzero(as_tuple=True)."""
    if input is _MISSING and other is _MISSING and out is None:
        from .shape import nonzero  # a data-dependent shape: not an elementwise op
        return nonzero(condition, as_tuple=True)
    if input is _MISSING or other is _MISSING:
        raise TypeError("where() takes a condition alone, or a condition, input and other")
    return _ternary(WHERE, _where_meta, (condition, input, other), out)


def _clamp_overload(op, input, lo, hi):
    """torch's two clamp overloads: (Tensor, Number?, Number?) and (Tensor, Tensor?, Tensor?). A
    mix is its argument parser's TypeError; a bool input with one tensor bound is clamp_min/clamp_max
    (maximum/minimum, which bool has), the other bool forms have no kernel."""
    if (isinstance(lo, Tensor) and hi is not None and not isinstance(hi, Tensor)) or \
            (isinstance(hi, Tensor) and lo is not None and not isinstance(lo, Tensor)):
        kinds = ", ".join(type(v).__name__ if not isinstance(v, Tensor) else "Tensor" for v in (input, lo, hi))
        raise TypeError(f"{op}() received an invalid combination of arguments - got ({kinds}), but expected one of:"
                        f" (Tensor input, Number min = None, Number max = None) or (Tensor input, Tensor min = None, "
                        f"Tensor max = None); pass both bounds as numbers or both as tensors")
    if isinstance(input, Tensor) and input._dtype is _BOOL and (lo is None) != (hi is None) \
            and isinstance(lo if hi is None else hi, Tensor):
        return _GENERATED["maximum" if hi is None else "minimum"], lo if hi is None else hi
    return None


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    one = _clamp_overload("clamp", input, min, max)
    if one is not None:
        return one[0](input, one[1], out=out)
    return _ternary(CLAMP, _clamp_meta, (input, min, max), out)


def clamp_(input, min=None, max=None):  # noqa: A002
    one = _clamp_overload("clamp_", input, min, max)
    if one is not None:
        r = one[0](input, one[1])
        if r._dtype is not input._dtype:
            check_cast(r._dtype, input._dtype, "clamp_")
        if r.shape != input.shape:
            raise RuntimeError(f"clamp_: output with shape {list(input.shape)} doesn't match the broadcast shape "
                               f"{list(r.shape)}")
        return input.copy_(r)
    return _ternary_(CLAMP, _clamp_meta, input, (min, max))


clip, clip_ = clamp, clamp_


def lerp(input, end, weight, *, out=None):
    return _ternary(LERP, _lerp_meta, (input, end, weight), out)


def lerp_(self, end, weight):
    return _ternary_(LERP, _lerp_meta, self, (end, weight))


def _addcmul_meta(x, t1, t2, value):
    return _addc_meta(ADDCMUL, x, t1, t2, value)


def _addcdiv_meta(x, t1, t2, value):
    return _addc_meta(ADDCDIV, x, t1, t2, value)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _ternary(ADDCMUL, _addcmul_meta, (input, tensor1, tensor2, value), out)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return _ternary_(ADDCMUL, _addcmul_meta, self, (tensor1, tensor2, value))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    return _ternary(ADDCDIV, _addcdiv_meta, (input, tensor1, tensor2, value), out)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return _ternary_(ADDCDIV, _addcdiv_meta, self, (tensor1, tensor2, value))


def masked_fill(input, mask, value, *, out=None):
    return _ternary(MASKED_FILL, _masked_fill_meta, (input, mask, value), out)


def masked_fill_(self, mask, value):
    return _ternary_(MASKED_FILL, _masked_fill_meta, self, (mask, value))


def _tensor_where(self, condition, other):
    return where(condition, self, other)


def positive(input):
    """torch.positive: the input itself (not a copy); refused for bool tensors."""
    if not isinstance(input, Tensor):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input._dtype is _BOOL:
        raise RuntimeError(_POS_BOOL)
    return input


def _fill_target(self, op, inputs=()):
    """self pinned, after the checks every fill runs: a tensor, writable (aliased elements allowed,
    as torch: every one gets the same value), allowed by autograd."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): argument 'self' must be Tensor, not {type(self).__name__}")
    t = pinned(self)
    check_writable(t, op, overlap_ok=True)
    autograd_hooks.check_inplace(self, op, inputs)
    return t


def fill_(input, value):
    """Every element of self set to `value` (a number, or a 0-dim tensor whose value is cast)."""
    t = _fill_target(input, "fill_", (value,) if isinstance(value, Tensor) else ())
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        same_device("fill_", t, value)
        if value._meta.storage is t._meta.storage:
            value = value.clone()  # the value is one of self's elements: read it before writing
        if t.numel():
            from .copy import copy_into
            copy_into(t, value)
        inputs = (input, value)
    else:
        v = _checked(_scalar_arg(value, "fill_", "value"), t._dtype, "fill_")
        if t.numel():
            t._backend.fill(t, v)
        inputs = (input,)
    input._vc.bump()
    autograd_hooks.record_inplace(input, "fill_", inputs)
    return input


def zero_(input):
    t = _fill_target(input, "zero_")
    if t.numel():
        t._backend.fill(t, False if t._dtype is _BOOL else 0)
    input._vc.bump()
    autograd_hooks.record_inplace(input, "zero_", (input,))
    return input


# -- Python operators ---------------------------------------------------------------------------

def _operator(fn, reflected=False):
    """A dunder: NotImplemented for operands that are neither tensors nor numbers, so Python
    tries the other side (and `t == None` is False, as in torch)."""
    if reflected:
        def dunder(self, other):
            if not isinstance(other, Tensor) and _number(other) is None:
                return NotImplemented
            return fn(other, self)
    else:
        def dunder(self, other):
            if type(other) not in _PY and not isinstance(other, Tensor) and _number(other) is None:
                return NotImplemented
            return fn(self, other)
    return dunder


def _reflected_binary(d):
    def fn(a, b):
        return _binary(d, a, b, None, reflected=True)
    return fn


def _invert(self):
    if self._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _GENERATED["bitwise_not"](self)


def _add_operator(self, other):
    # `a + b` is the commonest call of all: one Python frame less than _operator(add)
    if isinstance(other, Tensor) or type(other) in _PY or _number(other) is not None:
        return _binary(ADD, self, other, None)
    return NotImplemented


def _binary_operator(d, check=None):
    """A dunder calling the generic binary path directly (what _operator(fn) does through the
    public function, one Python frame and its keyword defaults less); `check` as the function's."""
    def dunder(self, other):
        if isinstance(other, Tensor) or type(other) in _PY or _number(other) is not None:
            return _binary(d, self, other, None, _NO_PARAMS, check)
        return NotImplemented
    return dunder


def _binary_inplace_operator(d, check=None):
    def dunder(self, other):
        if type(other) not in _PY and not isinstance(other, Tensor) and _number(other) is None:
            return NotImplemented
        return _binary_(d, self, other, _NO_PARAMS, check)
    return dunder


_G = _GENERATED
_DUNDERS = {
    "__add__": _add_operator, "__radd__": _add_operator, "__iadd__": _binary_inplace_operator(ADD),
    "__sub__": _binary_operator(SUB, _check_sub), "__rsub__": _operator(sub, reflected=True),
    "__isub__": _binary_inplace_operator(SUB, _check_sub),
    "__mul__": _binary_operator(_OPS["mul"]), "__rmul__": _binary_operator(_OPS["mul"]),
    "__imul__": _binary_inplace_operator(_OPS["mul"]),
    "__truediv__": _binary_operator(DIV), "__rtruediv__": _operator(div, reflected=True),
    "__itruediv__": _binary_inplace_operator(DIV),
    "__floordiv__": _operator(_G["floor_divide"]), "__ifloordiv__": _operator(_G["floor_divide_"]),
    "__rfloordiv__": _operator(_reflected_binary(_OPS["floor_divide"]), reflected=True),
    "__mod__": _operator(_G["remainder"]), "__imod__": _operator(_G["remainder_"]),
    "__rmod__": _operator(_reflected_binary(_OPS["remainder"]), reflected=True),
    "__pow__": _operator(pow), "__ipow__": _operator(pow_),
    "__rpow__": _operator(lambda a, b: _binary(POW, a, b, None, _NO_PARAMS, _check_pow, reflected=True),
                          reflected=True),
    "__and__": _operator(_G["bitwise_and"]), "__rand__": _operator(_G["bitwise_and"]),
    "__iand__": _operator(_G["bitwise_and_"]),
    "__or__": _operator(_G["bitwise_or"]), "__ror__": _operator(_G["bitwise_or"]),
    "__ior__": _operator(_G["bitwise_or_"]),
    "__xor__": _operator(_G["bitwise_xor"]), "__rxor__": _operator(_G["bitwise_xor"]),
    "__ixor__": _operator(_G["bitwise_xor_"]),
    "__eq__": _binary_operator(_OPS["eq"]), "__ne__": _binary_operator(_OPS["ne"]),
    "__lt__": _binary_operator(_OPS["lt"]), "__le__": _binary_operator(_OPS["le"]),
    "__gt__": _binary_operator(_OPS["gt"]), "__ge__": _binary_operator(_OPS["ge"]),
    "__neg__": _G["neg"], "__abs__": _G["abs"], "__invert__": _invert, "__pos__": positive,
}

_INPLACE_FUNCTIONS = ("abs_", "ceil_", "clamp_", "clip_", "cos_", "erf_", "exp2_", "exp_", "expm1_", "fill_", "floor_",
                      "log10_", "log1p_", "log2_", "log_", "nan_to_num_", "neg_", "reciprocal_", "relu_", "round_",
                      "rsqrt_", "sigmoid_", "sin_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "zero_")

_PUBLIC = tuple(n for n, *_ in UNARY) + tuple(n for n, *_ in BINARY) + tuple(n for n, *_ in TERNARY) + (
    "clip", "positive")
FUNCTIONS = _PUBLIC + _INPLACE_FUNCTIONS

METHODS = {n: globals()[n] for n in _PUBLIC if n not in _NO_METHOD and n != "rsub"}
METHODS.update({n + "_": globals()[n + "_"] for n, *_ in UNARY if n not in _NO_INPLACE})
METHODS.update({n + "_": globals()[n + "_"] for n, *_ in BINARY if n not in _NO_BINARY_INPLACE})
METHODS.update({n + "_": globals()[n + "_"] for n, *_, ip in TERNARY if ip})
METHODS.update({"clip_": clip_, "fill_": fill_, "zero_": zero_,
                "where": _tensor_where, "__array_priority__": 1000})  # NumPy defers `ndarray + tensor` to us
METHODS.update(_DUNDERS)
del _n
