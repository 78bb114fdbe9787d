"""The one place the op front end talks to autograd: `record` attaches a graph node to an op's
result, `check_inplace` refuses in-place writes autograd cannot allow, `record_inplace` rebases
an in-place result. The autograd package installs the engine-side functions; until an op has
a derivative in the table, results are simply returned."""
from __future__ import annotations

_impl = None  # set by tensorlab.autograd: an object with record / record_inplace


def record(out, op, inputs, **info):
    impl = _impl
    if impl is None:
        return out
    return impl.record(out, op, inputs, info)


def check_inplace(t, op):
    if t._requires_grad and t._grad_fn is None and t._base is None:
        impl = _impl
        if impl is None or impl.is_grad_enabled():
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")


def record_inplace(t, op, inputs, **info):
    impl = _impl
    if impl is not None:
        impl.record_inplace(t, op, inputs, info)
    return t
