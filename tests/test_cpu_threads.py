"""The CPU backend's thread pool (tensorlab/backends/cpu/parallel.py): tl.get_num_threads /
tl.set_num_threads as torch's, results independent of the thread count (bit-identical for
elementwise ops and copies, one fixed blocking for reductions), exceptions from workers, calls
from two threads at once, from inside a pool worker and while the pool is busy, and fault
injection in a large op. The pool is the CPU backend's, so these tests run on the CPU only."""
import os
import threading

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn.functional as F
from tensorlab.backends.cpu import parallel, reduction
from tensorlab.testing import InjectedFault, assert_unchanged, inject_fault, snapshot

BIG = 1 << 19          # elements: above parallel.PARALLEL_MIN and reduction.BLOCKED_MIN
THREADS = (1, 2, 3)


@pytest.fixture(autouse=True)
def _restore_threads(monkeypatch):
    n = tl.get_num_threads()
    parallel._spin_until = 0.0  # no test starts in OpenBLAS's mode (parallel.blas_product) because of another
    monkeypatch.setattr(parallel, "POOL_PAYS_S", 0.0)  # large ops split whatever their cost (the cost rule's
    yield                                             # own tests set it)
    tl.set_num_threads(n)
    parallel._spin_until = 0.0


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def each_thread_count(fn):
    """fn()'s results (NumPy arrays) with 1, 2 and 3 threads."""
    out = []
    for n in THREADS:
        tl.set_num_threads(n)
        out.append(fn())
    return out


def same_bits(results):
    first = results[0]
    for r in results[1:]:
        assert r.dtype == first.dtype and r.shape == first.shape
        if r.tobytes() != first.tobytes():  # (not an assert on the bytes: pytest's diff of them runs for minutes)
            diff = np.flatnonzero(r.reshape(-1) != first.reshape(-1))
            raise AssertionError(f"{diff.size} of {r.size} elements differ, first at flat index {diff[:5]}: "
                                 f"{r.reshape(-1)[diff[:5]]} vs {first.reshape(-1)[diff[:5]]}")


# -- the thread count ---------------------------------------------------------------------------------

def test_default_is_usable_cores():
    assert tl.get_num_threads() == len(os.sched_getaffinity(0))


@pytest.fixture
def torch_threads(torch):
    """torch, with its thread count put back afterwards."""
    n = torch.get_num_threads()
    yield torch
    torch.set_num_threads(n)


def test_set_get_num_threads(torch_threads):
    torch = torch_threads
    for n in (1, 3, 2):
        tl.set_num_threads(n)
        torch.set_num_threads(n)
        assert tl.get_num_threads() == n == torch.get_num_threads()


@pytest.mark.parametrize("bad", [0, -1, 2.5, "2", True, None])
def test_set_num_threads_errors_as_torch(bad, torch):
    with pytest.raises(RuntimeError) as ours:
        tl.set_num_threads(bad)
    with pytest.raises(RuntimeError) as theirs:
        torch.set_num_threads(bad)
    assert str(ours.value) == str(theirs.value)


def test_numpy_int_and_overflow_as_torch(torch_threads):
    torch = torch_threads
    tl.set_num_threads(np.int64(3))
    torch.set_num_threads(np.int64(3))
    assert tl.get_num_threads() == 3 == torch.get_num_threads()
    with pytest.raises(ValueError) as ours:
        tl.set_num_threads(1 << 31)
    with pytest.raises(ValueError) as theirs:
        torch.set_num_threads(1 << 31)
    assert str(ours.value) == str(theirs.value)
    assert tl.get_num_threads() == 3


def test_bad_thread_count_keeps_the_old_one():
    tl.set_num_threads(2)
    with pytest.raises(RuntimeError, match="positive integer"):
        tl.set_num_threads(0)
    assert tl.get_num_threads() == 2


def test_pool_size_follows(monkeypatch):
    tl.set_num_threads(3)
    x = tl.from_numpy(rand(BIG))
    (x + x).sum()  # starts the workers
    assert sum(w.is_alive() for w in parallel._workers) == 2
    tl.set_num_threads(1)
    assert parallel._workers == []


def test_blas_threads_follow():
    if not parallel.blas_follows():
        pytest.skip("NumPy's BLAS exposes no thread control here")
    tl.set_num_threads(1)
    assert parallel.blas_num_threads() == 1
    tl.set_num_threads(2)
    assert parallel.blas_num_threads() == min(2, len(os.sched_getaffinity(0)))
    tl.set_num_threads(1)
    a = rand(256, 256)
    np.testing.assert_allclose((tl.from_numpy(a) @ tl.from_numpy(a)).numpy(), a @ a, rtol=1e-5, atol=1e-4)


def test_blas_core_names_the_kernels_openblas_loaded():
    """parallel.blas_core() reads the kernel set off the OpenBLAS library NumPy loaded (the bench
    prints it): in a fresh process told OPENBLAS_CORETYPE=Sandybridge it says so."""
    import subprocess
    import sys
    if not parallel.blas_follows():
        pytest.skip("NumPy's BLAS is not a reachable OpenBLAS here")
    assert parallel.blas_core()
    env = dict(os.environ, OPENBLAS_CORETYPE="Sandybridge")
    code = "from tensorlab.backends.cpu import parallel; print(parallel.blas_core())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "Sandybridge", out.stderr


