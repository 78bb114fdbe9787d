"""ReduceOp: torch.distributed.ReduceOp's names (ReduceOp.SUM is a RedOpType member, as in torch)."""
from __future__ import annotations

import enum


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """The reduction a collective applies: SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR.

    Constructed from a member (`ReduceOp(ReduceOp.SUM)`) it compares equal to that member."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    __slots__ = ("op",)

    def __init__(self, op=RedOpType.SUM):
        self.op = as_red_op(op, "ReduceOp")

    def __eq__(self, other):
        if isinstance(other, ReduceOp):
            return self.op == other.op
        if isinstance(other, RedOpType):
            return self.op == other
        return NotImplemented

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"ReduceOp({self.op!r})"


def as_red_op(op, where):
    """The RedOpType of `op` (a RedOpType or a ReduceOp), or TypeError naming `where`."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"{where}(): op must be a tensorlab.distributed.ReduceOp (ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, "
                    f"BAND, BOR, BXOR), not {type(op).__name__}")
