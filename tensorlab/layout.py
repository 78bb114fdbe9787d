"""Pure shape/stride math: the layout record, contiguity, broadcasting, view strides, bounds and
overlap. Nothing here touches memory, so every function is safe to call before an op commits."""
from __future__ import annotations

import operator
from typing import NamedTuple

from .memo import memoized


class Size(tuple):
    """torch.Size: a tuple of ints with `numel()` and a torch-like repr."""

    __slots__ = ()

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"tensorlab.Size({list(self)})"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


class Layout(NamedTuple):
    """shape, stride (in elements) and storage offset: replaced as a whole, never mutated."""

    shape: Size
    stride: tuple
    offset: int


def make(shape, stride=None, offset=0):
    shape = Size(shape)
    return Layout(shape, contiguous_strides(shape) if stride is None else tuple(stride), offset)


def prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def contiguous_strides(shape):
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def channels_last_strides(shape):
    """NHWC (4-d) or NDHWC (5-d) strides for an N,C,spatial... shape, as torch computes them."""
    if len(shape) not in (4, 5):
        raise RuntimeError(f"required rank 4 tensor to use channels_last format (rank 5 for channels_last_3d), "
                           f"got shape {list(shape)}")
    order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]  # C fastest, then spatial innermost-first, then N
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def _memory_order(ndim, should_swap):
    """The dims innermost first, by torch's insertion sort (TensorIterator::reorder_dimensions and
    infer_dense_strides): starting from the reverse order, a dim moves inward past another while
    should_swap(outer, inner) > 0, and stops at the first < 0 (0: ambiguous, keep looking)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def dense_strides_like(shape, stride):
    """Dense strides that keep the memory order of (shape, stride): torch's infer_dense_strides,
    used by *_like and clone with preserve_format on tensors that are not dense already."""
    ndim = len(shape)

    def should_swap(d0, d1):
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    perm = _memory_order(ndim, should_swap)
    out = [0] * ndim
    acc = 1
    for idx in perm:
        out[idx] = acc
        if shape[idx] > 1:
            acc *= shape[idx]
    return tuple(out)


def unit_dims_restrided(shape, stride):
    """A negative stride on a size-1 dim is never used to address anything: torch's set_ and
    empty_strided replace it by the contiguous stride of that position (set_(s, 2, (1,), (-1,)) has
    stride (1,)); every other stride is kept, and a negative one elsewhere is still refused."""
    if all(st >= 0 or n != 1 for n, st in zip(shape, stride)):
        return tuple(stride)
    cont = contiguous_strides(shape)
    return tuple(c if n == 1 and st < 0 else st for n, st, c in zip(shape, stride, cont))


@memoized
def cast_layout(lay):
    """The layout `.to(other dtype)` gives a tensor of layout `lay` (preserve_format): its strides
    when dense, else dense strides in its memory order (torch's infer_dense_strides)."""
    if is_non_overlapping_and_dense(lay.shape, lay.stride):
        return lay
    return Layout(lay.shape, dense_strides_like(lay.shape, lay.stride), 0)


def is_contiguous(shape, stride):
    """torch's definition: size-1 dims are ignored, an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size != 1:
            if st != expected:
                return False
            expected *= size
    return True


def is_channels_last(shape, stride):
    if len(shape) not in (4, 5):
        return False
    if any(s == 0 for s in shape):
        return False
    want = channels_last_strides(shape)
    return all(a == b or n == 1 for a, b, n in zip(stride, want, shape))


@memoized
def is_non_overlapping_and_dense(shape, stride):
    dims = sorted((st, sz) for sz, st in zip(shape, stride) if sz != 1)
    expected = 1
    for st, sz in dims:
        if sz == 0:
            return True
        if st != expected:
            return False
        expected *= sz
    return True


def numel(shape):
    return prod(shape)


def wrap_dim(dim, ndim, op="dim"):
    """Normalize a possibly negative dim with torch's IndexError wording."""
    if type(dim) is int:  # the common case, without operator.index
        if 0 <= dim < ndim:
            return dim
        if -ndim <= dim < 0:
            return dim + ndim
    if isinstance(dim, bool):  # an int to operator.index, not to torch
        raise TypeError(f"{op}: dim must be an int, not bool")
    try:
        dim = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}") from None
    n = max(ndim, 1)
    if not -n <= dim < n:
        check_long(dim, op)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


