"""Front-end helpers every op family shares: allocation, device checks, out= targets, write
checks. Nothing here knows NumPy or CuPy."""
from __future__ import annotations

from .. import _warn
from .. import backends, dtypes, layout as L
from ..memo import memoized
from ..device import canonical
from ..storage import UntypedStorage
from ..tensor import Meta, Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format
from ..tensor import _new as _new_tensor

_OVERLAP_SELF = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")
_OVERLAP_INPUT = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                  "single memory location. Please clone() the tensor before performing the operation.")


def _checked_size(shape):
    size = L.Size(shape)
    for n in size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
    if len(size) > L.MAX_DIMS:
        L.raise_too_many_dims("empty", len(size))
    return size


_SAFE_NUMEL = ((1 << 63) - 1) // 8  # at or below it, no dtype's byte count can overflow int64


@memoized
def _contiguous_layout(shape):
    """(contiguous Layout, numel, shape as a plain tuple) for outputs of a recurring shape."""
    size = _checked_size(shape)
    stride = L.contiguous_strides(size)
    L.check_strides(size, stride)
    return L.Layout(size, stride, 0), L.prod(size), tuple(size)


_CONTIGUOUS = _contiguous_layout.cache  # {(shape,): ...}, read directly on the hot path of empty_tensor


def interned(lay, make=False):
    """The one contiguous Layout of lay's shape that op outputs share (_contiguous_layout) when lay
    equals it, else lay: a view or a wrapped array laid out as a fresh output takes the ops'
    straight paths, which test layouts by identity. make: also when no output of that shape was
    made yet (a wrapped array; views look only at shapes already seen, a dict lookup)."""
    if lay.offset == 0:
        hit = _CONTIGUOUS.get((lay.shape,))
        if hit is None and make and lay.stride == L.contiguous_strides(lay.shape):
            try:
                hit = _contiguous_layout(lay.shape)
            except RuntimeError:  # a size past what empty_tensor accepts: keep the array's own record
                return lay
        if hit is not None and hit[0].stride == lay.stride:
            return hit[0]
    return lay


_cpu = backends.cpu
_cpu_contiguous_view = backends.cpu.contiguous_view
_cpu_allocate = backends.cpu.allocate
_cpu_allocate_view = backends.cpu.allocate_view
_wrap = UntypedStorage._wrap
_tuple_new = tuple.__new__
_object_new = object.__new__


@memoized
def _strided_layout(shape, stride):
    """(Layout, elements spanned) for outputs with given strides (preserve_format): the one
    contiguous record of the shape when the strides are contiguous (interned), so a copy of a
    contiguous tensor (x.cuda(), x.to(dtype), clone) takes the straight paths its source takes."""
    size = _checked_size(shape)
    lay = interned(L.Layout(size, stride, 0), make=True)
    return lay, L.extent(size, stride, 0)


