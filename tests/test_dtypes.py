import itertools

import numpy as np
import pytest

import tensorlab as tl

ALL = [tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16, tl.float32, tl.float64]


def test_itemsize_and_flags():
    assert [d.itemsize for d in ALL] == [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]
    assert [d.is_floating_point for d in ALL] == [False] * 6 + [True] * 4
    assert repr(tl.float32) == "tensorlab.float32"
    assert tl.float is tl.float32 and tl.long is tl.int64 and tl.half is tl.float16 and tl.double is tl.float64


@pytest.mark.parametrize("a,b,expected", [
    (tl.uint8, tl.int8, tl.int16), (tl.float16, tl.bfloat16, tl.float32), (tl.bool, tl.uint8, tl.uint8),
    (tl.int64, tl.float16, tl.float16), (tl.float16, tl.float32, tl.float32), (tl.uint8, tl.int64, tl.int64),
])
def test_promote_types_documented_pairs(a, b, expected):
    assert tl.promote_types(a, b) is expected
    assert tl.promote_types(b, a) is expected


def _torch_dtype(torch, d):
    return getattr(torch, d.name)


def test_promote_types_matches_torch_for_every_pair(torch):
    for a, b in itertools.product(ALL, ALL):
        want = torch.promote_types(_torch_dtype(torch, a), _torch_dtype(torch, b))
        assert _torch_dtype(torch, tl.promote_types(a, b)) == want, (a, b)


def _operands(d, kind):
    if kind == "dim":
        return tl.zeros(2, dtype=d)
    if kind == "zero":
        return tl.zeros((), dtype=d)
    return {tl.bool: True, tl.int64: 3, tl.float32: 2.5}[d]


SCALAR_TYPES = [tl.bool, tl.int64, tl.float32]


def test_result_type_matches_torch_for_tensor_zero_dim_and_scalar_mixes(torch):
    cases = []
    for a, b in itertools.product(ALL, ALL):
        cases.append((("dim", a), ("zero", b)))
        cases.append((("zero", a), ("zero", b)))
    for a, s in itertools.product(ALL, SCALAR_TYPES):
        cases.append((("dim", a), ("scalar", s)))
        cases.append((("zero", a), ("scalar", s)))
    for (k1, d1), (k2, d2) in cases:
        x, y = _operands(d1, k1), _operands(d2, k2)
        tx = torch.zeros(2 if k1 == "dim" else (), dtype=_torch_dtype(torch, d1)) if k1 != "scalar" else x
        ty = torch.zeros(2 if k2 == "dim" else (), dtype=_torch_dtype(torch, d2)) if k2 != "scalar" else y
        assert _torch_dtype(torch, tl.result_type(x, y)) == torch.result_type(tx, ty), (k1, d1, k2, d2)


def test_seed_float16_plus_float32_is_float32():
    assert tl.result_type(tl.zeros(2, dtype=tl.float16), tl.zeros(2)) is tl.float32
    assert tl.result_type(tl.zeros(2, dtype=tl.int32), 2.5) is tl.float32
    assert tl.result_type(tl.zeros(2, dtype=tl.uint8), 1000) is tl.uint8


def test_default_dtype_roundtrip_and_errors():
    assert tl.get_default_dtype() is tl.float32
    tl.set_default_dtype(tl.float64)
    try:
        assert tl.tensor([1.5]).dtype is tl.float64
        assert tl.result_type(tl.zeros(2, dtype=tl.int32), 2.5) is tl.float64
    finally:
        tl.set_default_dtype(tl.float32)
    with pytest.raises(TypeError, match="floating-point"):
        tl.set_default_dtype(tl.int32)


def test_finfo_iinfo_match_numpy_and_torch_values():
    fi = tl.finfo(tl.float32)
    assert fi.eps == float(np.finfo(np.float32).eps) and fi.bits == 32
    assert fi.max == float(np.finfo(np.float32).max) and fi.tiny == float(np.finfo(np.float32).tiny)
    assert tl.finfo(tl.bfloat16).eps == 2.0 ** -7 and tl.finfo(tl.bfloat16).resolution == 0.01
    assert tl.finfo(tl.float16).max == 65504.0
    assert tl.iinfo(tl.int8).min == -128 and tl.iinfo(tl.uint8).max == 255 and tl.iinfo(tl.int64).bits == 64
    with pytest.raises(TypeError):
        tl.finfo(tl.int32)
    with pytest.raises(TypeError):
        tl.iinfo(tl.float32)


def test_finfo_matches_torch(torch):
    for d in (tl.float16, tl.bfloat16, tl.float32, tl.float64):
        a, b = tl.finfo(d), torch.finfo(getattr(torch, d.name))
        for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(a, f) == getattr(b, f), (d, f)


def test_can_cast_follows_torch():
    assert tl.can_cast(tl.int64, tl.float32)
    assert not tl.can_cast(tl.float32, tl.int64)
    assert not tl.can_cast(tl.int32, tl.bool)
    assert tl.can_cast(tl.bool, tl.uint8)


def test_can_cast_matches_torch(torch):
    for a, b in itertools.product(ALL, ALL):
        assert tl.can_cast(a, b) == torch.can_cast(_torch_dtype(torch, a), _torch_dtype(torch, b)), (a, b)
