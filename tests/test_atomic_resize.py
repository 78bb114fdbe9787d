"""resize_, resize_as_, set_, UntypedStorage.resize_ and out= resizes: results against NumPy /
torch, and the strong exception guarantee on every refusal (non-resizable memory, out of memory,
bad layouts, autograd) - checked with tl.testing.snapshot / assert_unchanged."""
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import layout as L
from tensorlab.ops.resize import plan_resize
from tensorlab.testing import assert_unchanged, snapshot

NOT_RESIZABLE = "Trying to resize storage that is not resizable"


def view(t, shape, stride=None, offset=0):
    """A view sharing t's storage and version counter (independent of the views family)."""
    return t._view_of(L.make(shape, stride, offset))


def values(t):
    return np.asarray(t.tolist())


# -- resize_ -----------------------------------------------------------------------------------

def test_resize_grow_keeps_bytes_and_grows_exactly(device):
    t = tl.arange(6, dtype=tl.int32, device=device)
    t.resize_(2, 5)
    assert t.shape == (2, 5) and t.stride() == (5, 1) and t.storage_offset() == 0
    assert t.untyped_storage().nbytes() == 10 * 4
    assert values(t).ravel()[:6].tolist() == list(range(6))


def test_resize_shrink_reuses_storage(device):
    t = tl.arange(12, dtype=tl.int64, device=device)
    s = t.untyped_storage()
    ptr = s.data_ptr()
    t.resize_(2, 3)
    assert t.untyped_storage() is s and s.data_ptr() == ptr and s.nbytes() == 96
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    t.resize_(12)  # growing back within the storage: no allocation, bytes still there
    assert s.data_ptr() == ptr and t.tolist() == list(range(12))


def test_resize_keeps_offset_and_grows_storage_from_it(device):
    base = tl.arange(10, dtype=tl.float32, device=device)
    w = view(base, (2,), offset=3)
    w.resize_(10)
    assert w.storage_offset() == 3 and w.untyped_storage().nbytes() == (3 + 10) * 4
    assert base.untyped_storage() is w.untyped_storage()
    assert values(w)[:7].tolist() == [3, 4, 5, 6, 7, 8, 9]


def test_views_of_the_storage_see_the_moved_buffer(device):
    t = tl.arange(8, dtype=tl.int64, device=device)
    v = view(t, (3,), offset=2)
    old_ptr = v.data_ptr()
    t.resize_(100)  # moves the buffer
    assert v.untyped_storage() is t.untyped_storage()
    assert v.data_ptr() == t.data_ptr() + 16 != old_ptr
    assert v.tolist() == [2, 3, 4] and v.shape == (3,)
    t.copy_(tl.arange(100, 200, dtype=tl.int64, device=device))  # writes into the new buffer
    assert v.tolist() == [102, 103, 104]


def test_resize_same_shape_is_a_noop(device):
    t = tl.zeros(4, 3, device=device)
    ptr, v = t.data_ptr(), t._version
    assert t.resize_(4, 3) is t
    assert t.data_ptr() == ptr and t._version == v


def test_resize_not_resizable_changes_nothing(device):
    if device != "cpu":
        pytest.skip("from_numpy memory is CPU memory")
    arr = np.arange(6, dtype=np.float32)
    t = tl.from_numpy(arr)
    other = tl.from_numpy(arr)
    v = view(t, (2,), offset=4)
    snap = snapshot(t, other, v)
    with pytest.raises(RuntimeError, match=f"^{NOT_RESIZABLE}$"):
        t.resize_(5, 5)
    assert_unchanged(snap)
    assert t.tolist() == list(range(6)) and repr(t).startswith("tensor(")
    t.resize_(2, 2)  # shrinking needs no new memory: allowed, numpy's array untouched
    assert t.tolist() == [[0, 1], [2, 3]] and arr.tolist() == list(range(6))


def test_resize_requires_grad_refused(device):
    t = tl.zeros(3, device=device).requires_grad_()
    snap = snapshot(t)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        t.resize_(5)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        t.resize_(3)
    assert_unchanged(snap)


