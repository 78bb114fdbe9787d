"""The CPU backend's thread pool: large NumPy work split across the machine's cores.

NumPy releases the GIL inside its loops, so k threads each running one ufunc over 1/k of an
array run in parallel. `tl.get_num_threads()` / `tl.set_num_threads(n)` (torch's names) size the
pool; the default is the number of cores this process may run on (os.sched_getaffinity).

Rules every parallel primitive keeps:
- Elementwise work is split only along independent elements, so the result is bit-identical to
  the single-threaded one; an output that overlaps an operand other than as the very same view
  is computed serially (NumPy's own overlap handling decides what that means).
- Reductions are blocked by the input's size only (never by the thread count) and block
  partials are combined in a fixed order: the same input gives the same bits whatever the
  thread count, 1 included (the blocked path runs serially then).
- The caller takes tasks too, so a call always finishes even when every worker is busy with
  another caller's work; a call made from inside a worker runs serially. Two threads may call
  at once. An exception in any task is re-raised in the caller with its original type, after
  every task of the call has finished (nothing keeps writing behind the caller's back); the
  pool stays usable.
- Small work never gets here: callers test `size >= elem_min` (one comparison) first. With
  one thread only the tiled path of transposed operands runs here (it is faster on one core).
- Workers run with NumPy's floating-point errors ignored (each backend primitive already
  decides that for the calling thread; the workers' NumPy state is their own), under the
  caller's ufunc buffer when the caller set one of the backend's states (rows_state).

The BLAS library NumPy links (OpenBLAS) gets the same thread count, capped at the usable cores
(its threads spin), when its thread control can be found among the loaded libraries (no
threadpoolctl needed); otherwise BLAS keeps its own: that count is for the process's own NumPy
calls. The CPU backend's own products either run on OpenBLAS's threads or hold BLAS at one thread
(blas_product: OpenBLAS's idle threads spin after a threaded call and would take the pool's
cores), and every pool call holds BLAS at one thread. A large matrix product's last bits may
depend on how it is split (as torch's depend on its BLAS's threads); a large float sum is blocked
by its length alone, so it does not (reduction._dot_sum)."""
from __future__ import annotations

import ctypes
import operator
import os
import queue
import threading
import time
from itertools import count

import numpy as np

__all__ = ("get_num_threads", "set_num_threads", "run", "blas_serial", "blas_product", "blas_spinning", "elementwise",
           "copyto", "fill", "row_blocks", "split_ranges", "row_sums", "col_sums", "over_items", "tiled", "tiled_copy")


def _usable_cores():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


# -- sizes -----------------------------------------------------------------------------------------
# Below PARALLEL_MIN elements an elementwise op or copy runs as one NumPy call: waking a worker
# costs tens of microseconds; a 512Ki-element float32 add takes about 70 us on one core.
PARALLEL_MIN = 1 << 19
CHUNK_MIN, CHUNK_MAX = 1 << 15, 1 << 20  # elements per task of an elementwise op: about 4 tasks a thread
TILE_FS = (16, 32)  # tiles of a transposed op along the output's fast axis (16 where it is >= 1024 long)
TILE_GS = (256, 128, 64)  # ... and along the operand's fast axis: the largest that fits twice
TILED_MIN = 1 << 15  # elements from which a transposed operand goes through tiles even below elem_min
# bytes of input per row block of a row-wise composite op (softmax, layer norm): 2 MiB measured
# better than 512 KiB at every shape tried (1024^2 softmax 564 -> 511 us on one thread, 363 -> 277 on two)
BLOCK_BYTES = 1 << 21
ITEMS_WORK_MIN = 1 << 17  # element passes below which a per-item op (im2col, col2im, pools) stays one call
# A pool call costs its caller a worker's wake-up and, at the end, its own (20-60 us each on a
# 2-core VM, where a futex wake has to reach a halted virtual CPU). Measured there at two threads
# (median of 21, float32): a split lost to one thread for every elementwise op whose serial time
# was below ~300 us (512Ki add 61 -> 142 us, relu 134 -> 379; 1Mi add 116 -> 176, mul_ 57 -> 141,
# relu 255 -> 369, its kernel several NumPy calls) and won above it (1Mi exp 513 -> 359, tanh
# 401 -> 303; 2Mi relu 650 -> 550; 4Mi relu 2422 -> 1343). So elementwise()
# learns each computation's one-thread cost from the calls it runs itself, and splits only where
# the estimate reaches POOL_PAYS_S; every REPROBE-th split call of a computation runs on one thread
# again and is timed, so a slow first measurement (cold pages) does not stick.
POOL_PAYS_S = 300e-6
REPROBE = 16

