"""tl.multiprocessing (torch.multiprocessing): Python's multiprocessing (every name it has), plus
torch's spawn / start_processes (run fn(i, *args) in nprocs processes; a child's exception is
re-raised in the parent as ProcessRaisedException with its traceback, a child that dies as
ProcessExitedException) and the sharing-strategy switches (tensorlab tensors cross processes by
pickling their bytes, so the strategy is remembered and changes nothing)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from multiprocessing import *  # noqa: F401,F403

__all__ = list(getattr(multiprocessing, "__all__", [])) + [
    "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies"]

_STRATEGIES = {"file_descriptor", "file_system"} if sys.platform != "darwin" else {"file_system"}
_strategy = ["file_descriptor" if sys.platform != "darwin" else "file_system"]


def get_all_sharing_strategies():
    """The sharing strategies this platform has."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The current sharing strategy."""
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose the sharing strategy (one of get_all_sharing_strategies())."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}; expected one of {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    """A spawned process failed: error_index is its index, pid its process id."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - the parent re-raises it with the child's traceback
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one spawn(): join() until all end (True) or one fails (raises)."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait for the processes; True when all exited cleanly, False on timeout; raises for a failure
        (the other processes are terminated first)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        if not self.error_queues[failed].empty():
            tb = self.error_queues[failed].get()
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{tb}",
                                         failed, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, p.pid,
                                         p.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {p.exitcode}", failed, p.pid,
                                     p.exitcode)


SpawnContext = ProcessContext


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) for i in range(nprocs), each in a new process started with start_method."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: start_processes with the spawn start method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
