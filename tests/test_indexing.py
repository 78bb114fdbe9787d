"""Indexing: every form of __getitem__/__setitem__ against NumPy (and torch where the two differ),
errors, version counter bumps, views that share memory and copies that do not."""
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.ops import indexing as indexing_ops
from device_waits import settle, version_kept

REF = np.arange(60).reshape(3, 4, 5)


def base(device):
    return tl.arange(60, device=device).reshape(3, 4, 5)


def npa(t):
    return np.asarray(t)


def T(v, device, dtype=None):
    return tl.tensor(v, dtype=dtype, device=device)


def shares(a, b):
    return a.untyped_storage() is b.untyped_storage()


# -- basic indexing: views ----------------------------------------------------------------------
BASIC = [
    1, -1, (0, 2), (2, -1, 4), slice(1, None), slice(None, None, 2), (slice(None), slice(1, 3)),
    (slice(None, None, 2), slice(None), slice(1, None, 3)), (Ellipsis, 0), (0, Ellipsis), (Ellipsis, slice(None, 2)),
    None, (None, 0), (slice(None), None, 1), (Ellipsis, None), (None, Ellipsis, None), (1, None, Ellipsis, None, 2),
    slice(5, None), slice(-10, 2), slice(2, 1), (slice(1, 3), -2, slice(None, None, 4)), (), Ellipsis,
    (np.int64(1), np.int32(2)), (slice(np.int64(1), None),), (slice(None), slice(None), slice(None)),
]


@pytest.mark.parametrize("idx", BASIC, ids=repr)
def test_basic_index_is_a_view_matching_numpy(device, idx):
    x = base(device)
    y = x[idx]
    want = REF[idx]
    if not isinstance(want, np.ndarray):  # NumPy gives a scalar for a full integer index; this gives its 0-d view
        want = REF[tuple(idx) + (Ellipsis,)]
    assert tuple(y.shape) == want.shape
    np.testing.assert_array_equal(npa(y), want)
    assert shares(x, y)
    if want.size:
        # the layout addresses the same elements as NumPy's view of the same buffer
        assert y.storage_offset() == (want.__array_interface__["data"][0] - REF.__array_interface__["data"][0]) // 8
        assert all(s * 8 == ns for s, ns, n in zip(y.stride(), want.strides, want.shape) if n > 1)


def test_basic_view_writes_reach_the_base(device):
    x = base(device)
    y = x[1, ::2, 1:4]
    y[...] = -1
    ref = REF.copy()
    ref[1, ::2, 1:4] = -1
    np.testing.assert_array_equal(npa(x), ref)


def test_slice_offsets_match_torch_rules(device):
    x = tl.arange(24, device=device).reshape(2, 3, 4)
    assert x[:, :, 5:].storage_offset() == 4 and x[:, :, 5:].shape == (2, 3, 0)
    assert x[5:].storage_offset() == 24
    assert x[1:0].storage_offset() == 12
    assert x[-10:2].storage_offset() == 0
    assert x[None, ..., None].stride() == (24, 12, 4, 1, 1)
    assert x[:, None].stride() == (12, 12, 4, 1)


def test_bool_scalars(device):
    x = base(device)
    assert x[True].shape == (1, 3, 4, 5) and not shares(x[True], x)  # a bool is an advanced index: a copy
    assert x[False].shape == (0, 3, 4, 5)
    assert x[..., True].shape == (3, 4, 5, 1)
    assert x[1, True].shape == (1, 4, 5)
    np.testing.assert_array_equal(npa(x[True]), REF[True])
    np.testing.assert_array_equal(npa(x[0, None, True]), REF[0, None, True])
    # several bools, or bools with index tensors, are advanced indices (NumPy and torch agree)
    for idx in ((True, True), (True, Ellipsis, True), ([0, 2], True), (True, slice(None), [1, 3]), (False, Ellipsis)):
        np.testing.assert_array_equal(npa(x[idx]), REF[idx], err_msg=repr(idx))
    assert x[T(True, device)].shape == (1, 3, 4, 5)
    assert x[T(False, device)].shape == (0, 3, 4, 5)


