"""One table of ops for the tests: how to call each op in tensorlab and in torch, a NumPy
reference, which dtypes to sample, the value domain of its inputs and its tolerances, plus the
sample-input generators (broadcasting, non-contiguous, zero-size, 0-dim, Python numbers).

Other families extend it: append OpInfo rows to OPS (with a `samples` function of their own
when the generic unary/binary/ternary generators do not fit)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np

import tensorlab as tl
from tensorlab import layout as L

ALL_DTYPES = (tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16, tl.float32,
              tl.float64)
FLOATS = (tl.float16, tl.bfloat16, tl.float32, tl.float64)
INTS = (tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64)
INTEGRAL = (tl.bool,) + INTS
# the dtypes the per-sample tests run (the promotion tests run all of them)
SAMPLE_DTYPES = (tl.bool, tl.uint8, tl.int32, tl.int64, tl.float16, tl.bfloat16, tl.float32, tl.float64)

# (rtol, atol) by result dtype: one or two units in the last place of the result dtype, since
# torch (and NumPy) may differ from an exact reference by an ulp after the final rounding
TOLS = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


@dataclass(frozen=True)
class OpInfo:
    name: str
    arity: int
    ref: Callable                       # NumPy reference over float64 (or exact integer) arrays
    dtypes: tuple = ALL_DTYPES          # input dtypes to sample
    domains: tuple = ("any",)           # value domain per operand (last one repeats)
    kwargs: tuple = ({},)               # option sets sampled
    scalar_other: bool = True           # a Python number may stand for the second operand
    scalar_input: bool = False          # ... and for the first one (torch.add(2, t))
    inplace: bool = True                # has a Tensor.<name>_ form
    method: bool = True                 # has a Tensor.<name> method
    torch_name: str | None = None       # torch's spelling when it differs ("nn.functional.gelu")
    ref_out_dtype: bool = False         # ref takes out_dtype= (a NumPy dtype) too
    samples: Callable | None = None     # custom sample generator (op, dtype, device) -> [Sample]
    refuses: Callable | None = None     # (sample, common dtype) -> True where torch refuses the call
    tols: dict = field(default_factory=dict)

    def tl_fn(self):
        return getattr(tl, self.name)

    def torch_fn(self, torch):
        f = torch
        for part in (self.torch_name or self.name).split("."):
            f = getattr(f, part)
        return f

    def domain(self, i):
        return self.domains[min(i, len(self.domains) - 1)]


@dataclass
class Sample:
    args: tuple          # tensorlab tensors and Python numbers
    kwargs: dict
    desc: str

    def np_args(self):
        return tuple(to_numpy(a) if isinstance(a, tl.Tensor) else a for a in self.args)

    def torch_args(self, torch):
        return tuple(to_torch(a, torch) for a in self.args)

    def torch_kwargs(self, torch):
        return {k: to_torch(v, torch) for k, v in self.kwargs.items()}


# -- conversions ----------------------------------------------------------------------------------

def to_numpy(t):
    """A host copy of a tensor's values in its own NumPy dtype (ml_dtypes bfloat16 included)."""
    return np.array(t.cpu().numpy(), copy=True)


def to_torch(x, torch):
    if not isinstance(x, tl.Tensor):
        return x
    arr = to_numpy(x)
    if x.dtype is tl.bfloat16:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(arr)


def torch_to_numpy(t):
    import torch
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.detach().numpy()


def torch_dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def comparable(arr):
    """Values as float64 (or the exact integers/bools) for assert_allclose."""
    if arr.dtype.kind == "f" or arr.dtype == ml_dtypes.bfloat16:
        return arr.astype(np.float64)
    return arr


def tols(dtype_name, op=None):
    if op is not None and dtype_name in op.tols:
        return op.tols[dtype_name]
    return TOLS.get(dtype_name, (0, 0))


def assert_values(actual, expected, dtype_name, op=None, msg=""):
    rtol, atol = tols(dtype_name, op)
    a, e = comparable(np.asarray(actual)), comparable(np.asarray(expected))
    assert a.shape == e.shape, f"{msg}: shape {a.shape} != {e.shape}"
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(a, e, err_msg=msg)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)


# -- inputs ---------------------------------------------------------------------------------------

SPECIALS = (0.0, -0.0, float("inf"), -float("inf"), float("nan"), 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 1e-3)


