"""ONNX mappings of the functions the export wraps whole (LEAF rows): convolutions, pools, norms,
embedding, pad, interpolate, scaled_dot_product_attention, dropout, gelu, the RNN stack, factories."""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ._symbolic_common import _as, _axes, _onnx_type
from ._symbolic_elementwise import _gelu_node
from ._symbolic_shape import _pieces, _shape_of


def _tup(v, n):
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _conv(g, a, out):
    x, w, b = a["input"], a["weight"], a.get("bias")
    n = x.dim() - 2
    dt = out._dtype
    k = list(w.shape[2:])
    dil = _tup(a.get("dilation", 1), n)
    pad = a.get("padding", 0)
    if isinstance(pad, str):
        if pad == "valid":
            pads = [0] * (2 * n)
        else:  # "same": torch puts the odd extra on the end side
            tot = [d * (kk - 1) for d, kk in zip(dil, k)]
            pads = [t // 2 for t in tot] + [t - t // 2 for t in tot]
    else:
        p = _tup(pad, n)
        pads = p + p
    ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
    return g.node("Conv", ins, kernel_shape=k, strides=_tup(a.get("stride", 1), n), pads=pads, dilations=dil,
                  group=int(a.get("groups", 1)), hint="conv")


def _conv_padded(g, a, out):
    """nn.ConvNd with padding_mode reflect/replicate/circular: Pad in that mode, then an unpadded Conv."""
    x, w = a["input"], a["weight"]
    n = x.dim() - 2
    k = list(w.shape[2:])
    dil = _tup(a.get("dilation", 1), n)
    pad = a.get("padding", 0)
    if pad == "same":
        tot = [d * (kk - 1) for d, kk in zip(dil, k)]
        pairs = [(t // 2, t - t // 2) for t in tot]
    elif pad == "valid":
        pairs = [(0, 0)] * n
    else:
        pairs = [(p, p) for p in _tup(pad, n)]
    flat = [v for lo_hi in reversed(pairs) for v in lo_hi]  # F.pad's order: the last dim first
    padded = _pad(g, {"input": x, "pad": flat, "mode": a["padding_mode"], "value": None}, out)
    bias = [_as(g, a["bias"], out._dtype)] if a.get("bias") is not None else []
    return g.node("Conv", [padded, _as(g, w, out._dtype)] + bias,
                  kernel_shape=k, strides=_tup(a.get("stride", 1), n), pads=[0] * (2 * n), dilations=dil,
                  group=int(a.get("groups", 1)), hint="conv")


def _conv_transpose(g, a, out):
    x, w, b = a["input"], a["weight"], a.get("bias")
    n = x.dim() - 2
    dt = out._dtype
    p = _tup(a.get("padding", 0), n)
    ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
    return g.node("ConvTranspose", ins, kernel_shape=list(w.shape[2:]), strides=_tup(a.get("stride", 1), n),
                  pads=p + p, dilations=_tup(a.get("dilation", 1), n),
                  output_padding=_tup(a.get("output_padding", 0), n), group=int(a.get("groups", 1)),
                  hint="conv_transpose")


def _pool_args(g, a, x, name):
    n = x.dim() - 2
    k = _tup(a["kernel_size"], n)
    s = a.get("stride")
    s = k if s is None or (not isinstance(s, int) and len(s) == 0) else _tup(s, n)
    p = _tup(a.get("padding", 0), n)
    return k, s, p + p


def _max_pool(g, a, out):
    x = a["input"]
    if a.get("return_indices"):
        raise g.unsupported("max_pool with return_indices=True", "ONNX MaxPool's indices are flat over the "
                                                                 "whole tensor, torch's per plane")
    k, s, pads = _pool_args(g, a, x, "max_pool")
    n = x.dim() - 2
    return g.node("MaxPool", [g.val(x)], kernel_shape=k, strides=s, pads=pads,
                  dilations=_tup(a.get("dilation", 1), n), ceil_mode=int(bool(a.get("ceil_mode"))), hint="max_pool")


def _avg_pool(g, a, out):
    x = a["input"]
    if a.get("divisor_override"):
        raise g.unsupported("avg_pool with divisor_override", "ONNX AveragePool has no divisor")
    k, s, pads = _pool_args(g, a, x, "avg_pool")
    return g.node("AveragePool", [g.val(x)], kernel_shape=k, strides=s, pads=pads,
                  ceil_mode=int(bool(a.get("ceil_mode"))),
                  count_include_pad=int(bool(a.get("count_include_pad", True))),
                  hint="avg_pool")


def _adaptive(kind):
    def conv(g, a, out):
        x = a["input"]
        if a.get("return_indices"):
            raise g.unsupported(f"adaptive_{kind}_pool with return_indices=True")
        ins, outs = list(x.shape[2:]), list(out.shape[2:])
        if all(o == 1 for o in outs):
            return g.node("GlobalAveragePool" if kind == "avg" else "GlobalMaxPool", [g.val(x)],
                          hint=f"adaptive_{kind}")
        if any(o == 0 or i % o for i, o in zip(ins, outs)):
            raise g.unsupported(f"adaptive_{kind}_pool", f"input size {ins} not a multiple of output size {outs}: "
                                                         f"the windows overlap unevenly")
        k = [i // o for i, o in zip(ins, outs)]
        return g.node("AveragePool" if kind == "avg" else "MaxPool", [g.val(x)], kernel_shape=k, strides=k,
                      hint=f"adaptive_{kind}")
    return conv


def _batch_norm(g, a, out):
    x = a["input"]
    if a.get("training"):
        raise g.unsupported("batch_norm in training mode", "export the model in eval mode "
                                                           "(training=TrainingMode.EVAL, the default)")
    rm, rv = a.get("running_mean"), a.get("running_var")
    if rm is None or rv is None:
        raise g.unsupported("batch_norm without running statistics")
    dt = out._dtype
    c = x.shape[1]
    w, b = a.get("weight"), a.get("bias")
    wn = _as(g, w, dt) if w is not None else g.const(np.ones(c, dt.np), "ones")
    bn = _as(g, b, dt) if b is not None else g.const(np.zeros(c, dt.np), "zeros")
    return g.node("BatchNormalization", [_as(g, x, dt), wn, bn, _as(g, rm, dt), _as(g, rv, dt)],
                  epsilon=float(a.get("eps", 1e-5)), hint="batch_norm")


def _layer_norm(g, a, out):
    x = a["input"]
    ns = a["normalized_shape"]
    ns = [ns] if isinstance(ns, int) else list(ns)
    dt = out._dtype
    eps = float(a.get("eps", 1e-5))
    w, b = a.get("weight"), a.get("bias")
    xn = _as(g, x, dt)
    if g.opset >= 17:
        wn = _as(g, w, dt) if w is not None else g.const(np.ones(ns, dt.np), "ones")
        ins = [xn, wn] + ([_as(g, b, dt)] if b is not None else [])
        return g.node("LayerNormalization", ins, axis=-len(ns), epsilon=eps, hint="layer_norm")
    axes = list(range(x.dim() - len(ns), x.dim()))
    mean = _axes(g, xn, axes, "ReduceMean", keepdims=1)
    d = g.node("Sub", [xn, mean])
    var = _axes(g, g.node("Mul", [d, d]), axes, "ReduceMean", keepdims=1)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, g.const(np.asarray(eps, dt.np))])])])
    if w is not None:
        y = g.node("Mul", [y, _as(g, w, dt)])
    if b is not None:
        y = g.node("Add", [y, _as(g, b, dt)])
    return y