def test_zero_dim_integer_tensor_selects(device):
    x = base(device)
    y = x[T(1, device)]
    assert y.shape == (4, 5) and shares(x, y)
    np.testing.assert_array_equal(npa(x[:, T(-1, device, tl.int32)]), REF[:, -1])
    np.testing.assert_array_equal(npa(x[T(2, device, tl.int16)]), REF[2])


# -- advanced indexing: copies ------------------------------------------------------------------
def ADV(d):
    i = lambda v, dt=None: T(v, d, dt)  # noqa: E731
    m = REF % 3 == 0
    return [
        ([0, 2], ([0, 2],)),
        (i([2, 0, 2]), ([2, 0, 2],)),
        (i([[0, 1], [2, 0]]), (np.array([[0, 1], [2, 0]]),)),
        ((slice(None), [1, 3]), (slice(None), [1, 3])),
        ((Ellipsis, i([4, 0], tl.int32)), (Ellipsis, [4, 0])),
        (([0, 1], [1, 2]), ([0, 1], [1, 2])),
        (([0, 1], slice(None), [1, 2]), ([0, 1], slice(None), [1, 2])),             # separated: result dims first
        ((slice(None), [0, 1], [1, 2]), (slice(None), [0, 1], [1, 2])),             # adjacent: keep their place
        ((i([[0], [2]]), i([1, 2, 3])), (np.array([[0], [2]]), [1, 2, 3])),         # broadcast index tensors
        ((i([[0], [2]]), slice(1, 3), i([[4, 0]])), (np.array([[0], [2]]), slice(1, 3), np.array([[4, 0]]))),
        ((None, [0, 1]), (None, [0, 1])),
        (([0, 1], None, [1, 2]), ([0, 1], None, [1, 2])),
        ((slice(None), None, [1, 2]), (slice(None), None, [1, 2])),
        ([-1, -3], ([-1, -3],)),
        ((slice(None, None, 2), [-1], slice(1, None)), (slice(None, None, 2), [-1], slice(1, None))),
        (i(m), (m,)),
        ((slice(None), i(m[0])), (slice(None), m[0])),
        ((1, i(m[0])), (1, m[0])),
        ((slice(None), i(m[0, :, 0])), (slice(None), m[0, :, 0])),
        ((Ellipsis, i(m[0, 0])), (Ellipsis, m[0, 0])),
        (([True, False, True],), ([True, False, True],)),
        ((i(m[:, :, 0]), [1, 2, 3, 4, 0, 1, 2, 3][:int(m[:, :, 0].sum())]),
         (m[:, :, 0], [1, 2, 3, 4, 0, 1, 2, 3][:int(m[:, :, 0].sum())])),
        ((i(np.zeros(3, bool)),), (np.zeros(3, bool),)),
        ([], (np.array([], dtype=np.int64),)),
        ((slice(None), i([], tl.int64)), (slice(None), np.array([], dtype=np.int64))),
        ((slice(0, 0), [1, 2]), (slice(0, 0), [1, 2])),
        ((1, [0, 3], slice(None)), (1, [0, 3], slice(None))),
    ]


@pytest.mark.parametrize("k", range(27))
def test_advanced_index_matches_numpy_and_copies(device, k):
    idx, np_idx = ADV(device)[k]
    x = base(device)
    y = x[idx]
    want = REF[np_idx]
    assert tuple(y.shape) == want.shape
    np.testing.assert_array_equal(npa(y), want)
    assert not shares(x, y)
    assert y.dtype is tl.int64 and y.is_contiguous()
    if y.numel():
        y.view(-1)[0] = -99  # a copy: the base is untouched
        np.testing.assert_array_equal(npa(x), REF)


def test_integer_selects_before_advanced_like_torch(device):
    # torch applies ints as select() first; NumPy treats them as advanced indices
    x = base(device)
    y = x[0, :, [0, 1]]
    assert y.shape == (4, 2)
    np.testing.assert_array_equal(npa(y), REF[0][:, [0, 1]])


