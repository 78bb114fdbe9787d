"""torch.backends.opt_einsum: whether einsum's contraction order comes from the opt_einsum
package. tensorlab's einsum contracts left to right; like torch without the package,
is_available() is False and enabled False. strategy is accepted ("auto", "greedy", "optimal")."""
import sys as _sys
import types as _types

enabled = False
strategy = None
_STRATEGIES = ("auto", "greedy", "optimal")


class _OptEinsumModule(_types.ModuleType):
    def __setattr__(self, name, value):
        if name == "enabled" and not isinstance(value, bool):
            raise ValueError(f"opt_einsum.enabled must be a bool, got {type(value).__name__}")
        if name == "strategy" and value is not None and value not in _STRATEGIES:
            raise ValueError(f"opt_einsum.strategy must be one of {_STRATEGIES}, got {value!r}")
        super().__setattr__(name, value)


def is_available():
    return False


def get_opt_einsum():
    """The opt_einsum module when tensorlab uses it: never (None)."""
    return None


_sys.modules[__name__].__class__ = _OptEinsumModule
