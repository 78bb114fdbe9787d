"""DataLoader (the module torch.utils.data.dataloader): batches drawn from a dataset through a
sampler and a collate_fn, read in the calling process (num_workers=0) or by worker processes.

How the worker-process iterator works
-------------------------------------
Every batch is an order numbered by `seq` (0, 1, 2, ... in sampler order). An order goes to one
worker's own index queue (round-robin over the workers still taking orders); all workers answer
on one shared result queue (see _utils/worker.py for the messages). The iterator keeps at most
prefetch_factor * num_workers orders between sent and handed out. With in_order=True answers
that arrive ahead of their turn wait in a buffer, so batches come out in sampler order; with
in_order=False they are handed out as they come, and no worker gets more than its fair share of
the window.

An IterableDataset is read whole by every worker (shard it with get_worker_info()); a worker
whose stream ends says so, its unanswered orders are forgotten and it takes no more orders this
epoch. With persistent_workers the processes outlive the epoch: the next iter() asks each of
them to start over instead of starting new ones. `timeout` bounds each wait for an answer; while
waiting without one, the iterator checks every MP_STATUS_CHECK_INTERVAL seconds that its workers
(and its pinning thread) are alive. A worker's exception is raised again in the main process,
naming the worker. pin_memory=True pins every batch (in a thread, with workers) when a CUDA
device is usable; without one it warns and hands out ordinary batches, as torch does without an
accelerator."""
from __future__ import annotations

import atexit
import itertools
import multiprocessing
import os
import queue
import signal
import threading
import time
import weakref

from ... import _warn
from ... import dtypes
from ...ops.creation import empty
from . import _utils
from ._utils import fetch as _fetch
from ._utils import worker as _worker
from ._utils.collate import default_collate, default_convert
from ._utils.pin_memory import _pin_memory_loop, pin_memory as _pin_batch
from ._utils.worker import get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]


class _DatasetKind:
    """The two dataset styles (torch's names): indexed by keys, or read as a stream."""
    Map = _fetch._MAP_STYLE
    Iterable = _fetch._ITERABLE_STYLE
    create_fetcher = staticmethod(_fetch.make_fetcher)


class _InfiniteConstantSampler(Sampler):
    """The sampler given to an IterableDataset: None, forever (the dataset decides when to stop)."""

    def __iter__(self):
        return itertools.repeat(None)


def _accelerator_available():
    """Whether pinned batches would be of use: a CUDA device (the emulation driver's included,
    so that pinning is exercised where there is no GPU)."""
    from ... import cuda
    return cuda.device_count() > 0


def _usable_cpus():
    """CPUs this process may run on (its affinity set where the OS tells it), or None."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


# -- option checks --------------------------------------------------------------------------------
def _checked_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers):
    """Validate the worker options (torch's messages, in torch's order); prefetch_factor with its
    default of 2 filled in for multi-process loading."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _refuse_for_iterable(option, value):
    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {option} option, but got "
                     f"{option}={value}")


def _resolve_sampling(dataset, iterable, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
    """The (batch_size, drop_last, sampler, batch_sampler) a DataLoader ends up with, after
    torch's checks on how these options combine."""
    if iterable:
        if shuffle not in {False, None}:
            _refuse_for_iterable("shuffle", shuffle)
        if sampler is not None:
            _refuse_for_iterable("sampler", sampler)
        if batch_sampler is not None:
            _refuse_for_iterable("batch_sampler", batch_sampler)
    else:
        shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        batch_size, drop_last = None, False
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
    if sampler is None:
        if iterable:
            sampler = _InfiniteConstantSampler()
        elif shuffle:
            sampler = RandomSampler(dataset, generator=generator)
        else:
            sampler = SequentialSampler(dataset)
    if batch_size is not None and batch_sampler is None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return batch_size, drop_last, sampler, batch_sampler


def _checked_context(context, num_workers):
    """multiprocessing_context as a context object (a start method's name is looked up)."""
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                             f"but got multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string specifying the "
                        f"start method, but got multiprocessing_context={context}")
    return context


