"""torch._assert and the torch._check family, which library code calls to validate arguments: each raises
its exception type when the condition is false, the message given as a string or a callable returning
one (evaluated only on failure)."""
from __future__ import annotations

__all__ = ["_assert", "_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented",
           "_check_with", "_check_is_size"]


def _assert(condition, message):
    """assert condition, message (a function so scripted code can call it)."""
    assert condition, message


def _check_with(error_type, cond, message=None):
    if not isinstance(cond, bool) and not hasattr(cond, "__bool__"):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if bool(cond):
        return
    if message is None:
        text = "Expected cond to be True, but got False. (Could this error message be improved? If so, please " \
               "report an enhancement request to PyTorch.)"
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        text = str(message())
    raise error_type(text)


def _check(cond, message=None):
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    _check_with(NotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None):  # noqa: A002 - torch's keyword
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)
