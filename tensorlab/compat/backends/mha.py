"""torch.backends.mha: the MultiheadAttention / TransformerEncoderLayer inference fast path switch
(tensorlab has one attention path: the switch is remembered and read back)."""
_fastpath = [True]


def get_fastpath_enabled():
    return _fastpath[0]


def set_fastpath_enabled(value):
    if not isinstance(value, bool):
        raise RuntimeError(f"set_fastpath_enabled expects a bool, but got {type(value).__name__}")
    _fastpath[0] = value
