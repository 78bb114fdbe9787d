"""torch.jit.annotations' BroadcastingList1..6: the script compiler's "T or a list of T of this length"
type; in eager code they are only read in annotations, where BroadcastingListN[T] stands for
Union[T, List[T]]."""
from __future__ import annotations

from typing import List, Union

__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "BroadcastingList4",
           "BroadcastingList5", "BroadcastingList6"]


class _BroadcastingList:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, t):
        return Union[t, List[t]]

    def __repr__(self):
        return f"BroadcastingList{self.n}"


BroadcastingList1, BroadcastingList2, BroadcastingList3, BroadcastingList4, BroadcastingList5, BroadcastingList6 = (
    _BroadcastingList(n) for n in range(1, 7))
