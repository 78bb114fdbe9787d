"""Inside a DataLoader worker process (the module torch.utils.data._utils.worker): how a worker
seeds itself, what get_worker_info() tells the dataset, and the loop that serves fetch orders.

Conversation with the main process
----------------------------------
Each worker reads orders from its own index queue:
  (seq, keys)  fetch the batch (or sample) for `keys` and reply with the same seq;
  _NEW_EPOCH   (persistent workers) start the dataset over, then acknowledge;
  _EXIT        leave the loop.
and writes replies (seq, status, payload) to the queue shared by all workers:
  _FETCHED     payload is the collated batch (tensors travel pickled);
  _FAILED      payload is an ExceptionWrapper naming this worker;
  _EXHAUSTED   the worker's IterableDataset iterator ended (payload: worker id); orders that
               follow in the same epoch are dropped unanswered;
  _RESTARTED   acknowledges _NEW_EPOCH (seq is None, payload: worker id).
The payload of _FETCHED and _FAILED travels as _Packed bytes, pickled by the worker itself
(_pack): a batch or an exception that cannot be pickled becomes that batch's error, instead of a
reply that the queue's feeder thread drops (the main process would wait for it forever); the main
process unpickles it with _unpack, and a reply it cannot unpickle is also that batch's error.

Seeding: worker k of an iterator gets seed = base_seed + k, where base_seed is drawn once per
iterator from the loader's generator (or the default one). Before worker_init_fn runs, that seed
seeds Python's `random` and tensorlab's default generators, and NumPy's global generator gets
the four 32-bit words torch derives from (base_seed, k) with NumPy's SeedSequence hash.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

from . import HAS_NUMPY, ExceptionWrapper, _poll_interval
from .fetch import _ITERABLE_STYLE, make_fetcher

_FETCHED, _FAILED, _EXHAUSTED, _RESTARTED = "fetched", "failed", "exhausted", "restarted"
_NEW_EPOCH = "new epoch"
_EXIT = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """Describes the DataLoader worker the calling code runs in (see get_worker_info).

    id: this worker's number, 0 to num_workers - 1; num_workers: how many the loader started;
    seed: the seed this worker was given; dataset: this worker's own copy of the dataset;
    rng: an optional RNG state holder; worker_method: how workers run ("multiprocessing")."""
    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


_worker_info = None


def get_worker_info():
    """The WorkerInfo of the DataLoader worker process calling it; None in the main process.
    An IterableDataset (or a worker_init_fn) reads it to give each worker its own share."""
    return _worker_info


class ManagerWatchdog:
    """Tells a worker whether the process that started it still runs: once the worker has been
    re-parented, its loop ends instead of waiting for orders forever."""

    def __init__(self):
        self._parent_pid = os.getppid()
        self._orphaned = False

    def is_alive(self):
        self._orphaned = self._orphaned or os.getppid() != self._parent_pid
        return not self._orphaned


# -- seeding --------------------------------------------------------------------------------------
_WORD = 0xFFFF_FFFF


class _ChainedHash:
    """The hash NumPy's SeedSequence applies to 32-bit words: xor with a running constant, advance
    the constant by a fixed multiplier, multiply, fold the high half into the low half."""

    def __init__(self, start, step):
        self._constant = start
        self._step = step

    def __call__(self, word):
        word = (word ^ self._constant) & _WORD
        self._constant = (self._constant * self._step) & _WORD
        word = (word * self._constant) & _WORD
        return word ^ (word >> 16)


def _mix_words(x, y):
    mixed = (0xCA01F9DD * x - 0x4973F715 * y) & _WORD
    return mixed ^ (mixed >> 16)


def _generate_state(base_seed, worker_id):
    """NumPy's global-generator seed for worker `worker_id`: four 32-bit words, the state a
    SeedSequence with entropy (worker_id, base_seed) and a pool of four words generates."""
    absorb = _ChainedHash(0x43B0D7E5, 0x931E8875)
    pool = [absorb(word) for word in (worker_id, base_seed & _WORD, base_seed >> 32, 0)]
    for source in range(len(pool)):
        for target in range(len(pool)):
            if target != source:
                pool[target] = _mix_words(pool[target], absorb(pool[source]))
    emit = _ChainedHash(0x8B51F9DD, 0x58F38DED)
    return [emit(word) for word in pool]


def _seed_worker(base_seed, worker_id):
    """Seed every random stream of this process for worker `worker_id`; returns its seed."""
    from ....ops.random import manual_seed
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    if HAS_NUMPY:
        import numpy
        numpy.random.seed(_generate_state(base_seed, worker_id))
    return seed


# -- the worker's loop ----------------------------------------------------------------------------
@dataclass
class _WorkerSetup:
    """Everything a worker needs from its iterator (pickled into it under spawn/forkserver)."""
    dataset_kind: int
    dataset: object
    auto_collation: bool
    collate_fn: object
    drop_last: bool
    base_seed: int
    init_fn: object
    worker_id: int
    num_workers: int

    @property
    def where(self):
        return f"in DataLoader worker process {self.worker_id}"

    def open_fetcher(self, run_init):
        """(fetcher, None), or (None, ExceptionWrapper) when worker_init_fn (run first when
        `run_init`) or opening the dataset fails: that error then answers every fetch order."""
        try:
            if run_init and self.init_fn is not None:
                self.init_fn(self.worker_id)
            return make_fetcher(self.dataset_kind, self.dataset, self.auto_collation, self.collate_fn,
                                self.drop_last), None
        except Exception:
            return None, ExceptionWrapper(where=self.where)

    def answer(self, fetcher, keys):
        """(status, payload) for one fetch order."""
        try:
            return _FETCHED, fetcher.fetch(keys)
        except StopIteration:
            if self.dataset_kind == _ITERABLE_STYLE:
                return _EXHAUSTED, self.worker_id
            return _FAILED, ExceptionWrapper(where=self.where)
        except Exception:
            return _FAILED, ExceptionWrapper(where=self.where)


class _Packed(bytes):
    """A reply's payload, pickled by the worker (see the module docstring)."""

    __slots__ = ()


