"""Binary elementwise ops: the BINARY table (one row per op: kernels, promotion, accepted dtypes)
and the functions generated from it (mul, true_divide, floor_divide, remainder, fmod, maximum,
minimum, atan2, the comparisons eq/ne/lt/le/gt/ge, logical_and/or/xor, bitwise_and/or/xor), the
ones with options (add/sub/rsub's alpha, div's rounding_mode, pow's exponent kinds) and their
checks. A tensor or a Python number on either side, broadcasting. They run through
ops/elementwise.py's `_binary`/`_binary_`: primitive `binary` (backends/cpu/elementwise.py,
backends/cuda/elementwise.py), kernels in kernels/elementwise.cu with the functors of
kernels/tensorlab/; derivatives in autograd/derivatives_elementwise.py."""
from __future__ import annotations

from ..tensor import Tensor
from . import registry as R
from .elementwise import (ANY, INTEGRAL, NO_BOOL, _ALWAYS_BOOL, _BOOL, _DEF, _GENERATED, _I2F, _NO_PARAMS, _OPS, _Op,
                          _binary, _binary_, _checked, _make_binary, _scalar_arg)

_SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.")
_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")

# name, kernels, promotion, accepted dtypes, extra _Op settings
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
_NOT_DIFFERENTIABLE = {"floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                       "bitwise_and", "bitwise_or", "bitwise_xor"}

ROWS = R.register(
    *(R.OpDef(n, "elementwise", "binary", p, n not in _NOT_DIFFERENTIABLE, n not in _NO_BINARY_INPLACE, k)
      for n, k, p, _, _ in BINARY),
)
_OPS.update({n: _Op(n, k[0], "binary", p, acc, **kw) for n, k, p, acc, kw in BINARY})
_POW_BOOL_EXPONENT = _Op("pow", "pow", "binary", _DEF, ANY, **_SCALAR_FIRST)  # torch: x ** True = x, x ** False = 1
_DIV_TRUNC = _Op("div", "div_trunc", "binary", _DEF, NO_BOOL, **_SCALAR_FIRST)
_DIV_FLOOR = _Op("div", "div_floor", "binary", _DEF, NO_BOOL, **_SCALAR_FIRST)
ADD, SUB, RSUB, DIV, POW = (_OPS[n] for n in ("add", "sub", "rsub", "div", "pow"))

_BINARY_GENERATED = {}
for _n, *_ in BINARY:
    if _n not in ("add", "sub", "rsub", "div", "pow"):
        _BINARY_GENERATED[_n], _BINARY_GENERATED[_n + "_"] = _make_binary(_OPS[_n])
_GENERATED.update(_BINARY_GENERATED)
globals().update(_BINARY_GENERATED)


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


# ops with options: thin signatures over the same generic paths

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


_PUBLIC = tuple(n for n, *_ in BINARY)
FUNCTIONS = _PUBLIC

METHODS = {n: globals()[n] for n in _PUBLIC if n != "rsub"}
METHODS.update({n + "_": globals()[n + "_"] for n, *_ in BINARY if n not in _NO_BINARY_INPLACE})
del _n