def values(dtype, shape, domain, rng):
    """Random NumPy values of `dtype` in `domain`: any, nonzero, positive, small (0..3 ints,
    0..2 floats), special (floats with inf/nan/signed zeros)."""
    shape = tuple(shape)
    if dtype is tl.bool:
        arr = rng.random(shape) < 0.5
        if domain in ("nonzero", "positive"):
            arr = np.ones(shape, dtype=bool)
        return arr
    if dtype.is_floating_point:
        if domain == "positive":
            arr = rng.uniform(0.1, 4.0, shape)
        elif domain == "small":
            arr = rng.uniform(0.0, 2.0, shape)
        else:
            arr = rng.uniform(-3.0, 3.0, shape)
            if domain == "nonzero":
                arr[np.abs(arr) < 0.1] = 0.5
            if domain == "special" and arr.size:
                flat = arr.reshape(-1)
                flat[:min(len(SPECIALS), flat.size)] = SPECIALS[:flat.size]
        return arr.astype(dtype.np)
    lo, hi = (0, 11) if dtype is tl.uint8 else (-5, 6)
    if domain == "positive":
        lo, hi = 1, 10
    elif domain == "small":
        lo, hi = 0, 4
    arr = rng.integers(lo, hi, shape)
    if domain == "nonzero":
        arr[arr == 0] = 3
    return arr.astype(dtype.np)


def strided(base, shape, stride, offset=0):
    """A view of `base`'s storage with an explicit layout (the non-contiguous cases)."""
    return base._view_of(L.Layout(L.Size(shape), tuple(stride), offset))


def make(dtype, shape, domain, device, rng, layout="contiguous"):
    """A tensor of `shape` whose memory layout is `layout`: contiguous, transposed (a permuted
    view), sliced (every other element along the last dim, with an offset) or expanded (stride 0)."""
    shape = tuple(shape)
    if layout == "contiguous" or len(shape) == 0 or 0 in shape:
        return tl.tensor(values(dtype, shape, domain, rng), dtype=dtype, device=device)
    if layout == "transposed":
        rev = shape[::-1]
        base = tl.tensor(values(dtype, rev, domain, rng), dtype=dtype, device=device)
        return strided(base, shape, L.contiguous_strides(rev)[::-1])
    if layout == "sliced":
        wide = shape[:-1] + (2 * shape[-1] + 1,)
        base = tl.tensor(values(dtype, wide, domain, rng), dtype=dtype, device=device)
        st = list(L.contiguous_strides(wide))
        st[-1] = 2
        return strided(base, shape, st, 1)
    if layout == "expanded":
        base = tl.tensor(values(dtype, shape[1:], domain, rng), dtype=dtype, device=device)
        return strided(base, shape, (0,) + L.contiguous_strides(shape[1:]))
    raise ValueError(layout)


def scalar_of(dtype, domain, rng):
    """A Python number of the kind torch treats as `dtype`'s category (bool, int, float)."""
    v = values(dtype, (), domain, rng).item()
    if dtype is tl.bool:
        return bool(v)
    if dtype.is_floating_point:
        return float(v) if domain != "special" else 0.75
    return int(v)


# -- generic sample generators -------------------------------------------------------------------

UNARY_CASES = (((3, 4), "contiguous"), ((4, 3), "transposed"), ((2, 5), "sliced"), ((3, 4), "expanded"),
               ((), "contiguous"), ((0, 3), "contiguous"), ((17,), "special"))


def unary_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for kw in op.kwargs:
        for shape, lay in UNARY_CASES:
            dom = op.domain(0)
            if lay == "special":
                if not dtype.is_floating_point:
                    continue
                dom, lay = "special", "contiguous"
            x = make(dtype, shape, dom, device, rng, lay)
            out.append(Sample((x,), dict(kw), f"{op.name}({dtype.name}{list(shape)} {lay}, {kw})"))
    return out


BINARY_CASES = (  # shape a, layout a, shape b, layout b
    ((3, 4), "contiguous", (3, 4), "contiguous"),
    ((3, 4), "contiguous", (4,), "contiguous"),
    ((2, 1, 4), "contiguous", (3, 1), "contiguous"),
    ((4, 3), "transposed", (4, 3), "sliced"),
    ((3, 4), "expanded", (3, 4), "transposed"),
    ((), "contiguous", (3, 4), "contiguous"),
    ((3, 4), "contiguous", (), "contiguous"),
    ((), "contiguous", (), "contiguous"),
    ((0, 4), "contiguous", (4,), "contiguous"),
    ((2, 0), "contiguous", (2, 1), "contiguous"),
)


