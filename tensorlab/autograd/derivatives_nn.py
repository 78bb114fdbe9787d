"""The nn primitives' derivatives: im2col/col2im and take_rows/put_rows (ops/conv.py), max pooling
(ops/pool.py), and the fused nn ops, each one node: layer/RMS norm and embedding (ops/norm_fused.py),
attention (ops/attention.py), batch norm (ops/batch_norm_fused.py), recurrent cells and sequences
(ops/rnn_fused.py), linear (ops/linear_fused.py), nll_loss and cross_entropy (ops/nll_fused.py)."""
from __future__ import annotations

from .. import dtypes
from .derivatives import ALL, DERIVATIVES, Derivative, _grad_mode_on, zeros


# -- convolution and pooling primitives (ops/conv.py): each one's derivative is the other ----------

def _norm_grads(info, gi, gw, gb):
    """A norm's input gradient, then its weight's and bias's where the op had them (its inputs' order)."""
    out = [gi]
    if info["has_weight"]:
        out.append(gw)
    if info["has_bias"]:
        out.append(gb)
    return tuple(out)

def _im2col(ctx, g):
    from ..ops import conv
    i = ctx.info
    return (conv.col2im(g, i["in_hw"], i["kernel"], i["dilation"], i["padding"], i["stride"]),)


def _col2im(ctx, g):
    from ..ops import conv
    i = ctx.info
    return (conv.im2col(g, i["kernel"], i["dilation"], i["padding"], i["stride"], tuple(ctx.shape(0)[4:])),)


DERIVATIVES.update({
    "im2col": Derivative(_im2col, name="Im2ColBackward0"),
    "col2im": Derivative(_col2im, name="Col2ImBackward0"),
})


def _max_pool2d(ctx, g):
    from ..ops import pool
    i = ctx.info
    return (pool.max_pool2d_backward(g, i["indices"], tuple(ctx.shape(0)[2:]), i["kernel"], i["stride"], i["padding"],
                                     i["dilation"]),)


def _max_pool2d_backward(ctx, g):
    """max_pool2d_backward is linear in grad_output: its adjoint reads g at each window's index."""
    idx = ctx.info["indices"]
    n, c, oh, ow = idx.shape
    h, w = g.shape[2:]
    return (g.reshape(n, c, h * w).gather(2, idx.reshape(n, c, oh * ow)).reshape(n, c, oh, ow),)


DERIVATIVES.update({
    "max_pool2d": Derivative(_max_pool2d, name="MaxPool2DWithIndicesBackward0"),
    "max_pool2d_backward": Derivative(_max_pool2d_backward, name="MaxPool2DWithIndicesBackwardBackward0"),
})


def _adaptive_max_pool2d(ctx, g):
    from ..ops import pool
    return (pool.adaptive_max_pool2d_backward(g, ctx.info["indices"], tuple(ctx.shape(0)[2:])),)


DERIVATIVES.update({
    "adaptive_max_pool2d": Derivative(_adaptive_max_pool2d, name="AdaptiveMaxPool2DBackward0"),
    "adaptive_max_pool2d_backward": Derivative(_max_pool2d_backward, name="AdaptiveMaxPool2DBackwardBackward0"),
})


def _take_rows(ctx, g):
    from ..ops import conv
    return (conv.put_rows(g, ctx.info["dim"], ctx.info["index"], ctx.shape(0)[ctx.info["dim"]]),)


def _put_rows(ctx, g):
    from ..ops import conv
    return (conv.take_rows(g, ctx.info["dim"], ctx.info["index"]),)


DERIVATIVES.update({
    "take_rows": Derivative(_take_rows, name="IndexSelectBackward0"),
    "put_rows": Derivative(_put_rows, name="IndexAddBackward0"),
})


# -- fused layer norm / RMSNorm and embedding (ops/norm_fused.py) --------------------------------------
def _native_norm(rms):
    def backward(ctx, g):
        from ..ops import norm_fused
        i = ctx.info
        x = ctx.saved(0)
        w = ctx.saved(1) if i["has_weight"] else None
        pos_b = 2 if i["has_weight"] else 1
        needs = (ctx.needs(0), i["has_weight"] and ctx.needs(1), i["has_bias"] and ctx.needs(pos_b))
        if _grad_mode_on():  # create_graph: gradients that are themselves differentiable
            gi, gw, gb = norm_fused.layer_norm_backward_composite(g, x, w, i["eps"], rms, i["n_norm"], needs)
        else:
            gi, gw, gb = norm_fused.layer_norm_backward(g, x, i["mean"], i["rstd"], w, rms, i["n_norm"], needs)
        return _norm_grads(i, gi, gw, gb)
    return backward


def _norm_saves(ctx):
    return (0, 1) if ctx.info["has_weight"] else (0,)


