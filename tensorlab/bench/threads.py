"""CPU thread counts of the compared libraries, read and set the same way everywhere in the benchmark:
tensorlab's through tl.get_num_threads()/tl.set_num_threads() (a build without them runs its CPU
kernels on one thread: 1, and nothing to set), torch's through torch.get_num_threads()/
torch.set_num_threads(). NumPy's ufuncs and reductions run on one thread (its matmul on BLAS's
threads, which it does not expose: None)."""
from __future__ import annotations

import contextlib

import tensorlab as tl


def tensorlab_threads():
    get = getattr(tl, "get_num_threads", None)
    return int(get()) if get is not None else 1


def can_set_tensorlab_threads():
    return callable(getattr(tl, "set_num_threads", None))


def set_tensorlab_threads(n):
    if can_set_tensorlab_threads():
        tl.set_num_threads(int(n))


@contextlib.contextmanager
def using(n, torch=None):
    """Run the block with tensorlab (and torch, when given) set to n CPU threads; n=None changes
    nothing. The previous counts are restored afterwards."""
    if n is None:
        yield
        return
    old_tl = tensorlab_threads()
    old_torch = torch.get_num_threads() if torch is not None else None
    set_tensorlab_threads(n)
    if torch is not None:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        set_tensorlab_threads(old_tl)
        if torch is not None:
            torch.set_num_threads(old_torch)


def variants(default):
    """The thread settings a large workload runs at: one thread and the default count, when
    tensorlab can set its count and the default is above one; else the default only. Each is
    (label, count or None for "leave as is")."""
    if can_set_tensorlab_threads() and default > 1:
        return [("1", 1), ("default", None)]
    return [("default", None)]
