"""The autograd graph: nodes (grad_fn), saved tensors with version checks, and the recording
side that tensorlab.autograd_hooks calls from every op (record / check_inplace /
record_inplace / created).

A node has one output (every op records one differentiable result; custom Functions may have
several) and one edge per input: (node, output_nr) or (None, 0). A node is also the `ctx` its
derivative (tensorlab/autograd/derivatives_<family>.py) reads: saved inputs and result, input metadata,
the op's info kwargs."""
from __future__ import annotations

import itertools
import weakref

from .. import layout as L
from ..tensor import Tensor
from . import anomaly
from .derivatives import ALL, NOT_DIFFERENTIABLE, Arg as _Arg, lookup
from .grad_mode import STATE

_seq = itertools.count()

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
         "you need to access saved tensors after calling backward.")
INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
                   "normal tensor and use it in autograd.")
# in-place ops whose `inputs` never include the written tensor, even when an operand is it
_NO_EDGE = (None, 0)
_ARGS = tuple(_Arg(i) for i in range(64))
_SELF_EXCLUDED = frozenset(("copy_", "index_put_", "scatter_", "scatter_add_", "index_fill_"))


def is_grad_enabled():
    return STATE.grad


def _camel(op):
    return "".join(p[:1].upper() + p[1:] for p in op.strip("_").split("_"))


def _alias(t):
    """Same storage, layout and version counter; no graph (a saved result must not point back at
    the node that saves it)."""
    storage, lay = t._meta
    return Tensor._make(storage, lay, t._dtype, t._vc)


def _describe(t):
    return f"[tensorlab.{t._dtype.torch_name}Tensor [{', '.join(str(n) for n in t.shape)}]]"


class Saved:
    """A tensor a derivative reads, with the version it had when saved."""

    __slots__ = ("tensor", "version", "fn", "is_output")

    def __init__(self, tensor, fn, is_output):
        if tensor._inference:
            raise RuntimeError(INFERENCE_SAVED)
        self.tensor = tensor
        self.version = tensor._vc.value
        self.fn = fn
        self.is_output = is_output

    def unpack(self, node):
        t = self.tensor
        now = t._vc.value
        if now != self.version:
            fn = node if self.is_output else self.fn
            where = f", which is output {t._output_nr} of {fn.name()}," if fn is not None else ""
            hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
                    "variable in question was changed in there or anywhere later. Good luck!"
                    if anomaly.is_anomaly_enabled() else
                    "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                    "tensorlab.autograd.set_detect_anomaly(True).")
            raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an inplace "
                               f"operation: {_describe(t)}{where} is at version {now}; expected version "
                               f"{self.version} instead. {hint}")
        if self.is_output and STATE.grad:  # create_graph: the result takes part in the new graph
            a = _alias(t)
            a._grad_fn, a._requires_grad = node, True
            if t._output_nr:
                a._output_nr = t._output_nr
            return a
        return t