elem_min = PARALLEL_MIN  # the elementwise threshold callers compare with

_num_threads = 1
_lock = threading.Lock()       # guards the pool's size and its worker list
_jobs = queue.SimpleQueue()
_workers = []
_local = threading.local()     # .worker: this thread is one of the pool's


# -- BLAS thread control ---------------------------------------------------------------------------

def _openblas_function(names):
    """The first of `names` that an OpenBLAS library loaded in this process (the one NumPy uses)
    exports, or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line.lower() and
                     len(line.split(None, 5)) == 6}
    except OSError:
        return None
    for p in sorted(paths):
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        for name in names:
            fn = getattr(lib, name, None)
            if fn is not None:
                return fn
    return None


def _find_blas(verb="set"):
    """OpenBLAS's set_num_threads (verb "set") or get_num_threads (verb "get"), or None."""
    fn = _openblas_function([n % verb for n in ("scipy_openblas_%s_num_threads64_", "scipy_openblas_%s_num_threads",
                                                "openblas_%s_num_threads64_", "openblas_%s_num_threads")])
    if fn is not None:
        fn.argtypes = (ctypes.c_int,) if verb == "set" else ()
        fn.restype = None if verb == "set" else ctypes.c_int
    return fn


_blas_setter = None
_blas_searched = False


