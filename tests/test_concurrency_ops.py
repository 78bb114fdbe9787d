"""Ops racing a writer that flips a tensor between two published states (set_) or cycles its shape
(resize_): every result must be the op applied to one of the published states, or the documented
"another thread changed this tensor" refusal with nothing changed - never a torn view (one state's
layout over the other's storage), a NumPy error, or a false overlap error (docs/exception-safety.md,
"What a concurrent reader may observe").

The race only needs to be exercised: every observed result is checked, so passing does not depend
on luck, and on code that reads a tensor's record twice per op these tests fail within a second."""
import re
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import tensorlab as tl

DURATION = 0.5
RACE = re.compile("another thread changed this tensor")


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads every few microseconds instead of 5 ms, so the races interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _race(writer, reader, min_reads=200, duration=DURATION, max_duration=4.0):
    """Run writer and reader loops; reader returns normally or raises. Returns the reader's count."""
    stop = threading.Event()
    errors, reads = [], [0]

    def write_loop():
        try:
            while not stop.is_set():
                writer()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            stop.set()

    th = threading.Thread(target=write_loop)
    th.start()
    start = time.monotonic()
    try:
        while not stop.is_set():
            reader()
            reads[0] += 1
            elapsed = time.monotonic() - start
            if elapsed > max_duration or (elapsed > duration and reads[0] >= min_reads):
                break
    finally:
        stop.set()
        th.join()
    if errors:
        raise errors[0]
    return reads[0]


def _states(device, shape_b=(4, 6)):
    """t, and two published states of it: A (contiguous 4x6, 0..23) and B (strided, offset, 1001..)."""
    a = tl.arange(24, device=device).reshape(4, 6)
    b = (tl.arange(48, device=device) + 1000).as_strided(shape_b, (2 * shape_b[1], 2), 1)
    t = tl.empty(0, dtype=tl.int64, device=device)
    t.set_(a)
    return t, a, b


def _flipper(t, a, b):
    def writer():
        t.set_(b)
        t.set_(a)
    return writer


def _host(r):
    if isinstance(r, tl.Tensor):
        return r.cpu().numpy()
    return [_host(x) for x in r]


def _same(x, y):
    if isinstance(x, list):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))
    return x.shape == y.shape and np.array_equal(x, y)


MASK = np.arange(24).reshape(4, 6) % 3 == 0

VIEW_OPS = {
    "t": lambda t: t.t(),
    "getitem_int": lambda t: t[1],
    "getitem_col": lambda t: t[:, 2],
    "getitem_slices": lambda t: t[1:3, ::2],
    "reshape": lambda t: t.reshape(-1),
    "reshape_3d": lambda t: t.reshape(2, 2, 6),
    "expand": lambda t: t[:1].expand(3, 6),
    "diagonal": lambda t: t.diagonal(),
    "narrow": lambda t: t.narrow(1, 1, 3),
    "select": lambda t: t.select(0, 2),
    "mask": lambda t: t[tl.tensor(MASK, device=t.device)],
    "advanced": lambda t: t[[0, 3], [1, 5]],
    "contiguous_view": lambda t: t.contiguous().view(-1),
    "permute": lambda t: t.permute(1, 0),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "split": lambda t: list(t.split(2, 1)),
    "chunk": lambda t: list(t.chunk(2, 0)),
    "unbind": lambda t: list(t.unbind(1)),
    "clone": lambda t: t.clone(),
}

COMPUTE_OPS = {
    "mul_scalar": lambda t: t * 2,
    "add_self": lambda t: t + t,
    "sub_other": lambda t: t - tl.ones(1, dtype=tl.int64, device=t.device),
    "neg": lambda t: -t,
    "float": lambda t: t.float(),
    "where": lambda t: tl.where(tl.ones((), dtype=tl.bool, device=t.device), t, 0),
    "clamp": lambda t: t.clamp(3, 1020),
    "sum0": lambda t: t.sum(0),
    "amax1": lambda t: t.amax(1),
    "max1": lambda t: list(t.max(1)),
    "sort": lambda t: list(t.sort(1, descending=True)),
    "median": lambda t: list(t.median(1)),
    "cumsum": lambda t: t.cumsum(1),
    "sum_keepdim": lambda t: t.float().sum(1, keepdim=True),
}


def _check_ops(device, ops, shape_b=(4, 6)):
    t, a, b = _states(device, shape_b)
    want = {name: (_host(f(a)), _host(f(b))) for name, f in ops.items()}
    names = list(ops)
    torn, i = [], [0]

    def reader():
        name = names[i[0] % len(names)]
        i[0] += 1
        got = _host(ops[name](t))
        if not (_same(got, want[name][0]) or _same(got, want[name][1])):
            torn.append(name)

    reads = _race(_flipper(t, a, b), reader, min_reads=20 * len(names))
    assert not torn, f"{len(torn)} of {reads} results match neither published state: {sorted(set(torn))}"