MAX_DIMS = 64  # NumPy's limit on an ndarray's dimensions, which the CPU backend's views inherit
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def normalize_shape(args, op="view"):
    """Accept f(2, 3), f((2, 3)), f([2, 3]), f(Size) or integer 0-dim tensors as sizes and return a
    tuple of ints, with torch's TypeErrors for floats, bools and values outside int64."""
    if len(args) == 1:
        a = args[0]
        if type(a) is not int and hasattr(a, "__iter__") and getattr(a, "ndim", None) != 0:
            args = tuple(a)
    elif not args and op in ("view", "reshape", "expand", "permute"):  # x.view() names no size at all
        raise TypeError(f"{op}() missing 1 required positional argument: \"size\"")
    for a in args:
        if type(a) is not int or not _LONG_MIN <= a <= _LONG_MAX:
            break
    else:
        if len(args) > MAX_DIMS:
            raise_too_many_dims(op, len(args))
        return tuple(args)
    out = []
    for i, a in enumerate(args):
        if type(a) is not int:
            # torch's size parser refuses a bool only as the first element (ones(True), ones([True, 2]));
            # later ones count as 0/1 (ones(2, True) is (2, 1))
            if i == 0 and (isinstance(a, bool) or type(a).__name__ in ("bool", "bool_")):
                raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type bool "
                                f"at pos {i + 1}")
            try:
                a = operator.index(a)
            except TypeError:
                raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type "
                                f"{type(a).__name__} at pos {i + 1}") from None
        if not _LONG_MIN <= a <= _LONG_MAX:
            raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"Overflow when unpacking long long\": {a} is outside int64")
        out.append(a)
    if len(out) > MAX_DIMS:
        raise_too_many_dims(op, len(out))
    return tuple(out)


def check_long(value, what):
    """torch unpacks integer arguments as int64 first: a Python int outside it is a ValueError."""
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{what}: Overflow when unpacking long long: {value} is outside int64")
    return value


def check_numel(shape):
    """torch multiplies the sizes left to right with an overflow check: (2**62, 4, 0) overflows
    before the 0 is reached, (0, 2**62) does not."""
    n = 1
    for d in shape:
        n *= d
        if n > _LONG_MAX:
            raise RuntimeError(f"numel: integer multiplication overflow for sizes {list(shape)}")


def check_strides(shape, stride):
    """torch's contiguous strides must fit int64 even when a 0 size means no element: zeros(0, 2, 2**62)."""
    if stride and max(stride) > _LONG_MAX:
        raise RuntimeError(f"Stride calculation overflowed for sizes {list(shape)}")


def raise_too_many_dims(op, n):
    raise RuntimeError(f"{op}: tensorlab supports at most {MAX_DIMS} dimensions (NumPy's limit, which the CPU "
                       f"backend's views share), got {n}; flatten some dimensions first")


def check_storage_size(shape, stride, itemsize):
    """torch's overflow check on the bytes a layout spans: they must fit in int64."""
    n = extent(shape, stride, 0) if stride is not None else prod(shape)
    if n * itemsize > _LONG_MAX:
        st = "" if stride is None else f" and strides={list(stride)}"
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}{st} "
                           f"({n} elements of {itemsize} bytes exceed 2**63 - 1 bytes)")


