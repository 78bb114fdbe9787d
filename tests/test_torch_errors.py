"""Issue 13's "NumPy's errors leak through" cases, one by one, with torch 2.13's exception types
and messages (checked by running torch; the property test beside this file finds the rest)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorlab as tl


@pytest.mark.parametrize("make", [lambda d: tl.ones(2 ** 40, 2 ** 40, device=d), lambda d: tl.empty(2 ** 62, device=d),
                                  lambda d: tl.arange(1e20, device=d)])
def test_huge_sizes_are_storage_overflow_errors(device, make):
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        make(device)


def test_size_beyond_int64_is_torchs_unpacking_error(device):
    with pytest.raises(TypeError, match="Overflow when unpacking long long"):
        tl.empty(2 ** 63, device=device)
    with pytest.raises(TypeError, match="Overflow when unpacking long long"):
        tl.zeros(3, device=device).view(2 ** 63)


def test_empty_tensor_with_huge_dims_works_through_views_and_ops(device):
    x = tl.empty(0, 2 ** 62, device=device)
    assert x.shape == (0, 2 ** 62) and x.numel() == 0
    assert x.view(2 ** 62, 0).shape == (2 ** 62, 0)
    assert x.t().contiguous().shape == (2 ** 62, 0)
    assert x.sum(1).shape == (0,)
    assert (x + 1).shape == (0, 2 ** 62)
    assert tl.zeros(0, 2 ** 62, device=device).shape == (0, 2 ** 62)


def test_contiguous_stride_overflow_even_without_elements():
    with pytest.raises(RuntimeError, match="Stride calculation overflowed"):  # torch: zeros(0, 2, 2**62)
        tl.zeros(0, 2, 2 ** 62)


@pytest.mark.parametrize("data", [[2 ** 63], [2 ** 64], [-(2 ** 63) - 1], 2 ** 63, [2 ** 63 - 1, 2 ** 63]])
def test_python_ints_beyond_int64_are_value_errors(device, data):
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        tl.tensor(data, device=device)


def test_huge_ints_fine_for_floating_targets(device):
    assert tl.tensor([2 ** 63], dtype=tl.float32, device=device).tolist() == [float(2 ** 63)]
    assert tl.tensor([1.5, 2 ** 63], device=device).tolist() == [1.5, float(2 ** 63)]
    assert tl.tensor([2 ** 64], dtype=tl.bool, device=device).tolist() == [True]
    with pytest.raises(OverflowError, match="int too large to convert to float"):
        tl.tensor([1.0, 10 ** 400], device=device)


@pytest.mark.parametrize("data,dtype", [([300], tl.uint8), ([-256], tl.uint8), ([-129], tl.int8),
                                        ([2 ** 40], tl.int32), ([1.5e10], tl.int32), ([float("inf")], tl.int32),
                                        ([float("nan")], tl.int64), (-0.5, tl.uint8)])
def test_out_of_range_values_for_integer_dtypes(device, data, dtype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {dtype.name} without overflow"):
        tl.tensor(data, dtype=dtype, device=device)


def test_in_range_conversions_follow_torch(device):
    assert tl.tensor([-1], dtype=tl.uint8, device=device).tolist() == [255]  # an int wraps into uint8 as in torch
    assert tl.tensor(3.5, dtype=tl.int64, device=device).item() == 3
    assert tl.tensor([2], dtype=tl.bool, device=device).tolist() == [True]


def test_big_endian_arrays_are_refused_with_torchs_message(device):
    a = np.arange(3, dtype=">i4")
    msg = "byte order different from the native byte order"
    for make in (tl.from_numpy, lambda x: tl.tensor(x, device=device), lambda x: tl.as_tensor(x, device=device)):
        with pytest.raises(ValueError, match=msg):
            make(a)
    assert tl.tensor(a.astype("=i4"), device=device).tolist() == [0, 1, 2]


@pytest.mark.parametrize("code", ["u2", "u4", "u8", "O", "U1"])
def test_unsupported_numpy_dtypes_are_type_errors(code):
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy"):
        tl.from_numpy(np.zeros(2, dtype=code))


def test_empty_strided_negative_strides(device):
    with pytest.raises(RuntimeError, match="negative strides are not supported"):
        tl.empty_strided((2, 2), (-1, 1), device=device)
    assert tl.empty_strided((0, 2), (-1, 1), device=device).shape == (0, 2)  # torch: no element, no check
    with pytest.raises(RuntimeError, match="dimensionality of sizes"):
        tl.empty_strided((2, 2), (1,), device=device)


def test_deeply_nested_data(device):
    d = 1
    for _ in range(2000):
        d = [d]
    with pytest.raises(ValueError, match="too many dimensions 'list'"):  # torch's type; never RecursionError
        tl.tensor(d, device=device)
    d = 1
    for _ in range(64):
        d = [d]
    assert tl.tensor(d, device=device).dim() == 64


def test_more_than_64_dims_is_a_named_limit(device):
    with pytest.raises(RuntimeError, match="at most 64 dimensions"):
        tl.ones(*[1] * 100, device=device)
    with pytest.raises(RuntimeError, match="at most 64 dimensions"):
        tl.ones(1, device=device).view(*[1] * 65)
    assert tl.ones(*[1] * 64, device=device).dim() == 64


def test_python_types_as_dtypes(device):
    assert tl.zeros(2, dtype=float, device=device).dtype is tl.float64
    assert tl.zeros(2, dtype=int, device=device).dtype is tl.int64
    assert tl.zeros(2, dtype=bool, device=device).dtype is tl.bool
    assert tl.tensor([1, 2], dtype=float, device=device).dtype is tl.float64
    assert tl.ones(2, device=device).to(float).dtype is tl.float64


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype("int64"), str, 3])
def test_numpy_dtypes_and_strings_are_type_errors(dtype):
    with pytest.raises(TypeError, match="must be tensorlab.dtype"):
        tl.zeros(2, dtype=dtype)


def test_python_complex_dtype_is_complex128():
    assert tl.zeros(2, dtype=complex).dtype is tl.complex128  # torch maps the Python type complex to cdouble


def test_dtype_checked_before_sizes():
    with pytest.raises(TypeError, match="must be tensorlab.dtype"):  # torch parses arguments first
        tl.zeros(-1, dtype="float32")


def test_zero_dim_integer_tensors_as_sizes(device):
    three = tl.tensor(3)
    assert tl.ones(three, device=device).shape == (3,)
    assert tl.zeros(2, three, device=device).shape == (2, 3)
    assert tl.empty((three, 2), device=device).shape == (3, 2)
    assert tl.full((three,), 1.0, device=device).shape == (3,)
    x = tl.zeros(6, device=device)
    assert x.reshape(three, 2).shape == (3, 2) and x.view(three, -1).shape == (3, 2)
    assert tl.zeros(1, device=device).expand(three).shape == (3,)
    with pytest.raises(TypeError, match="must be a tuple of ints"):
        tl.ones(tl.tensor(3.0))
    with pytest.raises(TypeError, match="must be a tuple of ints"):
        tl.ones(3.0)
    with pytest.raises(TypeError, match="bool"):
        tl.ones(True)
    assert tl.ones(2, True).shape == (2, 1)  # torch refuses a bool only as the first size


def test_no_size_is_a_type_error():
    with pytest.raises(TypeError, match="missing"):
        tl.zeros()
    with pytest.raises(TypeError, match="missing"):
        tl.ones(3).expand()
    assert tl.zeros(()).dim() == 0


def test_read_only_numpy_memory_warns_and_refuses_writes():
    a = np.arange(4.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable") as rec:
        t = tl.from_numpy(a)
    assert rec[0].filename == __file__  # the warning points at this line, not into tensorlab
    writes = [lambda: t.add_(1), lambda: t.__setitem__(0, 5.0), lambda: t.fill_(1), lambda: t.zero_(),
              lambda: t.copy_(tl.ones(4, dtype=tl.float64)), lambda: tl.add(tl.ones(4, dtype=tl.float64), 1, out=t),
              lambda: t.uniform_(), lambda: t.clamp_(0, 1), lambda: t[1:].fill_(2),
              lambda: t.index_put_((tl.tensor([0]),), tl.tensor([1.0], dtype=tl.float64))]
    for w in writes:
        with pytest.raises(RuntimeError, match="non-writable NumPy array"):
            w()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and (t + 1).tolist() == [1.0, 2.0, 3.0, 4.0]  # reads are fine
    c = tl.tensor(a)  # a copy is writable, without a warning
    c.add_(1)
    assert c.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_warnings_point_at_the_callers_line(device):
    out = tl.zeros(2, device=device)
    with pytest.warns(UserWarning, match="was resized") as rec:
        tl.add(tl.ones(3, device=device), 1, out=out)
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="x.T") as rec:
        tl.ones(2, 3, 4, device=device).T
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="target size") as rec:
        tl.nn.functional.mse_loss(tl.ones(3, device=device), tl.ones(1, device=device))
    assert rec[0].filename == __file__


def test_scatter_add_errors_name_scatter_add(device):
    a = tl.zeros(3, device=device)
    with pytest.raises(RuntimeError, match=r"scatter_add\(\): Expected dtype int32/int64 for index"):
        a.scatter_add(0, tl.tensor([0.0], device=device), tl.ones(1, device=device))
    with pytest.raises(RuntimeError, match=r"scatter_add\(\): Expected self.dtype to be equal to src.dtype"):
        tl.scatter_add(a, 0, tl.tensor([0], device=device), tl.ones(1, dtype=tl.float64, device=device))
    with pytest.raises(RuntimeError, match=r"scatter_add_\(\): Expected dtype"):
        a.scatter_add_(0, tl.tensor([0.0], device=device), tl.ones(1, device=device))


def test_full_checks_its_value_against_the_dtype(device):
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.full((2,), 2 ** 63, device=device)
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.full((2,), 300, dtype=tl.uint8, device=device)
    assert tl.full((2,), 1.5, dtype=tl.int64, device=device).tolist() == [1, 1]


def test_arange_and_linspace_edges(device):
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        tl.arange(3, dtype=tl.bool, device=device)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tl.arange(0, 1, float("nan"), device=device)
    assert tl.arange(0.5, 3, dtype=tl.int64, device=device).tolist() == [0, 1, 2]  # bounds truncate first
    assert tl.arange(0.5, dtype=tl.int32, device=device).tolist() == [0]  # counted in double
    with pytest.raises(TypeError, match="steps"):
        tl.linspace(0, 1, 2.0)
    with pytest.raises(NotImplementedError, match="Bool"):
        tl.linspace(0, 1, 3, dtype=tl.bool)
    assert tl.linspace(0, 1, tl.tensor(3), device=device).tolist() == [0.0, 0.5, 1.0]


# linspace converts its bounds to an integral dtype first, as torch: an int wraps into uint8, a float is
# compared as a float (-1.5 overflows uint8, 127.5 int8), and the values are interpolated between the
# converted bounds. Expected values are torch 2.13's.
@pytest.mark.parametrize("start, end, dtype, expected", [
    (0, -1, "uint8", [0, 85, 170, 255]), (-128, 0, "uint8", [128, 85, 42, 0]), (-255, 0, "uint8", [1, 0, 0, 0]),
    (0, -1.5, "int8", [0, 0, 0, -1]), (-3.7, 2.2, "int16", [-3, -1, 0, 2]), (-1, 5, "int8", [-1, 1, 3, 5]),
    (0, -1.5, "uint8", RuntimeError), (-0.5, 3, "uint8", RuntimeError), (0, 256, "uint8", RuntimeError),
    (-256, 0, "uint8", RuntimeError), (0, 127.5, "int8", RuntimeError), (-128.9, 0, "int8", RuntimeError),
])
def test_linspace_converts_integral_bounds_as_torch(device, start, end, dtype, expected):
    if expected is RuntimeError:
        with pytest.raises(RuntimeError, match="without overflow"):
            tl.linspace(start, end, 4, dtype=getattr(tl, dtype), device=device)
    else:
        assert tl.linspace(start, end, 4, dtype=getattr(tl, dtype), device=device).tolist() == expected


def test_integral_fill_values_compare_floats_as_floats(device):
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.full((2,), 127.5, dtype=tl.int8, device=device)
    with pytest.raises(RuntimeError, match="without overflow"):
        tl.zeros(2, dtype=tl.uint8, device=device).fill_(-1.5)
    assert tl.zeros(2, dtype=tl.uint8, device=device).fill_(-1).tolist() == [255, 255]
    assert tl.full((2,), -128.0, dtype=tl.int8, device=device).tolist() == [-128, -128]


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float16", "float32", "float64", "bool"])
@pytest.mark.parametrize("args", [(7,), (0.5, 6.1, 0.75), (0.5, 6.5), (-3, 20, 4)])
def test_arange_into_out_computes_in_outs_dtype(device, torch, dtype, args):
    """torch computes the range in out's dtype (an int32 out truncates 0.75 to a zero step, as torch)."""
    def run(m, dev):
        kw = {} if dev is None else {"device": dev}
        return m.arange(*args, out=m.empty(0, dtype=getattr(m, dtype), **kw)).tolist()
    try:
        want = run(torch, None)
    except (RuntimeError, ValueError, NotImplementedError) as e:
        with pytest.raises(type(e)):
            run(tl, device)
        return
    assert run(tl, device) == want


def test_range_dtype_must_match_out(device):
    for call in (lambda o: tl.arange(3, dtype=tl.float32, out=o),
                 lambda o: tl.linspace(0, 1, 3, dtype=tl.float32, out=o)):
        o = tl.empty(0, dtype=tl.float16, device=device)
        with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
            call(o)
        assert o.shape == (0,) and o._version == 0


def test_no_numpy_error_escapes_the_listed_cases():
    calls = [lambda: tl.tensor([1, [1]]), lambda: tl.tensor([[1], 2]), lambda: tl.tensor([None]),
             lambda: tl.tensor(["a"]), lambda: tl.tensor("a"), lambda: tl.tensor([[1, 2], [3]]),
             lambda: tl.zeros(3)[2 ** 63], lambda: tl.zeros(3)[::0]]
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises((RuntimeError, TypeError, ValueError, IndexError)) as info:
                call()
        assert not type(info.value).__module__.startswith("numpy")
        msg = str(info.value)
        assert "array element" not in msg and "inhomogeneous" not in msg and "ndarray" not in msg, msg