def test_views_of_a_tensor_flipped_by_set_are_never_torn(device):
    _check_ops(device, VIEW_OPS)


def test_elementwise_and_reductions_of_a_flipped_tensor_use_one_state(device):
    _check_ops(device, COMPUTE_OPS, shape_b=(3, 8))  # B has another shape: a result sized by one state and
    # filled from the other is caught


INPLACE_OPS = {  # each leaves the values as they were, so every state keeps its data
    "add_out_self": lambda t: tl.add(t, 0, out=t),
    "mul_out_self_twice": lambda t: tl.mul(t, 1, out=t),
    "add_": lambda t: t.add_(0),
    "mul_self": lambda t: t.mul_(tl.ones((), dtype=tl.int64, device=t.device)),
    "clamp_": lambda t: t.clamp_(-10 ** 6, 10 ** 6),
    "addcmul_self": lambda t: t.addcmul_(t, tl.zeros(6, dtype=tl.int64, device=t.device)),
    "where_out": lambda t: tl.where(tl.tensor(MASK, device=t.device), t, t, out=t),
    "masked_fill_": lambda t: t.masked_fill_(tl.zeros(6, dtype=tl.bool, device=t.device), 0),
    "setitem_mask": lambda t: t.__setitem__(tl.zeros(4, 6, dtype=tl.bool, device=t.device), 7),
}


def test_inplace_and_out_ops_on_a_flipped_tensor_give_no_false_errors(device):
    t, a, b = _states(device)
    a0, b0 = a.cpu().numpy().copy(), b.cpu().numpy().copy()
    names = list(INPLACE_OPS)
    unexpected, refused, i = [], [0], [0]

    def reader():
        name = names[i[0] % len(names)]
        i[0] += 1
        try:
            INPLACE_OPS[name](t)
        except RuntimeError as e:
            if RACE.search(str(e)):
                refused[0] += 1
            else:
                unexpected.append(f"{name}: {e}")
        except Exception as e:  # noqa: BLE001 - any other type is a leak (NumPy's, an IndexError ...)
            unexpected.append(f"{name}: {type(e).__name__}: {e}")

    reads = _race(_flipper(t, a, b), reader, min_reads=20 * len(names))
    assert not unexpected, f"{len(unexpected)} unexpected errors in {reads} ops: {unexpected[:5]}"
    np.testing.assert_array_equal(a.cpu().numpy(), a0)  # every op wrote the values it read
    np.testing.assert_array_equal(b.cpu().numpy(), b0)


CYCLE = [(4, 6), (3, 10), (2, 12), (6, 4), (24,), (3, 8)]


def test_ops_racing_resize_see_one_shape(device):
    """resize_ cycles t through shapes over one storage (0..29): t * 2 and t + t are 2*(0..n-1) in one
    of the shapes, never NumPy's broadcast error; out=t is that or the documented refusal."""
    t = tl.arange(30, device=device)
    t.resize_(*CYCLE[0])
    shapes = {s for s in CYCLE}
    bad = []

    def writer():
        for s in CYCLE:
            t.resize_(*s)

    def reader():
        for r in (t * 2, t + t):
            arr = r.cpu().numpy()
            if arr.shape not in shapes or not np.array_equal(arr.ravel(), 2 * np.arange(arr.size)):
                bad.append(arr.shape)
        try:
            r = tl.mul(t, 1, out=t)
            arr = r.cpu().numpy()
            if arr.shape not in shapes or not np.array_equal(arr.ravel(), np.arange(arr.size)):
                bad.append(("out", arr.shape))
        except RuntimeError as e:
            if not RACE.search(str(e)):
                bad.append(str(e))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # out=t resized when another thread changed its shape
        reads = _race(writer, reader, min_reads=300)
    assert not bad, f"{len(bad)} of {reads} rounds saw a result of no published state: {bad[:5]}"


def test_tuple_out_sharing_a_storage_commits_together(device):
    """The issue's case: outs that are two views of one buffer are resized together, as torch."""
    b = tl.zeros(2, dtype=tl.int64, device=device)
    v, i = b[:1], b[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = tl.max(tl.arange(6, device=device).reshape(2, 3), 0, out=(v, i))
    assert r.values is v and r.indices is i
    assert v.shape == (3,) and i.shape == (3,) and v.storage_offset() == 0 and i.storage_offset() == 1
    assert v.untyped_storage().data_ptr() == i.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert v._version == i._version == b._version == 2  # one shared counter, one bump per output (torch: 2)
    assert b.shape == (2,)
    # the two results overlap (elements 1..2): torch interleaves its writes there; we write values then
    # indices (tests/torch_divergences.py). The parts that do not overlap are each op's own result.
    assert v.tolist()[0] == 3 and i.tolist() == [1, 1, 1]
