"""A DataLoader that never hangs (issue 38, item 5): a worker that raises an exception pickle
cannot carry, returns an item pickle cannot carry, calls exit(), raises SystemExit or
KeyboardInterrupt, segfaults or is killed from outside, with and without persistent workers;
and an iterator shared by two threads. The cases run in a subprocess
(tests/_dataloader_fault_cases.py) that cuts a hang with SIGALRM and reports it."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
KINDS = ("unpicklable_exception", "unpicklable_item", "exit", "sys_exit_3", "keyboard_interrupt", "segfault",
         "killed", "killed_mid_send")


def _run(*kinds):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    run = subprocess.run([sys.executable, str(HERE / "_dataloader_fault_cases.py"), *kinds], capture_output=True,
                         text=True, timeout=240, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def cases():
    return {(r["kind"], r["persistent"]): r for r in _run(*KINDS)}


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("kind", ["unpicklable_exception", "unpicklable_item"])
def test_unsendable_batch_is_that_batchs_error(cases, kind, persistent):
    r = cases[(kind, persistent)]
    assert not r["hang"] and r["seconds"] < 15
    assert len(r["errors"]) == 1 and r["batches"] == 7  # the one batch fails, the other seven arrive
    err = r["errors"][0]
    assert "DataLoader worker process 0" in err and "batch 2" in err and "pid" in err
    assert ("LocalError" in err) if kind == "unpicklable_exception" else ("cannot be pickled" in err)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("kind, how", [("exit", "exit code 0"), ("sys_exit_3", "exit code 3"),
                                       ("keyboard_interrupt", "exit code 0"),
                                       ("segfault", "killed by signal: Segmentation fault"),
                                       ("killed", "killed by signal: Killed"),
                                       ("killed_mid_send", "killed by signal: Killed")])
def test_dead_worker_reported_and_every_later_next_raises(cases, kind, how, persistent):
    r = cases[(kind, persistent)]
    assert not r["hang"], r
    assert r["seconds"] < 15, r
    assert len(r["errors"]) == 3, r  # the first report, then two more next() calls: each raises at once
    first = r["errors"][0]
    assert first.startswith("RuntimeError: DataLoader worker (pid") and how in first, first
    batch = r"\d+" if kind == "killed_mid_send" else "2"  # mid_send: whichever batch worker 0 was writing
    assert "worker 0" in first and re.search(rf"while fetching batch [\d, ]*\b{batch}\b", first), first
    assert all(e.startswith("RuntimeError: DataLoader worker (pid") for e in r["errors"][1:])
    assert r["workers_alive"] == 0  # the loader shut its workers down
    assert r["fresh_batches"] == 8


def test_iterator_shared_by_two_threads():
    (r,) = _run("shared")
    assert not r["hang"] and not r["errors"], r
    assert r["values"] == list(range(16))