def test_empty_ellipsis_keeps_advanced_indices_adjacent_like_torch(device):
    # NumPy gives (3, 2): it counts the Ellipsis as separating the two index arrays
    x = tl.arange(24, device=device).reshape(2, 3, 4)
    i = T([0, 1, 2], device)
    y = x[:, i, ..., i]
    assert y.shape == (2, 3)
    np.testing.assert_array_equal(npa(y), np.arange(24).reshape(2, 3, 4)[:, [0, 1, 2], [0, 1, 2]])


def test_uint8_mask_is_deprecated_but_works(device):
    x = base(device)
    with pytest.warns(UserWarning, match="indexing with dtype tensorlab.uint8 is now deprecated"):
        y = x[T([1, 0, 1], device, tl.uint8)]
    np.testing.assert_array_equal(npa(y), REF[[0, 2]])


def test_sequence_of_sequences_is_a_tuple_like_torch(device):
    x = base(device)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing is deprecated"):
        y = x[[[0, 1], [1, 2]]]
    np.testing.assert_array_equal(npa(y), REF[[0, 1], [1, 2]])
    with pytest.warns(UserWarning):
        assert x[[0, slice(None)]].shape == (4, 5)


def test_mask_indexing_is_a_named_host_sync(device):
    x = base(device)
    with tl.cuda.sync_trace() as trace:
        x[T(REF[:, 0, 0] > 10, device)]
        x[T(REF % 2 == 0, device)] = 0
    reasons = [r.reason for r in trace]
    if device == "cpu":
        assert reasons == []  # nothing is asynchronous on the CPU
    else:
        assert reasons.count("boolean mask indexing") == 2