@pytest.mark.parametrize("shape", [(-1,), (2, -3)])
def test_resize_negative_dim_changes_nothing(device, shape):
    t = tl.arange(4, device=device)
    snap = snapshot(t)
    with pytest.raises(RuntimeError, match="negative dimension"):
        t.resize_(*shape)
    assert_unchanged(snap)


def test_resize_out_of_memory_names_bytes_and_changes_nothing(device):
    t = tl.arange(6, dtype=tl.float32, device=device)
    v = view(t, (2,), offset=1)
    snap = snapshot(t, v)
    with pytest.raises(RuntimeError, match="4000000000000000 bytes"):
        t.resize_(10 ** 15)
    assert_unchanged(snap)
    assert t.tolist() == [0, 1, 2, 3, 4, 5]


def test_resize_byte_count_overflow_changes_nothing(device):
    t = tl.arange(3, dtype=tl.float32, device=device)
    snap = snapshot(t)
    with pytest.raises(RuntimeError, match="overflow"):
        t.resize_(2 ** 62)
    with pytest.raises(RuntimeError, match="overflow"):
        t.resize_(2 ** 31, 2 ** 31, 2 ** 31)
    assert_unchanged(snap)


def test_resize_memory_formats(device):
    t = tl.zeros(3, device=device)
    t.resize_(2, 3, 4, 5, memory_format=tl.channels_last)
    assert t.stride() == (60, 1, 15, 3) and t.is_contiguous(memory_format=tl.channels_last)
    v = t._version
    t.resize_(2, 3, 4, 5, memory_format=tl.contiguous_format)  # same shape: re-stride, no bump (torch)
    assert t.stride() == (60, 20, 5, 1) and t._version == v
    snap = snapshot(t)
    with pytest.raises(RuntimeError, match="preserve_format"):
        t.resize_(4, memory_format=tl.preserve_format)
    with pytest.raises(RuntimeError, match="rank 4"):
        t.resize_(4, memory_format=tl.channels_last)
    assert_unchanged(snap)


def test_resize_to_zero_elements_keeps_storage(device):
    t = tl.arange(5, device=device)
    t.resize_(0)
    assert t.shape == (0,) and t.untyped_storage().nbytes() == 40 and t.tolist() == []
    t.resize_(3, 0, 2)
    assert t.numel() == 0 and t.untyped_storage().nbytes() == 40


# torch 2.x (observed on 2.13): resize_ bumps _version when the shape changes, never for the
# same shape (even when memory_format re-strides); set_ bumps on every call.
VERSION_SCRIPT = [
    ("resize_", (5,), {}, 1), ("resize_", (2,), {}, 2), ("resize_", (2,), {}, 2), ("resize_", (1, 2), {}, 3),
    ("resize_", (1, 2), {"memory_format": "contiguous_format"}, 3), ("set_", (), {}, 4), ("set_", (), {}, 5),
]


def _run_script(lib, t):
    out = []
    for name, args, kw, _ in VERSION_SCRIPT:
        kw = {k: getattr(lib, v) for k, v in kw.items()}
        getattr(t, name)(*args, **kw)
        out.append(t._version)
    return out


def test_version_counter_semantics(device):
    assert _run_script(tl, tl.zeros(3, device=device)) == [v for *_, v in VERSION_SCRIPT]


def test_version_counter_semantics_match_torch(torch):
    assert _run_script(tl, tl.zeros(3)) == _run_script(torch, torch.zeros(3))


def test_resize_as_(device):
    t = tl.arange(3, device=device)
    t.resize_as_(tl.zeros(2, 2, device=device))
    assert t.shape == (2, 2) and t.stride() == (2, 1) and t._version == 1 and t.dtype is tl.int64
    cl = tl.empty(2, 3, 4, 5, device=device, memory_format=tl.channels_last)
    a = tl.zeros(3, device=device)
    a.resize_as_(cl)
    assert a.stride() == (60, 20, 5, 1)  # default: contiguous
    b = tl.zeros(3, device=device)
    b.resize_as_(cl, memory_format=tl.preserve_format)
    assert b.stride() == (60, 1, 15, 3)
    with pytest.raises(TypeError):
        b.resize_as_((2, 3))


