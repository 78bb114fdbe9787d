"""Fault-injection points. Every allocation, byte copy and kernel launch calls `hit(kind)` before
it does anything; `tl.testing` installs a plan that makes the N-th one fail. With no plan the
cost is one global read."""
from __future__ import annotations

plan = None  # an object with .hit(kind), installed by tensorlab.testing


def hit(kind):
    p = plan
    if p is not None:
        p.hit(kind)
