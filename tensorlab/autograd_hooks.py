"""The one place the op front end talks to autograd: `record` attaches a graph node to an op's
result, `check_inplace` refuses in-place writes autograd cannot allow (and keeps what the
in-place derivative needs), `record_inplace` rebases an in-place result, `created` marks a new
tensor (inference tensors). tensorlab.autograd installs `_impl`.

Every op calls these, so each starts with a check that costs a few attribute reads: nothing
else runs unless an input requires grad, or `_slow` is set (anomaly detection on, or some
thread in inference mode, or a tl.profiler profile open: then `profiler` hears every op's record; or
tl.onnx.export tracing a model: then `tracer` hears each op with its recorded options)."""
from __future__ import annotations

_impl = None   # tensorlab.autograd.graph, once imported
_slow = False  # set by tensorlab.autograd while every op must take the slow path
profiler = None  # tensorlab.profiler's op listener, callable(op name or None, inputs, out), while one is on
tracer = None  # tensorlab.onnx's op listener, callable(op, inputs, out, info, inplace), while an export traces


def record(out, op, inputs, **info):
    if _slow:
        if profiler is not None:
            profiler(op, inputs, out)
        if tracer is not None:
            tracer(op, inputs, out, info, False)
        impl = _impl
        return out if impl is None else impl.record(out, op, inputs, info)
    for t in inputs:
        if t._requires_grad:
            impl = _impl
            return out if impl is None else impl.record(out, op, inputs, info)
    return out


def record_op(out, op, inputs, operands, kernel, params):
    """record() for elementwise ops: `operands` are the tensors and Python numbers the kernel
    ran on, `params` the op's options. Positional, so the fast path builds no kwargs dict (the
    check is record's, inlined for the same reason)."""
    if _slow:
        return _record_op(out, op, inputs, operands, kernel, params)
    for t in inputs:
        if t._requires_grad:
            return _record_op(out, op, inputs, operands, kernel, params)
    return out


def _record_op(out, op, inputs, operands, kernel, params):
    if profiler is not None:
        profiler(op, inputs, out)
    if tracer is not None:
        tracer(op, inputs, out, {**params, "operands": operands}, False)
    impl = _impl
    if impl is None:
        return out
    info = dict(params)
    info["operands"], info["kernel"] = operands, kernel
    return impl.record(out, op, inputs, info)


def check_inplace(t, op, inputs=()):
    """Before an in-place write to `t`; `inputs` are the op's other tensor operands where the
    op's derivative may read the value `t` has before the write."""
    if t._requires_grad or t._inference or _slow or (t._base is not None and t._base._requires_grad):
        impl = _impl
        if impl is not None:
            return impl.check_inplace(t, op, inputs)
        if t._requires_grad and t._grad_fn is None and t._base is None:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
        return None
    for x in inputs:
        if x._requires_grad:
            impl = _impl
            return None if impl is None else impl.check_inplace(t, op, inputs)
    return None


def record_inplace(t, op, inputs, **info):
    if t._requires_grad or _slow or (t._base is not None and t._base._requires_grad):
        if profiler is not None:
            profiler(op, inputs, t)
        if tracer is not None:
            tracer(op, inputs, t, info, True)
        impl = _impl
        if impl is not None:
            impl.record_inplace(t, op, inputs, info)
        return t
    for x in inputs:
        if x._requires_grad:
            impl = _impl
            if impl is not None:
                impl.record_inplace(t, op, inputs, info)
            return t
    return t


def record_inplace_op(t, op, inputs, operands, kernel, params):
    """record_inplace() for elementwise ops (see record_op)."""
    if t._requires_grad or _slow or (t._base is not None and t._base._requires_grad):
        return _record_inplace_op(t, op, inputs, operands, kernel, params)
    for x in inputs:
        if x._requires_grad:
            return _record_inplace_op(t, op, inputs, operands, kernel, params)
    return t


def _record_inplace_op(t, op, inputs, operands, kernel, params):
    if profiler is not None:
        profiler(op, inputs, t)
    if tracer is not None:
        tracer(op, inputs, t, {**params, "operands": operands}, True)
    impl = _impl
    if impl is not None:
        info = dict(params)
        info["operands"], info["kernel"] = operands, kernel
        impl.record_inplace(t, op, inputs, info)
    return t


def created(t):
    """A factory's result (zeros, tensor, randn, ...): an inference tensor in inference mode."""
    if _slow:
        if profiler is not None:
            profiler(None, (), t)
        impl = _impl
        if impl is not None:
            impl.created(t)
    return t