def test_resize_as_matches_torch(torch):
    def run(lib, mf):
        cl = lib.zeros(2, 3, 4, 5).to(memory_format=lib.channels_last) if lib is torch else \
            tl.empty(2, 3, 4, 5, memory_format=tl.channels_last)
        u = lib.zeros(4, 3)
        u = u.t() if lib is torch else view(u, (3, 4), (1, 3))
        res = []
        for tmpl in (cl, u):
            t = lib.zeros(3)
            t.resize_as_(tmpl, **({} if mf is None else {"memory_format": getattr(lib, mf)}))
            res.append((tuple(t.shape), t.stride(), t._version))
        return res
    for mf in (None, "preserve_format", "contiguous_format"):
        assert run(tl, mf) == run(torch, mf)


# -- set_ --------------------------------------------------------------------------------------

def test_set_no_args_gives_empty_storage(device):
    t = tl.arange(4, device=device)
    old = t.untyped_storage()
    t.set_()
    assert t.shape == (0,) and t.stride() == (1,) and t.storage_offset() == 0
    assert t.untyped_storage() is not old and t.untyped_storage().nbytes() == 0 and old.nbytes() == 32
    assert t._version == 1 and t.tolist() == [] and t.device.type == device


def test_set_tensor_shares_storage_and_layout(device):
    base = tl.arange(12, dtype=tl.float32, device=device)
    src = view(base, (3, 2), (4, 2), 1)  # non-contiguous, offset
    t = tl.zeros(5, device=device)
    t.set_(src)
    assert t.untyped_storage() is base.untyped_storage()
    assert (t.shape, t.stride(), t.storage_offset()) == ((3, 2), (4, 2), 1)
    assert t.tolist() == [[1, 3], [5, 7], [9, 11]]
    assert t._version == 1 and src._version == 0  # the version counter is not shared (torch)
    base.copy_(tl.zeros(12, device=device))
    assert t.tolist() == [[0, 0]] * 3


def test_set_tensor_dtype_mismatch_changes_nothing(device):
    t = tl.zeros(3, device=device)
    src = tl.zeros(3, dtype=tl.float64, device=device)
    snap = snapshot(t, src)
    with pytest.raises(RuntimeError, match="Could not set tensor of type float64 to a tensor of type float32"):
        t.set_(src)
    assert_unchanged(snap)


def test_set_storage_whole(device):
    s = tl.UntypedStorage(10, device=device)
    t = tl.zeros(1, device=device)
    t.set_(s)
    assert t.shape == (2,) and t.untyped_storage() is s  # 10 bytes hold 2 whole float32


def test_set_storage_with_layout(device):
    src = tl.arange(12, dtype=tl.int32, device=device)
    s = src.untyped_storage()
    t = tl.zeros(1, dtype=tl.int32, device=device)
    t.set_(s, 2, (2, 3))
    assert (t.shape, t.stride(), t.storage_offset()) == ((2, 3), (3, 1), 2)
    assert t.tolist() == [[2, 3, 4], [5, 6, 7]]
    t.set_(s, storage_offset=1, size=(2, 2), stride=(5, 2))
    assert t.tolist() == [[1, 3], [6, 8]]
    t.set_(s, 0, (3,), ())  # empty stride -> contiguous, as torch
    assert t.stride() == (1,)
    t.set_(s, 0, (2, 3), (0, 1))  # overlapping layouts are allowed (writes through them are not)
    assert t.tolist() == [[0, 1, 2], [0, 1, 2]]
    t.set_(s, 100, (0,))  # an empty layout needs no bytes
    assert t.numel() == 0 and s.nbytes() == 48


def test_set_grows_resizable_storage(device):
    src = tl.arange(4, dtype=tl.float32, device=device)
    s = src.untyped_storage()
    t = tl.zeros(1, device=device)
    t.set_(s, 1, (2, 2), (2, 1))  # needs 5 floats
    assert s.nbytes() == 20 and src.tolist() == [0, 1, 2, 3]
    assert t.tolist()[0] == [1, 2] and t.tolist()[1][0] == 3