def empty_tensor(shape, dtype, device, stride=None):
    """A fresh tensor of `shape` (contiguous unless `stride` is given) on a concrete device."""
    if stride is None and device.type == "cpu":  # the commonest case first: a contiguous CPU output of a known shape
        try:
            hit = _CONTIGUOUS.get((shape,))
        except TypeError:  # an unhashable shape (a list): the general path below
            hit = None
        if hit is not None:
            lay, numel, plain = hit
            if numel > _SAFE_NUMEL:
                L.check_storage_size(lay.shape, None, dtype.itemsize)
            if _cpu.allocate is _cpu_allocate:  # one backend call for the buffer and its view
                buf, arr = _cpu_allocate_view(numel * dtype.itemsize, plain, dtype.np, device)
            else:  # allocate is wrapped (tests, the profiler's hooks): call it as it is now
                buf = _cpu.allocate(numel * dtype.itemsize, device)
                arr = _cpu_contiguous_view(buf, plain, dtype.np)
            s = _object_new(UntypedStorage)  # UntypedStorage._wrap(buf, device, True), inlined
            s._buf = buf
            s.device = device
            s._resizable = True
            meta = _tuple_new(Meta, (s, lay))
            t = _new_tensor(Tensor, meta, dtype, None, False)
            if arr is not None:
                t._hview = [(meta, buf, dtype, arr)]
            return t
    elif stride is None:  # the same for a device's contiguous output: the backend's buffer, one Meta
        try:
            hit = _CONTIGUOUS.get((shape,))
        except TypeError:
            hit = None
        if hit is not None and hit[1] <= _SAFE_NUMEL:
            s = _object_new(UntypedStorage)
            s._buf = backends.get(device).allocate(hit[1] * dtype.itemsize, device)  # looked up per call: patchable
            s.device = device
            s._resizable = True
            return _new_tensor(Tensor, _tuple_new(Meta, (s, hit[0])), dtype, None, False)
    if type(shape) in (tuple, L.Size):  # the hot path of every op's output: one immutable Layout per shape
        if stride is None:
            hit = _CONTIGUOUS.get((shape,))
            lay, numel, plain = _contiguous_layout(shape) if hit is None else hit
            if numel > _SAFE_NUMEL:
                L.check_storage_size(lay.shape, None, dtype.itemsize)
            if device.type == "cpu":  # with the NumPy view the CPU primitive reads first (Tensor._hview)
                buf = _cpu.allocate(numel * dtype.itemsize, device)  # looked up per call: tests patch it
                arr = _cpu_contiguous_view(buf, plain, dtype.np)
                s = _object_new(UntypedStorage)  # UntypedStorage._wrap(buf, device, True), inlined
                s._buf = buf
                s.device = device
                s._resizable = True
                meta = _tuple_new(Meta, (s, lay))
                t = _new_tensor(Tensor, meta, dtype, None, False)
                if arr is not None:
                    t._hview = [(meta, buf, dtype, arr)]
                return t
        elif type(stride) is tuple:
            lay, numel = _strided_layout(shape, stride)
        else:
            lay, numel = _strided_layout(shape, tuple(stride))
        if numel > _SAFE_NUMEL:
            L.check_storage_size(lay.shape, lay.stride, dtype.itemsize)
        buf = (_cpu if device.type == "cpu" else backends.get(device)).allocate(numel * dtype.itemsize, device)
        return _new_tensor(Tensor, _tuple_new(Meta, (_wrap(buf, device, True), lay)), dtype, None, False)
    shape = L.Size(shape)
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    if len(shape) > L.MAX_DIMS:
        L.raise_too_many_dims("empty", len(shape))
    if stride is None:
        stride = L.contiguous_strides(shape)
        L.check_strides(shape, stride)
    L.check_storage_size(shape, stride, dtype.itemsize)
    nbytes = L.extent(shape, stride, 0) * dtype.itemsize
    storage = UntypedStorage._wrap(backends.get(device).allocate(nbytes, device), device, True)
    return Tensor._make(storage, L.Layout(shape, tuple(stride), 0), dtype)


def empty_like_layout(t, dtype=None, device=None, memory_format=None):
    """torch's empty_like stride rule: preserve_format keeps a dense layout's strides (or the
    dense strides with the same memory order); the explicit formats pick their strides."""
    lay = t._meta.layout
    mf = preserve_format if memory_format is None else memory_format
    if mf is preserve_format:
        if L.is_non_overlapping_and_dense(lay.shape, lay.stride):
            stride = lay.stride
        else:
            stride = L.dense_strides_like(lay.shape, lay.stride)
    elif mf is contiguous_format:
        stride = None
    elif mf in (channels_last, channels_last_3d):
        want = 4 if mf is channels_last else 5
        if len(lay.shape) != want:
            raise RuntimeError(f"required rank {want} tensor to use {mf.name} format, got shape {list(lay.shape)}")
        stride = L.channels_last_strides(lay.shape)
    else:
        raise RuntimeError(f"unknown memory_format {mf!r}")
    return empty_tensor(lay.shape, dtype or t._dtype, device or t._meta.storage.device, stride)


def pinned(t, meta=None):
    """`t` as it is at this instant: its storage and layout from ONE read of `t._meta` (or the
    record `meta` the caller already read), sharing the version counter. An op that computes
    shapes from an input and later reads its values works on the pinned tensor, so a concurrent
    resize_/set_ of the input cannot make the two steps see different layouts (DESIGN.md,
    "Atomic metadata")."""
    p = _new_tensor(Tensor, t._meta if meta is None else meta, t._dtype, t._vc, False)  # immutable record
    h = t._hview  # the CPU backend's view cache holder, shared: a view built for p serves t too
    if h is None:
        h = t._hview = [None]
    p._hview = h
    return p


def snapshot(t, meta):
    """`t` for an op that reads its values after computing from `meta`: the pinned record, or `t`
    itself when autograd must see it (a tensor that requires grad cannot be resized or set_ while
    its graph is recorded, so there is nothing to pin)."""
    return t if t._requires_grad else pinned(t, meta)