def _unsendable_wrapper(where, note, exc_msg=""):
    """An ExceptionWrapper for a failure that is itself only text (always picklable)."""
    wrapper = ExceptionWrapper.__new__(ExceptionWrapper)
    wrapper.exc_type = RuntimeError
    wrapper.exc_msg = note + ("\n" + exc_msg if exc_msg else "")
    wrapper.where = where
    return wrapper


def _pack(setup, seq, status, payload):
    """(status, _Packed payload) for a reply of batch `seq`."""
    try:
        return status, _Packed(ForkingPickler.dumps(payload))
    except Exception as e:
        error = "".join(traceback.format_exception_only(type(e), e)).strip()
        if status == _FETCHED:
            note = (f"RuntimeError: DataLoader worker {setup.worker_id} (pid {os.getpid()}) could not send batch "
                    f"{seq} to the main process: the batch cannot be pickled ({error})")
            wrapper = _unsendable_wrapper(setup.where, note)
        else:
            kind = getattr(payload.exc_type, "__qualname__", "?")
            note = (f"RuntimeError: DataLoader worker {setup.worker_id} (pid {os.getpid()}) raised {kind} while "
                    f"fetching batch {seq}, an exception that cannot be pickled ({error}); its traceback:")
            wrapper = _unsendable_wrapper(setup.where, note, payload.exc_msg)
        return _FAILED, _Packed(ForkingPickler.dumps(wrapper))


def _unpack(worker_id, pid, seq, status, payload):
    """(status, payload) as the worker meant it; an unpicklable reply becomes the batch's error."""
    if not isinstance(payload, _Packed):
        return status, payload
    try:
        return status, pickle.loads(payload)
    except Exception as e:
        error = "".join(traceback.format_exception_only(type(e), e)).strip()
        note = (f"RuntimeError: the reply of DataLoader worker {worker_id} (pid {pid}) for batch {seq} cannot be "
                f"unpickled in the main process ({error})")
        return _FAILED, _unsendable_wrapper(f"in DataLoader worker process {worker_id}", note)


def _serve(setup, index_queue, data_queue, done_event):
    global _worker_info
    seed = _seed_worker(setup.base_seed, setup.worker_id)
    _worker_info = WorkerInfo(id=setup.worker_id, num_workers=setup.num_workers, seed=seed, dataset=setup.dataset)
    fetcher, broken = setup.open_fetcher(run_init=True)
    exhausted = False
    parent = ManagerWatchdog()
    while parent.is_alive():
        try:
            order = index_queue.get(timeout=_poll_interval())
        except queue.Empty:
            continue
        if order is _EXIT:
            return
        if order == _NEW_EPOCH:
            exhausted = False
            if broken is None:
                fetcher, broken = setup.open_fetcher(run_init=False)
            data_queue.put((None, _RESTARTED, setup.worker_id))
            continue
        if exhausted or done_event.is_set():
            continue  # nobody waits for this reply any more
        seq, keys = order
        status, payload = (_FAILED, broken) if broken is not None else setup.answer(fetcher, keys)
        exhausted = status == _EXHAUSTED
        if not exhausted:
            status, payload = _pack(setup, seq, status, payload)
        data_queue.put((seq, status, payload))
        del payload  # let a large batch go before blocking on the next order


def _worker_loop(setup, index_queue, data_queue, done_event):
    """Entry point of a worker process: serve fetch orders until told to exit or orphaned."""
    try:
        _serve(setup, index_queue, data_queue, done_event)
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the whole process group; the main process decides what to do
    if done_event.is_set():
        # the main process is shutting down and may no longer read: do not wait at exit for the
        # queue's feeder thread to flush replies nobody will take
        data_queue.cancel_join_thread()
        data_queue.close()
