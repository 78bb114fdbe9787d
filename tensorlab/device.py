"""Device("cpu" | "cuda" | "cuda:N"): parsing, equality with strings, hashing."""
from __future__ import annotations

_TYPES = ("cpu", "cuda")
_VALID = "'cpu', 'cuda' or 'cuda:N' (N a non-negative integer)"


class Device:
    """A device, as torch.device: `type` and `index` (None when unspecified)."""

    __slots__ = ("type", "index", "_str")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, Device):
            if index is not None:
                raise RuntimeError("device(): an index can only be given with a device type string")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            type_, idx = "cuda", type_or_str
        elif isinstance(type_or_str, str):
            type_, idx = _parse(type_or_str)
        else:
            raise TypeError(f"device(): expected a string, a device or an int, got {type(type_or_str).__name__}")
        if index is not None:
            if idx is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because index was passed "
                                   f"explicitly: {type_or_str}")
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"device(): device index must be a non-negative integer, got {index!r}")
            idx = index
        if type_ == "cpu" and idx not in (None, 0):
            raise RuntimeError(f"device(): the cpu device has index 0 only, got cpu:{idx}")
        self = object.__new__(cls)
        self.type = type_
        self.index = idx
        self._str = type_ if idx is None else f"{type_}:{idx}"
        return self

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        if isinstance(other, Device):
            return self._str == other._str
        if isinstance(other, str):
            try:
                return self._str == Device(other)._str
            except RuntimeError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(self._str)

    def __reduce__(self):
        return (Device, (self._str,))

    def __enter__(self):
        """`with tl.device("cuda"):` factories without device= create on this device (torch's device context)."""
        from .default_device import _push
        _push(self)
        return self

    def __exit__(self, *exc):
        from .default_device import _pop
        _pop()
        return False


def _parse(s):
    type_, sep, rest = s.partition(":")
    if type_ not in _TYPES:
        raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {s!r}; "
                           f"valid forms are {_VALID}")
    if not sep:
        return type_, None
    if not rest.isdigit() or (len(rest) > 1 and rest[0] == "0"):
        raise RuntimeError(f"Invalid device string: {s!r}; valid forms are {_VALID}")
    return type_, int(rest)


device = Device
CPU = Device("cpu")


_INTERNED = {"cpu": CPU}  # str -> the one Device object tensors on it share (the ops' fast paths test identity)


def canonical(d):
    """The concrete device a tensor lives on: cpu, or cuda:N with the current index filled in."""
    if d is None:
        return CPU
    d = Device(d)
    if d.type == "cuda" and d.index is None:
        from . import backends
        d = Device("cuda", backends.cuda_current_device())
    r = _INTERNED.get(d._str)
    return _INTERNED.setdefault(d._str, d) if r is None else r
