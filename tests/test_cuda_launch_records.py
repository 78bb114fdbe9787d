"""The CUDA launch records (backends/cuda/elementwise._run1/_run2, reduction._reduce1): what a record
caches per (kernel, layout class) must never stand in for what is checked per call - bounds, offsets,
pack alignment, the indexing width - and a call the record refuses must change nothing. Written once,
run on every device (the CPU runs its own paths through the same front end)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

_OPS = {
    "add": (lambda x, y: x + y, lambda x, y: x + y),
    "mul_number": (lambda x, y: x * 2.5, lambda x, y: x * np.float32(2.5)),
    "number_sub": (lambda x, y: 3.0 - x, lambda x, y: np.float32(3.0) - x),
    "neg": (lambda x, y: x.neg(), lambda x, y: -x),
    "sum": (lambda x, y: x.sum(), lambda x, y: x.sum(dtype=np.float32)),
}


@pytest.mark.parametrize("op", sorted(_OPS))
def test_a_record_reused_at_every_offset_and_alignment(device, op):
    """The same shape at element offsets 0..4 (16-byte aligned and not): each call computes its own
    pointers and pack alignment; the second call of each comes from the record."""
    fn, ref = _OPS[op]
    host = (np.arange(24, dtype=np.float32) - 7) / 4
    base = tl.tensor(host, device=device)
    other = tl.tensor(host[::-1].copy(), device=device)
    for off in range(5):
        x, y = base[off:off + 8], other[off:off + 8]
        want = ref(host[off:off + 8], host[::-1][off:off + 8])
        for _ in range(2):
            np.testing.assert_allclose(np.asarray(fn(x, y).cpu().numpy()), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", sorted(_OPS))
def test_a_storage_shrunk_after_the_record_is_refused_and_nothing_runs(device, op):
    fn, _ = _OPS[op]
    x = tl.arange(8, dtype=tl.float32, device=device)
    y = tl.ones(8, device=device)
    for _ in range(2):
        fn(x, y)  # the record exists
    x.untyped_storage().resize_(16)
    launches = _launch_count()
    with pytest.raises(RuntimeError, match="storage was shrunk"):
        fn(x, y)
    assert _launch_count() == launches


def _launch_count():
    from tensorlab.backends.cuda import launch as K
    return sum(K.LAUNCHES.values())


def test_wide_indexing_is_part_of_the_records_key(cuda):
    from tensorlab.backends.cuda import launch as K
    x = tl.arange(8, dtype=tl.float32, device=cuda)[1:]  # strided by offset: the generic kernel when wide
    y = tl.ones(7, device=cuda)

    def launched(fn):
        before = dict(K.LAUNCHES)
        fn()
        return {e for (s, e), v in K.LAUNCHES.items() if v != before.get((s, e), 0)}

    for fn in (lambda: x + y, lambda: x.neg(), lambda: x.sum()):
        narrow = launched(fn)
        with K.wide_indexing():
            wide = launched(fn)
            assert launched(fn) == wide
        assert launched(fn) == narrow
        assert all("long long" not in e for e in narrow if "_vec" not in e)
        assert all("long long" in e for e in wide), wide


def test_a_record_keeps_the_layouts_it_is_keyed_by(cuda):
    """Records are found by the Layout records' identity: a record holds them, so no other layout
    can take their ids while it is cached."""
    from tensorlab.backends.cuda import elementwise as E
    x = tl.arange(6, dtype=tl.float32, device=cuda).view(2, 3).t()
    y = tl.ones(3, 2, device=cuda)
    (x + y).cpu()
    recs = [r for k, r in E._REC2.items() if k[0] == "add" and k[6] == id(x._meta.layout)]
    assert recs and recs[0][-1][1] is x._meta.layout
    np.testing.assert_array_equal((x + y).cpu().numpy(), np.arange(6, dtype=np.float32).reshape(2, 3).T + 1)