def _embedding(ctx, g):
    from ..ops import norm_fused
    i = ctx.info
    f = norm_fused.embedding_backward_composite if _grad_mode_on() else norm_fused.embedding_backward
    return (f(g, i["indices"], ctx.shape(0)[0], i["padding_idx"], i["scale_grad_by_freq"]),)


DERIVATIVES.update({
    "native_layer_norm": Derivative(_native_norm(False), save=_norm_saves, name="NativeLayerNormBackward0"),
    "native_rms_norm": Derivative(_native_norm(True), save=_norm_saves, name="FusedRmsNormBackward0"),
    "embedding": Derivative(_embedding, name="EmbeddingBackward0"),
})
# -- fused attention (ops/attention.py): the backward recomputes the probabilities from the saved lse --
def _attention_fwd(ctx, g):
    from ..ops import attention
    i = ctx.info
    float_mask = i["float_mask"]  # the mask is input 3
    dq, dk, dv, dm = attention.attention_backward(g, ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.result(), i["lse"],
                                                  i["mask"], i["is_causal"], i["scale"], float_mask and ctx.needs(3),
                                                  i.get("dropout"))
    return (dq, dk, dv, dm) if float_mask else (dq, dk, dv)


DERIVATIVES["attention_fwd"] = Derivative(_attention_fwd, save=(0, 1, 2), result=True,
                                          name="ScaledDotProductFlashAttentionBackward0")


# -- fused batch norm (ops/batch_norm_fused.py) -------------------------------------------------------
def _native_batch_norm(ctx, g):
    from ..ops import batch_norm_fused as bn
    i = ctx.info
    x = ctx.saved(0)
    w = ctx.saved(1) if i["has_weight"] else None
    b = i["param_dtype"]
    pos_b = 2 if i["has_weight"] else 1
    needs = (ctx.needs(0), i["has_weight"] and ctx.needs(1), i["has_bias"] and ctx.needs(pos_b))
    if _grad_mode_on():  # create_graph: gradients that are themselves differentiable
        gi, gw, gb = bn.batch_norm_backward_composite(g, x, i["save_mean"], i["save_invstd"], w, b, i["training"],
                                                      i["eps"], needs)
    else:
        gi, gw, gb = bn.batch_norm_backward(g, x, i["save_mean"], i["save_invstd"], w, b, i["training"], needs)
    return _norm_grads(i, gi, gw, gb)


DERIVATIVES["native_batch_norm"] = Derivative(_native_batch_norm, save=_norm_saves, name="NativeBatchNormBackward0")


# -- fused recurrent cells (ops/rnn_fused.py) ------------------------------------------------------------
def _fused_rnn_cell(ctx, g):
    from ..ops import rnn_fused
    i = ctx.info
    mode = i["mode"]
    gx, gh = ctx.saved(0), ctx.saved(1)
    state = ctx.saved(2) if i["has_state"] else None
    bias = ctx.saved(3 if i["has_state"] else 2) if i["has_bias"] else None
    if _grad_mode_on():  # create_graph: gradients that are themselves differentiable
        d_gx, d_gh, d_state = rnn_fused.cell_backward_composite(mode, g, gx, gh, state, bias)
    else:
        d_gx, d_gh, d_state = rnn_fused.cell_backward(mode, g, gx, gh, state, bias,
                                                      ctx.result() if mode.startswith("RNN") else None)
    out = [d_gx, d_gh]
    if i["has_state"]:
        out.append(d_state)
    if i["has_bias"]:
        out.append(d_gh.sum(0) if ctx.needs(len(out)) else None)
    return tuple(out)


DERIVATIVES["fused_rnn_cell"] = Derivative(_fused_rnn_cell, save=ALL,
                                           result=lambda ctx: ctx.info["mode"].startswith("RNN"),
                                           name="FusedRnnCellBackward0")


def _fused_rnn_sequence(ctx, g):
    from ..ops import rnn_fused
    i = ctx.info
    mode, lstm = i["mode"], i["mode"] == "LSTM"
    gi, w_hh, h0 = ctx.saved(0), ctx.saved(1), ctx.saved(2)
    c0 = ctx.saved(3) if lstm else None
    b_hh = ctx.saved(4 if lstm else 3) if i["has_bias"] else None
    if _grad_mode_on():  # create_graph: gradients that are themselves differentiable
        d_gi, d_w, d_h0, d_c0, d_b = rnn_fused.sequence_backward_composite(g, gi, w_hh, b_hh, h0, c0, ctx.result(),
                                                                           mode, i["reverse"])
    else:
        d_gi, d_w, d_h0, d_c0, d_b = rnn_fused.sequence_backward(g, gi, w_hh, h0, c0, ctx.result(), i["ws"], mode,
                                                                 i["reverse"], ctx.needs(1))
    out = [d_gi, d_w, d_h0]
    if lstm:
        out.append(d_c0)
    if i["has_bias"]:
        out.append(d_b)
    return tuple(out)


