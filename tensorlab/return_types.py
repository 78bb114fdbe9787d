"""Named result tuples of the ops that return values with indices (max, min, sort, topk, median, nanmedian, kthvalue), like torch.return_types:
`values, indices = x.max(0)`, `r.values`, `r.indices`, `r[0]`."""
from __future__ import annotations

from collections import namedtuple

__all__ = ("max", "min", "sort", "topk", "median", "nanmedian", "kthvalue")


def _values_indices(name):
    cls = namedtuple(name, ("values", "indices"))
    cls.__module__ = __name__
    cls.__qualname__ = name

    def __repr__(self):
        return f"tensorlab.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    cls.__repr__ = __repr__
    return cls


max = _values_indices("max")  # noqa: A001
min = _values_indices("min")  # noqa: A001
sort = _values_indices("sort")
topk = _values_indices("topk")
median = _values_indices("median")
nanmedian = _values_indices("nanmedian")
kthvalue = _values_indices("kthvalue")
