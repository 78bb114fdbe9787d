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


def _named(name, fields):
    """A torch.return_types tuple with other field names (histogram's hist, bin_edges)."""
    cls = namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"tensorlab.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


mode = _values_indices("mode")  # ops/mode.py
histogram = _named("histogram", ("hist", "bin_edges"))  # ops/histograms.py
histogramdd = _named("histogramdd", ("hist", "bin_edges"))
__all__ += ("mode", "histogram", "histogramdd")
