"""Unary elementwise ops: the UNARY table (one row per op: promotion, accepted dtypes) and the
functions generated from it (neg, abs, exp, log, sqrt, sin, tanh, sigmoid, erf, relu, floor, isnan,
logical_not, bitwise_not, ...), the ones with options (round's decimals, nan_to_num's replacements,
gelu's approximation, silu), and positive. They run through ops/elementwise.py's `_unary`: primitive
`unary` (backends/cpu/elementwise.py, backends/cuda/elementwise.py), kernels in kernels/elementwise.cu
with the functors of kernels/tensorlab/; derivatives in autograd/derivatives_elementwise.py."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from . import registry as R
from .elementwise import (ANY, FLOATING, INTEGRAL, NO_BOOL, _ALWAYS_BOOL, _BOOL, _DEF, _GENERATED, _I2F, _I64, _KEEP,
                          _NO_PARAMS, _OPS, _Op, _make_unary, _scalar_arg, _unary)

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")
_POS_BOOL = "The `+` operator, on a bool tensor is not supported."

# name, promotion, accepted dtypes, extra _Op settings. Every unary op has an in-place form
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
                       "bitwise_not"}

ROWS = R.register(
    *(R.OpDef(n, "elementwise", "unary", p, n not in _NOT_DIFFERENTIABLE, n not in _NO_INPLACE, (n,))
      for n, p, _, _ in UNARY),
)
_OPS.update({n: _Op(n, n, "unary", p, acc, **kw) for n, p, acc, kw in UNARY})

_UNARY_GENERATED = {}
for _n, *_ in UNARY:
    if _n not in ("round", "nan_to_num", "gelu", "silu"):
        _UNARY_GENERATED[_n], _UNARY_GENERATED[_n + "_"] = _make_unary(_OPS[_n])
_GENERATED.update(_UNARY_GENERATED)
globals().update(_UNARY_GENERATED)


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


def positive(input):
    """torch.positive: the input itself (not a copy); refused for bool tensors."""
    if not isinstance(input, Tensor):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input._dtype is _BOOL:
        raise RuntimeError(_POS_BOOL)
    return input


_INPLACE_FUNCTIONS = ("abs_", "ceil_", "cos_", "erf_", "exp2_", "exp_", "expm1_", "floor_", "log10_", "log1p_", "log2_",
                      "log_", "nan_to_num_", "neg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_",
                      "sqrt_", "square_", "tan_", "tanh_", "trunc_")
_PUBLIC = tuple(n for n, *_ in UNARY) + ("positive",)
FUNCTIONS = _PUBLIC + _INPLACE_FUNCTIONS

METHODS = {n: globals()[n] for n in _PUBLIC if n not in _NO_METHOD}
METHODS.update({n + "_": globals()[n + "_"] for n, *_ in UNARY if n not in _NO_INPLACE})
del _n