def _rms_norm(g, a, out):
    x = a["input"]
    ns = a["normalized_shape"]
    ns = [ns] if isinstance(ns, int) else list(ns)
    dt = out._dtype
    eps = a.get("eps")
    eps = float(np.finfo(dt.np).eps) if eps is None else float(eps)
    xn = _as(g, x, dt)
    axes = list(range(x.dim() - len(ns), x.dim()))
    ms = _axes(g, g.node("Mul", [xn, xn]), axes, "ReduceMean", keepdims=1)
    rms = g.node("Sqrt", [g.node("Add", [ms, g.const(np.asarray(eps, dt.np))])])
    y = g.node("Mul", [xn, g.node("Reciprocal", [rms])], hint="rms_norm")
    w = a.get("weight")
    return y if w is None else g.node("Mul", [y, _as(g, w, dt)], hint="rms_norm")


def _group_norm(g, a, out):
    x = a["input"]
    ng = int(a["num_groups"])
    dt = out._dtype
    eps = float(a.get("eps", 1e-5))
    c = x.shape[1]
    xn = _as(g, x, dt)
    r = g.node("Reshape", [xn, g.ints([0, ng, -1])])
    mean = _axes(g, r, [2], "ReduceMean", keepdims=1)
    d = g.node("Sub", [r, mean])
    var = _axes(g, g.node("Mul", [d, d]), [2], "ReduceMean", keepdims=1)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, g.const(np.asarray(eps, dt.np))])])])
    y = g.node("Reshape", [y, g.ints([0] + list(x.shape[1:]))])
    shape = [c] + [1] * (x.dim() - 2)
    w, b = a.get("weight"), a.get("bias")
    if w is not None:
        y = g.node("Mul", [y, g.node("Reshape", [_as(g, w, dt), g.ints(shape)])])
    if b is not None:
        y = g.node("Add", [y, g.node("Reshape", [_as(g, b, dt), g.ints(shape)])])
    return y