class DataLoader:
    """Combines a dataset with a sampler and iterates over the dataset in batches.

    DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
    num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
    worker_init_fn=None, multiprocessing_context=None, generator=None, *, prefetch_factor=None,
    persistent_workers=False, pin_memory_device='', in_order=True)

    Map-style datasets are indexed by the sampler's keys (a RandomSampler drawing from
    `generator` when shuffle=True, else a SequentialSampler), grouped batch_size at a time unless
    batch_size=None or a batch_sampler is given; an IterableDataset is read in order. Batches are
    built by collate_fn (default_collate, or default_convert without automatic batching).
    num_workers > 0 reads them in that many worker processes (see the module docstring)."""

    _FROZEN = frozenset({"batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"})
    _configured = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        prefetch_factor = _checked_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        iterable = isinstance(dataset, IterableDataset)
        self._dataset_kind = _DatasetKind.Iterable if iterable else _DatasetKind.Map
        (self.batch_size, self.drop_last, self.sampler,
         self.batch_sampler) = _resolve_sampling(dataset, iterable, batch_size, shuffle, sampler, batch_sampler,
                                                 drop_last, generator)
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self._configured = True
        self._IterableDataset_len_called = None  # len(dataset) as last reported through len(loader)
        self._iterator = None  # the one iterator persistent workers belong to
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        self._mp_context = _checked_context(context, self.num_workers)

    def __setattr__(self, name, value):
        if self._configured and name in self._FROZEN:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterators draw keys from: lists of keys when batching, single keys otherwise."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is None or self._iterator._closed:  # first epoch, or its workers failed
            self._iterator = self._get_iterator()
        else:
            with self._iterator._lock:
                self._iterator._begin_epoch(self)
        return self._iterator

    def __len__(self):
        if self._dataset_kind != _DatasetKind.Iterable:
            return len(self._index_sampler)
        # the stream's own length, in batches; reading past it warns (see _BaseDataLoaderIter.__next__)
        samples = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is None:
            return samples
        return samples // self.batch_size if self.drop_last else -(-samples // self.batch_size)

    def check_worker_number_rationality(self):
        """Warn when more worker processes are asked for than this process may use CPUs."""
        if not self.num_workers:
            return
        cpus = _usable_cpus()
        if cpus is not None and self.num_workers <= cpus:
            return
        if cpus is None:
            advice = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            caveat = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is {cpus}{caveat}, which is smaller "
                      "than what this DataLoader is going to create.")
        _warn.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} Please be "
                   "aware that excessive worker creation might get DataLoader running slow or even freeze, lower the "
                   "worker number to avoid potential slowness/freeze if necessary.")


# -- iterators ------------------------------------------------------------------------------------
class _BaseDataLoaderIter:
    """What both iterators share: the loader's settings, the key stream, the workers' base seed,
    pinning, and the count of batches handed out (an IterableDataset read past the length len()
    reported warns at each extra batch). Subclasses provide _next_data()."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._pin = self._wants_pinning(loader)
        self._lock = threading.RLock()  # one next() at a time: an iterator may be shared by threads
        self._restart_keys(loader)
        # drawn once per iterator, after the key stream is opened: worker k is seeded base_seed + k
        self._base_seed = empty((), dtype=dtypes.int64).random_(generator=loader.generator).item()

    @staticmethod
    def _wants_pinning(loader):
        if not loader.pin_memory:
            return False
        if loader.pin_memory_device:
            _warn.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                       f"ignore pin_memory_device='{loader.pin_memory_device}'.")
        if _accelerator_available():
            return True
        _warn.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                   "won't be used.")
        return False

    def _restart_keys(self, loader):
        """A fresh pass of the sampler, no batches handed out yet."""
        self._keys = iter(self._index_sampler)
        self._handed_out = 0
        self._reported_len = loader._IterableDataset_len_called

    def _begin_epoch(self, loader):
        """Start the next epoch (a persistent-workers loader reuses its iterator)."""
        self._restart_keys(loader)

    def __iter__(self):
        return self

    def __next__(self):
        with self._lock:
            return self._next_locked()

    def _next_locked(self):
        batch = self._next_data()
        self._handed_out += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._reported_len is not None
                and self._handed_out > self._reported_len):
            self._warn_read_past_len()
        return batch

    def _warn_read_past_len(self):
        message = (f"Length of IterableDataset {self._dataset} was reported to be {self._reported_len}(when "
                   f"accessing len(dataloader)), but {self._handed_out} samples have been fetched. ")
        if self._num_workers > 0:
            message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
        _warn.warn(message)

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Reads every batch in the calling process."""

    _closed = False

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        self._fetcher = _fetch.make_fetcher(self._dataset_kind, self._dataset, self._auto_collation,
                                            self._collate_fn, self._drop_last)

    def _next_data(self):
        batch = self._fetcher.fetch(next(self._keys))  # either may raise StopIteration: the epoch ends
        return _pin_batch(batch, "cuda") if self._pin else batch


