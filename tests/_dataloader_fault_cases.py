"""Worker failures of every kind, each run against a DataLoader with num_workers=2 (with and
without persistent workers): run as a script by tests/test_dataloader_faults.py (a hang is cut
by SIGALRM and reported, so that the test itself never hangs). Prints one JSON line per case."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading
import time

import tensorlab as tl
from tensorlab.utils.data import DataLoader, Dataset

FAIL_AT = 5  # the sample whose fetch fails (batch 2 with batch_size=2)


class Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise Hang()


def _unpicklable_error():
    class LocalError(Exception):  # a class pickle cannot name
        pass
    raise LocalError("cannot travel")


class Faulty(Dataset):
    def __init__(self, kind):
        self.kind = kind

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == FAIL_AT:
            k = self.kind
            if k == "unpicklable_exception":
                _unpicklable_error()
            if k == "unpicklable_item":
                return lambda: i
            if k == "exit":
                exit()
            if k == "sys_exit_3":
                sys.exit(3)
            if k == "keyboard_interrupt":
                raise KeyboardInterrupt
            if k == "segfault":
                ctypes.string_at(0)
            if k == "killed":
                time.sleep(30)  # killed from outside meanwhile
        if self.kind == "killed_mid_send":  # big samples: a worker blocks inside a pipe write
            return tl.full((1 << 20,), float(i))
        return tl.tensor([float(i)])


BATCH_ERRORS = ("unpicklable_exception", "unpicklable_item")
DEATHS = ("exit", "sys_exit_3", "keyboard_interrupt", "segfault", "killed", "killed_mid_send")


def run_case(kind, persistent):
    collate = list if kind == "unpicklable_item" else None  # the item reaches the queue as it is
    dl = DataLoader(Faulty(kind), batch_size=2, num_workers=2, persistent_workers=persistent, collate_fn=collate)
    it = iter(dl)
    result = {"kind": kind, "persistent": persistent, "errors": [], "batches": 0, "hang": False}
    if kind == "killed":
        def killer():
            time.sleep(1.0)
            os.kill(it._workers[0].pid, signal.SIGKILL)  # sample 5 is in batch 2: worker 0's
        threading.Thread(target=killer, daemon=True).start()
    t0 = time.monotonic()
    signal.alarm(20)
    try:
        if kind == "killed_mid_send":  # let the workers fill the pipe, then kill one mid-message
            next(it)
            result["batches"] += 1
            time.sleep(1.0)
            os.kill(it._workers[int(os.environ.get("KILL_WORKER", "0"))].pid, signal.SIGKILL)
        later = 0
        while True:
            try:
                next(it)
                result["batches"] += 1
            except StopIteration:
                break
            except Exception as e:
                result["errors"].append(f"{type(e).__name__}: {e}"[:600])
                if result["errors"] and kind in DEATHS:
                    later += 1
                    if later == 3:
                        break
    except Hang:
        result["hang"] = True
    finally:
        signal.alarm(0)
    result["seconds"] = round(time.monotonic() - t0, 2)
    time.sleep(0.2)
    result["workers_alive"] = sum(p.is_alive() for p in getattr(it, "_workers", []))
    if kind in DEATHS and not result["hang"]:
        # a new epoch after the failure: a working iterator again (the failing sample is skipped)
        signal.alarm(20)
        try:
            dl2 = DataLoader(Faulty("none"), batch_size=2, num_workers=2, persistent_workers=persistent)
            result["fresh_batches"] = len(list(dl2))
        except Hang:
            result["hang"] = True
        finally:
            signal.alarm(0)
    it._shutdown_workers()
    return result


def run_shared():
    dl = DataLoader(Faulty("none"), batch_size=1, num_workers=2)
    it = iter(dl)
    got, errors = [], []

    def consume():
        while True:
            try:
                got.append(int(next(it).item()))
            except StopIteration:
                return
            except Exception as e:
                errors.append(f"{type(e).__name__}: {e}")
                return

    signal.alarm(20)
    hang = False
    try:
        threads = [threading.Thread(target=consume, daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.1)
    except Hang:
        hang = True
    finally:
        signal.alarm(0)
    return {"kind": "shared", "hang": hang, "errors": errors, "values": sorted(got)}


def main():
    signal.signal(signal.SIGALRM, _alarm)
    kinds = sys.argv[1:] or list(BATCH_ERRORS + DEATHS)
    for kind in kinds:
        if kind == "shared":
            print(json.dumps(run_shared()), flush=True)
            continue
        for persistent in (False, True):
            print(json.dumps(run_case(kind, persistent)), flush=True)


if __name__ == "__main__":
    main()
