"""tensorlab.onnx: torch.onnx's export, writing a real ONNX model.

`export(model, args, f)` runs the model once on `args` with the op tracer on (tensorlab/onnx/_trace.py)
and maps each op to ONNX nodes (_symbolic.py) as it runs; parameters and buffers become
initializers named by their state_dict keys. The `onnx` package is needed only by export (the
test extra installs it; onnxruntime runs the result in the tests)."""
from __future__ import annotations

import contextlib
import enum
import inspect
import os
import threading
import warnings

from . import errors, symbolic_helper, symbolic_opset11  # noqa: F401  (torch.onnx's submodules)
from .custom_symbolics import (TensorProtoDataType, register_custom_op_symbolic,  # noqa: F401
                               unregister_custom_op_symbolic)
from .errors import OnnxExporterError, UnsupportedOperatorError  # noqa: F401  (torch.onnx's names)

__all__ = ["OnnxExporterError", "OperatorExportTypes", "TensorProtoDataType", "TrainingMode", "errors", "export",
           "is_in_onnx_export", "producer_name", "producer_version", "register_custom_op_symbolic",
           "select_model_mode_for_export", "supported_ops", "unregister_custom_op_symbolic"]

producer_name = "tensorlab"
_export_lock = threading.Lock()  # one export at a time: the op listener is process-wide
DEFAULT_OPSET = 20  # torch 2.13's default
MAX_OPSET = 23


class OperatorExportTypes(enum.IntEnum):
    """How ops without a standard ONNX mapping are exported (tensorlab exports ONNX only)."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode(enum.IntEnum):
    """The module mode the model is exported in: EVAL (the default), PRESERVE (as it is), TRAINING."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def _version():
    from .._version import __version__
    return __version__


producer_version = _version()


