"""torch.types: the type aliases annotations in library code use (Device, Number, _device, _dtype, _size,
...), naming tensorlab's classes."""
from __future__ import annotations

import os
from typing import IO, Sequence, Union

from .device import Device as _device_cls
from .dtypes import DType as _dtype  # noqa: F401  (torch.types._dtype)
from .layout import Size
from .layouts import TensorLayout as _layout  # noqa: F401  (torch.types._layout)
from .storage import UntypedStorage as Storage
from .tensor import Tensor

__all__ = ["Device", "Number", "FileLike", "Storage", "Tensor", "Size", "_device", "_dtype", "_layout", "_size"]

_device = _device_cls
_size = Union[Size, Sequence[int]]
_bool, _int, _float, _complex, _str, _bytes = bool, int, float, complex, str, bytes
Number = Union[int, float, bool]
_Number = (int, float, bool)
Device = Union[_device, str, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
SymInt, SymFloat, SymBool = int, float, bool  # tensorlab has no symbolic sizes: they are plain numbers
_symsize = Sequence[int]