def test_set_too_small_not_resizable_changes_nothing(device):
    if device != "cpu":
        pytest.skip("from_numpy memory is CPU memory")
    arr = np.arange(4, dtype=np.float32)
    owner = tl.from_numpy(arr)
    s = owner.untyped_storage()
    t = tl.arange(3, dtype=tl.float32)
    snap = snapshot(t, owner, s)
    with pytest.raises(RuntimeError) as ei:
        t.set_(s, 2, (4,), (1,))
    msg = str(ei.value)
    assert ("setStorage: sizes [4], strides [1], storage offset 2, and itemsize 4 requiring a storage size of 24 are "
            "out of bounds for storage of size 16") in msg and NOT_RESIZABLE in msg
    assert_unchanged(snap)
    t.set_(s, 2, (2,))  # a layout that fits is fine
    assert t.tolist() == [2, 3]


@pytest.mark.parametrize("offset,size,stride,match", [
    (-1, (2,), (1,), "invalid storage offset"),
    (0, (2,), (-1,), "negative strides"),
    (0, (-2,), (1,), "negative dimension"),
    (0, (2, 3), (1,), "unequal size length"),
])
def test_set_bad_layout_changes_nothing(device, offset, size, stride, match):
    s = tl.arange(4, device=device).untyped_storage()
    t = tl.arange(3, device=device)
    snap = snapshot(t, s)
    with pytest.raises(RuntimeError, match=match):
        t.set_(s, offset, size, stride)
    assert_unchanged(snap)


def test_set_bad_arguments_are_type_errors(device):
    t = tl.zeros(2, device=device)
    s = tl.UntypedStorage(8, device=device)
    snap = snapshot(t)
    with pytest.raises(TypeError):
        t.set_(np.zeros(2))
    with pytest.raises(TypeError):
        t.set_(s, 1)  # offset without size
    with pytest.raises(TypeError):
        t.set_(s, 1.5, (1,))
    with pytest.raises(TypeError):
        t.set_(storage_offset=1)
    assert_unchanged(snap)


def test_set_on_leaf_requiring_grad_refused(device):
    t = tl.zeros(3, device=device).requires_grad_()
    snap = snapshot(t)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        t.set_(tl.zeros(2, device=device))
    assert_unchanged(snap)


def test_set_out_of_memory_changes_nothing(device):
    s = tl.arange(4, dtype=tl.float32, device=device).untyped_storage()
    t = tl.zeros(2, device=device)
    snap = snapshot(t, s)
    with pytest.raises(RuntimeError, match="4000000000000000 bytes"):
        t.set_(s, 0, (10 ** 15,))
    assert_unchanged(snap)


def test_set_refuses_another_device():
    from tensorlab import backends
    if backends.cuda_unavailable_reason() is not None:
        pytest.skip("needs a CUDA device")
    t = tl.zeros(2, device="cuda")
    s = tl.UntypedStorage(8)
    snap = snapshot(t, s)
    with pytest.raises(RuntimeError, match="the devices must match"):
        t.set_(s, 0, (2,))
    assert_unchanged(snap)


def test_set_matches_torch(torch):
    def run(lib):
        out = []
        src = lib.arange(12, dtype=lib.float32)
        s = src.untyped_storage()
        t = lib.zeros(1)
        for args in [(s, 2, (2, 3)), (s, 1, (2, 2), (5, 2)), (s, 0, (4,), ()), (s, 3, (2, 10), (1, 1))]:
            t.set_(*args)
            out.append((tuple(t.shape), t.stride(), t.storage_offset(), s.nbytes(), t._version))
        t.set_(src)
        out.append((tuple(t.shape), t.stride(), t.storage_offset(), t._version, t.tolist()[:3]))
        t.set_()
        out.append((tuple(t.shape), t.stride(), t.untyped_storage().nbytes(), t._version))
        return out
    assert run(tl) == run(torch)