def binary_samples(op, dtype, device, other_dtype=None, seed=0, cases=BINARY_CASES, scalars=True):
    rng = np.random.default_rng(seed)
    db = dtype if other_dtype is None else other_dtype
    out = []
    for kw in op.kwargs:
        for sa, la, sb, lb in cases:
            a = make(dtype, sa, op.domain(0), device, rng, la)
            b = make(db, sb, op.domain(1), device, rng, lb)
            out.append(Sample((a, b), dict(kw), f"{op.name}({dtype.name}{list(sa)} {la}, {db.name}{list(sb)} {lb}, "
                                                f"{kw})"))
        if scalars and op.scalar_other:
            for kind in (tl.bool, tl.int64, tl.float32):
                a = make(dtype, (3, 4), op.domain(0), device, rng)
                s = scalar_of(kind, op.domain(1), rng)
                out.append(Sample((a, s), dict(kw), f"{op.name}({dtype.name}[3, 4], {s!r}, {kw})"))
        if scalars and op.scalar_input:
            for kind in (tl.int64, tl.float32):
                s = scalar_of(kind, op.domain(0), rng)
                b = make(db, (3, 4), op.domain(1), device, rng)
                out.append(Sample((s, b), dict(kw), f"{op.name}({s!r}, {db.name}[3, 4], {kw})"))
    return out


def samples(op, dtype, device, seed=0):
    if op.samples is not None:
        return op.samples(op, dtype, device, seed)
    if op.arity == 1:
        return unary_samples(op, dtype, device, seed)
    return binary_samples(op, dtype, device, seed=seed)


# -- references ----------------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sign(x):
    if x.dtype == bool:
        return x
    return np.where(np.isnan(x), 0, np.sign(x)) if x.dtype.kind == "f" else np.sign(x)


def _intpass(f):
    """floor/ceil/trunc/round leave integers unchanged."""
    def ref(x, **kw):
        return x if x.dtype.kind in "iub" else f(x, **kw)
    return ref


def _round(x, decimals=0):
    if decimals == 0:
        return np.rint(x)
    if decimals > 0:
        return np.rint(x * 10.0 ** decimals) / 10.0 ** decimals
    return np.rint(x / 10.0 ** -decimals) * 10.0 ** -decimals


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None, out_dtype=None):
    if x.dtype.kind != "f":
        return x
    big = float(ml_dtypes.finfo(out_dtype).max)
    return np.nan_to_num(x, nan=nan, posinf=big if posinf is None else posinf,
                         neginf=-big if neginf is None else neginf)


def _div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "trunc":
        if np.asarray(a).dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
            q = np.abs(a) // np.abs(b)
            return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)
        return np.trunc(np.true_divide(a, b))
    return np.floor_divide(a, b)


def _pow(a, b):
    if type(b) is bool and np.asarray(a).dtype == bool:
        return a | (not b)
    if np.asarray(a).dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        res = np.power(a, np.maximum(b, 0))
        inv = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return np.where(b < 0, inv, res).astype(res.dtype)
    return np.power(a, b)


def _clamp(x, min=None, max=None):  # noqa: A002
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def _lerp(x, end, w):
    d = end - x
    return np.where(np.abs(w) < 0.5, x + w * d, end - d * (1 - w))


def _with_alpha(f):
    def ref(a, b, alpha=1):
        return f(a, np.multiply(b, alpha))
    return ref


def common_dtype(op, sample):
    """torch.result_type over the operands that take part in the op's promotion."""
    args = sample.args
    if op.name == "where":
        args = args[1:]
    elif op.name == "masked_fill":
        args = args[:1]
    bounds = tuple(v for k, v in sample.kwargs.items() if k in ("min", "max"))  # clamp's bounds promote
    return tl.result_type(*[v for v in args + bounds if _is_operand(v)])


def _is_operand(v):
    return isinstance(v, (tl.Tensor, bool, int, float))


def _no_bool(sample, common):
    return common is tl.bool


def _only_float(sample, common):
    return not common.is_floating_point


def _no_float(sample, common):
    return common.is_floating_point


def _no_bool_operand(sample, common):  # sub: any bool operand
    return any((isinstance(a, tl.Tensor) and a.dtype is tl.bool) or type(a) is bool for a in sample.args)


def _div_refuses(sample, common):
    return sample.kwargs.get("rounding_mode") is not None and common is tl.bool