DERIVATIVES["fused_rnn_sequence"] = Derivative(_fused_rnn_sequence, save=ALL, result=True,
                                               name="FusedRnnSequenceBackward0")


# -- fused linear (ops/linear_fused.py): x W^T + b as one op --------------------------------------
def _linear(ctx, g):
    """grad_input = g W, grad_weight = g^T x (products on transposed views: no copies), grad_bias
    = g summed over the rows; x of any rank >= 2 is seen as its rows."""
    x_shape = ctx.shape(0)
    n_out, n_in = ctx.shape(1)
    needs = ctx._needs
    g2 = g if len(x_shape) == 2 else g.reshape(-1, n_out)
    gx = gw = gb = None
    if not _grad_mode_on():  # no create_graph: the products as direct GEMMs (the bias's with the weight's)
        from ..ops import linear_fused
        x = ctx.saved(0) if needs[1] else None
        if x is not None and len(x_shape) != 2:
            x = x.reshape(-1, n_in)
        gx, gw, gb = linear_fused.backward(g2, x, ctx.saved(1) if needs[0] else None, needs[0], needs[1],
                                           len(needs) == 3 and needs[2])
        if gx is not None and len(x_shape) != 2:
            gx = gx.reshape(tuple(x_shape))
    else:
        if needs[0]:
            gx = g2.mm(ctx.saved(1))
            if len(x_shape) != 2:
                gx = gx.reshape(tuple(x_shape))
        if needs[1]:
            x = ctx.saved(0)
            gw = g2.mT.mm(x if len(x_shape) == 2 else x.reshape(-1, n_in))
    if len(needs) == 2:
        return gx, gw
    return gx, gw, (gb if gb is not None else g2.sum(0) if needs[2] else None)


def _linear_name(ctx):
    if len(ctx.shape(0)) == 2:
        return "AddmmBackward0" if len(ctx._metas) == 3 else "MmBackward0"
    return "LinearBackward0"


DERIVATIVES["linear"] = Derivative(_linear, save=lambda c: ([1] if c._needs[0] else []) + ([0] if c._needs[1] else []),
                                   name=_linear_name)


# -- nll_loss over class indices as one node (ops/nll_fused.py) -----------------------------------
def _nll_loss(ctx, g):
    """d loss / d logp: grad * coef scattered at each row's target (coef: -1/N or -1 per row, or
    a per-row tensor that is 0 where the target is ignored)."""
    n, c = ctx.shape(0)
    i = ctx.info
    coef = i["coef"]
    src = g * coef
    src = src.expand(n, 1) if src.dim() == 0 else src.unsqueeze(1)
    return (zeros((n, c), g).scatter(1, i["index"], src),)


DERIVATIVES["nll_loss"] = Derivative(_nll_loss, name="NllLossBackward0")


def _cross_entropy_loss(ctx, g):
    """d loss / d input = s_i * (onehot(t_i) - softmax(input)_i), s = grad * coef: the saved
    probabilities scaled in place and s added at each row's target. With create_graph, the same
    gradient from log_softmax of the saved input, differentiable."""
    n, c = ctx.shape(0)
    i = ctx.info
    coef = i["coef"]
    if not _grad_mode_on() and type(coef) is float and g.device.type == "cpu" and g.dim() == 0:
        # one coefficient and a host scalar grad: s is a number (no device sync on the CPU)
        sv = g.item() * coef
        lp = i["logp"]
        if lp._dtype in (dtypes.float32, dtypes.float64):  # exp, mul_, scatter_ add as one primitive
            from ..ops._common import empty_tensor, pinned
            p = pinned(lp)
            q = empty_tensor(p._meta.layout.shape, p._dtype, p.device)
            p._backend.cross_entropy_backward(q, p, i["index"], sv)
            return (q,)
        q = lp.exp()
        q.mul_(-sv)
        return (q.scatter_(1, i["index"], value=sv, reduce="add"),)
    s = g * coef
    s = s.expand(n, 1) if s.dim() == 0 else s.unsqueeze(1)
    if _grad_mode_on():
        from ..ops.reduction import log_softmax
        lp = log_softmax(ctx.saved(0), 1)
        gl = zeros((n, c), g).scatter(1, i["index"], s)
        return (gl - lp.exp() * gl.sum(1, keepdim=True),)
    q = i["logp"].exp()
    q.mul_(s.neg())
    return (q.scatter_add_(1, i["index"], s),)


DERIVATIVES["cross_entropy_loss"] = Derivative(_cross_entropy_loss, save=(0,),
                                               name="NllLossBackward0")
