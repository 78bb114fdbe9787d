"""Turning samples into batches (the module torch.utils.data._utils.collate).

default_collate(samples) merges a list of samples that share one structure into one batch of
that structure:

- tensors are stacked along a new first dimension (on their device);
- NumPy arrays become tensors and are stacked; NumPy scalars become a 1-d tensor;
- Python floats become a float64 tensor, ints (and bools) an int64 (bool) tensor;
- str and bytes stay as they are (a sequence of the batch's values);
- mappings are merged key by key, named tuples field by field, and other sequences position by
  position ("transposed": a batch of (x, y) pairs becomes [batch of x, batch of y]); the
  container keeps its type where it can be rebuilt, a plain tuple becomes a list.

default_convert(sample) only turns NumPy arrays and scalars into tensors, through the same
containers: it is the collate_fn when automatic batching is off.

collate(batch, collate_fn_map=...) is the general form: the map sends an element type (or a
tuple of types) to the function that merges a batch of such elements; containers are recursed
into as above, and anything else raises TypeError.
"""
from __future__ import annotations

import collections.abc
import copy
import re

from ....ops.creation import as_tensor, tensor
from ....tensor import Tensor
from .... import dtypes

try:
    import numpy as np
except ModuleNotFoundError:  # pragma: no cover
    np = None

np_str_obj_array_pattern = re.compile(r"[SaUO]")
"""Matches the dtype.str of NumPy arrays of bytes, strings or objects (not convertible)."""

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


# -- rebuilding containers ------------------------------------------------------------------------
def _rebuild_mapping(template, values):
    """A mapping like `template` holding `values` (a dict over the same keys): a shallow copy
    updated in place for mutable mappings (keeps the class and any extra attributes), the class
    built from a dict otherwise, a plain dict when the class will not take one."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            rebuilt = copy.copy(template)
            rebuilt.update(values)
            return rebuilt
        return type(template)(values)
    except TypeError:
        return values


def _rebuild_sequence(template, items):
    """A sequence like `template` holding `items` (a list of the same length): a shallow copy
    assigned position by position for mutable sequences, the class built from a list otherwise,
    the list itself when the class will not take one."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            rebuilt = copy.copy(template)
            for position, item in enumerate(items):
                rebuilt[position] = item
            return rebuilt
        return type(template)(items)
    except TypeError:
        return items


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _is_text(value):
    return isinstance(value, (str, bytes))


# -- default_convert ------------------------------------------------------------------------------
def _numpy_convertible(value):
    """A NumPy array or scalar default_convert turns into a tensor: not a str_ scalar, not an array
    of strings, bytes or objects."""
    kind = type(value)
    if kind.__module__ != "numpy" or kind.__name__ in ("str_", "string_"):
        return False
    return kind.__name__ != "ndarray" or np_str_obj_array_pattern.search(value.dtype.str) is None


def default_convert(data):
    """`data` with every NumPy array and scalar in it turned into a tensor (through mappings,
    named tuples and sequences; a plain tuple becomes a list); everything else unchanged."""
    if isinstance(data, Tensor):
        return data
    if _numpy_convertible(data):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*map(default_convert, data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence) and not _is_text(data):
        return _rebuild_sequence(data, [default_convert(item) for item in data])
    return data


# -- collate --------------------------------------------------------------------------------------
def _handler_for(sample, collate_fn_map):
    """The collate function `collate_fn_map` gives for `sample`'s type: an exact key first, then
    the first key `sample` is an instance of; None when nothing matches."""
    if not collate_fn_map:
        return None
    exact = collate_fn_map.get(type(sample))
    if exact is not None:
        return exact
    for key, handler in collate_fn_map.items():
        if isinstance(sample, key):
            return handler
    return None


def collate(batch, *, collate_fn_map=None):
    """Merge the samples of `batch` (which share one structure) with the functions of
    `collate_fn_map`, recursing into mappings, named tuples and sequences."""
    first = batch[0]
    handler = _handler_for(first, collate_fn_map)
    if handler is not None:
        return handler(batch, collate_fn_map=collate_fn_map)

    def merge(group):
        return collate(group, collate_fn_map=collate_fn_map)

    if isinstance(first, collections.abc.Mapping):
        return _rebuild_mapping(first, {key: merge([sample[key] for sample in batch]) for key in first})
    if _is_namedtuple(first):
        return type(first)(*(merge(column) for column in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        width = len(first)
        if any(len(sample) != width for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [merge(column) for column in zip(*batch)]
        return columns if isinstance(first, tuple) else _rebuild_sequence(first, columns)
    raise TypeError(default_collate_err_msg_format.format(type(first)))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors: stacked along a new leading dimension."""
    from ....ops.shape import stack
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays: made tensors, then collated as tensors (arrays of text or objects refused)."""
    dtype = batch[0].dtype
    if np_str_obj_array_pattern.search(dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(dtype))
    return collate([as_tensor(array) for array in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars: one 1-d tensor of their dtype."""
    return as_tensor(list(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats: a float64 tensor."""
    return tensor(list(batch), dtype=dtypes.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints (and bools): an int64 (bool) tensor."""
    return tensor(list(batch))


def collate_str_fn(batch, *, collate_fn_map=None):
    """str and bytes: the batch as it is."""
    return batch


default_collate_fn_map = {Tensor: collate_tensor_fn}
"""The element types default_collate merges, in the order they are tried for subclasses."""
if np is not None:
    default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
    # a key may be a tuple of types; NumPy object scalars match it too (and fail in as_tensor)
    default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map.update({float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
                               bytes: collate_str_fn})


def default_collate(batch):
    """Merge a list of samples into one batch with default_collate_fn_map (the rules are in this
    module's docstring)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