# -- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("idx,exc,msg", [
    (3, IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    (-4, IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    ((0, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    ((slice(None), slice(None), 7), IndexError, "index 7 is out of bounds for dimension 2 with size 5"),
    ([5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), [0, -5]), IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, 0, Ellipsis), IndexError, r"an index can only have a single ellipsis \('...'\)"),
    (1.5, IndexError, r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte Variables are valid "
                      r"indices \(got float\)"),
    ("a", TypeError, r"invalid data type 'str'"),  # torch 2.13: TypeError, new(): invalid data type 'str'
    ([0.5], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (([0, 1], [0, 1, 2]), IndexError, r"shape mismatch: indexing tensors could not be broadcast together with shapes "
                                      r"\[2\], \[3\]"),
    ([True, False], IndexError, r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed "
                                r"tensor \[3, 4, 5\] at index 0"),
])
def test_index_errors(device, idx, exc, msg):
    x = base(device)
    with pytest.raises(exc, match=msg):
        x[idx]
        settle(device)
    v = x._version
    with pytest.raises(exc, match=msg):
        x[idx] = 0
        settle(device)
    assert version_kept(x, v, device)
    np.testing.assert_array_equal(npa(x), REF)


@pytest.mark.parametrize("dt", [tl.float32, tl.float64, tl.int16, tl.int8])
def test_index_tensor_dtypes_refused(device, dt):
    x = base(device)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[T([0, 1], device, dt)]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x.index_put_((T([0, 1], device, dt),), T(1, device))


def test_zero_dim_tensor_index_errors(device):
    x = base(device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[T(3, device)]
    with pytest.raises(IndexError, match="too many indices"):
        tl.tensor(1, device=device)[0]


# -- setitem ------------------------------------------------------------------------------------
def SET(d):
    i = lambda v, dt=None: T(v, d, dt)  # noqa: E731
    m = REF % 4 == 1
    return [
        (1, 7, 1, 7),
        ((0, 2), i([1, 2, 3, 4, 5]), (0, 2), np.arange(1, 6)),
        ((slice(None), 1), i([[9], [8], [7]]), (slice(None), 1), np.array([[9], [8], [7]])),
        ((Ellipsis, slice(1, None, 2)), -3, (Ellipsis, slice(1, None, 2)), -3),
        ((None, 0), i(np.ones((1, 1, 4, 5), np.int64)), 0, 1),                       # extra leading 1s are dropped
        ((0,), i([[[[4, 4, 4, 4, 4]]]]), 0, 4),
        ([0, 2], 5, [0, 2], 5),
        (i([[0, 1], [2, 0]]), i(np.arange(5)), (np.array([[0, 1], [2, 0]]),), np.arange(5)),
        (([0, 1], [1, 2]), i([[10], [20]]), ([0, 1], [1, 2]), np.array([[10], [20]])),
        (([0, 1], slice(None), [1, 2]), i(np.arange(4)), ([0, 1], slice(None), [1, 2]), np.arange(4)),
        ((slice(None), [0, 3], [4, 4]), i([1, 2]), (slice(None), [0, 3], [4, 4]), np.array([1, 2])),
        (i(m), 0, m, 0),
        (i(m), i(np.arange(int(m.sum()))), m, np.arange(int(m.sum()))),
        ((1, i(m[1])), i([-1]), (1, m[1]), -1),
        ((slice(None), i(m[0, :, 0])), i(np.arange(5)), (slice(None), m[0, :, 0]), np.arange(5)),
        ([-1, -2], 2.9, [-1, -2], 2),                                                # float value cast to int64
        ((0, 0), [5, 6, 7, 8, 9], (0, 0), [5, 6, 7, 8, 9]),                          # a list value
        (([2, 1], 0), [[1, 1, 1, 1, 1], [2, 2, 2, 2, 2]], ([2, 1], 0), [[1, 1, 1, 1, 1], [2, 2, 2, 2, 2]]),
        (True, 3, True, 3),
        (False, 3, False, 3),
        ((Ellipsis, None), i(REF[..., None] * 2), (Ellipsis, None), REF[..., None] * 2),
        ([0, 0], i([1, 2]).reshape(2, 1, 1), [0], 2),                                # duplicates: last write wins
    ]


@pytest.mark.parametrize("k", range(22))
def test_setitem_matches_numpy(device, k):
    idx, value, np_idx, np_value = SET(device)[k]
    x = base(device)
    v = x._version
    x[idx] = value
    assert x._version == v + (idx is not False)  # torch: x[False] = v writes nothing and keeps the version
    want = REF.copy()
    want[np_idx] = np_value
    if k == len(SET(device)) - 1 and device != "cpu":
        # duplicate indices on CUDA: one of the written values, which one unspecified (torch's CUDA
        # index_put_ without accumulate says the same); an H200 kept the first, the CPU keeps the last
        got = npa(x)
        assert np.all((got[0] == 1) | (got[0] == 2)), got[0]
        np.testing.assert_array_equal(got[1:], want[1:])
        return
    np.testing.assert_array_equal(npa(x), want)


def test_setitem_casts_values(device):
    x = tl.zeros(4, device=device)
    x[0] = 3
    x[1] = True
    x[[2, 3]] = T([7.0, 8.0], device)
    np.testing.assert_array_equal(npa(x), [3.0, 1.0, 7.0, 8.0])
    b = tl.zeros(3, dtype=tl.bool, device=device)
    b[1] = 5
    b[[2]] = 0.5
    assert b.tolist() == [False, True, True]
    u = tl.zeros(3, dtype=tl.uint8, device=device)
    u[0] = -1  # wraps, as torch
    u[[1]] = -2
    assert u.tolist() == [255, 254, 0]
    h = tl.zeros(2, dtype=tl.bfloat16, device=device)
    h[T([1], device)] = 2.5
    h[T([True, False], device)] = T(1.5, "cpu", tl.float64)  # one mask and one CPU element: masked_fill_ casts
    assert h.tolist() == [1.5, 2.5]


def test_advanced_setitem_requires_the_dtype(device):
    """torch: an advanced-index assignment of a tensor needs the destination's dtype (x[0] = t and
    x[True] = t copy and cast; a lone mask with one CPU element is masked_fill_, which casts)."""
    x = tl.zeros(3, device=device)
    for idx, val in (([0, 1], T([1, 2], device)), (T([0], device), T([1.0], device, tl.float64)),
                     (T([True, False, True], device), T([1.0, 2.0], device, tl.float64))):
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, "
                                               "got Float for the destination and (Long|Double) for the source"):
            x[idx] = val
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0
    x[True] = T([1.0, 2.0, 3.0], device, tl.float64)
    x[0] = T(7, device, tl.int32)
    assert x.tolist() == [7.0, 2.0, 3.0] and x._version == 2


def test_bool_index_is_a_copy(device):
    x = tl.zeros(3, device=device)
    y = x[True]
    y.add_(1)
    assert x.tolist() == [0.0, 0.0, 0.0] and y.tolist() == [[1.0, 1.0, 1.0]]
    x[False] = 5
    assert x._version == 0 and x.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError):
        x[False] = "a"  # the value is still checked
    x[False, 0] = 5  # in a tuple, False is an empty index: nothing written, the version moves (torch)
    assert x._version == 1 and x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dt,value", [(tl.int8, 300), (tl.int8, 300.0), (tl.int8, float("nan")), (tl.uint8, 256),
                                      (tl.uint8, -1.5), (tl.int32, 2 ** 31), (tl.float32, 1e300),
                                      (tl.int64, float("inf"))])
