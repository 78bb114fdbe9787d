"""The exporter's tracer: runs the model once with a listener on the op front end and builds the
ONNX graph as the ops happen.

Two sources of ops, one rule (the outermost call wins):
- `autograd_hooks.tracer`: every op tensorlab dispatches reports (op name, inputs, output, the
  op's recorded options) when it finishes; this is where `x + y`, `x.view(...)`, `matmul`, ... are
  heard.
- Leaf functions (conv, pooling, batch/layer norm, embedding, pad, interpolate, attention, gelu,
  dropout): the export wraps them, wherever tensorlab binds them, for its duration only; a leaf
  call is converted from its own arguments (one ONNX node where ONNX has the op) and the ops it
  runs inside are not heard.

A tensor is a graph value (it depends on a graph input) or a constant (parameters, buffers,
factory results, and with constant folding anything computed from constants only); constants
become initializers the first time a graph value's op reads them. An op on graph values with no
mapping raises UnsupportedOperatorError at once, naming the op and the opset.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading

import numpy as np

from .. import autograd_hooks
from ..tensor import Tensor
from .errors import SymbolicValueError, UnsupportedOperatorError

_state = {"exporting": False}
# leaves that take no tensor: graph nodes only when a dynamic axis sizes them
FACTORIES = ("arange", "zeros", "ones", "full")
INT64_MAX = 2 ** 63 - 1


class Graph:
    """The ONNX graph under construction (onnx.helper objects) and the tensor -> value-name map."""

    def __init__(self, onnx, opset, fold, param_names, export_params):
        self.onnx, self.opset, self.fold = onnx, opset, fold
        self.nodes, self.initializers, self.inputs = [], [], []
        self.names = {}         # id(tensor) -> value name (graph values and materialized constants)
        self.dynamic = set()    # value names that depend on a graph input
        self.keep = []          # every tensor in `names`, alive so its id is never reused
        self.by_meta = {}       # (id(storage), layout) -> value name: the pins and snapshots ops make of a value
        self.dyn_storages = set()  # id(storage) of every graph value
        self.param_names = param_names  # id(parameter or buffer) -> its state_dict name
        self.param_meta = {}  # (id(storage), layout) of each parameter or buffer -> its name (snapshots of it)
        self.export_params = export_params
        self.param_inputs = []  # (name, tensor) graph inputs for parameters when export_params=False
        self.producer = {}      # value name -> (node, output index)
        self.dyn_sizes = set()  # the trace-time sizes of the dynamic axes (reshape targets keep them symbolic)
        self.dyn_src = {}       # trace-time size -> (graph input name, axis) of the first dynamic axis with it
        self.used = set()
        self.depth = 0          # > 0 inside a leaf function or the exporter's own tensor reads
        self.error = None       # the first error raised inside a listener (re-raised after the op)
        # the probe: a first run with the dynamic axes at other sizes records (op, output shapes) per op
        # (`probe`); the export run reads them back in order (`alt`), so a converter knows which output
        # dims follow a dynamic axis (`cur_alt`; `alt_shape`: value name -> its shape in the probe)
        self.probe = None
        self.alt = None
        self.step = 0
        self.cur_alt = None
        self.alt_shape = {}
        self.baked = []         # ops computed from constants whose result's shape followed a dynamic axis
        self._n = 0

    # -- names -------------------------------------------------------------------------------------
    def fresh(self, hint):
        self._n += 1
        name = f"/{hint}_{self._n}"
        while name in self.used:
            self._n += 1
            name = f"/{hint}_{self._n}"
        self.used.add(name)
        return name

    def bind(self, t, name, dynamic=True):
        self.names[id(t)] = name
        self.keep.append(t)
        meta = t._meta
        self.by_meta[(id(meta.storage), meta.layout)] = name  # constants too: a snapshot of a weight is the weight
        if dynamic:
            self.dynamic.add(name)
            self.dyn_storages.add(id(meta.storage))

    def forget(self, t):
        """A constant changed in place: its next use reads it again."""
        self.names.pop(id(t), None)
        meta = t._meta
        key = (id(meta.storage), meta.layout)
        if self.by_meta.get(key) not in self.dynamic:
            self.by_meta.pop(key, None)

    def is_dynamic(self, t):
        if not isinstance(t, Tensor):
            return False
        name = self.names.get(id(t))
        if name is None:
            meta = t._meta
            name = self.by_meta.get((id(meta.storage), meta.layout))
        return name in self.dynamic

    # -- constants ---------------------------------------------------------------------------------
    def host(self, t):
        """t's values as a NumPy array, read without being traced."""
        self.depth += 1
        try:
            return np.array(t.detach().cpu().numpy(), copy=True)
        finally:
            self.depth -= 1

    def const(self, value, hint="const", dtype=None):
        """A new initializer holding `value` (array or number); returns its name."""
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def ints(self, values, hint="shape"):
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def val(self, t):
        """The value name of tensor `t`; a tensor not seen before is a constant (an initializer)."""
        name = self.names.get(id(t))
        if name is not None:
            return name
        meta = t._meta
        name = self.by_meta.get((id(meta.storage), meta.layout))
        if name is not None:  # a pin or snapshot of a graph value (same storage, same layout)
            self.names[id(t)] = name
            self.keep.append(t)
            return name
        if id(meta.storage) in self.dyn_storages or (t._base is not None and self.is_dynamic(t._base)):
            raise SymbolicValueError(
                f"onnx.export: a view of a graph value (shape {list(t.shape)}) was made by an op the tracer "
                f"did not hear; express it with view/reshape/indexing so it can be exported")
        pname = self.param_names.get(id(t)) or self.param_meta.get((id(meta.storage), meta.layout))
        if pname is not None:
            if pname in self.used:
                pname = self.fresh(pname)
            self.used.add(pname)
            if self.export_params:
                self.initializers.append(self.onnx.numpy_helper.from_array(self.host(t), pname))
            else:
                self.param_inputs.append((pname, t))
            self.bind(t, pname, dynamic=False)
            return pname
        arr = self.host(t)
        name = self.const(arr, "Constant")
        self.bind(t, name, dynamic=False)
        return name

    # -- nodes -------------------------------------------------------------------------------------
    def node(self, op_type, inputs, n_out=1, hint=None, **attrs):
        """Append one ONNX node; returns its output name(s) (a list when n_out != 1)."""
        outs = [self.fresh(hint or op_type) for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = self.onnx.helper.make_node(op_type, list(inputs), outs, name=self.fresh(op_type + "_node"), **attrs)
        self.nodes.append(node)
        for i, o in enumerate(outs):
            self.producer[o] = (node, i)
            self.dynamic.add(o)
        return outs[0] if n_out == 1 else outs

    def unsupported(self, name, detail="", since=None):
        return UnsupportedOperatorError(name, self.opset, since, detail)


def _tensors(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


class Tracer:
    """Installs the listener and the leaf wrappers; `graph` receives the converted nodes."""

    def __init__(self, graph, hook_converters, leaf_converters):
        self.g = graph
        self.hooks = hook_converters   # op name -> fn(g, op, inputs, out, info) -> output names
        self.leaves = leaf_converters  # function name -> fn(g, bound arguments, out) -> output names
        self.patched = []              # (module, attribute, original)
        self.thread = threading.get_ident()  # ops other threads run meanwhile are not the model's

    # -- the op listener -----------------------------------------------------------------------------
    def on_op(self, op, inputs, out, info, inplace):
        g = self.g
        if g.depth or g.error is not None or threading.get_ident() != self.thread:
            return
        try:
            self._convert_op(op, inputs, out, info, inplace)
        except Exception as e:  # raised after the op returns (a listener must not break the op's own publish)
            g.error = e

    def _note(self, name, outs):
        """Probe run: record the op's output shapes (True: nothing else to do). Export run: set
        cur_alt from the probe's record of the same op."""
        g = self.g
        shapes = [tuple(t.shape) for t in outs]
        if g.probe is not None:
            g.probe.append((name, shapes))
            return True
        g.cur_alt = None
        if g.alt is not None:
            entry = g.alt[g.step] if g.step < len(g.alt) else None
            g.step += 1
            if entry is None or entry[0] != name or len(entry[1]) != len(shapes) or \
                    any(len(a) != len(b) for a, b in zip(entry[1], shapes)):
                g.alt = None  # the runs took different paths: no per-op record from here on
            else:
                g.cur_alt = entry[1]
        return False

    def _check_baked(self, name, outs, record=True):
        """True when the probe run gave this constant result another shape: its size came from a
        dynamic axis through Python (x.shape[0], len(x)); noted for the export's warning."""
        alt = self.g.cur_alt
        moved = alt is not None and [tuple(t.shape) for t in outs] != list(alt)
        if moved and record and name not in self.g.baked:
            self.g.baked.append(name)
        return moved

    def _bind_outs(self, outs, names):
        g = self.g
        alt = g.cur_alt
        for k, (t, n) in enumerate(zip(outs, names)):
            if isinstance(t, Tensor) and n is not None:
                g.bind(t, n)
                if alt is not None and k < len(alt):
                    g.alt_shape[n] = alt[k]

    def _convert_op(self, op, inputs, out, info, inplace):
        g = self.g
        outs = [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, Tensor)]
        if self._note(op, outs):
            return
        tens = [t for t in inputs if isinstance(t, Tensor)]
        ops_ = info.get("operands")
        if ops_ is not None:  # elementwise: operands are pins of the inputs, in order
            it = iter(tens)
            last = None
            operands = []
            for x in ops_:
                if isinstance(x, Tensor):
                    last = next(it, last)
                    operands.append(last)
                else:
                    operands.append(x)
            info = {**info, "operands": operands}
        shown = op  # the name errors give (the in-place op's own)
        if inplace and op.endswith("_") and not op.endswith("__"):
            op = op[:-1]
        dyn = any(g.is_dynamic(t) for t in tens) or (inplace and outs and g.is_dynamic(outs[0]))
        if not dyn and g.fold:
            self._check_baked(shown, outs)
            if inplace and outs:  # a materialized constant changed: read it again
                g.forget(outs[0])
            return
        if inplace and outs and outs[0]._base is not None and (g.is_dynamic(outs[0]._base) or g.is_dynamic(outs[0])):
            raise SymbolicValueError(f"onnx.export: the in-place op '{shown}' writes through a view of a graph value; "
                                     f"ONNX values are immutable: use the out-of-place op")
        conv = self.hooks.get(op)
        if conv is None:
            raise g.unsupported(shown)
        if inplace:
            prev = g.names.get(id(outs[0]))
            if prev is None:
                g.val(outs[0])
        try:
            names = conv(g, op, inputs, outs[0] if len(outs) == 1 else outs, info)
        except (KeyError, IndexError, TypeError, ValueError) as e:  # a form of the op the mapping does not read
            raise g.unsupported(shown, f"this form of the op: {type(e).__name__}: {e}") from e
        self._bind_outs(outs, names if isinstance(names, (list, tuple)) else [names])

    # -- leaf functions ------------------------------------------------------------------------------
    def _wrap(self, name, fn, conv):
        g = self.g

        @functools.wraps(fn)
        def leaf(*args, **kwargs):
            if g.depth or g.error is not None or threading.get_ident() != self.thread:
                return fn(*args, **kwargs)
            g.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                g.depth -= 1
            outs = _tensors(out)
            if self._note(name, outs):
                return out
            if not any(g.is_dynamic(t) for t in _tensors(args) + _tensors(kwargs)) and g.fold:
                moved = self._check_baked(name, outs, record=name not in FACTORIES)
                if not (moved and name in FACTORIES):  # a factory sized by a dynamic axis is built at run time
                    return out
            try:
                bound = inspect.signature(fn).bind(*args, **kwargs)
                bound.apply_defaults()
                names = conv(g, dict(bound.arguments), out)
                self._bind_outs(outs, names if isinstance(names, (list, tuple)) else [names])
            except Exception as e:
                if g.error is None:
                    g.error = e
            return out

        leaf.__wrapped_by_onnx__ = fn
        return leaf

    def install(self, leaf_functions, leaf_methods=()):
        """leaf_functions: {name: function object}; every tensorlab module attribute bound to one
        of them is replaced by its wrapper until uninstall(). leaf_methods: (class, attribute, name)
        triples, the class's own function replaced the same way."""
        for cls, attr, name in leaf_methods:
            fn = vars(cls)[attr]
            setattr(cls, attr, self._wrap(name, fn, self.leaves[name]))
            self.patched.append((cls, attr, fn))
        wrappers = {}
        for name, fn in leaf_functions.items():
            wrappers[id(fn)] = (fn, self._wrap(name, fn, self.leaves[name]))
        for mname, mod in list(sys.modules.items()):
            if mod is None or not (mname == "tensorlab" or mname.startswith("tensorlab.")):
                continue
            try:
                items = list(vars(mod).items())
            except TypeError:
                continue
            for attr, v in items:
                w = wrappers.get(id(v))
                if w is not None and w[0] is v:
                    setattr(mod, attr, w[1])
                    self.patched.append((mod, attr, v))
        autograd_hooks.tracer = self.on_op
        from ..autograd import grad_mode
        with grad_mode._lock:
            grad_mode._refresh_slow()

    def uninstall(self):
        autograd_hooks.tracer = None
        from ..autograd import grad_mode
        with grad_mode._lock:
            grad_mode._refresh_slow()
        for mod, attr, v in reversed(self.patched):
            setattr(mod, attr, v)
        self.patched.clear()
