"""torch.nn.modules.utils: the argument normalizers layers use (_single/_pair/_triple/_quadruple turn an
int or an iterable into a tuple of that length), _reverse_repeat_tuple (padding in F.pad's order),
_list_with_default, and consume_prefix_in_state_dict_if_present (strips a prefix such as DataParallel's
"module." from a state dict's keys, its metadata included, in place)."""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["consume_prefix_in_state_dict_if_present"]


class _Expand:
    """Callable: a value as an n-tuple (an iterable is taken as it is, anything else repeated n times)."""

    def __init__(self, n, name):
        self.n, self.__name__ = n, name

    def __call__(self, value):
        return tuple(value) if isinstance(value, Iterable) else (value,) * self.n

    def __repr__(self):
        return f"<{self.__name__}: values as {self.n}-tuples>"


def _ntuple(n, name="parse"):
    return _Expand(n, name)


_single, _pair, _triple, _quadruple = (_Expand(k, nm) for k, nm in
                                       ((1, "_single"), (2, "_pair"), (3, "_triple"), (4, "_quadruple")))


def _reverse_repeat_tuple(t, n):
    """Each element of t repeated n times, last element first: (1, 2), 2 -> (2, 2, 1, 1)."""
    out = []
    for v in t[::-1]:
        out += [v] * n
    return tuple(out)


def _list_with_default(out_size, defaults):
    """out_size with its None entries taken from the trailing dims of `defaults`."""
    if isinstance(out_size, (int, float)):
        return out_size
    k = len(out_size)
    if len(defaults) <= k:
        raise ValueError(f"Input dimension should be at least {k + 1}")
    return [d if v is None else v for v, d in zip(out_size, defaults[len(defaults) - k:])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Remove `prefix` from the keys that start with it (and from the metadata's, when present), in place."""
    n = len(prefix)
    for key in sorted(k for k in state_dict.keys() if k.startswith(prefix)):
        state_dict[key[n:]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is None:
        return
    bare = prefix[:-1] if prefix.endswith(".") else prefix  # metadata keys are module paths without the dot
    for key in list(meta.keys()):
        if key == bare:
            meta[""] = meta.pop(key)
        elif key.startswith(prefix):
            meta[key[n:]] = meta.pop(key)