def test_setitem_scalar_overflow_refused(device, dt, value):
    x = tl.zeros(3, dtype=dt, device=device)
    for idx in (0, [0, 1], Ellipsis):
        with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow"):
            x[idx] = value
    assert x._version == 0 and x.tolist() == [0, 0, 0]


def test_setitem_failures_change_nothing(device):
    x = base(device)
    cases = [
        ((slice(None), [0, 9]), 1, IndexError),                                  # index past the end, checked first
        ([0, 1], T([1, 2, 3], device), RuntimeError),                          # value does not broadcast
        (0, T(np.ones((2, 4, 5)), device), RuntimeError),
        ((0, 0), T(np.ones((5, 1)), device), RuntimeError),
        (T(REF > 3, device), T([1, 2], device), RuntimeError),
        (0, "text", TypeError),
    ]
    for idx, value, exc in cases:
        with pytest.raises(exc):
            x[idx] = value
            settle(device)
        assert version_kept(x, 0, device)
        np.testing.assert_array_equal(npa(x), REF)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4, 5\]"):
        x[[0, 1]] = T([1, 2, 3], device)


def test_setitem_overlapping_source_refused(device):
    z = tl.arange(5, device=device)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer"):
        z[1:] = z[:-1]
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer"):
        z[[1, 2, 3, 4]] = z[:-1]
    assert z.tolist() == [0, 1, 2, 3, 4] and z._version == 0
    z[:] = z  # exactly itself is fine
    z[[4, 3, 2, 1, 0]] = z.clone()
    assert z.tolist() == [4, 3, 2, 1, 0]


def test_index_tensor_aliasing_the_target_is_read_before_writing(device):
    x = T([2, 0, 1, 3], device)
    x[x[:2]] = 9                          # indices [2, 0], read before x[0] changes
    assert x.tolist() == [9, 0, 9, 3]
    y = T([1, 0, 1, 3], device)
    y.index_put_((y[:3],), T(5, device), accumulate=True)
    assert y.tolist() == [6, 10, 1, 3]


def test_setitem_into_views_bumps_shared_version_once(device):
    x = base(device)
    y = x[1]
    v = x._version
    y[[0, 1], 2] = 100
    assert x._version == y._version == v + 1
    assert x[1, 0, 2].item() == 100 and x[1, 1, 2].item() == 100
    x[T(REF > 50, device)] = 0
    assert x._version == v + 2


def test_setitem_on_expanded_refused_for_every_form(device):
    e = tl.zeros(3, 1, device=device).expand(3, 4)
    for idx in (0, Ellipsis, [0, 1], T([[True] * 4] * 3, device), (slice(None), slice(0, 2))):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
            e[idx] = 1
    assert e._version == 0 and npa(e).sum() == 0
    s = tl.arange(4, device=device).as_strided((3, 2), (1, 1))
    with pytest.raises(RuntimeError, match="more than one element"):
        s[...] = 0