def _embedding(g, a, out):
    if a.get("max_norm") is not None:
        raise g.unsupported("embedding with max_norm", "it renormalizes the weight in place during the forward")
    return g.node("Gather", [g.val(a["weight"]), _as(g, a["input"], dtypes.int64)], axis=0, hint="embedding")


def _pad(g, a, out):
    x = a["input"]
    pad = list(a["pad"])
    mode = a.get("mode", "constant")
    n = x.dim()
    begins, ends = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i], ends[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    if mode not in modes:
        raise g.unsupported(f"pad(mode={mode!r})")
    if mode == "circular" and g.opset < 19:
        raise g.unsupported("pad(mode='circular')", since=19)
    ins = [g.val(x), g.ints(begins + ends, "pads")]
    if mode == "constant":
        v = a.get("value")
        ins.append(g.const(np.asarray(0 if v is None else v, x._dtype.np), "pad_value"))
    return g.node("Pad", ins, mode=modes[mode], hint="pad")


def _interpolate(g, a, out):
    x = a["input"]
    mode = a.get("mode", "nearest")
    if a.get("antialias"):
        raise g.unsupported("interpolate(antialias=True)")
    n = x.dim() - 2
    sf = a.get("scale_factor")
    ins, outs = list(x.shape[2:]), list(out.shape[2:])
    if sf is not None and not a.get("recompute_scale_factor"):
        scales = [float(s) for s in _tup(sf, n)] if not isinstance(sf, float) else [float(sf)] * n
    else:
        scales = [o / i for i, o in zip(ins, outs)]
    attrs = {}
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif mode in ("linear", "bilinear", "trilinear", "bicubic"):
        ac = a.get("align_corners")
        attrs = dict(mode="cubic" if mode == "bicubic" else "linear",
                     coordinate_transformation_mode="align_corners" if ac else "pytorch_half_pixel")
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    else:
        raise g.unsupported(f"interpolate(mode={mode!r})")
    if sf is None or a.get("recompute_scale_factor"):  # sizes: the spatial sizes only (axes from 18)
        if g.opset >= 18:
            sizes = g.ints(outs, "sizes")
            attrs["axes"] = list(range(2, x.dim()))
        else:
            sizes = g.ints(list(out.shape), "sizes")
        return g.node("Resize", [g.val(x), "", "", sizes], hint="interpolate", **attrs)
    sc = g.const(np.asarray([1.0, 1.0] + scales, np.float32), "scales")
    return g.node("Resize", [g.val(x), "", sc], hint="interpolate", **attrs)


def _sdpa(g, a, out):
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("dropout_p"):
        raise g.unsupported("scaled_dot_product_attention with dropout_p > 0", "attention dropout is random")
    if a.get("enable_gqa") and q.shape[-3] != k.shape[-3]:
        raise g.unsupported("scaled_dot_product_attention with enable_gqa")
    dt = out._dtype
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    nk = k.dim()
    perm = list(range(nk))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    mask = a.get("attn_mask")
    s = g.node("MatMul", [g.node("Mul", [_as(g, q, dt), g.const(np.asarray(scale, dt.np))]),
                          g.node("Transpose", [_as(g, k, dt)], perm=perm)])
    masked = False
    if a.get("is_causal") or mask is not None and mask._dtype is dtypes.bool_:
        neg = g.const(np.asarray(-np.inf, dt.np), "neg_inf")
    if a.get("is_causal"):
        L, S = q.shape[-2], k.shape[-2]
        s = g.node("Where", [g.const(np.tril(np.ones((L, S), bool)), "causal"), s, neg])
        masked = True
    if mask is not None:
        if mask._dtype is dtypes.bool_:
            s = g.node("Where", [g.val(mask), s, neg])
        else:
            s = g.node("Add", [s, _as(g, mask, dt)])
        masked = True
    p = g.node("Softmax", [s], axis=-1)
    if masked:  # torch's math path: a row with every position masked attends to nothing (zeros, not NaN)
        p = g.node("Where", [g.node("IsNaN", [p]), g.const(np.asarray(0, dt.np)), p])
    return g.node("MatMul", [p, _as(g, v, dt)], hint="attention")


def _dropout(g, a, out):
    if a.get("training") and a.get("p", 0.5) > 0:
        raise g.unsupported("dropout in training mode", "export in eval mode (training=TrainingMode.EVAL)")
    return g.node("Identity", [g.val(a["input"])], hint="dropout")


def _gelu_leaf(g, a, out):
    return _gelu_node(g, _as(g, a["input"], out._dtype), out._dtype, a.get("approximate", "none"))


_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}  # torch's (i f g o), (r z n) in ONNX's (i o f c), (z r h)