class Node:
    """A grad_fn. `next_functions` are the edges to the inputs' nodes."""

    __slots__ = ("_op", "_d", "info", "next_functions", "_metas", "_needs", "_saved", "_result", "_freed", "_seq",
                 "_out", "_pre_hooks", "_post_hooks", "_retain", "_trace", "_base_fn", "_metadata", "__weakref__")
    n_outputs = 1

    def __init__(self, op, d, inputs, info, out):
        self._op, self._d, self.info = op, d, info
        needs = []
        metas = []
        edges = []
        for t in inputs:  # one pass: what each input needs, its metadata, its edge
            m = t._meta
            metas.append((m.layout, t._dtype, m.storage.device))
            if t._requires_grad:
                needs.append(True)
                fn = t._grad_fn
                if fn is None:
                    edges.append((acc_node(t), t._output_nr))
                else:
                    edges.append((fresh_fn(t) if t._base is not None else fn, t._output_nr))
            else:
                needs.append(False)
                edges.append(_NO_EDGE)
        self._needs, self._metas, self.next_functions = needs, metas, tuple(edges)
        m = out._meta
        self._out = (m.layout, out._dtype, m.storage.device)
        self._seq = next(_seq)
        self._pre_hooks = self._post_hooks = self._retain = self._trace = self._base_fn = self._metadata = None
        self._freed = False
        ops = info.get("operands")
        if ops is not None:  # tensors among the operands become their input positions
            k = 0
            conv = []
            for o in ops:
                if isinstance(o, Tensor):
                    conv.append(_ARGS[k])
                    k += 1
                else:
                    conv.append(o)
            info["operands"] = tuple(conv)
        saved = None
        if d is not None:
            s = d.save  # the input positions to keep: ALL, a tuple, or fn(ctx) -> positions
            if s:
                saved = [None] * len(inputs)
                for p in (range(len(inputs)) if s is ALL else s(self) if callable(s) else s):
                    t = inputs[p]
                    saved[p] = Saved(t, t._grad_fn, False)
            want = d.result  # keep the result: a bool, or fn(ctx) -> bool
            self._result = Saved(_alias(out), None, True) if want is True or (want and want(self)) else None
        else:
            self._result = None
        self._saved = saved
        if anomaly._enabled:
            self._trace = anomaly.capture()

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    # -- what derivatives read (the node is their ctx) ----------------------------------------
    def _check_live(self):
        if self._freed:
            raise RuntimeError(FREED)

    def saved(self, i):
        self._check_live()
        s = self._saved[i] if self._saved is not None else None
        if s is None:
            raise RuntimeError(f"internal error: {self.name()} reads input {i}, which its derivative entry does not "
                               f"save (tensorlab/autograd/derivatives_<family>.py)")
        return s.unpack(self)

    def result(self):
        self._check_live()
        if self._result is None:
            raise RuntimeError(f"internal error: {self.name()} reads its result, which its derivative entry does not "
                               f"save (tensorlab/autograd/derivatives_<family>.py)")
        return self._result.unpack(self)

    def result_unchanged(self):
        """The kept result if it is still at the version it was saved at, else None: for a
        derivative that can do without it (gelu's), so changing the result in place is no error
        there (torch's GeluBackward keeps only the input)."""
        self._check_live()
        r = self._result
        if r is None or r.tensor._vc.value != r.version:
            return None
        return r.tensor

    def needs(self, i):
        return self._needs[i]

    def shape(self, i):
        return self._metas[i][0].shape

    def layout(self, i):
        return self._metas[i][0]

    def dtype(self, i):
        return self._metas[i][1]

    def device(self, i):
        return self._metas[i][2]

    @property
    def n_inputs(self):
        return len(self._metas)

    @property
    def out_shape(self):
        return self._out[0].shape

    # elementwise ops record their operands: tensors (by input position) and Python numbers
    def operands(self):
        return self.info["operands"]

    def operand(self, k):
        o = self.info["operands"][k]
        return self.saved(o.i) if type(o) is _Arg else o

    def op_needs(self, k):
        o = self.info["operands"][k]
        return type(o) is _Arg and self._needs[o.i]

    def op_is_tensor(self, k):
        return type(self.info["operands"][k]) is _Arg

    def op_shape(self, k):
        o = self.info["operands"][k]
        return self._metas[o.i][0].shape if type(o) is _Arg else ()

    def to_inputs(self, grads):
        """Gradients per operand -> per input (the numbers among the operands dropped)."""
        return tuple(g for o, g in zip(self.info["operands"], grads) if type(o) is _Arg)

    # -- running -------------------------------------------------------------------------------
    def apply(self, grads):
        d = self._d
        if d is None:
            raise RuntimeError(f"the derivative for '{self._op}' is not implemented in tensorlab "
                               f"(add a row to its family's tensorlab/autograd/derivatives_<family>.py)")
        res = d.backward(self, grads[0])
        if not isinstance(res, (tuple, list)):
            res = (res,)
        if len(res) != len(self._metas):
            raise RuntimeError(f"internal error: {self.name()} returned {len(res)} gradients for "
                               f"{len(self._metas)} inputs")
        return list(res)

    def output_metas(self):
        return [self._out]

    def release(self):
        if self._saved is not None or self._result is not None:
            self._saved = self._result = None
            self._freed = True

    def name(self):
        d = self._d
        if d is not None and d.name is not None:
            return d.name(self) if callable(d.name) else d.name
        return _camel(self._op) + "Backward0"

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or new grad_outputs, before this node runs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return _Handle(self._pre_hooks, lambda gs: _as_list(fn(tuple(gs))))

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or new grad_inputs, after this node ran."""
        if self._post_hooks is None:
            self._post_hooks = {}
        return _Handle(self._post_hooks, fn)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


def _as_list(r):
    return None if r is None else list(r)


class _Handle:
    """What register_hook returns: remove() unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, table, fn):
        self._table = table
        self.id = next(self._ids)
        table[self.id] = fn

    def remove(self):
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds what arrives into `variable.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self._op, self._d, self.info = "AccumulateGrad", None, {}
        self.next_functions = ()
        self._metas, self._needs = [], []
        self._out = (variable._meta.layout, variable._dtype, variable._meta.storage.device)
        self._seq = 1 << 62  # runs as soon as it is ready, as torch's
        self._pre_hooks = self._post_hooks = self._retain = self._trace = self._base_fn = None
        self._saved = self._result = None
        self._freed = False
        self._metadata = None

    def name(self):
        return "AccumulateGrad"


def acc_node(t):
    ref = t.__dict__.get("_acc")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t.__dict__["_acc"] = weakref.ref(node)
    return node


def edge_fn(t):
    """The node a gradient for `t` goes to: its grad_fn, or its AccumulateGrad for a leaf."""
    fn = t._grad_fn
    if fn is None:
        return acc_node(t) if t._requires_grad else None
    if t._base is not None:
        return fresh_fn(t)
    return fn


def fresh_fn(t):
    """A view's grad_fn, rebuilt as an as_strided of its base when the base's grad_fn changed
    since the view was made (an in-place op on the base or on another view of it)."""
    fn = t._grad_fn
    b = t._base
    if b is None or fn is None or fn._base_fn is b._grad_fn or not b._requires_grad:
        return fn
    node = view_node(b, t)
    t._grad_fn = node
    return node


def view_node(b, t):
    lay = t._meta.layout
    node = Node("as_strided", lookup("as_strided"), (b,),
                {"size": lay.shape, "stride": lay.stride, "storage_offset": lay.offset}, t)
    node._base_fn = b._grad_fn
    return node


def attach(out, node):
    out._grad_fn = node
    out._requires_grad = True
    if out._base is not None:
        node._base_fn = out._base._grad_fn


# -- the hooks' slow paths -------------------------------------------------------------------------
def created(t):
    if STATE.inference:
        t._inference = True


def _mark_inference(out):
    b = out._base
    if b is None or b._inference:
        out._inference = True


def record(out, op, inputs, info):
    st = STATE
    if st.busy:
        return out
    if st.inference:
        _mark_inference(out)
        if anomaly.forward_enabled():
            anomaly.check_forward(out, op, inputs, info)
        return out
    if anomaly._enabled and anomaly.forward_enabled():
        anomaly.check_forward(out, op, inputs, info)
    if not st.grad or not (out._dtype.is_floating_point or out._dtype.category == 3):
        return out
    for t in inputs:
        if t._requires_grad:
            break
    else:
        return out
    d = lookup(op)
    if d is not NOT_DIFFERENTIABLE:
        attach(out, Node(op, d, inputs, info, out))
    return out


def check_inplace(t, op, inputs):
    st = STATE
    if t._inference and not st.inference:
        raise RuntimeError(f"{op}: Inplace update to inference tensor outside InferenceMode is not allowed. You can "
                           f"make a clone to get a normal tensor before doing inplace update.")
    if st.busy:
        return
    check_fwd = anomaly.forward_enabled()
    if not st.grad:
        if check_fwd:
            st.pending = (t, t._vc.value, None, anomaly.finite_state(t))
        return
    b = t._base
    if t._requires_grad and t._grad_fn is None and (b is None or not b._requires_grad):
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
    if b is not None and b._requires_grad and b._grad_fn is None:
        raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in an in-place "
                           f"operation.")
    snap = None
    d = lookup(op)
    others = any(x._requires_grad for x in inputs if x is not t)
    mine = t._requires_grad or (b is not None and b._requires_grad)
    if d is not None and t._dtype.is_floating_point and (mine or others) and d.saves_self(mine, others):
        from ..ops.copy import clone
        snap = clone(t)  # the derivative reads self's value from before the write
    if snap is not None or check_fwd:
        st.pending = (t, t._vc.value, snap, anomaly.finite_state(t) if check_fwd else None)


def _old_self(t, through_base=False):
    """Stands for `t` before an in-place write: its graph position (not its values). A view
    whose base requires grad gets a gradient (CopySlices routes it into the base)."""
    a = _alias(t)
    if t._requires_grad or through_base:
        a._requires_grad = True
        a._grad_fn = edge_fn(t) if t._grad_fn is not None else None
    return a


def record_inplace(t, op, inputs, info):
    st = STATE
    pending, st.pending = st.pending, None
    if pending is not None and (pending[0] is not t or pending[1] >= t._vc.value):
        pending = None  # left by a write that failed
    if st.busy or st.inference:
        return
    rest = inputs[1:] if inputs and inputs[0] is t and op not in _SELF_EXCLUDED else inputs
    if anomaly.forward_enabled():
        anomaly.check_forward(t, op, rest, info, self_state=pending[3] if pending is not None else None)
    if not st.grad or not t._dtype.is_floating_point:
        return
    b = t._base
    through_base = b is not None and b._requires_grad  # (a view made under no_grad of such a base too)
    if not (t._requires_grad or through_base):
        for x in rest:
            if x._requires_grad:
                break
        else:
            return
    old = pending[2] if pending is not None and pending[2] is not None else _old_self(t, through_base)
    node_inputs = (old,) + tuple(old if x is t else x for x in rest)
    node = Node(op, lookup(op), node_inputs, info, t)
    if node._saved is not None and old is not (pending[2] if pending is not None else None):
        for sv in node._saved:  # self's old values are gone: reading them must fail, not mislead
            if sv is not None and sv.tensor is old:
                sv.version -= 1
    prev = t._grad_fn
    if b is None:
        t._grad_fn, t._requires_grad = node, True
    else:
        cs = CopySlices(b, node, t)
        b._grad_fn, b._requires_grad = cs, True
        t._requires_grad = True
        t._grad_fn = view_node(b, t)
    if t._retains_grad and prev is not None:  # retain_grad follows the tensor to its new grad_fn
        prev._retain = None
        t._grad_fn._retain = weakref.ref(t)


class CopySlices(Node):
    """The base's new grad_fn after an in-place op on one of its views: the gradient of the
    base, with the view's region replaced by what the op's derivative gives its input there."""

    __slots__ = ("_fn", "_base_lay", "_view_lay")

    def __init__(self, base, fn_node, view):
        old = _old_self(base)
        self._op, self._d, self.info = "CopySlices", None, {}
        self._fn = fn_node
        self._base_lay, self._view_lay = base._meta.layout, view._meta.layout
        if L.has_internal_overlap(self._base_lay.shape, self._base_lay.stride):
            raise RuntimeError("in-place write through a view of a tensor whose own elements overlap (e.g. an "
                               "expand()ed tensor) is not supported by autograd; clone() the base first")
        if self._view_lay.offset < self._base_lay.offset:
            raise RuntimeError("in-place write through a view that starts before its base's first element is not "
                               "supported by autograd")
        edge = (edge_fn(old), 0) if old._requires_grad else (None, 0)
        self.next_functions = (edge,) + fn_node.next_functions[1:]
        self._metas = [(self._base_lay, base._dtype, base._meta.storage.device)] + fn_node._metas[1:]
        self._needs = [old._requires_grad] + fn_node._needs[1:]
        self._out = fn_node._metas[0]
        self._seq = next(_seq)
        self._pre_hooks = self._post_hooks = self._retain = self._base_fn = None
        self._trace = fn_node._trace
        self._saved = self._result = None
        self._freed = False
        self._metadata = None

    def name(self):
        return "CopySlices"

    def apply(self, grads):
        from . import engine
        from .derivatives import strided_like
        g = grads[0]
        bl, vl = self._base_lay, self._view_lay
        res = strided_like(g, bl)
        region = res.as_strided(vl.shape, vl.stride, vl.offset - bl.offset)
        sub = self._fn.apply([region.clone()])
        g0 = sub[0]
        if g0 is None:
            region.zero_()
        else:
            region.copy_(engine.fit(g0, self._fn, 0))
        return [res] + sub[1:]

    def release(self):
        self._fn.release()
