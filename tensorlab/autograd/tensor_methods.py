"""Autograd's Tensor methods and properties, bound onto Tensor by tensorlab.autograd:
backward, register_hook, retain_grad / retains_grad, grad (validated), grad_fn, data,
is_inference, detach_, output_nr."""
from __future__ import annotations

import weakref

from .. import _warn
from ..tensor import Tensor
from . import engine
from .graph import _Handle, fresh_fn
from .grad_mode import STATE

_plain_requires_grad_ = Tensor.requires_grad_


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor w.r.t. the graph's leaves into their .grad;
    `gradient` is required unless this tensor has one element."""
    engine.backward(self, None if gradient is None else [gradient], retain_graph, create_graph, inputs)


def register_hook(self, hook):
    """hook(grad) -> None or a replacement gradient, called when this tensor's gradient is
    computed. Returns a handle whose remove() unregisters it."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = fresh_fn(self)
    if fn is None:
        if self._hooks is None:
            self._hooks = {}
        return _Handle(self._hooks, hook)
    if fn._pre_hooks is None:
        fn._pre_hooks = {}
    nr = self._output_nr

    def pre(grads):
        r = hook(grads[nr])
        if r is None:
            return None
        grads = list(grads)
        grads[nr] = r
        return grads
    return _Handle(fn._pre_hooks, pre)


def register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) -> None, called after a gradient has been accumulated into this leaf's .grad
    (torch's; DistributedDataParallel launches its bucket reductions from it). Returns a handle
    whose remove() unregisters it."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if fresh_fn(self) is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self.__dict__.get("_post_accumulate_grad_hooks")
    if hooks is None:
        hooks = self.__dict__["_post_accumulate_grad_hooks"] = {}
    return _Handle(hooks, hook)


def retain_grad(self):
    """Keep this non-leaf tensor's gradient in .grad during backward (leaves always do)."""
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = fresh_fn(self)
    if fn is None or self._retains_grad:
        return
    fn._retain = weakref.ref(self)
    self._retains_grad = True


def _retains_grad(self):
    return self._retains_grad and self._grad_fn is not None


def _get_grad(self):
    if self._grad is None and self._grad_fn is not None and not self._retains_grad:
        _warn.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                   "attribute won't be populated during autograd.backward(). If you indeed want the .grad field to "
                   "be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.", UserWarning)
    return self._grad


def _set_grad(self, g):
    if g is not None:
        if not isinstance(g, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(g).__name__}")
        if g.shape != self.shape:
            raise RuntimeError(f"assigned grad has data of a different size (grad {list(g.shape)}, tensor "
                               f"{list(self.shape)})")
        if g._dtype is not self._dtype:
            raise RuntimeError(f"assigned grad has data of a different type (grad {g._dtype}, tensor {self._dtype})")
        if g.device != self.device:
            raise RuntimeError(f"assigned grad has data located on a different device (grad {g.device}, tensor "
                               f"{self.device})")
    self._grad = g


def _get_data(self):
    """The same storage and layout, outside autograd, with its OWN version counter: writes
    through .data are invisible to autograd's checks (prefer `with no_grad():`)."""
    storage, lay = self._meta
    t = Tensor._make(storage, lay, self._dtype)
    t._inference = self._inference
    return t


def _set_data(self, new):
    """x.data = new: x keeps its identity, autograd state and version counter and takes new's
    storage, layout and dtype. The record with the smaller elements is published first, so a
    concurrent reader never sees a layout reaching past its storage."""
    if not isinstance(new, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(new).__name__}")
    storage, lay = new._meta
    if new._dtype.itemsize > self._dtype.itemsize:
        self._publish(storage, lay)
        self._dtype = new._dtype
    else:
        self._dtype = new._dtype
        self._publish(storage, lay)


def requires_grad_(self, requires_grad=True):
    if requires_grad and self._inference and not STATE.inference:
        raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
    return _plain_requires_grad_(self, requires_grad)


def is_inference(self):
    b = self._base
    return self._inference or (b is not None and b._inference)


def detach_(self):
    """Detach in place: this tensor becomes a leaf that does not require grad."""
    if self._base is not None and self._grad_fn is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    self._grad_fn = None
    self._requires_grad = False
    return self


METHODS = {
    "backward": backward, "register_hook": register_hook, "retain_grad": retain_grad,
    "retains_grad": property(_retains_grad), "grad": property(_get_grad, _set_grad),
    "grad_fn": property(fresh_fn), "data": property(_get_data, _set_data), "requires_grad_": requires_grad_,
    "is_inference": is_inference, "detach_": detach_, "output_nr": property(lambda self: self._output_nr),
    "_output_nr": 0,
}
METHODS["register_post_accumulate_grad_hook"] = register_post_accumulate_grad_hook
