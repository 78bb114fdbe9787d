"""The Python operators of Tensor (+, -, *, /, //, %, **, &, |, ^, ==, <, ..., unary -, abs(), ~, +,
and the in-place +=, ...): dunders over the elementwise ops' generic paths (ops/elementwise.py),
NotImplemented for operands that are neither tensors nor numbers."""
from __future__ import annotations

from ..tensor import Tensor
from .elementwise import _GENERATED, _NO_PARAMS, _OPS, _PY, _binary, _binary_, _number
from .elementwise_binary import ADD, DIV, POW, SUB, _check_pow, _check_sub, div, pow, pow_, sub
from .elementwise_unary import positive


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


METHODS = dict(_DUNDERS)
METHODS["__array_priority__"] = 1000  # NumPy defers `ndarray + tensor` to us