def test_setitem_empty_targets(device):
    x = base(device)
    x[[]] = 5
    x[T(np.zeros((3, 4, 5), bool), device)] = 5
    x[1:1] = 5
    np.testing.assert_array_equal(npa(x), REF)
    assert x._version == 3


# -- index_put_ ---------------------------------------------------------------------------------
def test_index_put_accumulate_matches_add_at(device):
    x = tl.zeros(3, 4, device=device)
    idx = (T([0, 0, 2, 0], device), T([1, 1, 3, 1], device))
    vals = T([1.0, 2.0, 3.0, 4.0], device)
    r = x.index_put_(idx, vals, accumulate=True)
    assert r is x and x._version == 1
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, ([0, 0, 2, 0], [1, 1, 3, 1]), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(npa(x), want)
    x.index_put_((T([1, 1], device),), T([1.0, 1.0, 1.0, 1.0], device), accumulate=True)  # rows broadcast
    want[1] += 2
    np.testing.assert_array_equal(npa(x), want)
    b = tl.zeros(3, dtype=tl.bool, device=device)
    b.index_put_((T([0, 0, 1], device),), T([True, True, False], device), accumulate=True)
    assert b.tolist() == [True, False, False]


def test_index_put_forms(device):
    x = tl.zeros(3, 4, device=device)
    x.index_put_((None, T([0, 2], device)), T([[1.0], [2.0], [3.0]], device))
    x.index_put_([T(REF[:, :4, 0] > 40, device)], T(9.0, device))
    x.index_put_((T(1, device),), T([5.0, 6.0, 7.0, 8.0], device))       # 0-dim index tensor: an index, not select
    want = np.zeros((3, 4), np.float32)
    want[:, [0, 2]] = [[1.0], [2.0], [3.0]]
    want[REF[:, :4, 0] > 40] = 9.0
    want[1] = [5.0, 6.0, 7.0, 8.0]
    np.testing.assert_array_equal(npa(x), want)
    y = tl.index_put(x, (T([0], device),), T(-1.0, device))
    assert x[0, 0].item() == 1.0 and y[0].tolist() == [-1.0] * 4 and not shares(x, y)
    assert x.index_put((T([2], device),), T(0.0, device))[2].tolist() == [0.0] * 4
    assert x._version == 3