def _rnn_stack(g, a, out):
    """RNNBase._stack_layers (every layer, sequence first): one ONNX LSTM/GRU/RNN node per layer
    (direction forward or bidirectional), the weights' gate blocks reordered with Split/Concat."""
    m, x, h0, c0 = a["self"], a["x"], a["h0"], a.get("c0")
    mode = m.mode
    if m.proj_size:
        raise g.unsupported("LSTM with proj_size", "ONNX LSTM has no projection")
    n_gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    hidden = m.hidden_size
    dirs = 2 if m.bidirectional else 1
    dt = out[0]._dtype
    order = _GATES.get(mode, [0])

    def gates(t):
        if t is None:
            return g.const(np.zeros(n_gates * hidden, dt.np), "zeros")
        name = _as(g, t, dt)
        if n_gates == 1:
            return name
        parts = g.node("Split", [name, g.ints([hidden] * n_gates, "split")], n_out=n_gates, axis=0)
        return g.node("Concat", [parts[i] for i in order], axis=0)

    def first(names):
        return names[0] if len(names) == 1 else g.node("Concat", names, axis=0)

    def state(t, layer):
        if t is None or (not g.is_dynamic(t) and not g.host(t).any()):
            return ""  # zeros: ONNX's default initial state, at whatever batch size runs
        return g.node("Slice", [_as(g, t, dt), g.ints([layer * dirs]), g.ints([layer * dirs + dirs]), g.ints([0])])

    op_type = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    if mode in ("RNN_TANH", "RNN_RELU"):
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
    seq = _as(g, x, dt)
    hs, cs = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, _ = m._layer_weights(layer, d)
            ws.append(_axes(g, gates(w_ih), [0], "Unsqueeze"))
            rs.append(_axes(g, gates(w_hh), [0], "Unsqueeze"))
            bs.append(_axes(g, g.node("Concat", [gates(b_ih), gates(b_hh)], axis=0), [0], "Unsqueeze"))
        ins = [seq, first(ws), first(rs), first(bs), "", state(h0, layer)]
        if mode == "LSTM":
            ins.append(state(c0, layer))
        while ins[-1] == "":
            ins.pop()
        res = g.node(op_type, ins, n_out=3 if mode == "LSTM" else 2, hint=mode.lower(), **attrs)
        y = g.node("Transpose", [res[0]], perm=[0, 2, 1, 3])        # [T, B, D, H]
        seq = g.node("Reshape", [y, g.ints([0, 0, -1])])            # [T, B, D*H]
        hs.append(res[1])
        if mode == "LSTM":
            cs.append(res[2])
    names = [g.node("Identity", [seq]), first(hs)]
    if mode == "LSTM":
        names.append(first(cs))
    return names


