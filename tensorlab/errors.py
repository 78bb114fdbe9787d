"""Exceptions shared by both backends (tl.cuda's own live in tensorlab/cuda/errors.py)."""
from __future__ import annotations


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index value outside its dimension. torch raises RuntimeError for gather/scatter and
    (since 2.x) index_select, IndexError before; this is both, so either `except` works."""


def index_out_of_range(op, bad, dim, size):
    """The error both backends raise for index value `bad` outside dimension `dim` of `size`."""
    return IndexOutOfRangeError(f"{op}(): index {bad} is out of bounds for dimension {dim} with size {size}")