def _addcdiv_refuses(sample, common):
    return not (sample.args[1].dtype.is_floating_point or sample.args[2].dtype.is_floating_point)


U = lambda name, ref, **kw: OpInfo(name, 1, ref, **kw)  # noqa: E731
B = lambda name, ref, **kw: OpInfo(name, 2, ref, **kw)  # noqa: E731

UNARY_OPS = [
    U("neg", np.negative, refuses=_no_bool), U("abs", np.abs, refuses=_no_bool), U("sign", _sign),
    U("exp", np.exp), U("exp2", np.exp2), U("expm1", np.expm1),
    U("log", np.log, domains=("positive",)), U("log2", np.log2, domains=("positive",)),
    U("log10", np.log10, domains=("positive",)), U("log1p", np.log1p, domains=("positive",)),
    U("sqrt", np.sqrt, domains=("positive",)), U("rsqrt", lambda x: 1 / np.sqrt(x), domains=("positive",)),
    U("square", np.square), U("reciprocal", lambda x: 1 / x, domains=("nonzero",)),
    U("sin", np.sin), U("cos", np.cos), U("tan", np.tan, domains=("small",)), U("tanh", np.tanh),
    U("sigmoid", lambda x: 1 / (1 + np.exp(-x))), U("relu", lambda x: np.maximum(x, 0), refuses=_no_bool),
    U("gelu", _gelu, refuses=_only_float, kwargs=({}, {"approximate": "tanh"}), inplace=False, method=False,
      torch_name="nn.functional.gelu"),
    U("silu", lambda x: x / (1 + np.exp(-x)), refuses=_only_float, inplace=False, method=False,
      torch_name="nn.functional.silu"),
    U("erf", _erf),
    U("floor", _intpass(np.floor), refuses=_no_bool), U("ceil", _intpass(np.ceil), refuses=_no_bool),
    U("trunc", _intpass(np.trunc), refuses=_no_bool),
    U("round", _intpass(_round), kwargs=({}, {"decimals": 2}, {"decimals": -1}),
      refuses=lambda s, c: c is tl.bool or (s.kwargs.get("decimals", 0) != 0 and not c.is_floating_point)),
    U("isnan", np.isnan, inplace=False), U("isinf", np.isinf, inplace=False),
    U("isfinite", np.isfinite, inplace=False),
    U("logical_not", np.logical_not), U("bitwise_not", np.invert, refuses=_no_float),
    U("nan_to_num", _nan_to_num, ref_out_dtype=True,
      kwargs=({}, {"nan": 1.5, "posinf": 100.0}, {"neginf": -7.0})),
]

