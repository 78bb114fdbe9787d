"""Data types, their NumPy/CUDA names, and torch's type-promotion rules (one table)."""
from __future__ import annotations

import builtins as _b
import math

import ml_dtypes
import numpy as np

_pyfloat, _pyint, _pybool = _b.float, _b.int, _b.bool

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class DType:
    """A tensor element type. Compare with `is`/`==`; `repr` reads like torch's."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "ctype", "torch_name", "_rank", "is_floating_point")

    def __init__(self, name, np_type, ctype, torch_name, category, is_signed, rank):
        self.name = name
        self.torch_name = torch_name  # torch's scalar type name, as its messages spell it ("Float")
        self.np = np.dtype(np_type)
        self.itemsize = self.np.itemsize
        self.ctype = ctype
        self.category = category
        self.is_signed = is_signed
        self._rank = rank
        self.is_floating_point = category == _FLOAT  # a plain attribute: every op's dtype rules read it

    @property
    def is_complex(self):
        return self.category == _COMPLEX

    def to_real(self):
        """The real dtype of a complex one's parts (complex64 -> float32); a real dtype itself."""
        return _TO_REAL.get(self, self)

    def to_complex(self):
        """torch's toComplexType: the complex dtype with this dtype's precision (float64 -> complex128;
        float16/bfloat16/float32 -> complex64: tensorlab has no complex32)."""
        if self.category == _COMPLEX:
            return self
        return complex128 if self is float64 else complex64

    def __repr__(self):
        return f"tensorlab.{self.name}"

    def __reduce__(self):
        return (by_name, (self.name,))


# name, numpy type, CUDA C type, torch's scalar type name, category, signed, rank within category
bool_ = DType("bool", np.bool_, "bool", "Bool", _BOOL, False, 0)
uint8 = DType("uint8", np.uint8, "unsigned char", "Byte", _INT, False, 1)
int8 = DType("int8", np.int8, "signed char", "Char", _INT, True, 1)
int16 = DType("int16", np.int16, "short", "Short", _INT, True, 2)
int32 = DType("int32", np.int32, "int", "Int", _INT, True, 3)
int64 = DType("int64", np.int64, "long long", "Long", _INT, True, 4)
float16 = DType("float16", np.float16, "__half", "Half", _FLOAT, True, 1)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, "__nv_bfloat16", "BFloat16", _FLOAT, True, 1)
float32 = DType("float32", np.float32, "float", "Float", _FLOAT, True, 2)
float64 = DType("float64", np.float64, "double", "Double", _FLOAT, True, 3)

# complex: the CUDA C type is kernels/tensorlab/complex.cuh's tl::complex<T> (two T, T's alignment x2)
complex64 = DType("complex64", np.complex64, "tl::complex<float>", "ComplexFloat", _COMPLEX, True, 2)
complex128 = DType("complex128", np.complex128, "tl::complex<double>", "ComplexDouble", _COMPLEX, True, 3)
COMPLEX = (complex64, complex128)
_TO_REAL = {complex64: None, complex128: None}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOATING = (float16, bfloat16, float32, float64)
INTEGRAL = (uint8, int8, int16, int32, int64)
# ALL holds the real dtypes (the kernel table instantiates every real kernel per ALL); the complex
# ones are EVERY's tail and have their own kernel rows
EVERY = ALL + COMPLEX
_BY_NAME = {d.name: d for d in EVERY}
_BY_NP = {d.np: d for d in EVERY}
# torch's aliases
half, float, double, short, int, long = float16, float32, float64, int16, int32, int64
bool = bool_  # noqa: A001  (torch exposes torch.bool)
cfloat, cdouble = complex64, complex128
_TO_REAL[complex64], _TO_REAL[complex128] = float32, float64


def by_name(name):
    return _BY_NAME[name]


def wrap_scalar(v, np_dtype):
    """A Python number as a NumPy scalar of `np_dtype`; integers wrap like a C cast (torch: int8 + 1000)."""
    try:
        return np_dtype.type(v)
    except OverflowError:
        return np.array(v).astype(np_dtype)[()]


def round_to(v, dtype):
    """A Python number rounded to a floating `dtype` (out of range: inf), as a Python float: what a
    wrapped number becomes when torch casts it to an op's float16/bfloat16 common dtype."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _b.float(dtype.np.type(v))


def from_numpy_dtype(np_dtype):
    """The DType for a NumPy dtype, or TypeError listing the supported ones (as torch does)."""
    npd = np.dtype(np_dtype)
    d = _BY_NP.get(npd)
    if d is None and not npd.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported. (Convert it first: "
                         "arr.astype(arr.dtype.newbyteorder('=')).)")
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported "
            "types are: float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool."
        )
    return d


def as_dtype(x, op=None):
    """A DType from what torch accepts as a dtype argument: a DType, or the Python types float
    (float64: a Python float is a double), int (int64) and bool. NumPy dtypes and strings raise
    TypeError as in torch; code converting a NumPy dtype calls from_numpy_dtype."""
    if isinstance(x, DType):
        return x
    if x is _pyfloat:
        return float64
    if x is _pyint:
        return int64
    if x is _pybool:
        return bool_
    where = f"{op}(): argument 'dtype'" if op else "dtype"
    if x is complex:
        return complex128
    kind = type(x).__module__ + "." + type(x).__name__ if type(x).__module__ != "builtins" else type(x).__name__
    raise TypeError(f"{where} must be tensorlab.dtype, not {kind} ({x!r}); pass e.g. tensorlab.float32, "
                    "or the Python types float, int or bool")


_default_dtype = float32


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


def get_default_complex_dtype():
    """The complex dtype of the default float dtype's precision (complex64, or complex128 under float64)."""
    return complex128 if _default_dtype is float64 else complex64


