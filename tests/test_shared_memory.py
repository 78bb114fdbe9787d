"""Tensor.share_memory_ / UntypedStorage.share_memory_ / Module.share_memory: CPU storages moved into
shared memory keep their values, are seen by other processes (spawn: pickled as the segment's name;
fork: the inherited mapping), views included; a Hogwild-style model updated by two processes; the
segment unlinked when the owner's storage goes; a shared storage refuses to resize (torch crashes
there); CUDA tensors are left as they are (they count as shared, as in torch)."""
from __future__ import annotations

import gc
import os
import pickle

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.multiprocessing as mp
from tensorlab import shared_memory


def _add_in_child(t, value):
    t.add_(value)


def _hogwild_rows(model, row, steps):
    with tl.no_grad():
        for _ in range(steps):
            model.weight[row] += 1.0
            model.bias[row] -= 0.5


def _from_queue(q):
    view = q.get()
    view.fill_(7.0)


def test_values_kept_views_shared_and_not_resizable():
    x = tl.arange(12.0).view(3, 4)
    assert not x.is_shared() and not x.untyped_storage().is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and x[1:, 2].is_shared() and x.untyped_storage().is_shared()
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist()
    x[0, 0] = 5.0  # still an ordinary writable tensor
    assert x[0, 0].item() == 5.0
    assert not x.untyped_storage().resizable()
    with pytest.raises(RuntimeError, match="not resizable"):
        x.resize_(100)
    assert x.shape == (3, 4) and x[2, 3].item() == 11.0
    name = shared_memory.segment_name(x.untyped_storage()._buf)
    x.share_memory_()  # already shared: the same segment
    assert shared_memory.segment_name(x.untyped_storage()._buf) == name


def test_pickle_in_one_process_aliases_the_memory():
    x = tl.zeros(6).share_memory_()
    y = pickle.loads(pickle.dumps(x[2:5]))
    y.fill_(3.0)
    assert x.tolist() == [0, 0, 3, 3, 3, 0]
    p = tl.zeros(4)  # an unshared tensor still travels by value
    q = pickle.loads(pickle.dumps(p))
    q.fill_(1.0)
    assert p.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_child_process_writes_what_the_parent_sees(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} here")
    ctx = mp.get_context(method)
    x = tl.zeros(2, 3).share_memory_()
    p = ctx.Process(target=_add_in_child, args=(x[1], 2.5))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert x.tolist() == [[0, 0, 0], [2.5, 2.5, 2.5]]


def test_a_view_through_a_queue():
    ctx = mp.get_context("spawn")
    x = tl.zeros(10).share_memory_()
    q = ctx.Queue()
    p = ctx.Process(target=_from_queue, args=(q,))
    p.start()
    q.put(x[3:9:2])
    p.join(60)
    assert p.exitcode == 0
    assert x.tolist() == [0, 0, 0, 7, 0, 7, 0, 7, 0, 0]


def test_hogwild_model_updated_by_two_processes():
    model = tl.nn.Linear(3, 2)
    with tl.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    assert model.share_memory() is model
    assert model.weight.is_shared() and model.bias.is_shared() and model.weight.requires_grad
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_hogwild_rows, args=(model, row, 5)) for row in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert model.weight.tolist() == [[5.0] * 3, [5.0] * 3] and model.bias.tolist() == [-2.5, -2.5]
    out = model(tl.ones(1, 3))  # still a working module
    assert out.tolist() == [[12.5, 12.5]]


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm to look in")
def test_the_segment_goes_with_the_owners_storage():
    x = tl.ones(1000).share_memory_()
    name = shared_memory.segment_name(x.untyped_storage()._buf)
    assert os.path.exists(f"/dev/shm/{name}")
    del x
    gc.collect()
    assert not os.path.exists(f"/dev/shm/{name}")


@pytest.mark.cuda
def test_cuda_tensors_stay_where_they_are(cuda):
    x = tl.ones(3, device=cuda)
    buf = x.untyped_storage()._buf
    assert x.share_memory_() is x and x.is_shared() and x.untyped_storage()._buf is buf