def test_index_put_errors(device):
    x = tl.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Float for "
                                           "the destination and Long for the source."):
        x.index_put_((T([0], device),), T([1, 1, 1, 1], device))
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        x.index_put_((T([0], device),) * 3, T(1.0, device))
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        x.index_put_(([0],), T(1.0, device))
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        x.index_put_(T([0], device), T(1.0, device))
    with pytest.raises(TypeError, match="'values' must be Tensor"):
        x.index_put_((T([0], device),), 1.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((T([0, 3], device),), T(1.0, device), accumulate=True)
        settle(device)
    assert version_kept(x, 0, device) and npa(x).sum() == 0


# -- torch as the oracle for forms NumPy reads differently ----------------------------------------
TORCH_FORMS = [
    lambda m, x: x[[[0, 1], [1, 2]]], lambda m, x: x[[0, slice(None), [1, 3]]], lambda m, x: x[0, :, [0, 1]],
    lambda m, x: x[True, True], lambda m, x: x[[0, 1], True], lambda m, x: x[True, ..., True],
    lambda m, x: x[False, [0]], lambda m, x: x[m.tensor(1), :, m.tensor([0, 2])], lambda m, x: x[..., None, [1, 2]],
    lambda m, x: x[[1, 0], None, [1, 2]], lambda m, x: x[m.tensor([[True, False, True, False]] * 3)],
    lambda m, x: x[:, m.tensor([True, False, True, False])], lambda m, x: x[[True, False, True]],
    lambda m, x: x[[[0, 1]]], lambda m, x: x[m.tensor([0, 1], dtype=m.int32), m.tensor([[0], [2]])],
    lambda m, x: x[[0, 1], [0, 1], [0, 1, 2]], lambda m, x: x[[5]], lambda m, x: x[:, [-7]],
    lambda m, x: x[m.tensor([True, False])], lambda m, x: x[m.tensor(True), 1], lambda m, x: x[None, 2, [0]],
    lambda m, x: x[1:, [[0, 1]], ::2],
]


@pytest.mark.parametrize("i", range(len(TORCH_FORMS)))
def test_getitem_matches_torch(device, torch, i):
    f = TORCH_FORMS[i]
    x = base(device)
    tx = torch.arange(60).reshape(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = f(torch, tx)
        except Exception as e:
            with pytest.raises(type(e)):
                f(tl, x)
                settle(device)
            return
        got = f(tl, x)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(npa(got), want.numpy())


@pytest.mark.parametrize("i", range(len(TORCH_FORMS)))
def test_setitem_matches_torch(device, torch, i):
    f = TORCH_FORMS[i]
    x = base(device)
    tx = torch.arange(60).reshape(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            shape = f(torch, tx).shape
        except Exception:
            return
        vals = np.arange(int(np.prod(shape))).reshape(shape) * 7 + 1000
        idx_t, idx_l = _capture_index(f, torch, tx), _capture_index(f, tl, x)
        tx[idx_t] = torch.tensor(vals)
        x[idx_l] = T(vals, device)
    np.testing.assert_array_equal(npa(x), tx.numpy())


class _Recorder:
    def __init__(self, inner):
        self.inner = inner
        self.index = None

    def __getitem__(self, index):
        self.index = index
        return self.inner[index]


def _capture_index(f, mod, x):
    r = _Recorder(x)
    f(mod, r)
    return r.index


# -- random index expressions -------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HYP = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def draw_index(data, shape, numpy_compatible):
    """A random index tuple for `shape`, with NumPy arrays for the advanced parts: items consume
    dims left to right, an optional Ellipsis covers a middle run of dims. With numpy_compatible,
    no int is mixed with advanced indices (NumPy would count it as one)."""
    n = len(shape)

    def run(lo, hi, exact):
        items, d = [], lo
        while d < hi or data.draw(st.integers(0, 3)) == 3:
            kinds = ["slice", "none", "bool"] + (["int", "ints", "mask"] if d < hi else [])
            kind = data.draw(st.sampled_from(kinds))
            if kind == "int" and shape[d] == 0:
                kind = "slice"
            if kind == "slice" and d < hi:
                b = st.none() | st.integers(-5, 5)
                items.append(slice(data.draw(b), data.draw(b), data.draw(st.none() | st.integers(1, 3))))
                d += 1
            elif kind in ("none", "slice"):
                items.append(None)
            elif kind == "bool":
                items.append(data.draw(st.booleans()))
            elif kind == "int":
                items.append(data.draw(st.integers(-shape[d], shape[d] - 1)))
                d += 1
            elif kind == "ints":
                s = shape[d]
                ishape = data.draw(st.sampled_from([(2,), (1,), (2, 1), (1, 2), (0,), ()]))
                m = int(np.prod(ishape)) if s else 0
                vals = data.draw(st.lists(st.integers(-s, s - 1), min_size=m, max_size=m)) if s else []
                items.append(np.array(vals, dtype=np.int64).reshape(ishape if s else (0,)))
                d += 1
            else:
                k = data.draw(st.integers(1, hi - d))
                m = int(np.prod(shape[d:d + k]))
                items.append(np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)),
                                      dtype=bool).reshape(shape[d:d + k]))
                d += k
            if not exact and d < hi and data.draw(st.integers(0, 4)) == 0:
                break
        return items

    if data.draw(st.booleans()):
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n))
        # NumPy counts an Ellipsis of no dims as separating advanced indices; torch does not
        items = run(0, a, True) + ([] if numpy_compatible and a == b else [Ellipsis]) + run(b, n, True)
    else:
        items = run(0, n, False)
    if numpy_compatible and any(_advanced(x) for x in items):
        items = [slice(None) if _integer(x) else x for x in items]
    return tuple(items)