# Iterators whose workers may still run: shut down at interpreter exit (before the flag in _utils
# that tells late __del__ calls to leave daemon workers alone is set).
_open_iterators = weakref.WeakSet()
_open_iterators_lock = threading.Lock()
_exit_hook_installed = False


def _close_open_iterators():
    with _open_iterators_lock:
        iterators = list(_open_iterators)
    for iterator in iterators:
        iterator._shutdown_workers()


def _track_until_exit(iterator):
    global _exit_hook_installed
    with _open_iterators_lock:
        _open_iterators.add(iterator)
        if not _exit_hook_installed:
            atexit.register(_close_open_iterators)
            _exit_hook_installed = True


_WATCHDOG_INTERVAL = 0.1
"""How often (seconds) the main process checks its workers' liveness while it waits for an answer."""


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Reads batches in worker processes (the protocol is described in the module docstring).

    Per epoch it keeps: _pending, seq -> worker for orders sent and not answered; _early, seq ->
    (status, payload) for answers that came before their turn (in_order); _load, unanswered
    orders per worker; _active, the workers still taking orders."""

    def __init__(self, loader):
        super().__init__(loader)
        self._owner_pid = os.getpid()
        self._in_order = loader.in_order
        self._window = loader.prefetch_factor * self._num_workers
        if self._window <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing
        self._workers_done_event = context.Event()
        self._worker_result_queue = context.Queue()
        self._workers, self._index_queues, self._exit_sent = [], [], []
        self._pin_thread = None
        self._failure = None  # once a worker has died: the message every later next() raises
        self._closed = False  # from here on __del__ shuts down whatever has been started
        try:
            for worker_id in range(self._num_workers):
                self._launch_worker(context, loader, worker_id)
        except BaseException:
            self._shutdown_workers()
            raise
        # answers are read from the workers' pipe by a thread (which also pins them when asked):
        # a worker killed in the middle of writing a large batch leaves a partial message that
        # blocks its reader forever; the thread may block, the main thread's watchdog does not
        self._answers = self._start_pin_thread()
        _track_until_exit(self)
        self._begin_epoch(loader, restart_workers=False)

    def _launch_worker(self, context, loader, worker_id):
        setup = _worker._WorkerSetup(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                                     self._num_workers)
        orders = context.Queue()
        orders.cancel_join_thread()  # unread orders must not hold up this process's exit
        process = context.Process(target=_worker._worker_loop,
                                  args=(setup, orders, self._worker_result_queue, self._workers_done_event),
                                  daemon=True)
        from pickle import PicklingError
        try:
            process.start()
        except (TypeError, AttributeError, PicklingError):
            _warn.warn("Got pickle error when attempting to start a worker Process. This might be because the "
                       "worker Process arguments are not picklable. Python 3.14+ changed the multiprocessing "
                       "start method in non-Mac POSIX platforms to 'forkserver', which requires the worker "
                       "Process arguments to be picklable. You can also try multiprocessing.set_start_method('fork').")
            raise
        self._workers.append(process)
        self._index_queues.append(orders)
        self._exit_sent.append(False)

    def _start_pin_thread(self):
        """Start the thread that receives (and, with pin_memory, pins) worker answers; returns the
        queue it hands them on to."""
        pinned = queue.Queue()
        self._pin_thread_stop = threading.Event()
        self._pin_thread = threading.Thread(
            target=_pin_memory_loop, args=(self._worker_result_queue, pinned, 0, self._pin_thread_stop, "cuda"),
            kwargs={"pin": self._pin}, daemon=True)
        self._pin_thread.start()
        return pinned

    # -- epochs -----------------------------------------------------------------------------------
    def _begin_epoch(self, loader, restart_workers=True):
        self._restart_keys(loader)
        workers = range(self._num_workers)
        self._active = [True for _ in workers]
        self._load = [0 for _ in workers]
        self._pending = {}
        self._early = {}
        self._sent = 0
        self._next_out = 0  # in_order: the seq handed out next
        self._keys_left = True
        self._rotation = itertools.cycle(workers)
        if restart_workers:
            self._restart_workers()
        self._top_up()

    def _restart_workers(self):
        """Persistent workers: tell each to start its dataset over and wait until all have; answers
        still on their way from an abandoned epoch are dropped."""
        for orders in self._index_queues:
            orders.put(_worker._NEW_EPOCH)
        waiting = self._num_workers
        while waiting:
            _, status, _ = self._receive()
            waiting -= status == _worker._RESTARTED

    # -- sending orders ---------------------------------------------------------------------------
    def _next_worker(self):
        """The next worker in rotation that takes an order now, or None. in_order=False also skips
        workers holding their fair share of the window already."""
        active = sum(self._active)
        if not active:
            return None
        share = None if self._in_order else self._window // active
        for _ in range(self._num_workers):
            candidate = next(self._rotation)
            if self._active[candidate] and (share is None or self._load[candidate] < share):
                return candidate
        return None

    def _top_up(self):
        """Send orders until the window is full, the keys run out, or no worker takes one."""
        while self._keys_left and len(self._pending) + len(self._early) < self._window:
            worker_id = self._next_worker()
            if worker_id is None:
                return
            try:
                keys = next(self._keys)
            except StopIteration:
                self._keys_left = False
                return
            self._index_queues[worker_id].put((self._sent, keys))
            self._pending[self._sent] = worker_id
            self._load[worker_id] += 1
            self._sent += 1

    # -- receiving answers ------------------------------------------------------------------------
    def _next_data(self):
        if self._failure is not None:
            raise RuntimeError(f"{self._failure} (reported earlier; this iterator's workers have been shut down: call "
                               "iter() on the DataLoader for a new one)")
        while True:
            if self._in_order:
                turn = self._skip_to_turn()
                if turn in self._early:
                    self._next_out += 1
                    return self._hand_out(*self._early.pop(turn))
            if not self._pending:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            seq, status, payload = self._receive()
            worker_id = self._pending.pop(seq)
            self._load[worker_id] -= 1
            if status == _worker._EXHAUSTED:
                self._retire(worker_id)
                self._top_up()
            elif not self._in_order:
                return self._hand_out(status, payload)
            elif seq == self._next_out:
                self._next_out += 1
                return self._hand_out(status, payload)
            else:
                self._early[seq] = (status, payload)

    def _skip_to_turn(self):
        """in_order: move past seqs that will never be answered (orders of retired workers)."""
        while self._next_out < self._sent and self._next_out not in self._pending and self._next_out not in self._early:
            self._next_out += 1
        return self._next_out

    def _hand_out(self, status, payload):
        self._top_up()  # before raising, so that iteration can go on past a failed batch
        if status == _worker._FAILED:
            payload.reraise()
        return payload

    def _retire(self, worker_id):
        """A worker's stream has ended: forget its unanswered orders (it drops them) and send it no
        more this epoch; a non-persistent worker is also told to exit."""
        self._active[worker_id] = False
        for seq in [seq for seq, owner in self._pending.items() if owner == worker_id]:
            del self._pending[seq]
        self._load[worker_id] = 0
        if not self._persistent_workers:
            self._send_exit(worker_id)

    def _receive(self):
        """The next answer; raises when `timeout` passes without one, or when a worker (or the
        pinning thread) has died."""
        if self._failure is not None:
            raise RuntimeError(self._failure)
        if self._closed:
            raise RuntimeError("DataLoader iterator: its worker processes have been shut down; call iter() on the "
                               "DataLoader for a new one")
        if self._timeout > 0:
            answer = self._poll(self._timeout)
            if answer is None:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return self._unpacked(answer)
        while True:
            answer = self._poll(_utils._poll_interval())
            if answer is not None:
                return self._unpacked(answer)
            if self._pin_thread is not None and not self._pin_thread.is_alive():
                raise RuntimeError("Pin memory thread exited unexpectedly" if self._pin else
                                   "DataLoader: the thread receiving the workers' answers exited unexpectedly")

    def _unpacked(self, answer):
        seq, status, payload = answer
        if isinstance(payload, _worker._Packed):
            worker_id = self._pending.get(seq, "?")
            pid = self._workers[worker_id].pid if isinstance(worker_id, int) else "?"
            status, payload = _worker._unpack(worker_id, pid, seq, status, payload)
        return seq, status, payload

    def _poll(self, timeout):
        """Wait up to `timeout` seconds for an answer: the answer, or None. The watchdog: every
        _WATCHDOG_INTERVAL seconds without an answer the workers' liveness is checked, so that a
        worker that died (a signal, exit(), an uncaught SystemExit/KeyboardInterrupt, a kill from
        outside) is reported at once, naming it."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self._answers.get(timeout=max(0.0, min(left, _WATCHDOG_INTERVAL)))
            except queue.Empty:
                pass
            except Exception as failure:
                self._check_workers()
                raise RuntimeError(f"DataLoader: reading the workers' answers failed: {failure}") from failure
            self._check_workers()
            if left <= _WATCHDOG_INTERVAL:
                return None

    def _check_workers(self):
        """Raise (and shut the iterator down) when a worker that was not told to exit has ended."""
        dead = [i for i, process in enumerate(self._workers) if not self._exit_sent[i] and not process.is_alive()]
        if not dead:
            return
        reports = []
        for i in dead:
            process = self._workers[i]
            code = process.exitcode
            if code is not None and code < 0:
                try:
                    name = signal.Signals(-code).name
                    text = signal.strsignal(-code) or name
                except ValueError:
                    name, text = f"signal {-code}", f"signal {-code}"
                head = f"DataLoader worker (pid {process.pid}) is killed by signal: {text}."
                detail = [f"worker {i}", name]
            else:
                head = f"DataLoader worker (pid(s) {process.pid}) exited unexpectedly"
                detail = [f"worker {i}", f"exit code {code}"]
            batches = sorted(seq for seq, owner in self._pending.items() if owner == i)
            if batches:
                detail.append(f"while fetching batch {', '.join(map(str, batches))}")
            reports.append(f"{head} ({', '.join(detail)})")
        self._failure = "; ".join(reports) + ". See the worker's output for its own error, if any"
        self._shutdown_workers()
        raise RuntimeError(self._failure)

    # -- torch's names for the bookkeeping (read by tests and by tools that know torch's iterator) --
    @property
    def _send_idx(self):
        """Orders sent this epoch."""
        return self._sent

    @property
    def _rcvd_idx(self):
        """The oldest order not yet handed out (or dropped)."""
        return min(itertools.chain(self._pending, self._early), default=self._sent)

    @property
    def _tasks_outstanding(self):
        """Orders sent and not yet answered."""
        return len(self._pending)

    # -- shutting down ----------------------------------------------------------------------------
    def _send_exit(self, worker_id):
        if not self._exit_sent[worker_id]:
            self._exit_sent[worker_id] = True
            self._index_queues[worker_id].put(_worker._EXIT)

    def _shutdown_workers(self):
        """Stop the pinning thread and the workers (idempotent). A worker that does not exit within
        MP_STATUS_CHECK_INTERVAL seconds is terminated. Nothing is done in a process other than
        the one that started the workers, nor once the interpreter is exiting."""
        if self._closed or os.getpid() != self._owner_pid or _utils.python_exit_status is not False:
            return
        self._closed = True
        try:
            if self._pin_thread is not None:
                self._pin_thread_stop.set()
                self._worker_result_queue.put((None, None, None))  # wakes the thread if it is waiting
                self._pin_thread.join(timeout=_utils._poll_interval())  # it may be stuck in a dead worker's message
            self._workers_done_event.set()  # workers drop the orders they still hold
            for worker_id in range(len(self._workers)):
                self._send_exit(worker_id)
            for process in self._workers:
                process.join(timeout=_utils._poll_interval())
            for channel in (*self._index_queues, self._worker_result_queue):
                channel.cancel_join_thread()
                channel.close()
        finally:
            for process in self._workers:
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=_utils._poll_interval())

    def __del__(self):
        if hasattr(self, "_closed"):
            self._shutdown_workers()