@memoized
def infer_size(shape, n):
    """Resolve one -1 in `shape` for `n` elements, with torch's errors."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
        shape = list(shape)
        shape[neg[0]] = n // known
        return tuple(shape)
    if known != n:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return tuple(shape)


@memoized
def view_strides(old_shape, old_stride, new_shape):
    """Strides that let `new_shape` view the same elements as (old_shape, old_stride), or None
    when no such strides exist (torch's computeStride)."""
    if not old_shape:
        return (1,) * len(new_shape)
    n = prod(old_shape)
    if n == 0:
        if tuple(old_shape) == tuple(new_shape):
            return tuple(old_stride)
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def public_broadcast_shapes(*shapes):
    """torch.broadcast_shapes: each shape a sequence of ints, or one int for a 1-D shape
    (broadcast_shapes((5, 1), 5) is (5, 5))."""
    return broadcast_shapes(*((operator.index(s),) if hasattr(s, "__index__") else tuple(s) for s in shapes))


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes with torch's error naming the mismatching sizes and dimension."""
    if len(shapes) == 2:  # the binary ops' case, without the generic loop's generator and padding
        a, b = shapes
        if a == b and type(a) in (tuple, Size):
            return a if type(a) is Size else Size(a)
        la, lb = len(a), len(b)
        ndim = la if la > lb else lb
        out = [1] * (ndim - la) + list(a)
        off = ndim - lb
        for i in range(lb):
            n = b[i]
            j = off + i
            o = out[j]
            if n == o or n == 1:
                continue
            if o == 1:
                out[j] = n
            else:
                raise RuntimeError(f"The size of tensor a ({o}) must match the size of tensor b ({n}) "
                                   f"at non-singleton dimension {j}")
        return Size(out)
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            j = off + i
            if n == out[j] or n == 1:
                continue
            if out[j] == 1:
                out[j] = n
            else:
                raise RuntimeError(f"The size of tensor a ({out[j]}) must match the size of tensor b ({n}) "
                                   f"at non-singleton dimension {i - len(s) + ndim}")
    return Size(out)


def expand_strides(shape, stride, new_shape, op="expand"):
    """Strides for broadcasting (shape, stride) to new_shape (0 on broadcast dims)."""
    if len(new_shape) < len(shape):
        raise RuntimeError(f"{op}: the number of sizes provided ({len(new_shape)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    off = len(new_shape) - len(shape)
    out = []
    for j, n in enumerate(new_shape):
        i = j - off
        if i < 0:
            if n < 0:
                raise RuntimeError(f"{op}: the expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {j}")
            out.append(0)
            continue
        if n == -1:
            n = shape[i]
        if shape[i] == n:
            out.append(stride[i])
        elif shape[i] == 1:
            out.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({n}) must match the existing size ({shape[i]}) "
                               f"at non-singleton dimension {j}.  Target sizes: {list(new_shape)}.  Tensor sizes: "
                               f"{list(shape)}")
    if shape:  # as torch: a new leading dim of size 1 strides over the dims after it (a 0-dim input's stay 0)
        for j in range(off - 1, -1, -1):
            if new_shape[j] == 1:
                nxt = new_shape[j + 1]
                out[j] = (shape[j + 1 - off] if nxt == -1 else nxt) * out[j + 1]
    return tuple(out)


def extent(shape, stride, offset):
    """One past the largest element index the layout touches (0 for an empty tensor)."""
    if any(s == 0 for s in shape):
        return 0
    return offset + 1 + sum((n - 1) * st for n, st in zip(shape, stride))


def check_bounds(shape, stride, offset, itemsize, nbytes, op="setStorage"):
    """Raise torch's RuntimeError when the layout reaches past a storage of `nbytes` bytes."""
    if offset < 0:
        raise RuntimeError(f"{op}: Tensor: invalid storage offset {offset}")
    for st in stride:
        if st < 0:
            raise RuntimeError(f"{op}: negative strides are not supported, got strides {list(stride)}")
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {n}: {list(shape)}")
    need = extent(shape, stride, offset) * itemsize
    if need > nbytes:
        raise RuntimeError(
            f"{op}: sizes {list(shape)}, strides {list(stride)}, storage offset {offset}, and itemsize {itemsize} "
            f"requiring a storage size of {need} are out of bounds for storage of size {nbytes}")


_OVERLAP_ENUMERATE_MAX = 1 << 16  # offsets listed at most (bounded work: 512 KiB of int64)


@memoized
def has_internal_overlap(shape, stride):
    """True when two different indices of the layout address the same element, decided from the
    sizes and strides with bounded work: sorted-stride reasoning proves "no" (each stride beyond
    the reach of the smaller ones); a zero stride, two equal strides, a stride that is a small
    multiple of another, or more elements than the span holds (pigeonhole) prove "yes"; what is
    left is settled by listing offsets only when there are at most 2**16 of them, else it is
    torch's "too hard to tell" (MemOverlap::TooHard), which torch lets through: False."""
    dims = sorted((st, n) for n, st in zip(shape, stride) if n > 1)
    if any(n == 0 for n in shape) or not dims:
        return False
    if dims[0][0] == 0:
        return True
    reach = 0  # largest offset reachable from the dims so far
    hard = False
    for st, n in dims:
        if st <= reach:
            hard = True
            break
        reach += (n - 1) * st
    if not hard:
        return False
    numel = 1
    span = 1
    for st, n in dims:
        numel *= n
        span += (n - 1) * st
    if numel > span:
        return True  # more elements than distinct offsets
    for i, (si, ni) in enumerate(dims):
        for j, (sj, nj) in enumerate(dims):
            if i != j and sj % si == 0 and sj // si <= ni - 1:
                return True  # index (k along i) and (1 along j) meet: k * si == sj
    if numel <= _OVERLAP_ENUMERATE_MAX:
        return _overlap_exact([n for _, n in dims], [st for st, _ in dims])
    return False


def _overlap_exact(shape, stride):
    import numpy as np
    offs = np.zeros(1, dtype=np.int64)
    for n, st in zip(shape, stride):
        offs = (offs[:, None] + np.arange(n, dtype=np.int64)[None, :] * st).ravel()
    return len(np.unique(offs)) != len(offs)


def ranges_overlap(a_start, a_end, b_start, b_end):
    return a_start < b_end and b_start < a_end


def coalesce(shape, *strides):
    """Merge adjacent dims that are contiguous with each other in every operand (kernels walk
    fewer dims). Returns (shape, [strides...])."""
    cshape, cstrides = _coalesce(shape, *strides)
    return cshape, list(cstrides)


@memoized
def _coalesce(shape, *strides):
    if not shape:
        return (), tuple(() for _ in strides)
    out_shape = [shape[0]]
    out_strides = [[s[0]] for s in strides]
    for i in range(1, len(shape)):
        n = shape[i]
        if n == 1:
            continue
        prev = out_shape[-1]
        if prev == 1:
            out_shape[-1] = n
            for os_, s in zip(out_strides, strides):
                os_[-1] = s[i]
            continue
        if all(os_[-1] == s[i] * n for os_, s in zip(out_strides, strides)):
            out_shape[-1] = prev * n
            for os_, s in zip(out_strides, strides):
                os_[-1] = s[i]
        else:
            out_shape.append(n)
            for os_, s in zip(out_strides, strides):
                os_.append(s[i])
    return tuple(out_shape), tuple(tuple(s) for s in out_strides)


@memoized
def elementwise_strides(shape, layouts, scalars):
    """The strides torch's TensorIterator gives the output of an elementwise op over inputs with
    `layouts` (Layouts, broadcast to `shape`) and `scalars` (0-dim operands: Python numbers), or
    None for contiguous. Inputs of one shape that are all contiguous give a contiguous output, all
    dense with one layout give that layout (4-d channels-last inputs: canonical NHWC strides); otherwise the dims are sorted by the inputs' strides
    (the first input that orders two dims decides; broadcast dims do not count; equal strides put
    the smaller dim inner) and the output is dense in that order."""
    ndim = len(shape)
    if all(lay.shape == shape for lay in layouts) and not (scalars and ndim):  # torch's "fast setup"
        if all(is_contiguous(lay.shape, lay.stride) for lay in layouts):
            return None
        if ndim == 4 and all(is_channels_last(lay.shape, lay.stride) for lay in layouts):
            return channels_last_strides(shape)  # canonical NHWC: size-1 dims' strides are rewritten
        first = layouts[0].stride
        if all(lay.stride == first for lay in layouts) and is_non_overlapping_and_dense(shape, first):
            return first
    if ndim <= 1:
        return None
    strides = []
    for lay in layouts:  # each input's strides over the common shape, 0 where it is broadcast
        off = ndim - len(lay.shape)
        strides.append((0,) * off + tuple(0 if n == 1 and shape[off + i] != 1 else s
                                          for i, (n, s) in enumerate(zip(lay.shape, lay.stride))))

    def should_swap(d0, d1):
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = _memory_order(ndim, should_swap)
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    out = [0] * ndim
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)