def _runtime_size(g, size):
    """A 1-D int64 value holding the run-time size of the dynamic axis whose example size is `size`."""
    src = g.dyn_src.get(size)
    if src is None:
        return None
    return _shape_of(g, src[0], [src[1]])


def _factory(g, a, out):
    """zeros/ones/full with a size from a dynamic axis: ConstantOfShape of the run-time sizes."""
    alt = g.cur_alt[0]
    shape = list(out.shape)
    pieces = []
    name = a.get("__name__", "full")
    for s, t in zip(shape, alt):
        r = _runtime_size(g, s) if s != t else None
        if s != t and r is None and name not in g.baked:  # a size computed from an axis (2 * x.shape[0]): kept
            g.baked.append(name)
        pieces.append(s if r is None else r)
    fill = a.get("fill_value", 0 if name == "zeros" else 1)
    value = g.onnx.numpy_helper.from_array(np.asarray([fill], out._dtype.np), "value")
    return g.node("ConstantOfShape", [_pieces(g, pieces)], value=value, hint=name)


def _like(fill):
    """zeros_like/ones_like/full_like of a graph value: ConstantOfShape of its run-time shape."""
    def conv(g, a, out):
        v = a.get("fill_value", fill)
        value = g.onnx.numpy_helper.from_array(np.asarray([v], out._dtype.np), "value")
        return g.node("ConstantOfShape", [g.node("Shape", [g.val(a["input"])])], value=value, hint="like")
    return conv


def _arange(g, a, out):
    """arange whose end is a dynamic axis's size: Range with the run-time limit."""
    start, end, step = a["start"], a.get("end"), a.get("step", 1)
    if end is None:
        start, end = 0, start
    dt = out._dtype
    limit = _runtime_size(g, int(end)) if isinstance(end, int) else None
    if limit is None:
        raise g.unsupported("arange", "its length follows a dynamic axis through a computed size")
    limit = _axes(g, limit, [0], "Squeeze")
    if dt is not dtypes.int64:
        limit = g.node("Cast", [limit], to=_onnx_type(g, dt))
    return g.node("Range", [g.const(np.asarray(start, dt.np)), limit, g.const(np.asarray(step, dt.np))], hint="arange")


# the functions the export wraps whole (function name -> mapping): _symbolic.LEAF
LEAF = {
    "arange": _arange, "zeros": lambda g, a, out: _factory(g, {**a, "__name__": "zeros"}, out),
    "ones": lambda g, a, out: _factory(g, {**a, "__name__": "ones"}, out), "full": _factory,
    "zeros_like": _like(0), "ones_like": _like(1), "full_like": _like(None),
    "rnn_stack": _rnn_stack,
    "conv1d": _conv, "conv2d": _conv, "conv3d": _conv, "conv_padded": _conv_padded,
    "conv_transpose1d": _conv_transpose, "conv_transpose2d": _conv_transpose, "conv_transpose3d": _conv_transpose,
    "max_pool1d": _max_pool, "max_pool2d": _max_pool, "max_pool3d": _max_pool,
    "avg_pool1d": _avg_pool, "avg_pool2d": _avg_pool, "avg_pool3d": _avg_pool,
    "adaptive_avg_pool1d": _adaptive("avg"), "adaptive_avg_pool2d": _adaptive("avg"),
    "adaptive_avg_pool3d": _adaptive("avg"), "adaptive_max_pool1d": _adaptive("max"),
    "adaptive_max_pool2d": _adaptive("max"), "adaptive_max_pool3d": _adaptive("max"),
    "batch_norm": _batch_norm, "layer_norm": _layer_norm, "rms_norm": _rms_norm, "group_norm": _group_norm,
    "embedding": _embedding,
    "pad": _pad, "interpolate": _interpolate, "scaled_dot_product_attention": _sdpa,
    "dropout": _dropout, "dropout1d": _dropout, "dropout2d": _dropout, "dropout3d": _dropout,
    "alpha_dropout": _dropout, "feature_alpha_dropout": _dropout, "gelu": _gelu_leaf,
}
