"""isclose / allclose / equal: torch's closeness rules written over comparisons and abs."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from ._common import strictly_same_device


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise, plus exact equality (infinities);
    NaNs are close to each other only with equal_nan."""
    _tensor(input, "isclose", "input", 1)
    _tensor(other, "isclose", "other", 2)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.torch_name} did not match {other.dtype.torch_name} (isclose compares "
                           f"tensors of one dtype; convert one with .to())")
    strictly_same_device(input, (other,))
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = input.detach(), other.detach()
    close = a == b
    floating = a.dtype.is_floating_point
    if equal_nan and floating:
        close = close | (a.isnan() & b.isnan())
    if rtol == 0 and atol == 0:
        return close
    if not floating:
        a, b = a.to(dtypes.get_default_dtype()), b.to(dtypes.get_default_dtype())
    allowed = (b * rtol).abs() + atol
    actual = (a - b).abs()
    return close | (actual.isfinite() & (actual <= allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of isclose(input, other) is True (a Python bool; waits for the device)."""
    _tensor(input, "allclose", "input", 1)
    _tensor(other, "allclose", "other", 2)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """True when both tensors have the same shape and equal elements (NaN is never equal)."""
    _tensor(input, "equal", "input", 1)
    _tensor(other, "equal", "other", 2)
    strictly_same_device(input, (other,))
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input.detach() == other.detach()).all().item())


FUNCTIONS = ("isclose", "allclose", "equal")
METHODS = {"isclose": isclose, "allclose": allclose, "equal": equal}
