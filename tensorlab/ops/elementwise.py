"""The elementwise machinery every elementwise op runs through: the _Op record of a table row,
operand handling (tensors, Python numbers, 0-dim tensors), promotion, and one generic path per
arity (`_unary`, `_binary`/`_binary_`, `_ternary`/`_ternary_`) with their fast paths, plus the
generators that turn a row into its public function and in-place form.

Each path: check operands, promote (torch's result_type and the row's promotion kind), broadcast,
allocate (or validate the out=/in-place target), record autograd, then call ONE backend primitive
(`unary`/`binary`/`ternary`) with the row's kernel name and the dtype to compute in
(float16/bfloat16 compute in float32 and round once). Everything that can fail is checked before
anything is written.

The ops themselves live in one file per family, each with its table rows, public functions,
FUNCTIONS and METHODS:
- elementwise_unary.py: neg, abs, exp, log, sin, ..., isnan, bitwise_not; round, nan_to_num, gelu, silu, positive
- elementwise_binary.py: add, sub, rsub, mul, div, pow, remainder, comparisons, logical and bitwise ops
- elementwise_ternary.py: where, clamp/clip, lerp, addcmul, addcdiv, masked_fill
- fill.py: fill_, zero_; operators.py: the Python operators (+, -, ==, ~, ...)
Their names stay importable from here (`from tensorlab.ops.elementwise import where`): see __getattr__.
"""
from __future__ import annotations

import math
import numbers

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


# -- ternary: each op has its own meta step (elementwise_ternary.py), then the shared execution -----

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


# -- the rows by name, and public functions generated from a row ----------------------------------
# every family file adds its rows to _OPS and its generated functions to _GENERATED
_OPS = {}
_GENERATED = {}

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


# the op families, in the order their rows are registered; a name defined there is found here too
_FAMILIES = ("elementwise_unary", "elementwise_binary", "elementwise_ternary", "fill", "operators")
_NOT_FORWARDED = frozenset(("FUNCTIONS", "METHODS", "ROWS"))  # each family's own, installed by ops/__init__.py


def __getattr__(name):
    """`elementwise.where`, `from .elementwise import add`: the op families' names, found in their files
    (the ops moved out of this file keep their old import path; the result is remembered)."""
    if name.startswith("__") or name in _NOT_FORWARDED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    package = __name__.rpartition(".")[0]
    for family in _FAMILIES:
        module = importlib.import_module(f"{package}.{family}")
        if name in module.__dict__:
            value = module.__dict__[name]
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