def promote_types(type1, type2):
    """torch.promote_types: the smallest type both `type1` and `type2` convert to without losing category."""
    type1, type2 = as_dtype(type1), as_dtype(type2)
    if type1 is type2:
        return type1
    if type1.category == _COMPLEX or type2.category == _COMPLEX:
        c, o = (type1, type2) if type1.category == _COMPLEX else (type2, type1)
        if o.category == _COMPLEX or o.category == _FLOAT:  # float64 + complex64 -> complex128
            return complex128 if max(c._rank, o._rank) >= 3 else complex64
        return c
    if type1.category != type2.category:
        return type1 if type1.category > type2.category else type2
    if type1.category == _INT:
        if type1.is_signed != type2.is_signed:  # uint8 with a signed type
            s = type2 if type1 is uint8 else type1
            return int16 if s is int8 else s
        return type1 if type1._rank > type2._rank else type2
    if type1._rank == type2._rank:  # float16 with bfloat16
        return float32
    return type1 if type1._rank > type2._rank else type2


def _scalar_dtype(x):
    if isinstance(x, _pybool):
        return bool_
    if isinstance(x, _pyint):
        return int64
    if isinstance(x, _pyfloat):
        return get_default_dtype()
    if isinstance(x, complex):
        return get_default_complex_dtype()
    raise TypeError(f"result_type: expected Tensors or Python scalars, got {type(x).__name__}")


def _combine(higher, lower):
    # torch's combine_categories (ATen TypeProperties.cpp)
    if higher is not None and higher.category == _COMPLEX:
        return higher
    if lower is not None and lower.category == _COMPLEX:
        return higher.to_complex() if higher is not None and higher.is_floating_point else lower
    if higher is not None and higher.is_floating_point:
        return higher
    if higher is bool_ or (lower is not None and lower.is_floating_point):
        if higher is None:
            return lower
        if lower is None:
            return higher
        return promote_types(higher, lower)
    return higher if higher is not None else lower


def _promote_opt(acc, d):
    return d if acc is None else promote_types(acc, d)


def result_type(*args, tensor=None, other=None, scalar=None, scalar1=None, scalar2=None):
    """torch.result_type over tensors and Python scalars: dimensioned tensors outrank zero-dim
    tensors, which outrank Python scalars, unless a lower rank has a higher category. The keywords
    are torch's overloads' names: (tensor, other), (scalar, tensor), (scalar1, scalar2)."""
    named = [x for x in (tensor, scalar, scalar1, other, scalar2) if x is not None]
    if named:
        args = args + tuple(named)
    dim = zero = wrapped = None
    for x in args:
        dt = getattr(x, "dtype", None)
        if isinstance(dt, DType):
            if x.dim() == 0:
                zero = _promote_opt(zero, dt)
            else:
                dim = _promote_opt(dim, dt)
        elif isinstance(x, DType):
            dim = _promote_opt(dim, x)
        else:
            wrapped = _promote_opt(wrapped, _scalar_dtype(x))
    out = _combine(dim, _combine(zero, wrapped))
    if out is None:
        raise TypeError("result_type: expected at least one Tensor or scalar")
    return out


def can_cast(from_, to):
    """torch.can_cast: no complex -> real, no floating -> integral, no non-bool -> bool."""
    from_, to = as_dtype(from_), as_dtype(to)
    if from_.category == _COMPLEX and to.category != _COMPLEX:
        return False
    if from_.category == _FLOAT and to.category < _FLOAT:
        return False
    if from_ is not bool_ and to is bool_:
        return False
    return True


class finfo:
    """torch.finfo for the floating dtypes (bits, eps, max, min, tiny, smallest_normal, resolution)."""

    def __init__(self, dtype=None):
        dtype = get_default_dtype() if dtype is None else as_dtype(dtype).to_real()
        if not dtype.is_floating_point:
            raise TypeError(f"finfo: {dtype} is not a floating point dtype; use tensorlab.iinfo for integers")
        fi = ml_dtypes.finfo(dtype.np)
        self.dtype = dtype.name
        self.bits = _pyint(fi.bits)
        self.eps = _pyfloat(fi.eps)
        self.max = _pyfloat(fi.max)
        self.min = _pyfloat(fi.min)
        self.tiny = self.smallest_normal = _pyfloat(fi.smallest_normal)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"smallest_normal={self.smallest_normal}, tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo for the integral dtypes (bits, max, min)."""

    def __init__(self, dtype):
        dtype = as_dtype(dtype)
        if dtype.category >= _FLOAT:
            raise TypeError(f"iinfo: {dtype} is not an integer dtype; use tensorlab.finfo for floating types")
        ii = np.iinfo(np.uint8 if dtype is bool_ else dtype.np)
        self.dtype = dtype.name
        self.bits = _pyint(ii.bits)
        self.max = _pyint(ii.max)
        self.min = _pyint(ii.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