def blas_core():
    """The name of the kernel set NumPy's OpenBLAS runs ("Haswell", "SkylakeX", ...; OpenBLAS picks it
    by CPU when it loads, or takes OPENBLAS_CORETYPE), or None when its library is not reachable."""
    fn = _openblas_function(("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                             "openblas_get_corename64_", "openblas_get_corename"))
    if fn is None:
        return None
    fn.argtypes = ()
    fn.restype = ctypes.c_char_p
    return fn().decode()


def blas_follows():
    """True when BLAS's thread count follows set_num_threads (OpenBLAS's control was found)."""
    _set_blas(None)
    return _blas_setter is not None


def blas_num_threads():
    """OpenBLAS's own thread count now, or None when its control is not reachable."""
    fn = _find_blas("get")
    return None if fn is None else fn()


def _set_blas(n):
    global _blas_setter, _blas_searched, _blas_before
    if not _blas_searched:
        _blas_searched = True
        _blas_setter = _find_blas("set")
    if n is not None and _blas_setter is not None:
        with _serial_lock:
            n = min(int(n), _usable_cores())  # OpenBLAS's spinning threads must not outnumber cores
            if _serial_depth:
                _blas_before = n  # a pool call in flight: set when the last one ends
            else:
                _blas_setter(n)


# While a pool call runs, BLAS runs single-threaded: the pool is the parallelism (nested BLAS
# threads would oversubscribe the cores), and a BLAS call inside a task then computes the same
# bits whatever the thread count (OpenBLAS splits a product's rows among its threads unevenly,
# and a row's dot product can round differently in a remainder group than in a full one).
_serial_lock = threading.Lock()
_serial_depth = 0  # pool calls in flight (any thread)


_blas_getter = None
_blas_before = None  # BLAS's own thread count when the first pool call in flight began


def blas_threads():
    """BLAS's thread count now (cheap), or None when its control is not reachable."""
    global _blas_getter
    if _blas_getter is None:
        _set_blas(None)
        _blas_getter = _find_blas("get") or False  # False: looked for, not found
    return _blas_getter() if _blas_getter and _blas_setter else None


def blas_threads_bound():
    """The most threads BLAS may use for a call starting now: its count, or the count it returns to
    when a pool call in flight (which holds it at one) ends. None without BLAS control."""
    now = blas_threads()
    if now is None:
        return None
    before = _blas_before if _serial_depth else None
    return max(now, before or 1)


def _blas_serial_enter():
    global _serial_depth, _blas_before
    if blas_threads() is None:
        return False
    with _serial_lock:
        _serial_depth += 1
        if _serial_depth == 1:
            _blas_before = _blas_getter()
            if _blas_before != 1:
                _blas_setter(1)
    return True


def _blas_serial_exit():
    global _serial_depth
    with _serial_lock:
        _serial_depth -= 1
        if _serial_depth == 0 and _blas_before != 1:
            _blas_setter(_blas_before)


_GEMV_THREADS_FROM = 8192  # elements of a matrix-vector product below which OpenBLAS never threads


def blas_serial(fn, *args):
    """fn(*args) with BLAS on one thread (a pool call holds it so too)."""
    if getattr(_local, "worker", False):  # inside a pool call, which holds BLAS at one thread already
        return fn(*args)
    serial = _blas_serial_enter()
    try:
        return fn(*args)
    finally:
        if serial:
            _blas_serial_exit()


# OpenBLAS's idle threads spin for a while after a threaded call (its wake-up path), and with as
# many threads as cores the spinning takes the cores the pool's workers need: measured on a 2-core
# VM, a pool-split col2im right after a threaded 128x256x512 product ran at serial speed (3.1 vs
# 1.5-1.8 ms; 2.9-3.3 ms at every delay up to 100 ms after the product, 1.8-2.1 from 150 ms on), a
# relu at half its serial speed. So the backend keeps to one of two modes, whichever the program
# is in: a product of BLAS_OWN_MIN multiply-adds or more runs on OpenBLAS's threads (which beat a
# pool split there: 128x256x512 195 vs 245-260 us, a pool call costing 60-90 us of thread wake-ups
# on such a VM), and for BLAS_SPIN_S after it every product goes to OpenBLAS's threads too while
# pool calls run serially; otherwise products are held at one BLAS thread (or split over the pool,
# linalg.matmul) and the pool has the cores.
BLAS_THREADED_FROM = 1 << 19  # multiply-adds of one product below which OpenBLAS never threads it (~1Mi measured)
BLAS_OWN_MIN = 1 << 23        # ... from which the backend lets OpenBLAS's threads run it
BLAS_SPIN_S = 0.15            # how long they spin afterwards (OpenBLAS's default: 2^28 cycles, ~0.1 s)
_spin_until = 0.0
_monotonic = time.monotonic
_perf = time.perf_counter


def blas_spinning():
    """True while OpenBLAS's threads may still spin after a threaded product of the backend."""
    return _monotonic() < _spin_until


def blas_product(per, fn, *args):
    """fn(*args): BLAS work whose largest single matrix product has `per` multiply-adds, on
    OpenBLAS's own threads or held at one thread by the rule above."""
    global _spin_until
    if per < BLAS_THREADED_FROM or _num_threads <= 1 or getattr(_local, "worker", False):
        return fn(*args)
    if per < BLAS_OWN_MIN:
        # held at one thread inside the window too: OpenBLAS's bits depend on its thread count (AMD
        # EPYC, OpenBLAS 0.3.31: a 16x72x576 product differs in 4,929 of 9,216 elements between one
        # and two threads), so a product's bits must not depend on how long ago a large one ran.
        # A product below BLAS_OWN_MIN neither uses the spinning threads nor extends the window, so a
        # program whose products are all smaller (a convnet after a GEMM-bound model in the same
        # process) returns to the pool's mode (measured: a convnet step at two threads stayed
        # 14.4-14.8 ms against 11.3-11.6 ms in the pool's mode while its own mid-size products kept
        # re-arming the window)
        return blas_serial(fn, *args)
    try:
        return fn(*args)
    finally:
        if (blas_threads_bound() or 1) > 1:
            _spin_until = _monotonic() + BLAS_SPIN_S


def _serial_product(a, b):
    """a @ b with BLAS on one thread (a matrix-vector product with ones: row or column sums)."""
    if a.size + b.size < _GEMV_THREADS_FROM or _num_threads <= 1:  # one thread: BLAS has one (set_num_threads)
        return a @ b
    return blas_serial(np.matmul, a, b)


def row_sums(m):
    """Each row's sum of a 2-D float32/float64 array as one BLAS matrix-vector product with a
    vector of ones (a SIMD dot product per row), BLAS on one thread: a row's bits then depend on
    the rows around it in `m` (OpenBLAS groups rows by 4) but never on the thread count."""
    return _serial_product(m, np.ones(m.shape[1], m.dtype))


def col_sums(m):
    """Each column's sum of a 2-D float32/float64 array as one BLAS vector-matrix product with a
    vector of ones, BLAS on one thread (as row_sums)."""
    return _serial_product(np.ones(m.shape[0], m.dtype), m)


# -- public thread count -----------------------------------------------------------------------------

def get_num_threads():
    """The number of threads the CPU backend uses for large ops (torch.get_num_threads)."""
    return _num_threads


def set_num_threads(nthreads):
    """Use `nthreads` threads for large CPU ops (torch.set_num_threads): the pool grows or
    shrinks to nthreads - 1 workers (the calling thread is the last one), and NumPy's OpenBLAS
    follows when its thread control is available."""
    if isinstance(nthreads, bool) or not hasattr(type(nthreads), "__index__"):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(nthreads).__name__}")
    n = operator.index(nthreads)  # NumPy integers too, as torch
    if n >= 1 << 31:
        raise ValueError("Overflow when unpacking long")  # torch's C int
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _resize(n)
    _set_blas(n)


def _resize(n):
    global _num_threads
    with _lock:
        _num_threads = n
        alive = [w for w in _workers if w.is_alive()]
        _workers[:] = alive
        while len(_workers) > n - 1:
            _workers.pop()
            _jobs.put(None)  # whichever worker takes it exits after its current task
        # workers start lazily (first parallel call), so importing tensorlab starts no threads


def _ensure_workers():
    with _lock:
        want = _num_threads - 1
        while len(_workers) < want:
            t = threading.Thread(target=_worker, name=f"tensorlab-cpu-{len(_workers)}", daemon=True)
            t.start()
            _workers.append(t)


# -- NumPy's per-thread ufunc state: errors ignored, and a buffer the length of the rows ----------
# NumPy keeps its error handling and ufunc buffer size in a context variable (np.errstate,
# np.setbufsize). Setting it directly costs ~0.1 us against np.errstate's ~1.5 us.
#
# The buffer: NumPy (2.3+) hands a ufunc whose operands do not flatten to one contiguous run (a
# broadcast column `x * s[:, None]`, a bias row, a strided view) through its buffered iterator, and
# when the contiguous rows are shorter than the buffer (8192 elements) it copies them into the
# buffer and back to make longer loops: 2-3x a flat op at rows of 512-4096 floats. A buffer no
# longer than a row lets it hand each row to the loop in place (measured, float32, one thread:
# 1024x1024 x * s[:, None] 160 -> 60 us; (2048, 512) + row 142 -> 118 us; 1000x600 strided add
# 125 -> 60 us). Below ROW_BUF_MIN the per-row calls cost more than the copies (rows of 128: 1.5x
# slower), so those keep NumPy's default. Elementwise results do not depend on the buffer; a
# reduction's pairwise sum might, so only elementwise calls run under a row buffer.
ROW_BUF_MIN = 512      # row length (elements) from which an elementwise op gets a row-long buffer
ROW_BUF_MAX = 8192     # NumPy's own buffer size: longer rows are handed over in place already
ROW_BUF_ELEMS = 1 << 14  # output elements from which it pays (16Ki float32: 3.2 -> 2.3 us)

try:
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
except ImportError:  # pragma: no cover - other NumPy versions: errstate, NumPy's default buffer
    _extobj_contextvar = None
    QUIET = None
    _ours = {None}

    def _quiet_forever():
        np.seterr(all="ignore")

    def rows_state(o):
        return None

    def buffer_state(size):
        return None
else:
    QUIET = _make_extobj(all="ignore", bufsize=ROW_BUF_MAX)
    _ours = {QUIET}             # the states a pool job carries to its workers
    _row_states = {}            # buffer size -> state (errors ignored)

    def _quiet_forever():
        _extobj_contextvar.set(QUIET)

    def rows_state(o):
        """The NumPy state (errors ignored) for an elementwise ufunc writing `o`: a buffer as long
        as o's rows when they are ROW_BUF_MIN..ROW_BUF_MAX elements long (rounded down to NumPy's
        multiple of 16) and o has ROW_BUF_ELEMS elements or more; None where NumPy's default buffer
        is the better one. The caller sets it (_extobj_contextvar.set) and resets its own token."""
        if o.ndim < 2 or o.size < ROW_BUF_ELEMS:
            return None
        n = o.shape[-1]
        if not ROW_BUF_MIN <= n < ROW_BUF_MAX or o.strides[-1] != o.itemsize:
            return None
        return buffer_state(n & ~15)

    def buffer_state(size):
        """The NumPy state (errors ignored) with a ufunc buffer of `size` elements, rounded up to
        NumPy's multiple of 16; None past NumPy's default size."""
        size = -(-size // 16) * 16
        if size > ROW_BUF_MAX:
            return None
        st = _row_states.get(size)
        if st is None:
            st = _row_states[size] = _make_extobj(all="ignore", bufsize=size)
            _ours.add(st)
        return st


def buffered(state, fn, *args):
    """fn(*args) under the NumPy state `state` (rows_state / buffer_state) on this thread, or
    as it is when state is None."""
    if state is None:
        return fn(*args)
    token = _extobj_contextvar.set(state)
    try:
        return fn(*args)
    finally:
        _extobj_contextvar.reset(token)


def _worker():
    _local.worker = True
    _quiet_forever()
    get = _jobs.get
    state = QUIET
    while True:
        job = get()
        if job is None:
            return
        if job.state is not state and _extobj_contextvar is not None:
            state = job.state
            _extobj_contextvar.set(state)
        job.work()


class _Job:
    __slots__ = ("fn", "n", "claim", "left", "lock", "done", "error", "state")

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n
        # the caller's NumPy state (its row buffer) when it is one of ours: workers compute the
        # same pieces under it; any other state (a user's errstate) leaves the workers quiet
        st = QUIET if _extobj_contextvar is None else _extobj_contextvar.get()
        self.state = st if st in _ours else QUIET
        self.claim = count().__next__  # atomic under the GIL: each task index is handed out once
        self.left = n
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error = None

    def work(self, cur=None):
        """Claim and run tasks until none is left. `cur` (the caller's): a one-element list
        holding the task this thread is running, so an interrupt can account for it."""
        fn, n, claim = self.fn, self.n, self.claim
        while True:
            i = claim()
            if i >= n:
                return
            if cur is not None:
                cur[0] = i
            if self.error is None:  # after a failure the remaining tasks are skipped, not run
                try:
                    fn(i)
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                    with self.lock:
                        if self.error is None:
                            self.error = e
            self._finish(cur)

    def _finish(self, cur=None):
        with self.lock:  # no call inside: an interrupt cannot split forgetting the task and counting it
            if cur is not None:
                cur[0] = None
            self.left -= 1
            last = self.left == 0
        if last:
            self.done.set()

    def wait_all(self):
        """Until every task has finished, whatever interrupts the calling thread meanwhile."""
        while self.left:
            try:
                self.done.wait(0.05)
            except BaseException:  # noqa: BLE001 - the first interrupt is the one raised
                pass


def run(n, fn):
    """fn(0) ... fn(n - 1), spread over the pool; returns when all have finished. The caller
    takes tasks too. Serial with one thread, for one task, and inside a pool worker."""
    threads = _num_threads
    if threads <= 1 or getattr(_local, "worker", False):
        for i in range(n):
            fn(i)
        return
    serial = _blas_serial_enter()
    try:
        if _monotonic() < _spin_until:  # OpenBLAS's threads have the cores (blas_product): one thread
            for i in range(n):
                fn(i)
        else:
            _run(n, fn, threads)
    finally:
        if serial:
            _blas_serial_exit()


def _run(n, fn, threads):
    if n <= 1:
        for i in range(n):
            fn(i)
        return
    if len(_workers) < threads - 1:
        _ensure_workers()
    job = _Job(fn, n)
    put = _jobs.put
    for _ in range(min(threads - 1, n - 1)):
        put(job)
    cur = [None]
    try:
        job.work(cur)
        job.done.wait()
    except BaseException as e:  # an interrupt in the caller: no new task starts, and the caller
        with job.lock:          # leaves only after the running ones finished (they write its output)
            if job.error is None:
                job.error = e
        if cur[0] is not None:  # the task it was running when interrupted
            job._finish(cur)
        try:
            job.work(cur)  # the tasks nobody claimed yet: skipped and counted
        except BaseException:  # noqa: BLE001 - a second interrupt: the first is raised
            if cur[0] is not None:
                job._finish(cur)
        job.wait_all()
    if job.error is not None:
        e = job.error
        job.error = None
        raise e


def _after_fork_in_child():  # the parent's workers do not exist in a forked child
    global _jobs, _lock, _serial_lock, _serial_depth
    _jobs = queue.SimpleQueue()
    _lock = threading.Lock()
    _workers.clear()
    _serial_lock = threading.Lock()
    if _serial_depth:  # forked while another thread's pool call held BLAS at one thread: none runs here
        _serial_depth = 0
        if _blas_setter is not None and _blas_before is not None and _blas_before != 1:
            _blas_setter(_blas_before)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- splitting helpers -------------------------------------------------------------------------------

def split_ranges(n, per):
    """[(start, stop)] covering range(n) in pieces of `per` (the last may be shorter)."""
    return [(s, min(s + per, n)) for s in range(0, n, per)]


def row_blocks(rows, row_bytes, min_rows=1):
    """Pieces of range(rows) of about BLOCK_BYTES of input each: a fixed function of the shape."""
    per = max(min_rows, BLOCK_BYTES // max(1, row_bytes))
    return split_ranges(rows, per)


def over_items(n, work, fn):
    """fn(start, stop) over pieces of range(n), n independent items (a batch's samples: im2col,
    col2im, the pools), one piece a thread, when `work` (the element passes of the whole op) pays
    for waking the pool; else one call fn(0, n). Each item is computed exactly as in one call."""
    threads = _num_threads
    if threads <= 1 or n < 2 or work < ITEMS_WORK_MIN or getattr(_local, "worker", False) or \
            _monotonic() < _spin_until:
        fn(0, n)
        return
    pieces = split_ranges(n, -(-n // min(n, threads)))
    run(len(pieces), lambda i: fn(*pieces[i]))


def _chunk(n):
    """Elements per task: about four tasks a thread (balance), within [CHUNK_MIN, CHUNK_MAX]
    (the cost of a task, the cost of a straggler), a multiple of 4096 (every SIMD width). The
    pieces of an elementwise op may depend on the thread count: each element's result does not."""
    per = -(-n // (4 * _num_threads))
    per = min(CHUNK_MAX, max(CHUNK_MIN, per))
    return -(-per // 4096) * 4096


def _ptr(a):
    return a.__array_interface__["data"][0]


def _independent(o, arrays):
    """True when writing o piecewise cannot change what another piece reads: every operand that
    may share memory with o is o's very own view (element i reads element i only)."""
    for a in arrays:
        if np.may_share_memory(o, a) and not (a.shape == o.shape and a.strides == o.strides and _ptr(a) == _ptr(o)):
            return False
    return True


def _fast_axis(a):
    """The axis of smallest nonzero stride among those longer than 1 (None for none)."""
    best, bs = None, None
    for i, (n, s) in enumerate(zip(a.shape, a.strides)):
        s = abs(s)
        if n > 1 and s and (bs is None or s < bs):
            best, bs = i, s
    return best


def _tile_view(a, others, g, f, gi, fi, tg, tf):
    """`a` (o's shape, or broadcast to it) over the part [gi blocks of tg] x [fi blocks of tf] of
    axes g and f as the view (*others, g blocks, f blocks, tg, tf): iterated in C order it walks
    tiles of tg rows of one or two cache lines each, tf streams of the transposed operand read in order."""
    st = a.strides
    shape = tuple(a.shape[d] for d in others) + (gi[1] - gi[0], fi[1] - fi[0], tg, tf)
    strides = tuple(st[d] for d in others) + (st[g] * tg, st[f] * tf, st[g], st[f])
    idx = [slice(None)] * a.ndim
    idx[g] = slice(gi[0] * tg, gi[1] * tg)
    idx[f] = slice(fi[0] * tf, fi[1] * tf)
    base = a[tuple(idx)]
    return np.lib.stride_tricks.as_strided(base, shape, strides, writeable=base.flags.writeable)


ALIASED = 512  # a byte stride that is a multiple of this maps a column walk onto few cache sets


def _transposed_axes(o, arrays, aliased_only=True):
    """(g, f, tg, tf) when some operand's fastest axis g is not o's fastest axis f and it steps
    through memory along f in strides past a cache line (x.T + x), by a multiple of ALIASED bytes
    unless `aliased_only` is False: then tiles of tg x tf pay. Else None. (Measured, one core: NumPy's
    own order is ~4x slower than tiles at 1024^2, where the column walk keeps evicting itself, and up
    to 2x faster than tiles at sizes such as 1500^2 or 2000^2, whose strides spread over the cache.)"""
    f = _fast_axis(o)
    if f is None:
        return None
    tf = TILE_FS[0] if o.shape[f] >= 1024 else TILE_FS[1]
    if o.shape[f] < 2 * tf:
        return None
    for a in arrays:
        g = _fast_axis(a)
        if g is not None and g != f and abs(a.strides[f]) > 64 and not (aliased_only and a.strides[f] % ALIASED):
            tg = next((t for t in TILE_GS if a.shape[g] >= 2 * t), None)
            if tg is not None:
                return g, f, tg, tf
    return None


def tiled(kernel, o, args, ordered):
    """elementwise()'s tiles for an op whose operand is transposed relative to its output (x.T + x,
    x.T.contiguous()), for sizes below the pool's threshold too: on one core the tiles are ~4x
    faster than NumPy's own iteration there. False (nothing done) where that does not apply."""
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    if any(a.shape != o.shape for a in arrays):  # the cheap refusals first: this runs for small ops too
        return False
    gf = _transposed_axes(o, arrays)
    if gf is None or not _independent(o, arrays):
        return False
    _tiles(kernel, o, list(args), (), {}, ordered, gf)
    return True


def _tiles(kernel, o, full, tail, params, ordered, gf):
    """The tiled pass: one C-ordered call per task over tiles (g, f), then the edges they leave."""
    g, f, tg, tf = gf
    shape = o.shape
    nd = o.ndim
    others = sorted((d for d in range(nd) if d != g and d != f), key=lambda d: -abs(o.strides[d]))
    ng, nf = shape[g] // tg, shape[f] // tf
    parts = 1 if o.size < elem_min // 4 else 4 * _num_threads  # a small op: no pool (tiled ufuncs cost
                                                                # ~4x a plain one per element)
    split_other = others and shape[others[0]] >= 2 * _num_threads and parts > 1
    if split_other:
        ax = others[0]
        pieces = split_ranges(shape[ax], max(1, (shape[ax] + parts - 1) // parts))
    else:
        pieces = split_ranges(ng, max(1, (ng + parts - 1) // parts))

    def task(i):
        if split_other:
            idx = [slice(None)] * nd
            idx[ax] = slice(*pieces[i])
            sl = tuple(idx)
            views = [_tile_view(a[sl], others, g, f, (0, ng), (0, nf), tg, tf) if isinstance(a, np.ndarray) and a.ndim
                     else a for a in [o] + full]
        else:
            views = [_tile_view(a, others, g, f, pieces[i], (0, nf), tg, tf) if isinstance(a, np.ndarray) and a.ndim
                     else a for a in [o] + full]
        ordered(*views)
    run(len(pieces), task)
    # the edges the tiles leave: g past ng * tg (all f), and f past nf * tf (tiled g)
    for edge in ((slice(ng * tg, None), slice(None)), (slice(0, ng * tg), slice(nf * tf, None))):
        idx = [slice(None)] * nd
        idx[g], idx[f] = edge
        sl = tuple(idx)
        if o[sl].size:
            kernel(o[sl], *[a[sl] if isinstance(a, np.ndarray) and a.ndim else a for a in full], *tail, **params)


_costs = {}  # elementwise() key -> [seconds an element on one thread (least of the last
#              COST_SAMPLES measurements), split calls since the last, the measurements]
COST_SAMPLES = 3
COSTS_MAX = 4096  # computations remembered at most


def _ran_here(key, kernel, o, args, tail, params):
    """True, having run kernel over all of o on this thread (timed, its cost learned), when `key`
    is new, due for a new measurement, or its cost says a split would not pay (POOL_PAYS_S)."""
    if key is None or POOL_PAYS_S <= 0:  # 0: split whatever the cost (the tests of the pool's splits)
        return False
    n = o.size
    rec = _costs.get(key)
    if rec is not None and rec[0] * n >= POOL_PAYS_S and rec[1] < REPROBE:
        rec[1] += 1
        return False
    t = _perf()
    kernel(o, *args, *tail, **params)
    c = (_perf() - t) / max(1, n)
    if rec is None:
        if len(_costs) >= COSTS_MAX:  # a program that keeps making new computations: start over
            _costs.clear()
        _costs[key] = [c, 0, [c]]
    else:
        seen = rec[2]
        seen.append(c)
        del seen[:-COST_SAMPLES]
        rec[0] = min(seen)  # a measurement is only ever slowed (interrupts, cold pages), never sped up
        rec[1] = 0
    return True


def elementwise(kernel, o, args, tail=(), params=None, ordered=None, key=None):
    """kernel(o_piece, *arg_pieces, *tail, **params) over pieces of `o` that together cover it,
    in parallel. `args`: arrays broadcasting to o.shape, or scalars/None (passed whole).
    `ordered(o_view, *arg_views)`: the same computation for a kernel that iterates its views in C
    order (a ufunc with order="C"); given, it lets transposed operands go through in tiles.
    `key` (hashable): names the computation (kernel, dtypes) whose one-thread cost decides whether
    a split pays (_ran_here); None splits whatever the cost.
    Returns False, having done nothing, when the output overlaps an operand, or when one thread
    would run the kernel over the whole output anyway: the caller then runs it once itself."""
    params = params or {}
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    if not _independent(o, arrays):
        return False
    serial = _num_threads <= 1 or getattr(_local, "worker", False) or _monotonic() < _spin_until
    n = o.size
    if o.flags.c_contiguous and all(a.shape == o.shape and a.flags.c_contiguous for a in arrays):
        if serial:
            return False
        if _ran_here(key, kernel, o, args, tail, params):
            return True
        flat_o = o.reshape(-1)
        flat = [a.reshape(-1) if isinstance(a, np.ndarray) and a.ndim else a for a in args]
        pieces = split_ranges(n, _chunk(n))

        def task(i):
            s, e = pieces[i]
            kernel(flat_o[s:e], *[a[s:e] if isinstance(a, np.ndarray) and a.ndim else a for a in flat],
                   *tail, **params)
        run(len(pieces), task)
        return True
    shape = o.shape
    nd = o.ndim
    full = [np.broadcast_to(a, shape) if isinstance(a, np.ndarray) and a.ndim else a for a in args]
    gf = None if ordered is None or tail or params else _transposed_axes(o, [a for a in full if isinstance(a, np.ndarray) and a.ndim])
    if gf is not None:  # a transposed operand: one C-ordered call per task over tiles (g, f)
        _tiles(kernel, o, full, tail, params, ordered, gf)
        return True
    if serial:
        return False
    if _ran_here(key, kernel, o, args, tail, params):
        return True
    # split along o's outermost axis (largest stride) that is long enough to share out
    order = sorted((d for d in range(nd) if shape[d] > 1), key=lambda d: -abs(o.strides[d]))
    if not order:
        kernel(o, *args, *tail, **params)
        return True
    ax = next((d for d in order if shape[d] >= 8), max(order, key=lambda d: shape[d]))
    per = max(1, _chunk(n) // max(1, n // shape[ax]))
    pieces = split_ranges(shape[ax], per)

    def task(i):
        idx = [slice(None)] * nd
        idx[ax] = slice(*pieces[i])
        sl = tuple(idx)
        kernel(o[sl], *[a[sl] if isinstance(a, np.ndarray) and a.ndim else a for a in full], *tail, **params)
    run(len(pieces), task)
    return True


def _copy_kernel(o, s):
    np.copyto(o, s, casting="unsafe")


def _fill_kernel(o, value):
    o[...] = value


def fill(a, value):
    """a[...] = value in parallel; False (nothing done) when one thread would do it in one go."""
    return elementwise(_fill_kernel, a, (value,), key=(_fill_kernel, a.dtype))


def tiled_copy(d, s):
    """np.copyto(d, s, casting="unsafe") from a source transposed relative to d (x.T.contiguous(),
    copy_ of a transposed view) as one copy per block of TILE_FS[0] positions along d's fastest axis:
    each reads that many streams of the source in order and writes whole cache lines of d (NumPy's
    strided copy there is ~2x faster than a ufunc over tiles, ~4x faster than one copyto). Blocks
    spread over the pool for a large copy. False (nothing done) where that does not apply."""
    if not isinstance(s, np.ndarray) or not s.ndim:
        return False
    full = s if s.shape == d.shape else np.broadcast_to(s, d.shape)
    gf = _transposed_axes(d, [full], aliased_only=d.size < elem_min)  # large copies gain anyway
    if gf is None or np.may_share_memory(d, s):
        return False
    f = gf[1]
    tf = TILE_FS[0]
    blocks = split_ranges(d.shape[f], tf)
    parts = 1 if d.size < elem_min else 4 * _num_threads  # a small copy: no pool
    pieces = split_ranges(len(blocks), -(-len(blocks) // parts))
    idx = [slice(None)] * d.ndim

    def task(i):
        sl = list(idx)
        for b in range(*pieces[i]):
            sl[f] = slice(*blocks[b])
            t = tuple(sl)
            np.copyto(d[t], full[t], casting="unsafe")
    run(len(pieces), task)
    return True


def copyto(d, s):
    """np.copyto(d, s, casting="unsafe") in parallel; False (nothing done) when d and s overlap."""
    if isinstance(s, np.ndarray) and np.may_share_memory(d, s):
        return False
    return tiled_copy(d, s) or elementwise(_copy_kernel, d, (s,), key=(_copy_kernel, d.dtype, getattr(s, "dtype", None)))


_resize(_usable_cores())
