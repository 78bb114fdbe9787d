"""A tour of tensorlab's data model: storage, strides, views and type promotion.

Run it with `python3 examples/quickstart.py`. Every claim it prints is also checked, so the
script fails loudly if tensorlab ever stops behaving as described here (and as PyTorch does).
"""
import sys
import textwrap
from pathlib import Path

import numpy as np

try:
    import tensorlab as tl
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tensorlab as tl


def section(title):
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def show(label, value):
    text = repr(value)
    if "\n" in text or len(label) > 44 or 48 + len(text) > 100:  # long values go under their label
        print(f"  {label}")
        print("\n".join("    " + line for line in text.splitlines()))
    else:
        print(f"  {label:<46}{text}")


def check(cond, what):
    if not cond:
        raise AssertionError(f"quickstart expectation failed: {what}")


def show_error(label, fn, exc_type=RuntimeError):
    """Run fn, which must raise exc_type, and print the message the user would see."""
    try:
        fn()
    except exc_type as e:
        print(f"  {label}")
        print(textwrap.fill(f"{type(e).__name__}: {e}", 96, initial_indent="    -> ", subsequent_indent="       "))
        return
    raise AssertionError(f"quickstart expectation failed: {label} did not raise {exc_type.__name__}")


def storage_elements(t):
    """Every element of t's storage in memory order, read through a flat view of the same bytes."""
    n = t.untyped_storage().nbytes() // t.element_size()
    return t.as_strided((n,), (1,), 0)


# ---------------------------------------------------------------------------------------------
section("1. A tensor is a typed, strided view over an untyped storage")
print("  A Tensor holds (storage, shape, stride, storage_offset, dtype). The storage is just bytes;\n"
      "  the layout says where element [i, j] lives: offset + i * stride[0] + j * stride[1].")
x = tl.arange(12.0).reshape(3, 4)
show("x = tl.arange(12.0).reshape(3, 4)", x)
show("x.shape, x.stride(), x.storage_offset()", (tuple(x.shape), x.stride(), x.storage_offset()))
show("x.untyped_storage()", x.untyped_storage())
show("x.element_size() (bytes per float32)", x.element_size())
show("first 8 storage bytes (0.0 and 1.0, little-endian)", x.untyped_storage().tolist()[:8])
check(x.untyped_storage().tolist()[4:8] == [0, 0, 128, 63], "1.0f is 00 00 80 3f")
check(x.stride() == (4, 1) and x.is_contiguous(), "a fresh tensor is row-major contiguous")

# ---------------------------------------------------------------------------------------------
section("2. Slicing makes views: same storage, new (shape, stride, offset)")
y = x[1:, 1:3]
show("y = x[1:, 1:3]", y)
show("y.stride(), y.storage_offset()", (y.stride(), y.storage_offset()))
print("  y[0, 0] is storage element 5 = 1 * 4 + 1; y is not contiguous (it skips columns).")
check(y.stride() == (4, 1) and y.storage_offset() == 5 and not y.is_contiguous(), "slice layout")
check(y.untyped_storage() is x.untyped_storage(), "a slice shares its base's storage")
col = x[:, 1]
show("x[:, 1].stride(), .storage_offset()", (col.stride(), col.storage_offset()))
every_other = x[::2, ::3]
show("x[::2, ::3].stride()", every_other.stride())
check(every_other.stride() == (8, 3), "steps multiply strides")
xt = x.t()
show("x.t().stride()  (transpose swaps strides)", xt.stride())
check(xt.stride() == (1, 4) and not xt.is_contiguous(), "transpose is a view")

print("\n  Writing through a view writes the shared storage, so the base sees it:")
y[0, 0] = 100.0
show("after y[0, 0] = 100, x", x)
show("storage elements now", storage_elements(x))
check(x[1, 1].item() == 100.0, "the write is visible through x")
print("  Views also share a version counter, which autograd uses to detect stale saved tensors:")
show("x._version == y._version", x._version == y._version)
check(x._version == y._version >= 1, "shared version counter")

# ---------------------------------------------------------------------------------------------
section("3. view() never copies; reshape() copies only when it must")
v = x.view(2, 6)
show("x.view(2, 6) shares x's memory", v.data_ptr() == x.data_ptr())
check(v.data_ptr() == x.data_ptr(), "view shares memory")
print("  x.t() has strides (1, 4): no single stride walks its 12 elements in row-major order,")
print("  so it cannot be viewed as one dimension:")
show_error("x.t().view(12)", lambda: x.t().view(12))
r = x.t().reshape(12)
show("x.t().reshape(12)", r)
show("... is a copy (new storage)", r.untyped_storage() is not x.untyped_storage())
check(r.untyped_storage() is not x.untyped_storage(), "reshape of a transposed tensor copies")
check(x.reshape(12).untyped_storage() is x.untyped_storage(), "reshape of a contiguous tensor is a view")

