"""Random chains of view ops. Against NumPy: every step's values, and its (shape, strides,
offset) read back through np.lib.stride_tricks.as_strided over the same buffer, with aliasing
tracked independently (a reshape copies exactly when NumPy cannot reshape without a copy), and a
final write through the view that must land in the base (or be refused when elements overlap).
Against torch: shape, stride, storage offset, contiguity and which calls raise, step by step."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlab as tl

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
OPS = ("permute", "transpose", "slice", "select", "narrow", "unsqueeze", "squeeze", "expand", "view", "reshape",
       "diagonal", "unfold", "as_strided")
as_strided = np.lib.stride_tricks.as_strided


def start_shape(data):
    ndim = data.draw(st.integers(0, 4), label="ndim")
    return tuple(data.draw(st.lists(st.sampled_from([1, 1, 2, 3, 4, 0]), min_size=ndim, max_size=ndim), label="shape"))


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def draw_op(data, shape, storage_n, w):
    """One view op and its arguments for a tensor of `shape`; w=0 keeps every argument valid,
    w=1 widens the ranges by one so that some calls must raise."""
    n = len(shape)
    I = lambda lo, hi: data.draw(st.integers(lo, max(lo, hi)))  # noqa: E731,E741

    def dim(extra=0):
        m = max(n + extra, 1)
        return I(-m - w, m - 1 + w)

    def size_of(d):
        return shape[d] if -n <= d < n else 1

    name = data.draw(st.sampled_from(OPS), label="op")
    if n == 0 and not w and name in ("select", "narrow", "diagonal"):
        return None
    if name == "permute":
        if w and data.draw(st.booleans()):
            return name, (tuple(data.draw(st.lists(st.integers(-n, max(n - 1, 0)), min_size=n, max_size=n))),)
        return name, (tuple(data.draw(st.permutations(range(n)))),)
    if name == "transpose":
        return name, (dim(), dim())
    if name == "slice":
        k = I(0, n)
        sl = []
        for d in range(k):
            s = shape[d]
            bound = st.none() | st.integers(-s - 2, s + 2)
            sl.append(slice(data.draw(bound), data.draw(bound), data.draw(st.none() | st.integers(1 - w, 3))))
        return name, (tuple(sl),)
    if name == "select":
        d = dim()
        s = size_of(d)
        if s == 0 and not w:
            return None
        return name, (d, I(-s - w, s - 1 + w))
    if name == "narrow":
        d = dim()
        s = size_of(d)
        start = I(-s - w, s + w)
        st0 = start + s if start < 0 else start
        return name, (d, start, I(-w, s - st0 + w))
    if name == "unsqueeze":
        return name, (dim(1),)
    if name == "squeeze":
        kind = data.draw(st.sampled_from(["none", "int", "tuple"]))
        if kind == "none":
            return name, (None,)
        if kind == "int":
            return name, (dim(),)
        m = max(n, 1)
        if w:
            return name, (tuple(data.draw(st.lists(st.integers(-m, m - 1), max_size=3))),)
        dims = data.draw(st.lists(st.integers(0, m - 1), max_size=3, unique=True))
        return name, (tuple(d - m if data.draw(st.booleans()) else d for d in dims),)
    if name == "expand":
        lead = [I(1, 3) for _ in range(I(0, 2))]
        sizes = []
        for s in shape:
            opts = [1, 2, 3, 0, -1] if s == 1 else [s, -1]
            sizes.append(data.draw(st.sampled_from(opts + ([I(0, 4)] if w else []))))
        return name, (tuple(lead + sizes),)
    if name in ("view", "reshape"):
        numel = int(np.prod(shape))
        if numel == 0:
            new = data.draw(st.sampled_from([(0,), (-1,), (0, 3), (2, 0, 1), tuple(reversed(shape))]))
        else:
            new, rem = [], numel
            for _ in range(I(0, 3)):
                d = data.draw(st.sampled_from(_divisors(rem)))
                new.append(d)
                rem //= d
            new.append(rem)
            new = data.draw(st.permutations(new))
            if data.draw(st.booleans()):
                new[I(0, len(new) - 1)] = -1
            if w and data.draw(st.integers(0, 5)) == 0:
                new.append(2)
        return name, (tuple(new),)
    if name == "diagonal":
        if n < 2 and not w:
            return None
        d1, d2 = dim(), dim()
        if d1 % max(n, 1) == d2 % max(n, 1) and not w:
            return None
        return name, (I(-3, 3), d1, d2)
    if name == "unfold":
        d = dim()
        s = size_of(d)
        return name, (d, I(0, s + w), I(1 - w, 3))
    k = I(0, 3)
    sizes = [I(0, 4) for _ in range(k)]
    strides = [I(0, 6) for _ in range(k)]
    ext = 0 if 0 in sizes else 1 + sum((a - 1) * b for a, b in zip(sizes, strides))
    if ext > storage_n and not w:
        if storage_n == 0:
            return None
        sizes, ext = [1] * k, 1
    return "as_strided", (tuple(sizes), tuple(strides), I(0, storage_n - ext + w * 2))


def apply(name, args, t):
    """The same call on a tensorlab or a torch tensor."""
    if name == "slice":
        return t[args[0]]
    if name == "squeeze" and args[0] is None:
        return t.squeeze()
    return getattr(t, name)(*args)


def apply_np(name, args, a):
    """NumPy's reading of a valid call on the array of values `a`; None for view() when NumPy
    finds that no view exists, and for reshape a flag saying whether it had to copy."""
    n = a.ndim
    if name == "permute":
        return np.transpose(a, args[0])
    if name == "transpose":
        return np.swapaxes(a, *args) if n else a
    if name == "slice":
        return a[args[0]]
    if name == "select":
        d, i = args
        return a[(slice(None),) * (d % n) + (i,)]
    if name == "narrow":
        d, start, length = args
        s = a.shape[d]
        st0 = start + s if start < 0 else start
        return a[(slice(None),) * (d % n) + (slice(st0, st0 + length),)]
    if name == "unsqueeze":
        return np.expand_dims(a, args[0])
    if name == "squeeze":
        dims = range(n) if args[0] is None else ((args[0],) if isinstance(args[0], int) else args[0])
        return np.squeeze(a, tuple(d % n for d in dims if n and a.shape[d] == 1)) if n else a
    if name == "expand":
        sizes = list(args[0])
        off = len(sizes) - n
        return np.broadcast_to(a, [a.shape[i - off] if s == -1 else s for i, s in enumerate(sizes)])
    if name in ("view", "reshape"):
        try:
            return np.reshape(a, args[0], copy=False)
        except ValueError:
            return None
    if name == "diagonal":
        return np.diagonal(a, *args)
    if name == "unfold":
        d, size, step = args
        if n == 0:
            return a.reshape(1)[:size]
        win = np.lib.stride_tricks.sliding_window_view(a, size, axis=d)
        return win[(slice(None),) * (d % n) + (slice(None, None, step),)]
    raise AssertionError(name)


def _storage_values(t, n):
    return np.frombuffer(bytes(t.untyped_storage().tolist()), dtype=np.int64)[:n]


def _overlaps(shape, strides):
    if 0 in shape:
        return False
    offs = np.zeros(1, dtype=np.int64)
    for s, st_ in zip(shape, strides):
        offs = (offs[:, None] + np.arange(s) * st_).ravel()
    return len(np.unique(offs)) != len(offs)


@SETTINGS
@given(data=st.data())
def test_view_chains_match_numpy_strided_buffer(device, data):
    shape = start_shape(data)
    n = int(np.prod(shape))
    base = tl.arange(n, device=device).reshape(shape)
    buf = np.arange(n)           # the values of t's storage, as NumPy sees them
    ref = buf.reshape(shape)     # the values of t
    aliased = True               # does t still view the base's storage?
    t = base
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        op = draw_op(data, tuple(t.shape), buf.size, 0)
        if op is None:
            continue
        name, args = op
        if name == "as_strided":
            size, stride, off = args
            ref = as_strided(buf[off:], size, tuple(s * 8 for s in stride))
            t = t.as_strided(*args)
        else:
            want = apply_np(name, args, ref)
            if name == "view" and want is None:
                with pytest.raises(RuntimeError, match="view size is not compatible"):
                    t.view(*args)
                continue
            if name == "reshape" and want is None:
                want = np.reshape(ref, args[0])
                buf = np.ascontiguousarray(want).reshape(-1).copy()
                aliased = False
            t = apply(name, args, t)
            ref = want
        # values, and the layout read through NumPy over the same buffer
        assert tuple(t.shape) == ref.shape, (name, args)
        np.testing.assert_array_equal(np.asarray(t), ref)
        lay_shape, lay_stride, off = tuple(t.shape), t.stride(), t.storage_offset()
        if ref.size:
            assert off + 1 + sum((a - 1) * b for a, b in zip(lay_shape, lay_stride)) <= buf.size
            np.testing.assert_array_equal(as_strided(buf[off:], lay_shape, tuple(s * 8 for s in lay_stride)), ref)
        assert (t.untyped_storage() is base.untyped_storage()) == aliased
    # a write through the view lands in the base at the addresses the layout names
    storage_before = _storage_values(t, buf.size).copy()
    markers = -1 - np.arange(ref.size).reshape(ref.shape)
    if _overlaps(tuple(t.shape), t.stride()):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            t[...] = tl.tensor(markers, device=device)
        np.testing.assert_array_equal(_storage_values(t, buf.size), storage_before)
        return
    t[...] = tl.tensor(markers, device=device)
    want = storage_before.copy()
    if ref.size:
        target = as_strided(want[t.storage_offset():], tuple(t.shape), tuple(s * 8 for s in t.stride()), writeable=True)
        target[...] = markers
    np.testing.assert_array_equal(_storage_values(t, buf.size), want)
    if aliased:
        np.testing.assert_array_equal(np.asarray(base).reshape(-1), want[:n])
        assert base._version == t._version == 1
    else:
        np.testing.assert_array_equal(np.asarray(base).reshape(-1), np.arange(n))


@SETTINGS
@given(data=st.data())
def test_view_chains_match_torch(device, torch, data):
    shape = start_shape(data)
    n = int(np.prod(shape))
    t = tl.arange(n, device=device).reshape(shape)
    tt = torch.arange(n).reshape(shape)
    storage_n = n
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        op = draw_op(data, tuple(t.shape), storage_n, 1)
        if op is None:
            continue
        name, args = op
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = apply(name, args, tt)
        except Exception as e:
            with pytest.raises(type(e)):
                apply(name, args, t)
            return
        t = apply(name, args, t)
        tt = want
        storage_n = tt.untyped_storage().nbytes() // 8
        assert t.untyped_storage().nbytes() // 8 == storage_n
        assert tuple(t.shape) == tuple(tt.shape), (name, args)
        assert t.stride() == tt.stride(), (name, args)
        assert t.storage_offset() == tt.storage_offset(), (name, args)
        assert t.is_contiguous() == tt.is_contiguous(), (name, args)
        np.testing.assert_array_equal(np.asarray(t), tt.numpy())