def test_zombie_sequence_from_the_pytorch_bug(device):
    """pytorch/pytorch#170298: set_ onto locked memory, then a failing resize_ left torch's tensor
    with shape [5, 5, 5] over 0 bytes. Here it keeps its shape and stays printable."""
    if device != "cpu":
        pytest.skip("from_numpy memory is CPU memory")
    locked = tl.from_numpy(np.array([], dtype=np.int32)).untyped_storage()
    t = tl.tensor([], dtype=tl.int32)
    t.set_(locked)
    snap = snapshot(t, locked)
    with pytest.raises(RuntimeError, match=NOT_RESIZABLE):
        t.resize_((5, 5, 5))
    assert_unchanged(snap)
    assert t.shape == (0,) and t.untyped_storage().nbytes() == 0
    assert repr(t) == "tensor([], dtype=tensorlab.int32)"


# -- UntypedStorage.resize_ -------------------------------------------------------------------

def test_storage_resize_grow_and_shrink_keep_leading_bytes(device):
    t = tl.arange(4, dtype=tl.int16, device=device)
    s = t.untyped_storage()
    s.resize_(20)
    assert s.nbytes() == 20 and t.tolist() == [0, 1, 2, 3]
    s.resize_(4)
    assert s.nbytes() == 4 and bytes(s.tolist()) == np.arange(2, dtype=np.int16).tobytes()
    ptr = s.data_ptr()
    s.resize_(4)  # same size: nothing to do
    assert s.data_ptr() == ptr


def test_storage_resize_refusals_change_nothing(device):
    s = tl.arange(4, device=device).untyped_storage()
    snap = snapshot(s)
    with pytest.raises(RuntimeError, match="non-negative"):
        s.resize_(-1)
    with pytest.raises(RuntimeError, match="4000000000000000 bytes"):
        s.resize_(4 * 10 ** 15)
    with pytest.raises(RuntimeError, match="overflow"):
        s.resize_(2 ** 64)
    assert_unchanged(snap)
    with pytest.raises(RuntimeError, match="overflow"):
        tl.UntypedStorage(2 ** 64, device=device)
    with pytest.raises(RuntimeError, match="4000000000000000 bytes"):
        tl.UntypedStorage(4 * 10 ** 15, device=device)


def test_reading_over_a_shrunk_storage_raises_then_recovers(device):
    t = tl.arange(10, dtype=tl.int64, device=device)
    v = view(t, (2,), offset=7)
    t.untyped_storage().resize_(40)
    for reader in (t.tolist, v.tolist, t.clone, repr, lambda: t.to(tl.float32)):
        with pytest.raises(RuntimeError, match="storage was shrunk"):
            reader() if reader is not repr else repr(t)
    assert view(t, (5,)).tolist() == [0, 1, 2, 3, 4]  # what still fits is readable
    t.resize_(10)  # grows the storage back; new bytes are uninitialized, as in torch
    assert t.tolist()[:5] == [0, 1, 2, 3, 4]


# -- out= targets --------------------------------------------------------------------------------

def test_out_resize_grows_and_keeps_views_consistent(device):
    out = tl.arange(3, dtype=tl.float32, device=device)
    v = view(out, (2,), offset=1)
    with pytest.warns(UserWarning, match="was resized"):
        res = tl.zeros(20, out=out)
    assert res is out and out.shape == (20,) and out.tolist() == [0.0] * 20
    assert out._version == 1 and out.untyped_storage().nbytes() == 80
    assert v.tolist() == [0.0, 0.0] and v.untyped_storage() is out.untyped_storage()


def test_out_not_resizable_changes_nothing(device):
    if device != "cpu":
        pytest.skip("from_numpy memory is CPU memory")
    arr = np.arange(3, dtype=np.float32)
    out = tl.from_numpy(arr)
    snap = snapshot(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=NOT_RESIZABLE):
            tl.zeros(20, out=out)
        with pytest.raises(RuntimeError, match="4000000000000000 bytes"):
            tl.zeros(10 ** 15, out=tl.zeros(0, device=device))
    assert_unchanged(snap)
    assert arr.tolist() == [0, 1, 2]