def device_of(device):
    return canonical(device)


def same_device(op, *tensors):
    """All tensor operands on one device (zero-dim CPU tensors may join a CUDA op, as in torch)."""
    dev = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        d = t._meta.storage.device
        if dev is None:
            dev = d
        elif d is not dev and d != dev:  # Device objects are not interned: identity first, then equality
            if d.type == "cpu" and t.dim() == 0:
                continue
            if dev.type == "cpu" and not any(isinstance(x, Tensor) and x.dim() > 0 and x.device == dev
                                             for x in tensors):
                dev = d
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {d}! (when checking arguments for {op}; move them with .to(device))")
    return dev


def strictly_same_device(first, others, where=None):
    """Every tensor of `others` on first's device, with no zero-dim CPU exception (the ops that
    check this way in torch); `where` names the op at the message's end, in parentheses."""
    for t in others:
        if t.device != first.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{first.device} and {t.device}!" + (f" ({where})" if where else ""))


def check_writable(t, op, overlap_ok=False):
    """Refuse writes through a layout whose elements alias each other (expand, as_strided), and
    into memory borrowed read-only (from_numpy of a non-writable array). `overlap_ok`: the op
    stores one value in every element (fill_, zero_), so aliased elements are harmless (torch)."""
    storage, lay = t._meta
    if storage._readonly:
        raise RuntimeError(f"{op}: the tensor shares memory with a non-writable NumPy array (from_numpy), so it "
                           "cannot be written; copy it first (tensor.clone(), or tensorlab.tensor(array)), or make "
                           "the array writable before from_numpy")
    if not overlap_ok and L.has_internal_overlap(lay.shape, lay.stride):
        raise RuntimeError(f"{op}: {_OVERLAP_SELF}")


def byte_range(t):
    storage, lay = t._meta
    start = lay.offset * t._dtype.itemsize
    return start, max(L.extent(lay.shape, lay.stride, lay.offset) * t._dtype.itemsize, start)


def check_no_partial_overlap(out, *inputs, op="op"):
    """An output may be an input exactly (in-place), but may not partly alias one."""
    so = out._meta.storage
    for x in inputs:  # the common case first: no input shares out's storage
        if isinstance(x, Tensor) and x._meta.storage is so:
            break
    else:
        return
    if out.numel() == 0:
        return
    o0 = o1 = None  # out's byte range, computed only when an input shares its storage (rare)
    for x in inputs:
        if not isinstance(x, Tensor) or x._meta.storage is not so or x.numel() == 0:
            continue
        if x._meta.layout == out._meta.layout and x._dtype.itemsize == out._dtype.itemsize:
            continue
        if o0 is None:
            o0, o1 = byte_range(out)
        i0, i1 = byte_range(x)
        if L.ranges_overlap(o0, o1, i0, i1):
            raise RuntimeError(f"{op}: {_OVERLAP_INPUT}")


def check_cast(result_dtype, out_dtype, op):
    if not dtypes.can_cast(result_dtype, out_dtype):
        raise RuntimeError(f"{op}: result type {result_dtype.torch_name} can't be cast to the desired output type "
                           f"{out_dtype.torch_name}")


class Output:
    """Where an op writes its result. Without out=, a fresh tensor. With out=, the validated target,
    or (when out must change shape) a resize plan's private target that `finish()` publishes, so
    a failure before finish() leaves `out` untouched. finish() bumps out's version once."""

    __slots__ = ("tensor", "_out", "_plan")

    def __init__(self, tensor, out=None, plan=None):
        self.tensor = tensor
        self._out = out
        self._plan = plan

    def finish(self):
        out = self._out
        if out is None:
            return self.tensor
        if self._plan is not None:
            self._plan.commit()
        out._vc.bump()
        return out