def is_in_onnx_export():
    """True while tensorlab.onnx.export is tracing a model (a model's forward may ask)."""
    from ._trace import _state
    return _state["exporting"]


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """Context manager: `model` in the mode TrainingMode `mode` asks for, restored on exit."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"select_model_mode_for_export: mode must be a TrainingMode, got {type(mode).__name__}")
    was = getattr(model, "training", None)
    if mode != TrainingMode.PRESERVE and was is not None:
        model.train(mode == TrainingMode.TRAINING)
    try:
        yield
    finally:
        if mode != TrainingMode.PRESERVE and was is not None:
            model.train(was)


def supported_ops():
    """The op and function names the exporter maps to ONNX (sorted)."""
    from ._symbolic import HOOK, LEAF
    return sorted(set(HOOK) | set(LEAF))


def _import_onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
    except ImportError as e:
        raise ImportError("tensorlab.onnx.export needs the onnx package to write the model: "
                          "pip install onnx (or pip install tensorlab[test])") from e
    return onnx


def _forward_names(model, n):
    fn = getattr(model, "forward", model)
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params


def _probe_size(s):
    """The size a dynamic axis gets in the probe run: one less (a model with a maximum length keeps
    working), or one more for sizes under 3."""
    return s - 1 if s >= 3 else s + 1


def _probe(model, args, kwargs, probe_axes, g):
    """Run the model once more with each dynamic axis of the inputs resized (rows repeated or
    dropped) and return the (op, output shapes) records; None when that run fails (a model that
    only accepts the example's sizes): the export then infers the dynamic dims from sizes alone."""
    from ..ops.creation import tensor as _tensor

    def resized(t):
        axes = probe_axes.get(id(t)) if isinstance(t, Tensor) else None
        if not axes:
            return t
        g.depth += 1
        try:
            for ax in axes:
                s = int(t.shape[ax])
                idx = list(range(min(s, _probe_size(s)))) + [s - 1] * max(0, _probe_size(s) - s)
                t = t.index_select(ax, _tensor(idx, device=t.device))
        finally:
            g.depth -= 1
        return t

    from ..tensor import Tensor
    def walk(x):
        if isinstance(x, (tuple, list)):
            return type(x)(walk(v) for v in x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return resized(x)

    pa = tuple(walk(a) for a in args)
    pk = {k: walk(v) for k, v in kwargs.items()}
    g.probe = []
    try:
        model(*pa, **pk)
    except Exception:
        return None
    return g.probe


def _tensors_in(x):
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors_in(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors_in(v)]
    return []


def _verify(data, in_names, in_tensors, out_names, outs, g):
    """verify=True: onnxruntime runs the model on the example inputs; each output must match the
    traced forward's (float32-level tolerance) or OnnxExporterError names the outputs that differ."""
    import numpy as np
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ImportError("tensorlab.onnx.export(verify=True) runs the model in onnxruntime: pip install "
                          "onnxruntime") from e
    feeds = {n: g.host(t) for n, t in list(zip(in_names, in_tensors)) + g.param_inputs}
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    got = sess.run(None, {n: v for n, v in feeds.items() if n in {i.name for i in sess.get_inputs()}})
    bad = []
    for name, t, v in zip(out_names, outs, got):
        want = g.host(t)
        tol = 1e-2 if want.dtype.itemsize <= 2 else 1e-4
        if v.shape != want.shape or not np.allclose(v, want, rtol=tol, atol=tol, equal_nan=True):
            diff = np.abs(v.astype(np.float64) - want.astype(np.float64)).max() if v.shape == want.shape else "shape"
            bad.append(f"{name} (shape {list(want.shape)}: max difference {diff})")
    if bad:
        raise OnnxExporterError(f"onnx.export(verify=True): onnxruntime's outputs differ from the model's: "
                                f"{', '.join(bad)}")


def _flatten_outputs(out):
    from ..tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _flatten_outputs(v)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _flatten_outputs(v)]
    if out is None:
        return []
    raise OnnxExporterError(f"onnx.export: the model returned a {type(out).__name__}; outputs must be tensors or "
                            f"tuples/lists/dicts of tensors")


def _dyn_axes(spec, name):
    """{axis: symbolic name} from a dynamic_axes entry (a dict, or a list of axes: named name_dynamic_axes_k)."""
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(spec)}


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=False, external_data=True, dynamic_shapes=None,
           custom_translation_table=None, report=False, optimize=True, verify=False, profile=False,
           dump_exported_program=False, artifacts_dir=".", export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, training=TrainingMode.EVAL, operator_export_type=OperatorExportTypes.ONNX,
           do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True):
    """Export `model` (a Module or a callable) run on `args` as an ONNX model written to `f` (a path
    or a binary file object such as io.BytesIO).

    The model runs once (twice with dynamic_axes: a probe run with those axes resized shows which
    dims follow them); each op it dispatches becomes ONNX nodes (an op with no mapping raises
    tensorlab.onnx.errors.UnsupportedOperatorError naming it and the opset). `dynamo` is accepted
    for torch's signature: tensorlab has one exporter. `input_names` /
    `output_names` name the graph's inputs and outputs; `dynamic_axes` ({name: {axis: "symbol"}}
    or {name: [axes]}) makes those dimensions symbolic. Parameters and buffers are initializers
    named by their state_dict keys (graph inputs with export_params=False). `opset_version`:
    13 to 23 (default 20). `training`: the module mode during export (TrainingMode.EVAL by default;
    the model's mode is restored afterwards). `verify=True` runs the written model in onnxruntime on
    the example inputs and raises OnnxExporterError where an output differs. Returns None.
    """
    from .. import no_grad
    from ..tensor import Tensor
    from . import _symbolic as S
    from ._trace import Graph, Tracer, _state

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not S.MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"onnx.export: opset_version {opset} is not supported: tensorlab exports opsets "
                         f"{S.MIN_OPSET} to {MAX_OPSET}")
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError(f"onnx.export: operator_export_type={operator_export_type!r}: tensorlab exports standard "
                         f"ONNX ops only (OperatorExportTypes.ONNX)")
    if f is None:
        raise ValueError("onnx.export: f (a file path or a binary file object) is required: tensorlab returns no "
                         "ONNXProgram")
    if custom_opsets or export_modules_as_functions or custom_translation_table:
        raise ValueError("onnx.export: custom_opsets, custom_translation_table and export_modules_as_functions are "
                         "not supported by tensorlab's exporter")
    onnx = _import_onnx()

    if isinstance(args, Tensor) or not isinstance(args, (tuple, list)):
        args = (args,)
    args = tuple(args)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict) and not kwargs:  # torch: a trailing dict holds keyword arguments
        kwargs, args = dict(args[-1]), args[:-1]

    fwd = _forward_names(model, len(args))
    in_tensors, default_in = [], []
    for key, a in [(fwd[i] if i < len(fwd) else f"input_{i}", a) for i, a in enumerate(args)] + list(kwargs.items()):
        ts = _tensors_in(a)  # tensors inside tuples/lists/dicts are graph inputs too, in order
        in_tensors += ts
        default_in += [key] if isinstance(a, Tensor) else [f"{key}_{k}" for k in range(len(ts))]
    in_names = list(input_names or [])
    if len(in_names) > len(in_tensors):
        raise ValueError(f"onnx.export: {len(in_names)} input_names for {len(in_tensors)} tensor inputs")
    in_names += default_in[len(in_names):]
    dynamic_axes = dict(dynamic_axes or {})

    params, metas = {}, {}
    if hasattr(model, "named_parameters"):
        for n, p in list(model.named_parameters()) + list(model.named_buffers()):
            params.setdefault(id(p), n)
            metas.setdefault((id(p._meta.storage), p._meta.layout), n)

    g = Graph(onnx, opset, do_constant_folding, params, export_params)
    g.param_meta = metas
    graph_inputs = []
    probe_axes = {}  # id(input tensor) -> its dynamic axes
    for name, t in zip(in_names, in_tensors):
        if name in g.used:
            raise ValueError(f"onnx.export: input name {name!r} given twice")
        g.used.add(name)
        g.bind(t, name)
        axes = _dyn_axes(dynamic_axes.get(name, {}), name)
        for ax in axes:
            if not -t.dim() <= ax < t.dim():
                raise ValueError(f"onnx.export: dynamic_axes[{name!r}] names axis {ax} of a {t.dim()}-d input")
            g.dyn_sizes.add(int(t.shape[ax]))
            g.dyn_src.setdefault(int(t.shape[ax]), (name, ax % t.dim()))
        shape = [axes.get(i, axes.get(i - t.dim(), int(s))) for i, s in enumerate(t.shape)]
        if axes:
            probe_axes[id(t)] = [ax % t.dim() for ax in axes]
            g.alt_shape[name] = tuple(_probe_size(s) if i in probe_axes[id(t)] else int(s)
                                      for i, s in enumerate(t.shape))
        graph_inputs.append(onnx.helper.make_tensor_value_info(name, S._onnx_type(g, t._dtype), shape))

    tracer = Tracer(g, S.HOOK, S.LEAF)
    ctx = select_model_mode_for_export(model, TrainingMode(training)) if hasattr(model, "train") \
        else contextlib.nullcontext()
    with _export_lock, ctx, no_grad():
        tracer.install(S.leaf_functions(), S.leaf_methods())
        from . import custom_symbolics
        custom_symbolics.install(tracer)
        _state["exporting"] = True
        try:
            if probe_axes:
                g.probe = _probe(model, args, kwargs, probe_axes, g)
                g.alt, g.probe = g.probe, None
                if g.alt is None:
                    warnings.warn("onnx.export: the model did not run with its dynamic axes at other sizes, so "
                                  "which dims follow them is inferred from the example's sizes: give each dynamic "
                                  "axis an example size no other dimension has", errors.OnnxExporterWarning,
                                  stacklevel=3)
            g.error = None
            out = model(*args, **kwargs)
        finally:
            _state["exporting"] = False
            tracer.uninstall()
    if g.error is not None:
        raise g.error
    if g.baked:
        warnings.warn(f"onnx.export: {', '.join(g.baked)} computed from constants gave results whose shape follows a "
                      f"dynamic axis (a size read in Python, such as x.shape[0]): the exported model keeps the "
                      f"example's size there", errors.OnnxExporterWarning, stacklevel=2)
    outs = _flatten_outputs(out)
    if not outs:
        raise OnnxExporterError("onnx.export: the model returned no tensor")

    out_names = list(output_names or [])
    if len(out_names) > len(outs):
        raise ValueError(f"onnx.export: {len(out_names)} output_names for {len(outs)} outputs")
    out_names += ["output" if len(outs) == 1 else f"output_{i}" for i in range(len(out_names), len(outs))]
    graph_outputs, renamed = [], {}
    for name, t in zip(out_names, outs):
        src = g.val(t)
        src = renamed.get(src, src)  # the same tensor returned twice: the second output copies the first
        if name in g.used and name != src:
            raise ValueError(f"onnx.export: output name {name!r} is already a value of the graph")
        hit = g.producer.get(src)
        if hit is not None and src not in renamed.values() and src not in [i.name for i in graph_inputs]:
            node, k = hit
            node.output[k] = name
            for n in g.nodes:
                for j, i in enumerate(n.input):
                    if i == src:
                        n.input[j] = name
            renamed[src] = name
            g.producer[name] = hit
        else:
            g.node("Identity", [src])
            g.nodes[-1].output[0] = name
        g.used.add(name)
        axes = _dyn_axes(dynamic_axes.get(name, {}), name)
        # a size a dynamic input axis had stays unnamed (symbolic) where dynamic_axes names none for it
        shape = [axes.get(i, axes.get(i - t.dim(), None if int(s) in g.dyn_sizes else int(s)))
                 for i, s in enumerate(t.shape)]
        graph_outputs.append(onnx.helper.make_tensor_value_info(name, S._onnx_type(g, t._dtype), shape))
    unknown = set(dynamic_axes) - set(in_names) - set(out_names)
    if unknown:
        warnings.warn(f"onnx.export: dynamic_axes names {sorted(unknown)} are neither inputs nor outputs",
                      errors.OnnxExporterWarning, stacklevel=2)

    for pname, t in g.param_inputs:
        graph_inputs.append(onnx.helper.make_tensor_value_info(pname, S._onnx_type(g, t._dtype), list(t.shape)))
    if keep_initializers_as_inputs:
        have = {i.name for i in graph_inputs}
        for init in g.initializers:
            if init.name not in have:
                graph_inputs.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))

    graph = onnx.helper.make_graph(g.nodes, type(model).__name__ if hasattr(model, "forward") else "main",
                                   graph_inputs, graph_outputs, initializer=g.initializers)
    mp = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                producer_name=producer_name, producer_version=producer_version)
    mp.ir_version = min(mp.ir_version, 10)  # onnxruntime reads IR 10 (the opsets up to 23 need no later)
    if verbose:
        print(onnx.helper.printable_graph(mp.graph))
    data = mp.SerializeToString()
    if verify:
        _verify(data, in_names, in_tensors, out_names, outs, g)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"onnx.export: f must be a path or a binary file object, got {type(f).__name__}")
    return None