def test_out_resize_refused_when_another_writer_moved_the_storage(device):
    """Compare-and-swap at commit: a plan made before another thread resized the target is refused
    rather than publishing a buffer copied from stale bytes."""
    out = tl.arange(4, dtype=tl.int64, device=device)
    plan = plan_resize(out, (10,), op="zeros")
    out.resize_(50)  # "another thread"
    snap = snapshot(out)
    with pytest.raises(RuntimeError, match="another thread changed"):
        plan.commit()
    assert_unchanged(snap)


def test_old_snapshot_reads_the_grown_buffer_consistently(device):
    """A reader holding the record from before a grow reads the new, larger buffer: same bytes."""
    t = tl.arange(6, dtype=tl.int64, device=device)
    storage, lay = t._meta
    reader = tl.Tensor._make(storage, lay, t.dtype)  # what a concurrent reader pinned
    t.resize_(1000)
    assert storage._buf is not None and reader.tolist() == list(range(6))
    storage.resize_(16)  # shrinking: the stale reader is refused, not let past the buffer
    with pytest.raises(RuntimeError, match="storage was shrunk"):
        reader.tolist()


def test_zombie_example_runs_and_shows_tensorlab_unchanged(capsys):
    import runpy
    from pathlib import Path
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "zombie_tensor.py"), run_name="__main__")
    ours = capsys.readouterr().out.split("== tensorlab", 1)[1]
    line = next(x for x in ours.splitlines() if x.startswith("4. after the failed resize_"))
    assert "shape=[0] stride=[1] storage nbytes=0" in line
    assert "9. big is untouched: tensor([0., 1., 2., 3., 4., 5.])" in ours


def _state(t, base):
    s = base.untyped_storage()
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t._version, t.untyped_storage().nbytes(),
            s.nbytes(), base.tolist())


def test_random_resize_and_set_sequences_match_torch(torch):
    from hypothesis import given, settings, strategies as st
    dims = st.lists(st.integers(0, 4), min_size=0, max_size=3)
    op = st.one_of(
        st.tuples(st.just("resize"), dims),
        st.tuples(st.just("set"), st.integers(0, 6), dims, st.integers(0, 3)),
        st.tuples(st.just("set_tensor")),
    )

    @settings(max_examples=60, deadline=None)
    @given(st.lists(op, min_size=1, max_size=6))
    def run(ops):
        results = []
        for lib in (tl, torch):
            base = lib.arange(8, dtype=lib.float32)
            t = lib.zeros(2, dtype=lib.float32)
            trace = []
            for o in ops:
                error = None
                try:
                    if o[0] == "resize":
                        t.resize_(tuple(o[1]))
                    elif o[0] == "set":
                        _, offset, shape, k = o
                        stride = tuple(L.contiguous_strides(shape)[i] * (k + 1) if i == 0 else
                                       L.contiguous_strides(shape)[i] for i in range(len(shape)))
                        t.set_(base.untyped_storage(), offset, tuple(shape), stride)
                    else:
                        t.set_(base)
                except RuntimeError as e:  # e.g. set_ past the end of the storage: both must refuse
                    error = type(e).__name__
                st_ = _state(t, base) + (error,)
                n = L.extent(t.shape, t.stride(), t.storage_offset())
                vals = t.tolist() if n <= 8 and t.untyped_storage() is base.untyped_storage() else None
                trace.append(st_ + (vals,))
            results.append(trace)
        assert results[0] == results[1]
    run()


def test_set_same_geometry_does_not_grow_storage(torch):
    """torch 2.13 grows a resizable storage in set_ only when the sizes or strides change: the same
    geometry at an offset past the end is refused, and nothing changes (hypothesis found this)."""
    for lib in (tl, torch):
        base = lib.arange(8, dtype=lib.float32)
        t = lib.zeros(2)
        t.set_(base.untyped_storage(), 0, (3, 1), (2, 1))
        with pytest.raises(RuntimeError, match="out of bounds for storage of size 32"):
            t.set_(base.untyped_storage(), 4, (3, 1), (2, 1))
        assert (tuple(t.shape), t.stride(), t.storage_offset()) == ((3, 1), (2, 1), 0)
        assert base.untyped_storage().nbytes() == 32
        t.set_(base.untyped_storage(), 4, (3,), (2,))  # a new geometry grows it
        assert base.untyped_storage().nbytes() == 36