def output(out, shape, dtype, device, op, inputs=(), stride=None, out_meta=None):
    """The Output for an op producing `shape`/`dtype` on `device`, honouring an out= target:
    device, castability (torch's "result type Float can't be cast to the desired output type
    Long"), overlap with inputs, and an atomic resize when the shape differs (torch warns when a
    non-empty out is resized). `inputs` are the op's pinned operands; `out_meta` is out's record
    when out is also an input (the one the op read: out is written, or resized, as that record)."""
    if out is None:
        o = _object_new(Output)  # Output(tensor) without the __init__ frame: the path of every op
        o.tensor = empty_tensor(shape, dtype, device, stride)
        o._out = o._plan = None
        return o
    _check_out(out, dtype, device, op)
    target = pinned(out, out_meta)  # one layout for the checks and the primitive, even while another thread resizes out
    cur = target._meta.layout.shape
    if cur != shape and tuple(cur) != tuple(shape):
        _warn_resize(op, cur, shape)
        from .resize import plan_resize
        plan = plan_resize(out, tuple(shape), op=op, expect=target._meta, stride=stride)
        if plan.new_buf is None:  # resized in place: the result lands in out's storage, maybe under an input
            check_no_partial_overlap(plan.target, *inputs, op=op)
        return Output(plan.target, out, plan)
    check_writable(target, op)
    check_no_partial_overlap(target, *inputs, op=op)
    return Output(target, out)


def _check_out(out, dtype, device, op):
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    od = out._meta.storage.device
    if od is not device and od != device:
        raise RuntimeError(f"{op}: Expected out tensor to be on {device} but got {out.device}; "
                           f"allocate out on the inputs' device")
    if dtype is not out._dtype:  # every dtype casts to itself
        check_cast(dtype, out._dtype, op)
    if out._requires_grad:
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


def _warn_resize(op, cur, shape):
    if L.prod(cur) != 0:
        _warn.warn(f"{op}: An output with one or more elements was resized since it had shape "
                   f"{list(cur)}, which does not match the required output shape {list(shape)}. "
                   "This behavior is deprecated, and in a future release it will not resize outputs "
                   "unless they have zero elements. You can explicitly reuse an out tensor t by resizing "
                   "it, inplace, to zero elements with t.resize_(0).", UserWarning)


class Outputs:
    """Where an op with several results (values and indices) writes them. `tensors` are fresh:
    the op may launch any number of times into them. With out=, finish() then writes every result
    into its out tensor and publishes every resize together (resize.JointPlan), or, when anything
    fails, restores what it wrote and publishes nothing: all of an op's outputs change, or none."""

    __slots__ = ("tensors", "_outs", "_metas", "_op", "_inputs")

    def finish(self):
        outs = self._outs
        if outs is None:
            return self.tensors
        from .copy import clone, copy_into
        from .resize import plan_joint
        shapes = [t._meta.layout.shape for t in self.tensors]
        if any(tuple(m.layout.shape) != tuple(s) for m, s in zip(self._metas, shapes)):
            plan = plan_joint(outs, self._metas, shapes, self._op)
            targets = plan.targets
        else:
            plan, targets = None, [pinned(o, m) for o, m in zip(outs, self._metas)]
        for t in targets:
            check_writable(t, self._op)
            check_no_partial_overlap(t, *self._inputs, op=self._op)
        # a target over a storage others can see (not a buffer the plan grew) is saved before the first write
        existing = {id(m.storage) for m in self._metas}
        saved = [clone(t) if id(t._meta.storage) in existing else None for t in targets]
        written = []
        try:
            for t, r in zip(targets, self.tensors):
                copy_into(t, r)
                written.append(t)
            if plan is not None:
                plan.commit()
        except BaseException:
            for t, old in zip(written, saved):
                if old is not None:
                    copy_into(t, old)
            raise
        for o in outs:
            o._vc.bump()
        return outs


def outputs(op, specs, inputs=()):
    """Outputs for an op with several results: specs are (out or None, shape, dtype, device); all
    outs given or none (torch's out=(values, indices)). `inputs` are the op's pinned operands."""
    o = _object_new(Outputs)
    o.tensors = [empty_tensor(shape, dtype, device) for _, shape, dtype, device in specs]
    given = [spec[0] for spec in specs]
    if all(x is None for x in given):
        o._outs = None
        return o
    for out, shape, dtype, device in specs:
        _check_out(out, dtype, device, op)
    o._outs = given
    o._metas = [out._meta for out in given]  # the records checked: publishing compares against them
    for m, (_, shape, _, _) in zip(o._metas, specs):
        if tuple(m.layout.shape) != tuple(shape):
            _warn_resize(op, m.layout.shape, shape)
    o._op = op
    o._inputs = tuple(inputs)
    return o


def sizes_or_keyword(args, kw, op, name):
    """f(*sizes) or f(name=sizes), as torch's argument parser takes both: the varargs tuple, or the keyword's
    value as its one element; both at once is torch's TypeError."""
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    return (kw,)