def test_blas_single_threaded_inside_pool_calls():
    """While a pool call runs, BLAS runs with one thread (the pool is the parallelism; a BLAS call
    in a task then splits nothing, so its bits do not depend on the thread count); afterwards
    BLAS has its thread count back, also when set_num_threads was called meanwhile."""
    if not parallel.blas_follows():
        pytest.skip("NumPy's BLAS exposes no thread control here")
    tl.set_num_threads(2)
    before = parallel.blas_num_threads()
    seen = []

    bounds = []

    def task(i):
        seen.append(parallel.blas_num_threads())
        bounds.append(parallel.blas_threads_bound())  # what BLAS returns to: a large sum aligns for it
        if i == 0:
            tl.set_num_threads(2)  # from inside a call: applied when the call ends
    parallel.run(4, task)
    assert seen == [1, 1, 1, 1]
    assert bounds == [before] * 4
    assert parallel.blas_num_threads() == before
    tl.set_num_threads(1)
    assert parallel.blas_num_threads() == 1


def test_blas_modes_keep_spinning_openblas_threads_off_the_pool():
    """A product of BLAS_OWN_MIN multiply-adds or more runs on OpenBLAS's threads; while those may
    still spin, pool calls run on the calling thread with BLAS held at one (a worker would share a
    core with a spinning thread) and smaller products may use OpenBLAS's threads too. Otherwise a
    product OpenBLAS would thread is held at one thread and the pool has the cores."""
    if not parallel.blas_follows() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs OpenBLAS's thread control and two cores")
    tl.set_num_threads(2)
    seen = []

    def product():
        seen.append(parallel.blas_num_threads())
    parallel.blas_product(parallel.BLAS_THREADED_FROM // 2, product)  # OpenBLAS would not thread it: as is
    parallel.blas_product(parallel.BLAS_OWN_MIN // 2, product)  # held at one
    assert seen == [2, 1] and not parallel.blas_spinning()
    bar = threading.Barrier(2, timeout=30)
    parallel.run(2, lambda i: bar.wait())  # two threads: the barrier needs both

    parallel.blas_product(parallel.BLAS_OWN_MIN, product)  # OpenBLAS's threads
    assert seen[2] == 2 and parallel.blas_spinning()
    window = parallel._spin_until
    parallel.blas_product(parallel.BLAS_OWN_MIN // 2, product)  # they spin: a smaller one is still held at one
    assert seen[3] == 1 and parallel._spin_until == window  # (its bits never depend on the window), no extension
    ran = []
    parallel.run(3, lambda i: ran.append((threading.current_thread(), parallel.blas_num_threads())))
    assert ran == [(threading.current_thread(), 1)] * 3
    assert parallel.elementwise(lambda o, a: np.add(a, 1, out=o), np.empty(BIG, np.float32),
                                (np.ones(BIG, np.float32),)) is False  # the caller's one call
    assert parallel.blas_num_threads() == 2

    # through the ops: a GEMM-sized product switches modes, a convolution's stack of small ones does not
    parallel._spin_until = 0.0
    x, w = rand(64, 16, 72, seed=30), rand(72, 576, seed=31)  # 64 products of 663Ki multiply-adds
    stack = (tl.from_numpy(x) @ tl.from_numpy(w)).numpy()
    assert not parallel.blas_spinning()
    np.testing.assert_allclose(stack, np.matmul(x, w), rtol=1e-5, atol=1e-4)
    a, b = rand(512, 128, seed=32), rand(128, 256, seed=33)
    np.testing.assert_allclose((tl.from_numpy(a) @ tl.from_numpy(b)).numpy(), a @ b, rtol=1e-5, atol=1e-4)
    assert parallel.blas_spinning()
    same_bits([(tl.from_numpy(x) @ tl.from_numpy(w)).numpy(), stack])  # serial meanwhile: the same bits
    tl.set_num_threads(1)
    same_bits([(tl.from_numpy(x) @ tl.from_numpy(w)).numpy(), stack])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_during_a_pool_call_gives_the_child_its_blas_threads():
    """A process forked while a pool call holds BLAS at one thread: the child has no pool call in
    flight, so it gets BLAS's thread count back (and its pool works)."""
    if not parallel.blas_follows() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs OpenBLAS's thread control and two cores")
    tl.set_num_threads(2)
    result = {}

    def task(i):
        if i == 0:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: report BLAS's threads and a pool sum, then leave at once
                os.close(r)
                ok = float(tl.from_numpy(np.ones(1 << 20, np.float32)).sum()) == float(1 << 20)
                os.write(w, f"{parallel.blas_num_threads()} {int(ok)}".encode())
                os._exit(0)
            os.close(w)
            os.waitpid(pid, 0)
            result["child"] = os.read(r, 64).decode()
            os.close(r)
    parallel.run(2, task)
    assert result["child"] == "2 1"


def test_float_sum_by_blas_rows_is_accurate():
    """A large contiguous float32 sum goes through BLAS dot products of fixed rows (plus a tail):
    as accurate as NumPy's pairwise sum against float64, whatever the length's remainder."""
    rng = np.random.default_rng(11)
    for n in (1 << 20, (1 << 21) + 4095, 3 * (1 << 20) + 1):
        a = (rng.standard_normal(n) + 0.25).astype(np.float32)
        exact = a.astype(np.float64).sum()
        ours = float(tl.from_numpy(a).sum())
        assert abs(ours - exact) <= max(4 * abs(float(a.sum()) - exact), 1e-6 * abs(exact))
        mean = float(tl.from_numpy(a).mean())
        assert mean == pytest.approx(exact / n, rel=1e-5)
    d = rng.standard_normal(1 << 20)
    assert float(tl.from_numpy(d).sum()) == pytest.approx(d.sum(), rel=1e-12)
    for n in (1 << 20, 4096 * 77 + 3, 4096 * 1101 + 5):  # the last: blocks of 512, 512 and 77 rows
        a = rand(n, seed=n)
        if parallel.blas_threads() is not None:
            # blocks of rows over the pool, BLAS on one thread in each: the same bits at every
            # thread count, and the bits of one product over all the rows
            sums = []
            for t in (1, 2, 3):
                tl.set_num_threads(t)
                sums.append(reduction._dot_sum(a).tobytes())
            assert len(set(sums)) == 1
            rows = n // reduction.DOT_ROW
            whole = parallel.blas_serial(np.matmul, a[:rows * reduction.DOT_ROW].reshape(rows, -1),
                                         np.ones(reduction.DOT_ROW, a.dtype))
            one = np.add.reduce(np.concatenate([whole, np.add.reduce(a[rows * reduction.DOT_ROW:], keepdims=True)]),
                                keepdims=True)
            assert sums[0] == one.tobytes()
    special = np.ones(1 << 20, np.float32)
    special[12345] = np.inf
    assert float(tl.from_numpy(special).sum()) == np.inf
    special[777] = -np.inf
    assert np.isnan(float(tl.from_numpy(special).sum()))


# -- elementwise: bit-identical whatever the thread count ---------------------------------------------

A = rand(BIG + 7, seed=1)
B = rand(BIG + 7, seed=2) + 3
M = rand(1024, 769, seed=3)
Q = rand(769, 1024, seed=4)

UNARY = ["exp", "log", "sin", "tanh", "sqrt", "sigmoid", "relu", "neg", "abs", "rsqrt", "erf", "expm1"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_bit_identical(op):
    x = tl.from_numpy(np.abs(A) if op in ("log", "sqrt", "rsqrt") else A)
    same_bits(each_thread_count(lambda: getattr(x, op)().numpy()))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "atan2", "eq", "remainder"])
def test_binary_bit_identical(op):
    x, y = tl.from_numpy(A), tl.from_numpy(B)
    same_bits(each_thread_count(lambda: getattr(tl, op)(x, y).numpy()))


@pytest.mark.parametrize("name,fn", [
    ("where", lambda x, y: tl.where(x > 0, x, y)), ("clamp", lambda x, y: x.clamp(-0.5, 0.5)),
    ("lerp", lambda x, y: tl.lerp(x, y, 0.3)), ("addcmul", lambda x, y: tl.addcmul(x, x, y, value=0.5)),
    ("masked_fill", lambda x, y: x.masked_fill(y > 3, 1.0)), ("gelu", lambda x, y: tl.nn.functional.gelu(x)),
    ("half_add", lambda x, y: x.half() + y.half()), ("int_floordiv", lambda x, y: (x * 100).int() // 7),
])
def test_ternary_and_mixed_bit_identical(name, fn):
    x, y = tl.from_numpy(A), tl.from_numpy(B)
    same_bits(each_thread_count(lambda: fn(x, y).numpy()))


def test_plain_ops_match_numpy_bits():
    x, y = tl.from_numpy(A), tl.from_numpy(B)
    for n in THREADS:
        tl.set_num_threads(n)
        assert (x + y).numpy().tobytes() == (A + B).tobytes()
        assert (x * y).numpy().tobytes() == (A * B).tobytes()
        assert x.exp().numpy().tobytes() == np.exp(A).tobytes()
        assert (x / y).numpy().tobytes() == (A / B).tobytes()


def test_transposed_and_broadcast_operands():
    m, q = tl.from_numpy(M), tl.from_numpy(Q)
    row = tl.from_numpy(M[0].copy())
    col = tl.from_numpy(M[:, :1].copy())
    for n in THREADS:
        tl.set_num_threads(n)
        assert (m + q.T).numpy().tobytes() == np.ascontiguousarray(M + Q.T).tobytes()
        assert (q.T * m).numpy().tobytes() == np.ascontiguousarray(Q.T * M).tobytes()
        assert (m + row).numpy().tobytes() == (M + M[0]).tobytes()
        assert (m - col).numpy().tobytes() == (M - M[:, :1]).tobytes()
        np.testing.assert_array_equal(q.T.contiguous().numpy(), Q.T)
        np.testing.assert_array_equal(q.T.exp().numpy(), np.exp(Q.T))
        np.testing.assert_array_equal(tl.where(m > 0, m, q.T).numpy(), np.where(M > 0, M, Q.T))
        np.testing.assert_array_equal(m[:, ::2].add(1.5).numpy(), M[:, ::2] + np.float32(1.5))


def test_fill_and_zero_bit_identical():
    for n in THREADS:
        tl.set_num_threads(n)
        t = tl.empty(BIG + 3)
        t.fill_(2.5)
        np.testing.assert_array_equal(t.numpy(), np.full(BIG + 3, 2.5, np.float32))
        u = tl.from_numpy(M.copy()).T
        u.zero_()
        assert not u.numpy().any()
        v = tl.empty(BIG, dtype=tl.int8)
        v.fill_(-3)
        assert (v.numpy() == -3).all()


def test_transposed_edges_and_batches():
    """Shapes that are not multiples of the tile, a batch dim, and float64/int8/bool copies."""
    X = rand(3, 301, 517, seed=5)
    x = tl.from_numpy(X)
    for n in THREADS:
        tl.set_num_threads(n)
        np.testing.assert_array_equal((x.transpose(1, 2) + x.transpose(1, 2).contiguous()).numpy(),
                                      X.transpose(0, 2, 1) * 2)
        for dt, np_dt in ((tl.float64, np.float64), (tl.int8, np.int8), (tl.bool, np.bool_)):
            y = x.to(dt)
            np.testing.assert_array_equal(y.transpose(0, 2).contiguous().numpy(),
                                          X.astype(np_dt).transpose(2, 1, 0))


@pytest.mark.parametrize("shape,tiles", [((182, 182), False), ((256, 256), True), ((300, 700), False),
                                         ((512, 512), True), ((3, 128, 256), True), ((2, 200, 130), False)])
def test_transposed_ops_below_the_pool_threshold(shape, tiles, monkeypatch):
    """From parallel.TILED_MIN elements on, an op whose operand is transposed relative to its output
    (x.T + x, x.T.contiguous(), copy_ of a transposed view, a casting copy) goes through tiles even
    below the pool's threshold where the transposed operand's stride is a multiple of
    parallel.ALIASED bytes (power-of-two rows), through NumPy's own order elsewhere, and an
    F-ordered result is computed in the reversed (C) frame: NumPy's bits and torch's strides always."""
    X = rand(*shape, seed=13)
    ran = []
    for name in ("tiled", "tiled_copy"):
        real = getattr(parallel, name)
        monkeypatch.setattr(parallel, name, lambda *a, _real=real, _name=name: ran.append((_name, _real(*a))) or
                            ran[-1][1])
    x = tl.from_numpy(X)
    xt = x.transpose(-1, -2)
    want_t = np.swapaxes(X, -1, -2)
    for n in THREADS:
        tl.set_num_threads(n)
        if shape[-1] == shape[-2]:
            y = xt + x
            np.testing.assert_array_equal(y.numpy(), want_t + X)
            assert y.stride() == xt.stride()  # torch: the result follows the first operand's layout
            np.testing.assert_array_equal((x * xt).numpy(), X * want_t)
            np.testing.assert_array_equal((xt - 1.5).numpy(), want_t - np.float32(1.5))
        y = xt + tl.from_numpy(want_t.copy())  # a transposed and a contiguous operand, any shape
        np.testing.assert_array_equal(y.numpy(), want_t + want_t)
        np.testing.assert_array_equal(xt.contiguous().numpy(), want_t)
        d = tl.empty(*want_t.shape, dtype=tl.float64)
        d.copy_(xt)
        np.testing.assert_array_equal(d.numpy(), want_t.astype(np.float64))
    assert (("tiled_copy", True) in ran) == tiles
    assert (("tiled", True) in ran) == tiles


@pytest.mark.parametrize("shape,row_shape", [((1024, 1024), (1024,)), ((1000, 1000), (1000,)),
                                             ((4, 256, 512), (256, 512)), ((1021, 400), (400,)),
                                             ((300, 2048), (2048,))])
def test_row_broadcast_ops_in_longer_rows(shape, row_shape, monkeypatch):
    """`a + row` from elementwise._ROWS_MIN elements on views a as rows k times longer with the row
    tiled k times (or leaves it where k does not divide the rows): NumPy's bits for both operand
    orders and non-commutative ops, every thread count, the tiling used where it applies."""
    from tensorlab.backends.cpu import elementwise as E
    A = rand(*shape, seed=31)
    R = rand(*row_shape, seed=32) + 2
    used = []
    real = E._long_rows
    monkeypatch.setattr(E, "_long_rows", lambda o, x, y: used.append(o.shape) or real(o, x, y))
    a, r = tl.from_numpy(A), tl.from_numpy(R)
    for n in THREADS:
        tl.set_num_threads(n)
        np.testing.assert_array_equal((a + r).numpy(), A + R)
        np.testing.assert_array_equal((r - a).numpy(), R - A)
        np.testing.assert_array_equal((a / r).numpy(), A / R)
        np.testing.assert_array_equal((r * a).numpy(), R * A)
    assert used
    rows = int(np.prod(shape)) // int(np.prod(row_shape))
    tiled = any(rows % k == 0 and k * int(np.prod(row_shape)) <= E._ROW_TILE for k in (64, 32, 16, 8))
    assert (real(np.empty(shape, np.float32), A, R)[0].shape != shape) == tiled


@pytest.mark.parametrize("case", ["col", "row", "strided", "unary_strided", "small_rows", "few_elements"])
def test_row_long_ufunc_buffer(case, monkeypatch):
    """Elementwise ufuncs whose operands do not flatten to one run (a broadcast column, a bias row,
    a strided view) run under a ufunc buffer as long as the output's rows where parallel.rows_state
    says so (rows of ROW_BUF_MIN..ROW_BUF_MAX elements, ROW_BUF_ELEMS elements or more), on the
    caller and on every pool worker alike, and NumPy's default buffer elsewhere; NumPy's bits
    every time, with every thread count."""
    import threading
    from tensorlab.backends.cpu import elementwise as E
    wide = rand(1024, 1040, seed=40)
    # 2047 rows: no k divides them, so the bias row is not tiled into rows past ROW_BUF_MAX (_long_rows)
    X = {"col": wide[:, :1000].copy(), "row": rand(2047, 600, seed=41), "strided": wide[:, :1000],
         "unary_strided": wide[:, :1000], "small_rows": rand(4096, 300, seed=42), "few_elements": rand(12, 1000, seed=43)}[case]
    col, row = rand(X.shape[0], 1, seed=44), rand(X.shape[1], seed=45)
    if case == "unary_strided":
        name, fn, want = "exp", lambda x: x.exp(), np.exp(X)
        table = E._PLAIN_UNARY
    else:
        other = {"col": col, "row": row}.get(case, X)
        name, fn, want = "mul", lambda x: x * tl.from_numpy(other), X * other
        table = E._PLAIN_BINARY
    real = table[name]
    seen = []

    def recording(*args, **kw):
        seen.append((threading.get_ident(), np.getbufsize()))
        return real(*args, **kw)
    monkeypatch.setitem(table, name, recording)
    x = tl.from_numpy(wide)[:, :1000] if case in ("strided", "unary_strided") else tl.from_numpy(X)
    buffered = case in ("col", "row", "strided", "unary_strided")
    expect = X.shape[1] // 16 * 16 if buffered else 8192
    assert (parallel.rows_state(want) is not None) == buffered
    for n in THREADS:
        tl.set_num_threads(n)
        seen.clear()
        got = fn(x).numpy()
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
        # every piece, on the caller or a worker (which ones take pieces is up to the scheduler;
        # test_pool_jobs_carry_only_the_backends_numpy_states makes a worker take one)
        assert seen and {b for _, b in seen} == {expect}
    assert np.getbufsize() == 8192  # the caller's own state is back


def test_pool_jobs_carry_only_the_backends_numpy_states():
    """A pool job hands its workers the caller's NumPy state when it is one the backend set (a row
    buffer); any other (a user's np.errstate / np.setbufsize) leaves the workers quiet, at NumPy's
    default buffer."""
    import threading
    from tensorlab.backends.cpu.parallel import _extobj_contextvar
    tl.set_num_threads(2)
    seen = {}
    both = threading.Barrier(2, timeout=30)  # the caller's task waits for a worker to take the other

    def task(i):
        seen[threading.get_ident()] = (np.getbufsize(), np.geterr()["over"])
        both.wait()
    token = _extobj_contextvar.set(parallel.rows_state(np.empty((64, 1024), np.float32)))
    try:
        parallel.run(2, task)
    finally:
        _extobj_contextvar.reset(token)
    assert set(seen.values()) == {(1024, "ignore")} and len(seen) == 2
    seen.clear()
    both.reset()
    with np.errstate(over="raise"):
        np.setbufsize(4096)
        try:
            parallel.run(2, task)
        finally:
            np.setbufsize(8192)
    assert len(seen) == 2
    me = threading.get_ident()
    assert seen[me] == (4096, "raise")
    assert [v for t, v in seen.items() if t != me] == [(8192, "ignore")]


def test_inplace_transposed_copy_and_overlap():
    for n in THREADS:
        tl.set_num_threads(n)
        t = tl.zeros(769, 1024)
        t.copy_(tl.from_numpy(Q).T.T)
        np.testing.assert_array_equal(t.numpy(), Q)
        s = tl.from_numpy(np.arange(BIG, dtype=np.float32))
        s[1:] += s[:-1].clone()
        expected = np.arange(BIG, dtype=np.float32)
        expected[1:] += np.arange(BIG - 1, dtype=np.float32)
        np.testing.assert_array_equal(s.numpy(), expected)
        u = tl.from_numpy(M.copy())
        u.add_(u)  # the output is the operand's own view: split safely
        np.testing.assert_array_equal(u.numpy(), M + M)
        with pytest.raises(RuntimeError, match="single memory location"):  # as torch: the front end refuses
            u.add_(u[:, :1])


def test_overlapping_output_is_left_to_one_call():
    """An output overlapping an operand other than as its own view is never split (a piece
    could read what another already wrote): elementwise/copyto decline and do nothing."""
    tl.set_num_threads(2)
    v = rand(800, 800, seed=6)
    called = []
    assert parallel.elementwise(lambda o, a, b: called.append(1), v, (v, v.T)) is False
    assert parallel.copyto(v[1:], v[:-1]) is False
    assert called == []
    assert parallel.elementwise(lambda o, a: np.add(a, 1, out=o), v, (v,)) is True  # its own view: split


def test_batched_small_matmuls_bit_identical(torch):
    """A stack of small products (attention heads) is spread over the pool by batch blocks."""
    q, k = rand(16, 12, 64, 32, seed=20), rand(16, 12, 32, 64, seed=21)
    x, y = tl.from_numpy(q), tl.from_numpy(k)
    results = each_thread_count(lambda: (x @ y).numpy())
    same_bits(results)
    np.testing.assert_allclose(results[0], (torch.from_numpy(q) @ torch.from_numpy(k)).numpy(), rtol=1e-5, atol=1e-5)
    h = x.half()
    same_bits(each_thread_count(lambda: (h @ y.half()).numpy()))
    one = tl.from_numpy(q[:1])  # batch 1: the heads dim is split
    same_bits(each_thread_count(lambda: (one @ y[:1]).numpy()))
    np.testing.assert_array_equal((one @ y[:1]).numpy(), results[0][:1])
    bcast = tl.from_numpy(k[0, 0])  # a broadcast right operand (stride-0 batch dims)
    same_bits(each_thread_count(lambda: (x @ bcast).numpy()))
    np.testing.assert_allclose((x @ bcast).numpy(), q @ k[0, 0], rtol=1e-5, atol=1e-5)


# -- reductions: one fixed blocking ---------------------------------------------------------------------

R = rand(1 << 20, seed=7) * 3 + 1
R2 = R.reshape(1024, 1024)


@pytest.mark.parametrize("name,fn", [
    ("sum", lambda x: x.sum()), ("mean", lambda x: x.mean()), ("prod", lambda x: (x * 1e-5 + 1).prod()),
    ("amax", lambda x: x.amax()), ("amin", lambda x: x.amin()), ("norm", lambda x: x.norm()),
    ("norm1", lambda x: x.norm(1)), ("norm3", lambda x: x.norm(3)), ("var", lambda x: x.var()),
    ("std", lambda x: x.std(correction=0)), ("logsumexp", lambda x: x.logsumexp(0)),
    ("count_nonzero", lambda x: x.count_nonzero()), ("half_sum", lambda x: x.half().sum()),
    ("int_sum", lambda x: (x * 100).long().sum()),
])
def test_full_reduction_deterministic(name, fn, torch):
    x = tl.from_numpy(R)
    results = each_thread_count(lambda: fn(x).numpy())
    same_bits(results)
    # against torch in float64 (torch's float32 norms accumulate in float32 and are 1e-4 off here)
    # (prod and the half sum: against torch's own float32 / float16 result, the rounding of the
    # factors being part of the answer)
    expected = fn(torch.from_numpy(R if name in ("half_sum", "prod") else R.astype(np.float64)))
    rtol = {"half_sum": 1e-2, "prod": 1e-3}.get(name, 2e-5)
    np.testing.assert_allclose(results[0].astype(np.float64), expected.double().numpy(), rtol=rtol)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "var", "norm", "logsumexp", "softmax", "log_softmax"])
def test_dim_reduction_deterministic(op, dim, torch):
    x = tl.from_numpy(R2)

    def ours(t):
        return t.norm(dim=dim) if op == "norm" else getattr(t, op)(dim)
    results = each_thread_count(lambda: ours(x).numpy())
    same_bits(results)
    np.testing.assert_allclose(results[0], ours(torch.from_numpy(R2)).numpy(), rtol=2e-5, atol=1e-6)


def test_fixed_blocking_does_not_depend_on_threads(monkeypatch):
    """The blocks (and so the bits) depend on the size only: a sum whose blocks would be summed
    differently if the thread count mattered still agrees with itself and with float64."""
    x = tl.from_numpy(np.full(3 * (1 << 19) + 5, 0.1, np.float32))
    results = each_thread_count(lambda: x.sum().numpy())
    same_bits(results)
    assert abs(float(results[0]) - 0.1 * x.numel()) < 1e-3 * x.numel() * 0.1


def test_composites_match_torch(torch):
    X = rand(2048, 512, seed=8)
    T = np.random.default_rng(9).integers(0, 512, 2048)
    w, b = rand(512, seed=10), rand(512, seed=11)
    tx, tt, tw, tb = map(torch.from_numpy, (X, T, w, b))
    for n in THREADS:
        tl.set_num_threads(n)
        x = tl.from_numpy(X).requires_grad_()
        lw = tl.from_numpy(w).requires_grad_()
        lb = tl.from_numpy(b).requires_grad_()
        y = F.layer_norm(x, (512,), lw, lb)
        y.sum().backward()
        rx, rw, rb = tx.clone().requires_grad_(), tw.clone().requires_grad_(), tb.clone().requires_grad_()
        ry = torch.nn.functional.layer_norm(rx, (512,), rw, rb)
        ry.sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ry.detach().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(x.grad.numpy(), rx.grad.numpy(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(lw.grad.numpy(), rw.grad.numpy(), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(lb.grad.numpy(), rb.grad.numpy(), rtol=1e-4, atol=1e-3)
        loss = F.cross_entropy(tl.from_numpy(X), tl.from_numpy(T))
        np.testing.assert_allclose(loss.item(), torch.nn.functional.cross_entropy(tx, tt).item(), rtol=1e-5)


def test_layer_norm_grads_deterministic():
    X = rand(2048, 512, seed=12)

    def run():
        x = tl.from_numpy(X).requires_grad_()
        w = tl.ones(512, requires_grad=True)
        b = tl.zeros(512, requires_grad=True)
        (F.layer_norm(x, (512,), w, b) * tl.from_numpy(X)).sum().backward()
        return np.concatenate([x.grad.numpy().ravel(), w.grad.numpy(), b.grad.numpy()])
    same_bits(each_thread_count(run))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_col2im_block_buffer_keeps_bits(dtype, monkeypatch):
    """col2im of a stride-1 window set adds each tap under a ufunc buffer of one (oh, ow) block
    (parallel.buffer_state): the same bits as under NumPy's default buffer, and as the sums
    of a plain NumPy reference taken tap by tap."""
    from tensorlab.backends.cpu import conv
    cols = rand(6, 5, 3, 3, 24, 24, seed=50, dtype=dtype)
    asked = []
    real = parallel.buffer_state
    monkeypatch.setattr(parallel, "buffer_state", lambda n: asked.append(n) or real(n))

    def run():
        out = np.empty((6, 5, 26, 26), dtype)
        conv.col2im(tl.from_numpy(out), tl.from_numpy(cols), (3, 3), (1, 1), (0, 0), (1, 1))
        return out
    got = run()
    assert asked == [24 * 24]
    monkeypatch.setattr(parallel, "buffer_state", lambda n: None)
    assert got.tobytes() == run().tobytes()
    want = np.zeros((6, 5, 26, 26), dtype)  # the same sums in the same (tap) order
    for i in range(3):
        for j in range(3):
            want[:, :, i:i + 24, j:j + 24] += cols[:, :, i, j]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("padding", [0, 1])
def test_conv_and_pool_batches_bit_identical(padding, torch, monkeypatch):
    """im2col, col2im and max_pool2d (forward, backward) spread a batch over the pool: every
    result has the bits of the one-thread call, matches torch, and the pool really ran pieces."""
    X = rand(9, 6, 30, 30, seed=20)
    X[1, 2, 3, 4] = np.nan  # a NaN in one sample: the pool's NaN look is per piece
    Wt = rand(7, 6, 3, 3, seed=21) * 0.2
    G = rand(9, 7, 28 + 2 * padding, 28 + 2 * padding, seed=22)
    pieces = []
    real_run = parallel.run
    monkeypatch.setattr(parallel, "run", lambda n, fn: (pieces.append(n), real_run(n, fn)))

    def run():
        x = tl.from_numpy(X).requires_grad_()
        w = tl.from_numpy(Wt).requires_grad_()
        y = F.conv2d(x, w, padding=padding)
        p, ix = F.max_pool2d(y, 3, 2, padding, return_indices=True)
        (y * tl.from_numpy(G)).sum().backward(retain_graph=True)
        gx1 = x.grad.numpy().copy()
        x.grad = None
        p.sum().backward()
        return np.concatenate([a.ravel().astype(np.float32) for a in
                               (y.detach().numpy(), p.detach().numpy(), ix.numpy(), gx1, x.grad.numpy())])
    results = each_thread_count(run)
    same_bits(results)
    assert pieces and max(pieces) > 1
    tx = torch.from_numpy(X).requires_grad_()
    ty = torch.nn.functional.conv2d(tx, torch.from_numpy(Wt), padding=padding)
    tp, tix = torch.nn.functional.max_pool2d(ty, 3, 2, padding, return_indices=True)
    x = tl.from_numpy(X)
    y = F.conv2d(x, tl.from_numpy(Wt), padding=padding)
    p, ix = F.max_pool2d(y, 3, 2, padding, return_indices=True)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(ix.numpy(), tix.numpy())
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-4)


# -- the pool: exceptions, nesting, concurrency, faults --------------------------------------------------

class Boom(Exception):
    pass


def test_worker_exception_propagates_with_its_type():
    tl.set_num_threads(3)
    ran = []

    def task(i):
        ran.append(i)
        if i == 5:
            raise Boom(f"task {i}")
    with pytest.raises(Boom, match="task 5"):
        parallel.run(40, task)
    assert 5 in ran
    out = []
    parallel.run(10, out.append)  # the pool still works
    assert sorted(out) == list(range(10))


def test_exception_from_a_kernel_piece_propagates():
    tl.set_num_threads(2)
    o = np.zeros(BIG, np.float32)
    calls = []

    def kernel(out, a):
        calls.append(out.size)
        if len(calls) == 3:
            raise MemoryError("piece 3")
        np.add(a, 1, out=out)
    with pytest.raises(MemoryError, match="piece 3"):
        parallel.elementwise(kernel, o, (A[:BIG],))
    x = tl.from_numpy(A)
    np.testing.assert_array_equal((x + 1).numpy(), A + np.float32(1))


def test_nested_call_from_a_worker_runs_serially():
    tl.set_num_threads(2)
    x = tl.from_numpy(A)
    results = [None] * 4

    def task(i):
        assert parallel._local.__dict__.get("worker", False) or threading.current_thread() is threading.main_thread()
        results[i] = (x * float(i)).sum().item()
    parallel.run(4, task)
    for i in range(4):
        assert results[i] == (x * float(i)).sum().item()


def test_two_threads_at_once():
    tl.set_num_threads(2)
    x, y = tl.from_numpy(A), tl.from_numpy(B)
    m = tl.from_numpy(M)
    expected = (A + B, np.ascontiguousarray(M.T) * 2, tl.from_numpy(A).sum().item())
    errors = []

    def worker():
        try:
            for _ in range(6):
                np.testing.assert_array_equal((x + y).numpy(), expected[0])
                np.testing.assert_array_equal((m.T + m.T).numpy(), expected[1])
                assert x.sum().item() == expected[2]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors


def test_call_while_the_pool_is_busy():
    tl.set_num_threads(3)
    release = threading.Event()
    started = threading.Barrier(4)  # both workers, the blocked caller and this thread

    def hold(i):
        if i < 3:
            started.wait(10)
            release.wait(30)
    holder = threading.Thread(target=parallel.run, args=(3, hold))
    holder.start()
    started.wait(10)
    try:
        x, y = tl.from_numpy(A), tl.from_numpy(B)
        done = []
        t = threading.Thread(target=lambda: done.append(((x * y).numpy(), x.sum().item())))
        t.start()
        t.join(30)  # every worker is held: the caller does all the work itself
        assert not t.is_alive(), "deadlock while the pool was busy"
        np.testing.assert_array_equal(done[0][0], A * B)
    finally:
        release.set()
        holder.join(30)
    assert not holder.is_alive()


FAULT_CASES = {
    "add_": lambda x, y, q: x.add_(y),
    "exp_": lambda x, y, q: x.exp_(),
    "mul_": lambda x, y, q: x.mul_(2.0),
    "transposed copy_": lambda x, y, q: q.copy_(tl.from_numpy(Q).T),
    "transposed add out=": lambda x, y, q: tl.add(tl.from_numpy(Q).T, 1.0, out=q),
    "softmax": lambda x, y, q: F.softmax(x.view(-1, 5), 1),
    "sum": lambda x, y, q: x.sum(),
}


@pytest.mark.parametrize("case", FAULT_CASES)
def test_fault_in_a_large_op_leaves_everything_unchanged(case):
    """Every alloc/copy/launch of a large (parallel) op in turn raises: nothing changes, and the
    pool works afterwards."""
    tl.set_num_threads(2)
    fn = FAULT_CASES[case]

    def fresh():
        return tl.from_numpy(A.copy()), tl.from_numpy(B.copy()), tl.zeros(1024, 769)
    n = 1
    while True:
        x, y, q = fresh()
        snap = snapshot(x, y, q)
        with inject_fault("any", n) as plan:
            try:
                fn(x, y, q)
            except InjectedFault:
                pass
        if not plan.fired:
            break
        assert_unchanged(snap)
        n += 1
    assert n > 1  # at least one event was injected
    x, y, q = fresh()
    fn(x, y, q)  # the pool is usable afterwards and the op completes
    if case == "add_":
        np.testing.assert_array_equal(x.numpy(), A + B)
    elif case in ("transposed copy_",):
        np.testing.assert_array_equal(q.numpy(), Q.T)
    elif case == "transposed add out=":
        np.testing.assert_array_equal(q.numpy(), Q.T + np.float32(1))


def test_small_ops_stay_serial(monkeypatch):
    """Below the threshold nothing reaches the pool."""
    calls = []
    monkeypatch.setattr(parallel, "run", lambda n, fn: calls.append(n))
    x = tl.from_numpy(rand(1000))
    (x + x).exp().sum()
    F.softmax(x.view(10, 100), 1)
    assert calls == []


def _counting_pool(monkeypatch):
    calls = []
    real = parallel._run
    monkeypatch.setattr(parallel, "_run", lambda n, fn, threads: (calls.append(n), real(n, fn, threads)))
    return calls


@pytest.mark.parametrize("where", ["contiguous", "broadcast"])
def test_cheap_large_ops_stay_on_one_thread(where, monkeypatch):
    """An op whose measured one-thread cost is below POOL_PAYS_S is not split: its first call runs
    on the caller and is timed, and so does every later one while the estimate stays below."""
    tl.set_num_threads(2)
    monkeypatch.setattr(parallel, "_costs", {})
    monkeypatch.setattr(parallel, "POOL_PAYS_S", 1e6)  # nothing could pay for the pool
    calls = _counting_pool(monkeypatch)
    a, b = rand(BIG, seed=1), rand(BIG // 1024, 1024, seed=2)
    x, y = tl.from_numpy(a), tl.from_numpy(b)
    for _ in range(20):
        r = x + x if where == "contiguous" else y * y[0]
    assert calls == []
    np.testing.assert_array_equal(r.numpy(), a + a if where == "contiguous" else b * b[0])
    (key, rec), = parallel._costs.items()  # learned under one key: the ufunc and its dtypes
    assert key[0] is (np.add if where == "contiguous" else np.multiply)
    assert rec[0] > 0 and rec[1] == 0 and len(rec[2]) == parallel.COST_SAMPLES


def test_costly_ops_split_and_are_measured_again(monkeypatch):
    """An op measured above POOL_PAYS_S is split from its second call on; every REPROBE-th call after
    a measurement runs on one thread again (timed), and the estimate is the least of the last
    COST_SAMPLES measurements. Same bits on either path."""
    tl.set_num_threads(2)
    monkeypatch.setattr(parallel, "_costs", {})
    monkeypatch.setattr(parallel, "POOL_PAYS_S", 1e-12)  # anything pays
    calls = _counting_pool(monkeypatch)
    a = rand(BIG, seed=3)
    x = tl.from_numpy(a)
    outs = []
    for i in range(2 + 2 * (parallel.REPROBE + 1)):
        calls.clear()
        outs.append(x.exp().numpy())
        measured = i % (parallel.REPROBE + 1) == 0  # the first call, then after every REPROBE splits
        assert (calls == []) == measured, i
    same_bits(outs)
    (rec,) = parallel._costs.values()
    assert len(rec[2]) == parallel.COST_SAMPLES and rec[0] == min(rec[2])
    rec[2][:] = [5.0, 1e-9]  # a slow outlier among the samples does not stick
    rec[1] = parallel.REPROBE
    x.exp()
    assert rec[0] == min(rec[2][-parallel.COST_SAMPLES:]) <= 1e-9


def test_cost_keys_ignore_parameter_values(monkeypatch):
    """A parameter's value (add's alpha: a learning rate changing every step) makes no new key, and
    the table is bounded (COSTS_MAX)."""
    tl.set_num_threads(2)
    monkeypatch.setattr(parallel, "_costs", {})
    monkeypatch.setattr(parallel, "POOL_PAYS_S", 1e6)
    a, b = rand(BIG, seed=5), rand(BIG, seed=6)
    x, y = tl.from_numpy(a), tl.from_numpy(b)
    for alpha in (0.5, 0.25, -3.0):
        np.testing.assert_allclose(x.add(y, alpha=alpha).numpy(), a + np.float32(alpha) * b, rtol=1e-6)
    assert len(parallel._costs) == 1
    monkeypatch.setattr(parallel, "COSTS_MAX", 1)
    x.exp()
    assert len(parallel._costs) == 1 and next(iter(parallel._costs))[0] is np.exp


def test_cost_rule_off_with_one_thread_and_without_a_key(monkeypatch):
    """With one thread nothing is timed (no split to decide); a call without a key splits."""
    monkeypatch.setattr(parallel, "_costs", {})
    monkeypatch.setattr(parallel, "POOL_PAYS_S", 1e6)
    tl.set_num_threads(1)
    x = tl.from_numpy(rand(BIG, seed=4))
    x + x
    assert parallel._costs == {}
    tl.set_num_threads(2)
    calls = _counting_pool(monkeypatch)
    o = np.empty(BIG, np.float32)
    assert parallel.elementwise(lambda out, v: np.add(v, 1, out=out), o, (x.numpy(),), key=None)
    assert calls and parallel._costs == {}
    np.testing.assert_array_equal(o, x.numpy() + 1)


def test_interrupt_in_the_caller_waits_for_running_tasks():
    """KeyboardInterrupt raised in the calling thread's own task: the caller re-raises it only
    after the tasks already running elsewhere finished, and the rest never start."""
    tl.set_num_threads(3)
    caller = threading.get_ident()
    state = {"started": 0, "finished": 0}
    lock = threading.Lock()
    others_running = threading.Barrier(3)

    def task(i):
        with lock:
            state["started"] += 1
        if threading.get_ident() == caller:
            others_running.wait(10)
            raise KeyboardInterrupt
        others_running.wait(10)
        import time
        time.sleep(0.05)
        with lock:
            state["finished"] += 1
    with pytest.raises(KeyboardInterrupt):
        parallel.run(50, task)
    assert state["finished"] == state["started"] - 1 == 2  # both workers' tasks completed, no more began
    out = []
    parallel.run(8, out.append)
    assert sorted(out) == list(range(8))


def test_no_floating_point_warnings_from_large_ops():
    """The pool's pieces keep the primitives' error state: -inf rows, overflow, 0/0 stay quiet."""
    import warnings
    X = rand(1024, 1024, seed=30)
    X[3] = -np.inf
    X[5, 7] = np.inf
    x = tl.from_numpy(X)
    for n in THREADS:
        tl.set_num_threads(n)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            F.log_softmax(x, 1)
            F.softmax(x, 1)
            (x * 1e38 * 1e38).sum()
            (x - x).div(x - x)
            x.logsumexp(1)
            x.var(0)
            x.exp().sum(1)