# ---------------------------------------------------------------------------------------------
section("4. expand(): broadcasting with stride 0, and why writes through it are refused")
c = tl.tensor([[1.0], [2.0], [3.0]])
e = c.expand(3, 4)
show("c", c)
show("e = c.expand(3, 4)", e)
show("e.stride()  (0: columns share memory)", e.stride())
check(e.stride() == (1, 0) and e.untyped_storage() is c.untyped_storage(), "expand is a stride-0 view")
print("  12 elements, 3 memory locations: an in-place write would hit each location 4 times.")
show_error("e.add_(1)", lambda: e.add_(1))
show("c is unchanged", c)
check(c.tolist() == [[1.0], [2.0], [3.0]], "the refused write changed nothing")
print("  A clone owns one element per position, so it can be written:")
show("e.clone().add_(1)", e.clone().add_(1))

# ---------------------------------------------------------------------------------------------
section("5. from_numpy() shares memory with the array; tensor() copies")
a = np.arange(4, dtype=np.float64)
t = tl.from_numpy(a)
copied = tl.tensor(a)
a[0] = 42.0
t[1] = -1.0
show("a (NumPy) after a[0] = 42 and t[1] = -1", a)
show("t = tl.from_numpy(a)", t)
show("tl.tensor(a) made before the writes", copied)
check(t.tolist() == a.tolist() == [42.0, -1.0, 2.0, 3.0], "from_numpy aliases the array")
check(copied.tolist() == [0.0, 1.0, 2.0, 3.0], "tensor() copies")
show("t.untyped_storage().resizable()", t.untyped_storage().resizable())
print("  Growing t would need a bigger buffer, which tensorlab may not take from NumPy.\n"
      "  PyTorch raises here too but leaves t with the new shape over the old bytes\n"
      "  (pytorch/pytorch#170298); tensorlab leaves t exactly as it was:")
show_error("t.resize_(10)", lambda: t.resize_(10))
show("t.shape after the failed resize_", t.shape)
check(tuple(t.shape) == (4,) and t.tolist() == [42.0, -1.0, 2.0, 3.0], "failed resize_ changed nothing")

# ---------------------------------------------------------------------------------------------
section("6. Type promotion follows torch.result_type")
print("  Category first (bool < integer < floating), then size; tensors with dimensions outrank\n"
      "  zero-dim tensors, which outrank Python scalars -- unless the lower rank brings a higher\n"
      "  category.")
f16, f32 = tl.ones(2, dtype=tl.float16), tl.ones(2)
i32, i64 = tl.tensor([1, 2], dtype=tl.int32), tl.tensor([1, 2])
u8, i8 = tl.tensor([1, 2], dtype=tl.uint8), tl.tensor([1, 2], dtype=tl.int8)
s_i64, s_f64 = tl.tensor(1), tl.tensor(1.0, dtype=tl.float64)
rows = [
    ("float16 + float32", (f16 + f32).dtype, tl.float32),
    ("int64 tensor + 2.5", (i64 + 2.5).dtype, tl.float32),
    ("uint8 + int8  (no 8-bit type holds both)", (u8 + i8).dtype, tl.int16),
    ("int32 tensor + int64 zero-dim tensor", (i32 + s_i64).dtype, tl.int32),
    ("int32 tensor + float64 zero-dim tensor", tl.result_type(i32, s_f64), tl.float64),
    ("float16 tensor + float64 zero-dim tensor", tl.result_type(f16, s_f64), tl.float16),
    ("int64 zero-dim tensor + 2.5", tl.result_type(s_i64, 2.5), tl.float32),
    ("bool tensor + 2", tl.result_type(tl.tensor([True]), 2), tl.int64),
    ("int8 tensor + 1000  (stays int8!)", tl.result_type(i8, 1000), tl.int8),
    ("float16 tensor + 1e5  (stays float16: inf!)", tl.result_type(f16, 1e5), tl.float16),
]
for label, got, want in rows:
    show(label, got)
    check(got is want, f"{label} -> {want}")
show("tl.tensor([1, 2]) + 2.5", i64 + 2.5)
show("tl.promote_types(tl.uint8, tl.int8)", tl.promote_types(tl.uint8, tl.int8))
show("tl.can_cast(tl.float32, tl.int32)", tl.can_cast(tl.float32, tl.int32))
print("  So an out= of integer type cannot receive a float result:")
show_error("tl.add(f32, f32, out=int tensor)", lambda: tl.add(f32, f32, out=tl.empty(2, dtype=tl.int64)))

# ---------------------------------------------------------------------------------------------
section("7. A glimpse of channels_last: same shape, different memory order")
img = tl.empty(2, 3, 4, 5)  # N, C, H, W
cl = img.contiguous(memory_format=tl.channels_last)
show("NCHW tensor: shape, stride()", (tuple(img.shape), img.stride()))
show("channels_last copy: shape, stride()", (tuple(cl.shape), cl.stride()))
print("  In channels_last the C values of one pixel are adjacent (stride 1), as convolution\n"
      "  kernels on GPUs like them; the logical shape and every element's value are unchanged.")
check(cl.stride() == (60, 1, 15, 3), "channels_last strides")
check(cl.is_contiguous(memory_format=tl.channels_last) and not cl.is_contiguous(), "memory-format checks")

print("\nDone: every expectation above held.")