def _integer(x):
    """An int, or a 0-d integer array: torch selects with it before any advanced indexing."""
    return type(x) is int or (isinstance(x, np.ndarray) and x.ndim == 0)


def _advanced(x):
    return (isinstance(x, np.ndarray) and x.ndim > 0) or type(x) is bool


def _to(index, mod, device=None):
    kw = {} if device is None else {"device": device}
    return tuple(mod.tensor(x, **kw) if isinstance(x, np.ndarray) else x for x in index)


@HYP
@given(data=st.data())
def test_random_indices_match_numpy(device, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    index = draw_index(data, shape, numpy_compatible=True)
    ref = np.arange(int(np.prod(shape))).reshape(shape)
    x = tl.arange(int(np.prod(shape)), device=device).reshape(shape)
    try:
        want = ref[index]
    except IndexError:
        with pytest.raises(IndexError):
            x[_to(index, tl, device)]
        return
    got = x[_to(index, tl, device)]
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_array_equal(npa(got), want)
    plain = not any(isinstance(i, np.ndarray) and (i.ndim or i.dtype == bool) for i in index) \
        and not any(type(i) is bool for i in index)
    assert shares(got, x) == plain  # basic indices view; everything else (bools too, as in torch) copies
    values = -1 - np.arange(int(np.prod(np.shape(want)))).reshape(np.shape(want))
    expect = ref.copy()
    expect[index] = values
    x[_to(index, tl, device)] = tl.tensor(values, device=device)
    np.testing.assert_array_equal(npa(x), expect)
    assert x._version == 1


@HYP
@given(data=st.data())
def test_random_indices_match_torch(device, torch, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    index = draw_index(data, shape, numpy_compatible=False)
    n = int(np.prod(shape))
    x = tl.arange(n, device=device).reshape(shape)
    tx = torch.arange(n).reshape(shape)
    try:
        want = tx[_to(index, torch)]
    except Exception as e:
        with pytest.raises(type(e)):
            x[_to(index, tl, device)]
        return
    got = x[_to(index, tl, device)]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(npa(got), want.numpy())


# -- strong exception guarantee -----------------------------------------------------------------
WRITES = [
    lambda x, d: x.__setitem__(1, 5),
    lambda x, d: x.__setitem__((slice(None), 0), T([1, 2, 3, 4, 5], d, tl.int32)),
    lambda x, d: x.__setitem__([0, 2], T(np.arange(20).reshape(4, 5), d)),
    lambda x, d: x.__setitem__(T(REF % 7 == 0, d), 0),
    lambda x, d: x.__setitem__((slice(None), T([[True, False, True, True]] * 1, d)[0]), [1.5] * 5),
    lambda x, d: x.index_put_((T([0, 0], d), T([1, 1], d)), T([1, 2, 3, 4, 5], d), accumulate=True),
    lambda x, d: x.index_put_((None, T([3], d)), T(np.ones((3, 1, 5), np.int64), d)),
]


@pytest.mark.parametrize("k", range(len(WRITES)))
def test_failed_write_at_any_fault_point_changes_nothing(device, k):
    op = WRITES[k]
    x0 = base(device)
    points = tl.testing.fault_points(lambda: op(x0, device))
    assert points
    for kind, n in points:
        x = base(device)
        snap = tl.testing.snapshot(x)
        with tl.testing.inject_fault(kind, n), pytest.raises(tl.testing.InjectedFault):
            op(x, device)
        tl.testing.assert_unchanged(snap)


def test_failed_gather_leaves_input_unchanged(device):
    op = lambda x: x[T(REF[:, :, 0] > 20, device), [0, 1, 2, 3, 4, 0, 1][:int((REF[:, :, 0] > 20).sum())]]  # noqa: E731
    x0 = base(device)
    for kind, n in tl.testing.fault_points(lambda: op(x0)):
        x = base(device)
        snap = tl.testing.snapshot(x)
        with tl.testing.inject_fault(kind, n), pytest.raises(tl.testing.InjectedFault):
            op(x)
        tl.testing.assert_unchanged(snap)