BINARY_OPS = [
    B("add", _with_alpha(np.add), kwargs=({}, {"alpha": 2}), scalar_input=True),
    B("sub", _with_alpha(np.subtract), kwargs=({}, {"alpha": 2}), scalar_input=True, refuses=_no_bool_operand),
    B("rsub", lambda a, b, alpha=1: np.subtract(b, np.multiply(a, alpha)), kwargs=({}, {"alpha": 2}),
      inplace=False, method=False, refuses=_no_bool_operand),
    B("mul", np.multiply, scalar_input=True),
    B("div", _div, domains=("any", "nonzero"), scalar_input=True,
      kwargs=({}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"}), refuses=_div_refuses),
    B("true_divide", np.true_divide, domains=("any", "nonzero"), scalar_input=True),
    B("floor_divide", np.floor_divide, domains=("any", "nonzero"), scalar_input=True, refuses=_no_bool),
    B("remainder", np.remainder, domains=("any", "nonzero"), scalar_input=True, refuses=_no_bool),
    B("fmod", np.fmod, domains=("any", "nonzero"), refuses=_no_bool),
    B("pow", _pow, domains=("any", "small"), scalar_input=True,
      refuses=lambda s, c: c is tl.bool and type(s.args[1]) is not bool),  # torch: x ** True = x, x ** False = 1
    B("maximum", np.maximum, scalar_other=False, inplace=False),
    B("minimum", np.minimum, scalar_other=False, inplace=False),
    B("atan2", np.arctan2, scalar_other=False),
    B("eq", np.equal), B("ne", np.not_equal), B("lt", np.less), B("le", np.less_equal), B("gt", np.greater),
    B("ge", np.greater_equal),
    B("logical_and", np.logical_and, scalar_other=False), B("logical_or", np.logical_or, scalar_other=False),
    B("logical_xor", np.logical_xor, scalar_other=False),
    B("bitwise_and", np.bitwise_and, dtypes=INTEGRAL, scalar_input=True, refuses=_no_float),
    B("bitwise_or", np.bitwise_or, dtypes=INTEGRAL, scalar_input=True, refuses=_no_float),
    B("bitwise_xor", np.bitwise_xor, dtypes=INTEGRAL, scalar_input=True, refuses=_no_float),
]


# ternary ops: hand-made samples (their operands play different roles)

def _where_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    cond = lambda shape, lay="contiguous": make(tl.bool, shape, "any", device, rng, lay)  # noqa: E731
    x = lambda shape, lay="contiguous", dt=dtype: make(dt, shape, "any", device, rng, lay)  # noqa: E731
    s = scalar_of(dtype, "any", rng)
    return [
        Sample((cond((3, 4)), x((3, 4)), x((3, 4))), {}, "same shapes"),
        Sample((cond((3, 1)), x((4,), "contiguous"), x((2, 1, 1))), {}, "broadcast all three"),
        Sample((cond((4, 3), "transposed"), x((4, 3), "sliced"), x((4, 3), "expanded")), {}, "non-contiguous"),
        Sample((cond((3, 4)), x((3, 4)), s), {}, "scalar other"),
        Sample((cond((3, 4)), s, x((3, 4))), {}, "scalar input"),
        Sample((cond((3, 4)), 1, 2.5), {}, "two scalars"),
        Sample((cond((3, 4)), x(()), x((3, 4))), {}, "0-dim input"),
        Sample((cond(()), x(()), x(())), {}, "all 0-dim"),
        Sample((cond((0, 4)), x((0, 4)), x((4,))), {}, "zero-size"),
        Sample((cond((3, 4)), x((3, 4)), x((3, 4), dt=tl.float64)), {}, "mixed dtypes"),
    ]


def _clamp_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    x = lambda shape, lay="contiguous", dt=dtype: make(dt, shape, "any", device, rng, lay)  # noqa: E731
    lo, hi = (0, 1) if dtype is tl.bool else (-1, 2) if not dtype.is_floating_point else (-1.5, 2.0)
    return [
        Sample((x((3, 4)),), {"min": lo, "max": hi}, "scalar bounds"),
        Sample((x((3, 4)),), {"min": lo}, "min only"),
        Sample((x((3, 4)),), {"max": hi}, "max only"),
        Sample((x((4, 3), "transposed"),), {"min": x((3,)), "max": x((4, 1))}, "tensor bounds, broadcasting"),
        Sample((x((3, 4)),), {"min": 2, "max": -1}, "min > max gives max"),
        Sample((x(()),), {"min": x(()), "max": x(())}, "0-dim"),  # bounds: both numbers or both tensors (torch)
        Sample((x((0, 3)),), {"min": lo, "max": hi}, "zero-size"),
        Sample((x((3, 4)),), {"min": 0.5}, "float bound promotes"),
        Sample((x((3, 4), "sliced"),), {"min": x((3, 4), dt=tl.float64), "max": None}, "mixed dtypes"),
    ]


def _lerp_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    x = lambda shape, lay="contiguous", dom="any": make(dtype, shape, dom, device, rng, lay)  # noqa: E731
    return [
        Sample((x((3, 4)), x((3, 4)), 0.3), {}, "scalar weight < 0.5"),
        Sample((x((3, 4)), x((4,)), 0.8), {}, "scalar weight >= 0.5, broadcast end"),
        Sample((x((4, 3), "transposed"), x((4, 3), "sliced"), x((4, 3), dom="small")), {}, "tensor weight"),
        Sample((x(()), x((3,)), x(())), {}, "0-dim"),
        Sample((x((0, 2)), x((0, 2)), 0.5), {}, "zero-size"),
        Sample((x((2, 3)), x((2, 3)), -1.5), {}, "extrapolation"),
    ]


def _addc_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    den = "nonzero" if op.name == "addcdiv" else "any"
    x = lambda shape, lay="contiguous", dom="any", dt=dtype: make(dt, shape, dom, device, rng, lay)  # noqa: E731
    v = 2 if not dtype.is_floating_point else 0.5
    return [
        Sample((x((3, 4)), x((3, 4)), x((3, 4), dom=den)), {}, "same shapes"),
        Sample((x((3, 4)), x((4,)), x((3, 1), dom=den)), {"value": v}, "broadcast, value"),
        Sample((x((4, 3), "transposed"), x((4, 3), "sliced"), x((4, 3), "expanded", dom=den)), {"value": -1},
               "non-contiguous"),
        Sample((x(()), x(()), x((), dom=den)), {}, "0-dim"),
        Sample((x((0, 3)), x((3,)), x((3,), dom=den)), {}, "zero-size"),
        Sample((x((3,)), x((3,), dt=tl.float32), x((3,), dom=den, dt=tl.float32)), {}, "mixed dtypes"),
    ]


def _masked_fill_samples(op, dtype, device, seed=0):
    rng = np.random.default_rng(seed)
    x = lambda shape, lay="contiguous": make(dtype, shape, "any", device, rng, lay)  # noqa: E731
    m = lambda shape, lay="contiguous": make(tl.bool, shape, "any", device, rng, lay)  # noqa: E731
    v = scalar_of(dtype, "any", rng)
    return [
        Sample((x((3, 4)), m((3, 4)), v), {}, "scalar value"),
        Sample((x((3, 4)), m((4,)), -1 if dtype is not tl.uint8 else 7), {}, "broadcast mask"),
        Sample((x((4, 3), "transposed"), m((4, 3), "sliced"), make(dtype, (), "any", device, rng)), {},
               "0-dim tensor value"),
        Sample((x((3,)), m((2, 1)), 1), {}, "mask broadcasts the input"),
        Sample((x(()), m(()), 2.5), {}, "0-dim, float value"),
        Sample((x((0, 4)), m((4,)), 1), {}, "zero-size"),
    ]


def _where_ref(c, x, y):
    return np.where(c, x, y)


def _masked_fill_ref(x, mask, value):
    return np.where(mask, value, x)


T = lambda name, ref, samples, **kw: OpInfo(name, 3, ref, samples=samples, **kw)  # noqa: E731

TERNARY_OPS = [
    T("where", _where_ref, _where_samples, inplace=False),
    T("clamp", _clamp, _clamp_samples, refuses=_no_bool),
    T("clip", _clamp, _clamp_samples, dtypes=(tl.int64, tl.float32), refuses=_no_bool),
    T("lerp", _lerp, _lerp_samples, refuses=lambda s, c: not s.args[0].dtype.is_floating_point),
    T("addcmul", lambda x, a, b, value=1: x + value * a * b, _addc_samples, refuses=_no_bool),
    T("addcdiv", lambda x, a, b, value=1: x + value * a / b, _addc_samples, refuses=_addcdiv_refuses),
    T("masked_fill", _masked_fill_ref, _masked_fill_samples),
]

OPS = UNARY_OPS + BINARY_OPS + TERNARY_OPS
BY_NAME = {op.name: op for op in OPS}


def reference(op, sample, out_dtype):
    """The NumPy reference for `sample`, computed in float64 for floating results, in the result
    type for integer results and in the promoted input type for comparisons, cast to `out_dtype`.
    Python integers wrap into an integer work type as torch wraps them (uint8 tensor + -1)."""
    work = np.float64 if out_dtype.is_floating_point else out_dtype.np
    if out_dtype is tl.bool and op.name not in ("where", "masked_fill"):
        common = tl.result_type(*[v for v in sample.args if _is_operand(v)])
        work = np.float64 if common.is_floating_point else common.np

    common = common_dtype(op, sample)
    # torch casts every operand to the common dtype first: at float16/bfloat16 that rounds numbers and
    # tensors of other dtypes to the half before the float32 arithmetic
    half = common.np if common in (tl.float16, tl.bfloat16) else None

    def conv(v, role=None):
        if isinstance(v, tl.Tensor):
            v = to_numpy(v)
            if role == "mask":
                return v
            return (v.astype(half) if half is not None else v).astype(work)
        if isinstance(v, (bool, int)) and not isinstance(v, bool) and np.dtype(work).kind in "iu":
            return np.array(v).astype(work)[()]
        if half is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
            with np.errstate(all="ignore"):
                return float(np.array(v).astype(half))
        return v
    roles = {"where": ("mask",), "masked_fill": (None, "mask")}.get(op.name, ())
    args = tuple(conv(a, roles[i] if i < len(roles) else None) for i, a in enumerate(sample.args))
    kwargs = {k: conv(v) for k, v in sample.kwargs.items()}
    if op.ref_out_dtype:
        kwargs["out_dtype"] = out_dtype.np
    with np.errstate(all="ignore"):
        return np.asarray(op.ref(*args, **kwargs)).astype(out_dtype.np)
