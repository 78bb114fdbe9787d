"""The derivative table: op name (as the ops pass it to autograd_hooks.record) -> Derivative.

A Derivative's `backward(ctx, grad)` returns one gradient per recorded input (None where there
is none), written with tensorlab ops so it runs on every device and, under create_graph, is
itself recorded. `ctx` is the graph node: ctx.saved(i) / ctx.result() give what `save` /
`result` asked to keep (version-checked), ctx.shape(i) / dtype(i) / device(i) / layout(i) the
inputs' metadata, ctx.needs(i) whether input i wants a gradient, ctx.info the op's keyword info.
Elementwise ops record their operands (tensors and Python numbers): ctx.operand(k),
ctx.op_needs(k), and ctx.to_inputs(per-operand grads). Gradients may have the broadcast shape:
the engine sums them back to each input's shape and casts them to its dtype and device."""
from __future__ import annotations

import math

from .. import dtypes, layout as L
from ..tensor import Tensor

ALL = "all"
_SQRT_2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_2_SQRT_PI = 2.0 / math.sqrt(math.pi)


class Arg:
    """An operand that is input number `i` of the node (in ctx.info['operands'])."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class Derivative:
    __slots__ = ("backward", "save", "result", "name", "self_saved")

    def __init__(self, backward, save=(), result=False, name=None, self_saved=None):
        self.backward = backward
        self.save = save          # input positions to keep, ALL, or fn(ctx) -> positions
        self.result = result      # keep the result: bool or fn(ctx) -> bool
        self.name = name          # grad_fn.name(): str or fn(ctx); default CamelCase(op) + "Backward0"
        # in-place form: fn(self_needs, others_need) -> whether the derivative reads self's value
        # from before the write (then check_inplace keeps a copy); None: whenever it may
        self.self_saved = self_saved

    def positions(self, ctx):
        s = self.save
        if not s:
            return ()
        if s is ALL:
            return range(len(ctx._metas))
        return s(ctx) if callable(s) else s

    def wants_result(self, ctx):
        r = self.result
        return r(ctx) if callable(r) else r

    def saves_self(self, self_needs, others_need):
        if self.self_saved is not None:
            return self.self_saved(self_needs, others_need)
        s = self.save
        return bool(s) and (s is ALL or callable(s) or 0 in s)


DERIVATIVES: dict[str, Derivative] = {}
NOT_DIFFERENTIABLE = Derivative(None)  # ops whose results never take part in a graph


def lookup(op):
    d = DERIVATIVES.get(op)
    if d is None and op.endswith("_"):
        d = DERIVATIVES.get(op[:-1])
    return d


def _def(names, backward, **kw):
    d = Derivative(backward, **kw)
    for n in names.split():
        DERIVATIVES[n] = d
    return d


# -- helpers ---------------------------------------------------------------------------------------
C = E = S = IX = None  # the ops modules (creation, elementwise, shape, indexing), bound by bind_ops()


def bind_ops():
    """Called by tensorlab.autograd once the ops modules exist (they import autograd_hooks)."""
    global C, E, S, IX
    from ..ops import creation, elementwise, indexing, shape
    C, E, S, IX = creation, elementwise, shape, indexing


def zeros(shape, like):
    return C.zeros(tuple(shape), dtype=like._dtype, device=like.device)


def zeros_like(g):
    return C.zeros(g.shape, dtype=g._dtype, device=g.device)


def sum_to(g, shape):
    """g summed over the dims that broadcasting added to `shape`."""
    shape = tuple(shape)
    gs = tuple(g.shape)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and gs[lead + i] != 1]
    if dims:
        g = g.sum(dims, keepdim=True)
    return g.reshape(shape) if tuple(g.shape) != shape else g


def unreduce(g, shape, dims, keepdim):
    """A reduction's gradient broadcast back over the reduced dims."""
    if not keepdim:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return g.expand(tuple(shape))


def _ops_save(rule):
    """A save spec over operands: rule(needs per operand) -> operand indices to keep."""
    def save(ctx):
        ops = ctx.info["operands"]
        needs = [type(o) is Arg and ctx._needs[o.i] for o in ops]
        return [ops[k].i for k in rule(needs) if type(ops[k]) is Arg]
    return save


def _unary(f, save_x=False, result=False, **kw):
    return Derivative(lambda ctx, g: (f(ctx, g),), save=(0,) if save_x else (), result=result, **kw)


def _x(ctx):
    return ctx.saved(0)


def strided_like(g, lay):
    """A fresh tensor with the shape and strides of `lay` (offset 0) holding g's values."""
    t = C.empty_strided(tuple(lay.shape), tuple(lay.stride), dtype=g._dtype, device=g.device)
    return t.copy_(g)


def positions(shape, stride, offset, device):
    """int64 tensor of `shape`: the storage position each element of the layout addresses."""
    nd = len(shape)
    p = C.full((), offset, dtype=dtypes.int64, device=device)
    for d, (n, s) in enumerate(zip(shape, stride)):
        if n != 1 and s:
            r = C.arange(n, dtype=dtypes.int64, device=device) * s
            p = p + r.reshape([n if i == d else 1 for i in range(nd)])
    return p.expand(tuple(shape))


def embed(g, shape, view_fn):
    """zeros(shape) with g written into view_fn(zeros) (the inverse of a non-overlapping view)."""
    z = zeros(shape, g)
    region = view_fn(z)
    if region.numel():
        region.copy_(g)
    return z


def scatter_layout(g, shape, lay):
    """zeros(shape) with g added at the elements a (possibly overlapping) layout over a
    contiguous tensor of `shape` addresses."""
    flat = zeros((L.prod(shape),), g)
    if g.numel():
        pos = positions(lay.shape, lay.stride, lay.offset, g.device)
        flat.index_put_((pos.reshape(-1),), g.reshape(-1), accumulate=True)
    return flat.view(tuple(shape))


def pad(g, shape, d, start):
    """g placed at [start, start + g.size(d)) along dim d of zeros(shape). Outside create_graph:
    one zero fill and one copy into the slice (select/narrow/unbind gradients: the three of a
    packed q/k/v projection cost half as much as by concatenation with zero pieces)."""
    n, k = shape[d], g.shape[d]
    if k != n and not _grad_mode_on():
        return embed(g, shape, lambda z: z.narrow(d, start, k))
    parts = []
    if start:
        parts.append(zeros(shape[:d] + (start,) + shape[d + 1:], g))
    parts.append(g)
    if n - start - k:
        parts.append(zeros(shape[:d] + (n - start - k,) + shape[d + 1:], g))
    return S.cat(parts, d) if len(parts) > 1 else g


# -- elementwise: unary ----------------------------------------------------------------------------
_LN2, _LN10 = math.log(2.0), math.log(10.0)

DERIVATIVES.update({
    "neg": _unary(lambda c, g: -g),
    "abs": _unary(lambda c, g: g * _x(c).sign(), save_x=True),
    "exp": _unary(lambda c, g: g * c.result(), result=True),
    "exp2": _unary(lambda c, g: g * c.result() * _LN2, result=True),
    "expm1": _unary(lambda c, g: g * (c.result() + 1), result=True),
    "log": _unary(lambda c, g: g / _x(c), save_x=True),
    "log2": _unary(lambda c, g: g / (_x(c) * _LN2), save_x=True),
    "log10": _unary(lambda c, g: g / (_x(c) * _LN10), save_x=True),
    "log1p": _unary(lambda c, g: g / (_x(c) + 1), save_x=True),
    "sqrt": _unary(lambda c, g: g / (2 * c.result()), result=True),
    "rsqrt": _unary(lambda c, g: -0.5 * g * c.result() ** 3, result=True),
    "square": _unary(lambda c, g: 2 * g * _x(c), save_x=True),
    "reciprocal": _unary(lambda c, g: -g * c.result() * c.result(), result=True),
    "sin": _unary(lambda c, g: g * _x(c).cos(), save_x=True),
    "cos": _unary(lambda c, g: -g * _x(c).sin(), save_x=True),
    "tan": _unary(lambda c, g: g * (1 + c.result() * c.result()), result=True),
    "tanh": _unary(lambda c, g: g * (1 - c.result() * c.result()), result=True),
    "sigmoid": _unary(lambda c, g: g * c.result() * (1 - c.result()), result=True),
    "erf": _unary(lambda c, g: g * _2_SQRT_PI * (-_x(c) * _x(c)).exp(), save_x=True),
    # threshold_backward, as torch: result <= 0 ? 0 : grad (a NaN result passes the gradient on)
    "relu": _unary(lambda c, g: E.where(c.result() <= 0, 0.0, g), result=True),
    "nan_to_num": _unary(lambda c, g: E.where(_x(c).isfinite(), g, 0.0), save_x=True),
})
# piecewise constant: zero gradient almost everywhere (torch gives these a grad_fn too)
_def("sign floor ceil round trunc", lambda c, g: (zeros_like(g),))


def _gelu(c, g):
    x = _x(c)
    if not _grad_mode_on():  # one kernel; under create_graph the composite below (differentiable)
        from ..ops.activation_backward import gelu_backward, gelu_backward_from_output
        y = c.result_unchanged()  # kept on the CPU (_gelu_keeps_result), unless changed in place since
        if y is not None:
            r = gelu_backward_from_output(g, x, y)
            if r is not None:
                return r
        r = gelu_backward(g, x, c.info.get("approximate", "none"))
        if r is not None:
            return r
    if c.info.get("approximate") == "tanh":
        beta, kappa = _SQRT_2 * _2_SQRT_PI * 0.5, 0.044715
        x2 = x * x
        t = (beta * (x + kappa * x2 * x)).tanh()
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * beta * (1 + 3 * kappa * x2))
    cdf = 0.5 * (1 + (x / _SQRT_2).erf())
    pdf = (-0.5 * x * x).exp() / _SQRT_2PI
    return g * (cdf + x * pdf)


def _silu(c, g):
    x = _x(c)
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


def _gelu_keeps_result(ctx):
    """The CPU keeps exact gelu's float32/float64 result too: its backward reads Phi(x) = gelu(x) / x
    off it (ops/activation_backward.py). A result changed in place later is simply not used."""
    _, dt, dev = ctx._metas[0]
    return dev.type == "cpu" and dt in _GELU_KEEPS and ctx.info.get("approximate", "none") == "none"


_GELU_KEEPS = (dtypes.float32, dtypes.float64)
DERIVATIVES["gelu"] = _unary(_gelu, save_x=True, result=_gelu_keeps_result)
DERIVATIVES["silu"] = _unary(_silu, save_x=True)


# -- elementwise: binary (operands a, b: tensors or numbers) ---------------------------------------
def _binary(f, save=(), result=False, **kw):
    """f(ctx, g, need_a, need_b) -> (grad a, grad b) over the two operands."""
    def bw(ctx, g):
        return ctx.to_inputs(f(ctx, g, ctx.op_needs(0), ctx.op_needs(1)))
    return Derivative(bw, save=save, result=result, **kw)


def _alpha(ctx):
    return ctx.info.get("alpha", 1)


def _add(ctx, g, na, nb):
    a = _alpha(ctx)
    return g if na else None, (g if a == 1 else g * a) if nb else None


def _sub(ctx, g, na, nb):
    a = _alpha(ctx)
    return g if na else None, (-g if a == 1 else g * -a) if nb else None


def _mul(ctx, g, na, nb):
    return (g * ctx.operand(1) if na else None, g * ctx.operand(0) if nb else None)


def _is_true_div(ctx):
    return ctx.info.get("kernel", "div_true") == "div_true"


def _div(ctx, g, na, nb):
    if not _is_true_div(ctx):  # rounding_mode='trunc' / 'floor': piecewise constant
        return zeros_like(g) if na else None, zeros_like(g) if nb else None
    b = ctx.operand(1)
    ga = g / b if na else None
    gb = -g * ctx.operand(0) / (b * b) if nb else None
    return ga, gb


def _rounded_quotient(mode):
    def f(ctx, g, na, nb):
        gb = -g * E.div(ctx.operand(0), ctx.operand(1), rounding_mode=mode) if nb else None
        return g if na else None, gb
    return f


def _pow(ctx, g, na, nb):
    ga = gb = None
    if na:
        a, b = ctx.operand(0), ctx.operand(1)
        if isinstance(b, Tensor):
            ga = E.where(b == 0, 0.0, g * b * a.pow(b - 1))
        else:
            ga = zeros_like(g) if b == 0 else g * b * a.pow(b - 1)
    if nb:
        a, b, r = ctx.operand(0), ctx.operand(1), ctx.result()
        if isinstance(a, Tensor):
            gb = E.where((a == 0) & (b >= 0), 0.0, g * r * a.log())
        elif a > 0:
            gb = g * r * math.log(a)
        elif a == 0:
            gb = E.where(b >= 0, 0.0, g * r * -math.inf)
        else:
            gb = g * math.nan
    return ga, gb


def _pow_name(ctx):
    ta, tb = ctx.op_is_tensor(0), ctx.op_is_tensor(1)
    return "PowBackward1" if ta and tb else "PowBackward0" if ta else "PowBackward2"


def _extreme_pair(keep_a_where):
    """maximum / minimum: ties split the gradient in half (torch)."""
    def f(ctx, g, na, nb):
        a, b = ctx.operand(0), ctx.operand(1)
        half = E.where(a == b, g / 2, g)
        a_wins = keep_a_where(a, b)
        return (E.where(a_wins | (a == b), half, 0.0) if na else None,
                E.where(a_wins, 0.0, half) if nb else None)
    return f


def _atan2(ctx, g, na, nb):
    a, b = ctx.operand(0), ctx.operand(1)
    inv = 1 / (a * a + b * b)
    return g * b * inv if na else None, -g * a * inv if nb else None


_OTHER = _ops_save(lambda n: ([1] if n[0] else []) + ([0] if n[1] else []))
_NUM_DEN = _ops_save(lambda n: ([1] if n[0] else []) + ([0, 1] if n[1] else []))
_IF_OTHER = (lambda s, o: o)

DERIVATIVES.update({
    "add": _binary(_add),
    "sub": _binary(_sub, name=lambda c: "SubBackward0" if c.op_is_tensor(0) else "RsubBackward1"),
    "rsub": _binary(_sub, name="RsubBackward1"),
    "mul": _binary(_mul, save=_OTHER, self_saved=_IF_OTHER),
    "div": _binary(_div, save=_NUM_DEN, self_saved=_IF_OTHER,
                   name=lambda c: "DivBackward0" if _is_true_div(c) else "DivBackward2"),
    "true_divide": _binary(_div, save=_NUM_DEN, self_saved=_IF_OTHER, name="DivBackward0"),
    "floor_divide": _binary(lambda c, g, na, nb: (zeros_like(g) if na else None, zeros_like(g) if nb else None)),
    "remainder": _binary(_rounded_quotient("floor"), save=_ops_save(lambda n: [0, 1] if n[1] else []),
                         self_saved=_IF_OTHER),
    "fmod": _binary(_rounded_quotient("trunc"), save=_ops_save(lambda n: [0, 1] if n[1] else []),
                    self_saved=_IF_OTHER),
    "pow": _binary(_pow, save=ALL, result=lambda c: c.op_needs(1), name=_pow_name),
    "maximum": _binary(_extreme_pair(lambda a, b: a > b), save=ALL),
    "minimum": _binary(_extreme_pair(lambda a, b: a < b), save=ALL),
    "atan2": _binary(_atan2, save=ALL),
})


# -- elementwise: ternary --------------------------------------------------------------------------
def _where(ctx, g):
    cond = ctx.operand(0)
    return ctx.to_inputs((None, E.where(cond, g, 0.0) if ctx.op_needs(1) else None,
                          E.where(cond, 0.0, g) if ctx.op_needs(2) else None))


def _clamp(ctx, g):
    x, lo, hi = ctx.operand(0), ctx.operand(1), ctx.operand(2)
    zero = 0.0
    gx = glo = ghi = None
    if lo is not None and hi is not None:
        if ctx.op_needs(0):
            gx = E.where((x >= lo) & (x <= hi), g, zero)
        if ctx.op_needs(1):
            glo = E.where((x < lo) & (_lt(lo, hi)), g, zero)
        if ctx.op_needs(2):
            ghi = E.where((x > hi) | (_lt(hi, lo)), g, zero)
    elif lo is not None:
        gx = E.where(x >= lo, g, zero) if ctx.op_needs(0) else None
        glo = E.where(x < lo, g, zero) if ctx.op_needs(1) else None
    else:
        gx = E.where(x <= hi, g, zero) if ctx.op_needs(0) else None
        ghi = E.where(x > hi, g, zero) if ctx.op_needs(2) else None
    return ctx.to_inputs((gx, glo, ghi))


def _lt(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return E.lt(a, b) if isinstance(a, Tensor) else E.gt(b, a)
    return a < b


def _clamp_name(ctx):
    return "ClampBackward0" if ctx.op_is_tensor(1) or ctx.op_is_tensor(2) else "ClampBackward1"


def _lerp(ctx, g):
    w = ctx.operand(2)
    gx = g * (1 - w) if ctx.op_needs(0) else None
    ge = g * w if ctx.op_needs(1) else None
    gw = g * (ctx.operand(1) - ctx.operand(0)) if ctx.op_needs(2) else None
    return ctx.to_inputs((gx, ge, gw))


def _addcmul(ctx, g):
    v = ctx.info.get("value", 1)
    gv = g * v if v != 1 else g
    return ctx.to_inputs((g if ctx.op_needs(0) else None,
                          gv * ctx.operand(2) if ctx.op_needs(1) else None,
                          gv * ctx.operand(1) if ctx.op_needs(2) else None))


def _addcdiv(ctx, g):
    v = ctx.info.get("value", 1)
    gv = g * v if v != 1 else g
    t2 = ctx.operand(2) if ctx.op_needs(1) or ctx.op_needs(2) else None
    return ctx.to_inputs((g if ctx.op_needs(0) else None,
                          gv / t2 if ctx.op_needs(1) else None,
                          -gv * ctx.operand(1) / (t2 * t2) if ctx.op_needs(2) else None))


def _masked_fill(ctx, g):
    mask = ctx.operand(1)
    gv = E.where(mask, g, 0.0).sum() if ctx.op_needs(2) else None
    return ctx.to_inputs((g.masked_fill(mask, 0.0) if ctx.op_needs(0) else None, None, gv))


_NEVER = (lambda s, o: False)
DERIVATIVES.update({
    "where": Derivative(_where, save=_ops_save(lambda n: [0]), self_saved=_NEVER),
    "clamp": Derivative(_clamp, save=ALL, name=_clamp_name),
    "lerp": Derivative(_lerp, save=ALL, self_saved=_IF_OTHER),
    "addcmul": Derivative(_addcmul, save=_ops_save(lambda n: ([2] if n[1] else []) + ([1] if n[2] else [])),
                          self_saved=_NEVER),
    "addcdiv": Derivative(_addcdiv, save=_ops_save(lambda n: ([2] if n[1] else []) + ([1, 2] if n[2] else [])),
                          self_saved=_NEVER),
    "masked_fill": Derivative(_masked_fill, save=_ops_save(lambda n: [1]), self_saved=_NEVER),
})
DERIVATIVES["clip"] = DERIVATIVES["clamp"]


def _overwritten(ctx, g):
    """Ops that overwrite self with values that do not depend on it: fill_, zero_, random_."""
    grads = [zeros_like(g)]
    for i in range(1, ctx.n_inputs):  # fill_(0-dim tensor value): every element is that value
        grads.append(g.sum() if ctx.needs(i) else None)
    return tuple(grads)


_def("fill_ zero_ uniform_ normal_ random_ bernoulli_ exponential_", _overwritten)


# -- reductions ------------------------------------------------------------------------------------
def _n_reduced(shape, dims):
    return L.prod(shape[d] for d in dims)


def _full(ctx, op):
    full = len(ctx.info["dim"]) == len(ctx.shape(0)) and not ctx.info.get("keepdim")
    return f"{op}Backward{0 if full else 1}"


def _sum(ctx, g):
    return (unreduce(g, ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]),)


def _mean(ctx, g):
    shape, dims = ctx.shape(0), ctx.info["dim"]
    n = _n_reduced(shape, dims)
    return (unreduce(g, shape, dims, ctx.info["keepdim"]) / n if n else unreduce(g, shape, dims,
                                                                                  ctx.info["keepdim"]) * math.nan,)


def _prod(ctx, g):
    """d prod / d x_i = product of the others: exclusive products from both ends (exact with
    zeros, no division)."""
    x = _x(ctx).to(g._dtype)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    ge = unreduce(g, shape, dims, ctx.info["keepdim"])
    if not dims:
        return (ge,)
    keep = [d for d in range(len(shape)) if d not in dims]
    perm = keep + list(dims)
    n = _n_reduced(shape, dims)
    if n == 0:
        return (zeros(shape, g),)
    xf = x.permute(perm).reshape([shape[d] for d in keep] + [n])
    one = C.ones(tuple(xf.shape[:-1]) + (1,), dtype=g._dtype, device=g.device)
    left = S.cat([one, xf.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    right = S.cat([one, xf.flip(-1).narrow(-1, 0, n - 1)], -1).cumprod(-1).flip(-1)
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    others = (left * right).reshape([shape[d] for d in perm]).permute(inv)
    return (ge * others,)


def _evenly(ctx, g, nan=False):
    """amax / amin / max() / min() / median(): the gradient split evenly between the tied
    extremes; with `nan` (torch's evenly_distribute_backward) a NaN result's ties are the NaNs."""
    x = _x(ctx)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    r = unreduce(ctx.result(), shape, dims, keepdim)
    mask = x == r
    if nan and x._dtype.is_floating_point:
        mask = mask | (x.isnan() & r.isnan())
    count = mask.sum(list(dims), keepdim=True) if dims else mask.to(g._dtype)
    return (E.where(mask, unreduce(g, shape, dims, keepdim) / count, 0.0),)


def _select_extreme(ctx, g):
    """max / min / median / kthvalue along a dim: the gradient goes to the returned index."""
    if "indices" not in ctx.info:
        return _evenly(ctx, g, nan=True)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    if not shape:
        return (g,)
    d = dims[0]
    idx = ctx.info["indices"]
    if not ctx.info["keepdim"]:
        g, idx = g.unsqueeze(d), idx.unsqueeze(d)
    return (zeros(shape, g).scatter(d, idx, g),)


def _extreme_name(op):
    def name(ctx):
        return f"{op}Backward{0 if 'indices' in ctx.info else 1}"
    return name


def _median_name(op):
    def name(ctx):
        return f"{op}Backward{1 if 'indices' in ctx.info else 0}"
    return name


def _var_grad(ctx, g):
    x = _x(ctx).to(g._dtype)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    n = _n_reduced(shape, dims) - ctx.info["arg"]
    mean = x.mean(list(dims), keepdim=True) if dims else x
    scale = 2.0 / n if n else math.inf
    return scale * (x - mean) * unreduce(g, shape, dims, ctx.info["keepdim"])


def _std(ctx, g):
    r = ctx.result()
    return (_var_grad(ctx, (g / (2 * r)).masked_fill(r == 0, 0.0)),)


def _norm(ctx, g):
    p = ctx.info["arg"]
    x = _x(ctx).to(g._dtype)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    ge = unreduce(g, shape, dims, keepdim)
    if p == 0:
        return (zeros(shape, g),)
    if p == 1:
        return (ge * x.sign(),)
    r = unreduce(ctx.result(), shape, dims, keepdim)
    if p == 2:
        return (E.where(r == 0, 0.0, ge * x / r),)
    if math.isinf(p):
        mask = x.abs() == r
        count = mask.sum(list(dims), keepdim=True) if dims else mask.to(g._dtype)
        return (E.where(mask, ge * x.sign() / count, 0.0),)
    if p < 1:
        scaled = (x.sign() * x.abs().pow(p - 1)).masked_fill(x == 0, 0.0)
        return (scaled * ge / r.pow(p - 1),)
    return (x * x.abs().pow(p - 2) * (ge / r.pow(p - 1)).masked_fill(r == 0, 0.0),)


def _logsumexp(ctx, g):
    x = _x(ctx)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    return (unreduce(g, shape, dims, keepdim) * (x - unreduce(ctx.result(), shape, dims, keepdim)).exp(),)


def _rev_cumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


def _cumsum(ctx, g):
    if g.dim() == 0:
        return (g,)
    return (_rev_cumsum(g, ctx.info["dim"]),)


def _cumprod(ctx, g):
    """Exact with zeros: before the first zero of a slice, sum_{j>=i} g_j out_j / x_i; at the
    first zero, the same with that zero replaced by one; after it, nothing."""
    if g.dim() == 0 or g.numel() == 0:
        return (g,)
    d = ctx.info["dim"]
    x = _x(ctx).to(g._dtype)
    out = ctx.result()
    zero = x == 0
    nz = zero.cumsum(d)
    before = nz == 0
    first = zero & (nz == 1)
    grad = E.where(before, _rev_cumsum(g * out, d) / E.where(before, x, 1.0), 0.0)
    ones_at_first = E.where(first, 1.0, x)
    return (grad + E.where(first, _rev_cumsum(g * ones_at_first.cumprod(d), d), 0.0),)


def _softmax(ctx, g):
    r = ctx.result()
    return (r * (g - (g * r).sum(ctx.info["dim"], keepdim=True)),)


def _log_softmax(ctx, g):
    return (g - ctx.result().exp() * g.sum(ctx.info["dim"], keepdim=True),)


DERIVATIVES.update({
    "sum": Derivative(_sum, name=lambda c: _full(c, "Sum")),
    "mean": Derivative(_mean, name=lambda c: _full(c, "Mean")),
    "prod": Derivative(_prod, save=(0,)),
    "amax": Derivative(_evenly, save=(0,), result=True),
    "amin": Derivative(_evenly, save=(0,), result=True),
    "max": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                      name=_extreme_name("Max")),
    "min": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                      name=_extreme_name("Min")),
    "median": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                         name=_median_name("Median")),
    "nanmedian": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                            name=_median_name("Nanmedian")),
    "kthvalue": Derivative(_select_extreme),
    "var": Derivative(lambda c, g: (_var_grad(c, g),), save=(0,)),
    "std": Derivative(_std, save=(0,), result=True),
    "norm": Derivative(_norm, save=(0,), result=lambda c: c.info["arg"] not in (0, 1),
                       name="LinalgVectorNormBackward0"),
    "logsumexp": Derivative(_logsumexp, save=(0,), result=True),
    "cumsum": Derivative(_cumsum),
    "cumprod": Derivative(_cumprod, save=(0,), result=True),
    "softmax": Derivative(_softmax, result=True),
    "log_softmax": Derivative(_log_softmax, result=True),
})
DERIVATIVES["cumsum_"] = DERIVATIVES["cumsum"]
DERIVATIVES["cumprod_"] = DERIVATIVES["cumprod"]


# -- shape ops -------------------------------------------------------------------------------------
def _cat(ctx, g):
    d = ctx.info["dim"]
    grads, off = [], 0
    for i in range(ctx.n_inputs):
        sh = ctx.shape(i)
        if sh == (0,) and g.dim() != 1:  # torch's legacy rule: 1-D empty inputs were skipped
            grads.append(zeros(sh, g) if ctx.needs(i) else None)
            continue
        n = sh[d]
        grads.append(g.narrow(d, off, n) if ctx.needs(i) else None)
        off += n
    return tuple(grads)


def _stack(ctx, g):
    d = ctx.info["dim"]
    return tuple(g.select(d, i) if ctx.needs(i) else None for i in range(ctx.n_inputs))


def _roll(ctx, g):
    dims = ctx.info["dims"]
    return (g.roll([-s for s in ctx.info["shifts"]], dims),)


def _gather(ctx, g):
    return (zeros(ctx.shape(0), g).scatter_add(ctx.info["dim"], ctx.saved(1), g), None)


def _scatter(ctx, g):
    reduce = ctx.info.get("reduce")
    d, index = ctx.info["dim"], ctx.saved(1)
    if reduce == "multiply":
        raise RuntimeError("the derivative of scatter with reduce='multiply' is not implemented (as in torch); use "
                           "reduce=None or 'add', or compute the product with differentiable ops")
    gx = None
    if ctx.needs(0):
        gx = g if reduce == "add" else g.scatter(d, index, 0.0)
    if ctx.n_inputs < 3:
        return gx, None
    gs = None
    if ctx.needs(2):
        gs = g.gather(d, index)
        src_shape = ctx.shape(2)
        if tuple(gs.shape) != tuple(src_shape):  # src larger than index: its other elements are unused
            gs = embed(gs, src_shape, lambda z: _leading_block(z, gs.shape))
    return gx, None, gs


def _leading_block(z, shape):
    for d, n in enumerate(shape):
        z = z.narrow(d, 0, n)
    return z


def _scatter_name(ctx):
    if ctx.info.get("reduce") == "add":
        return "ScatterAddBackward0"
    return "ScatterBackward0" if ctx.n_inputs == 3 else "ScatterBackward1"


def _index_select(ctx, g):
    shape = ctx.shape(0)
    if not shape:
        return g.reshape(()), None
    d = ctx.info["dim"]
    z = zeros(shape, g)
    if g.numel():
        z.index_put_([None] * d + [ctx.saved(1).reshape(-1)], g, accumulate=True)
    return z, None


def _masked_select(ctx, g):
    mask = ctx.saved(1)
    shape = L.broadcast_shapes(ctx.shape(0), ctx.shape(1))
    z = zeros(shape, g)
    if g.numel():
        z.index_put_((mask.expand(tuple(shape)),), g)
    return z, None


def _sorted(ctx, g):
    shape = ctx.shape(0)
    if not shape:
        return (g,)
    return (zeros(shape, g).scatter(ctx.info["dim"], ctx.info["indices"], g),)


DERIVATIVES.update({
    "cat": Derivative(_cat),
    "stack": Derivative(_stack),
    "flip": Derivative(lambda c, g: (g.flip(c.info["dims"]),)),
    "roll": Derivative(_roll),
    "gather": Derivative(_gather, save=(1,)),
    "scatter": Derivative(_scatter, save=(1,), name=_scatter_name, self_saved=_NEVER),
    "index_select": Derivative(_index_select, save=(1,)),
    "index_fill": Derivative(lambda c, g: (g.index_fill(c.info["dim"], c.saved(1), 0.0), None), save=(1,),
                             self_saved=_NEVER),
    "masked_select": Derivative(_masked_select, save=(1,)),
    "sort": Derivative(_sorted),
    "topk": Derivative(_sorted),
    "tril": Derivative(lambda c, g: (g.tril(c.info["diagonal"]),)),
    "triu": Derivative(lambda c, g: (g.triu(c.info["diagonal"]),)),
})
DERIVATIVES["scatter_add"] = DERIVATIVES["scatter"]
for _n in ("scatter", "scatter_add", "index_fill", "tril", "triu"):
    DERIVATIVES[_n + "_"] = DERIVATIVES[_n]


# -- matrix products -------------------------------------------------------------------------------
def _matmul(ctx, g):
    """torch.matmul's rules: 1-D operands gain a dim that the result drops; batch dims broadcast
    (their gradient is summed back)."""
    sa, sb = ctx.shape(0), ctx.shape(1)
    s = list(g.shape)
    if len(sb) == 1:
        s.append(1)
    if len(sa) == 1:
        s.insert(len(s) - 1, 1)
    g1 = g.reshape(s)
    ga = gb = None
    if ctx.needs(0):
        b = ctx.saved(1)
        b1 = b.unsqueeze(-1) if len(sb) == 1 else b
        a1_shape = (1,) + tuple(sa) if len(sa) == 1 else tuple(sa)
        ga = _as_shape(sum_to(g1.matmul(b1.mT), a1_shape), sa)
    if ctx.needs(1):
        a = ctx.saved(0)
        a1 = a.unsqueeze(0) if len(sa) == 1 else a
        b1_shape = tuple(sb) + (1,) if len(sb) == 1 else tuple(sb)
        gb = _as_shape(sum_to(a1.mT.matmul(g1), b1_shape), sb)
    return ga, gb


def _as_shape(g, shape):
    """g reshaped to `shape` only where it differs: a fresh product stays a non-view, which
    AccumulateGrad stores as the .grad without a copy."""
    shape = tuple(shape)
    return g if tuple(g.shape) == shape else g.reshape(shape)


def _matmul_name(ctx):
    na, nb = len(ctx.shape(0)), len(ctx.shape(1))
    return {(2, 2): "MmBackward0", (1, 1): "DotBackward0", (2, 1): "MvBackward0",
            (3, 3): "BmmBackward0"}.get((na, nb), "MatmulBackward0")


def _outer(ctx, g):
    ga = g.mv(ctx.saved(1).to(g._dtype)) if ctx.needs(0) else None
    gb = g.t().mv(ctx.saved(0).to(g._dtype)) if ctx.needs(1) else None
    return ga, gb


_MM_SAVE = (lambda c: ([1] if c._needs[0] else []) + ([0] if c._needs[1] else []))
DERIVATIVES.update({
    "matmul": Derivative(_matmul, save=_MM_SAVE, name=_matmul_name),
    "mm": Derivative(_matmul, save=_MM_SAVE),
    "bmm": Derivative(_matmul, save=_MM_SAVE),
    "mv": Derivative(_matmul, save=_MM_SAVE),
    "dot": Derivative(_matmul, save=_MM_SAVE),
    "outer": Derivative(_outer, save=_MM_SAVE),
})


# -- views, copies, indexing -----------------------------------------------------------------------
def _permute(ctx, g):
    dims = ctx.info["dims"]
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return (g.permute(inv),)


def _squeeze(ctx, g):
    for d in ctx.info["dims"]:
        g = g.unsqueeze(d)
    return (g,)


def _as_strided(ctx, g):
    """Scatter-add the gradient at the storage positions the result addresses, then read it at
    the positions the input addresses (inputs whose own elements overlap are refused)."""
    il = ctx.layout(0)
    size, stride, off = ctx.info["size"], ctx.info["stride"], ctx.info["storage_offset"]
    if L.has_internal_overlap(il.shape, il.stride):
        raise RuntimeError("as_strided backward: the input's own elements overlap (e.g. an expand()ed tensor), so "
                           "the gradient of each is ambiguous; clone() the input before as_strided")
    lo = min(il.offset, off)
    n = max(L.extent(il.shape, il.stride, il.offset), L.extent(size, stride, off)) - lo
    flat = zeros((max(n, 0),), g)
    if g.numel():
        pos = positions(size, stride, off - lo, g.device)
        flat.index_put_((pos.reshape(-1),), g.reshape(-1), accumulate=True)
    return (flat[positions(il.shape, il.stride, il.offset - lo, g.device)],)


def _narrow(ctx, g):
    d = ctx.info["dim"]
    return (pad(g, tuple(ctx.shape(0)), d, ctx.info["start"]),)


def _select(ctx, g):
    d = ctx.info["dim"]
    return (pad(g.unsqueeze(d), tuple(ctx.shape(0)), d, ctx.info["index"]),)


def _unfold(ctx, g):
    shape = tuple(ctx.shape(0))
    i = ctx.info
    probe = C.empty(shape, dtype=dtypes.bool_, device=g.device).unfold(i["dimension"], i["size"], i["step"])
    return (scatter_layout(g, shape, probe._meta.layout),)


def _diagonal(ctx, g):
    i = ctx.info
    return (embed(g, tuple(ctx.shape(0)), lambda z: z.diagonal(i["offset"], i["dim1"], i["dim2"])),)


def _getitem(ctx, g):
    """Replay the basic part of the index on zeros of the input's shape and write g there."""
    shape = tuple(ctx.shape(0))
    dev = g.device

    def view(z):
        lay, _ = IX._locate(z, [IX._entry(x, dev) for x in IX._as_tuple(ctx.info["index"])])
        return z._view_of(lay)
    return (embed(g, shape, view),)


_BASIC_NAMES = {int: "SelectBackward0", slice: "SliceBackward0", type(None): "UnsqueezeBackward0",
                bool: "UnsqueezeBackward0"}


def _getitem_name(ctx):
    index = ctx.info["index"]
    for x in reversed(index if isinstance(index, tuple) else (index,)):
        if isinstance(x, slice) and x == slice(None):
            continue
        name = _BASIC_NAMES.get(type(x))
        if name is not None:
            return name
    return "AliasBackward0"


def _index(ctx, g):
    z = zeros(ctx.shape(0), g)
    if g.numel():
        z.index_put_(list(ctx.info["indices"]), g, accumulate=True)
    return (z,)


def _index_put(ctx, g):
    """self[view][indices] = value (or += with accumulate): the written region's gradient goes
    to value (summed over its broadcast), and (without accumulate) is zero for old self."""
    info = ctx.info
    sl, vl = ctx.layout(0), info["view"]._meta.layout
    idx = info["indices"]
    adv = any(i is not None for i in idx)
    key = tuple(slice(None) if i is None else i for i in idx)
    res = strided_like(g, sl)
    region = res.as_strided(tuple(vl.shape), tuple(vl.stride), vl.offset - sl.offset)
    gv = None
    if ctx.n_inputs > 1 and ctx.needs(1):
        gv = region[key] if adv else region.clone()
    if not info["accumulate"]:
        if adv:
            region[key] = 0.0
        elif region.numel():
            region.zero_()
    return (res, gv) if ctx.n_inputs > 1 else (res,)


def _to(ctx, g):
    if g._dtype.category == 3 and ctx.dtype(0).category != 3:  # real -> complex cast: the real part (torch)
        g = g.real
    return (g.to(ctx.device(0), ctx.dtype(0)),)


def _copy(ctx, g):
    if "view" in ctx.info:  # x[basic index] = value records copy_ on x, with the written view
        return _index_put(ctx, g)
    return (zeros(ctx.shape(0), g) if ctx.needs(0) else None, g if ctx.needs(1) else None)


DERIVATIVES.update({
    "view": Derivative(lambda c, g: (g.reshape(tuple(c.shape(0))),)),
    "view_dtype": NOT_DIFFERENTIABLE,  # as torch: reinterpreting bytes has no gradient (use .to(dtype))
    "permute": Derivative(_permute),
    "transpose": Derivative(lambda c, g: (g.transpose(c.info["dim0"], c.info["dim1"]),)),
    "alias": Derivative(lambda c, g: (g,)),
    "expand": Derivative(lambda c, g: (sum_to(g, tuple(c.shape(0))),)),
    "squeeze": Derivative(_squeeze),
    "unsqueeze": Derivative(lambda c, g: (g.squeeze(c.info["dim"]),)),
    "as_strided": Derivative(_as_strided),
    "narrow": Derivative(_narrow, name="SliceBackward0"),
    "split": Derivative(_narrow),
    "select": Derivative(_select),
    "unfold": Derivative(_unfold),
    "diagonal": Derivative(_diagonal),
    "getitem": Derivative(_getitem, name=_getitem_name),
    "index": Derivative(_index),
    "index_put_": Derivative(_index_put, self_saved=_NEVER),
    "clone": Derivative(lambda c, g: (g,)),
    "pin_memory": Derivative(lambda c, g: (g,)),
    "to": Derivative(_to, name="ToCopyBackward0"),
    "copy_": Derivative(_copy, name="CopyBackwards", self_saved=_NEVER),
})


# -- convolution and pooling primitives (ops/conv.py): each one's derivative is the other ----------
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
        out = [gi]
        if i["has_weight"]:
            out.append(gw)
        if i["has_bias"]:
            out.append(gb)
        return tuple(out)
    return backward


def _grad_mode_on():
    from .grad_mode import is_grad_enabled
    return is_grad_enabled()


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
    out = [gi]
    if i["has_weight"]:
        out.append(gw)
    if i["has_bias"]:
        out.append(gb)
    return tuple(out)


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
    gx = gw = None
    if not _grad_mode_on():  # no create_graph: the two products as direct GEMMs
        from ..ops import linear_fused
        x = ctx.saved(0) if needs[1] else None
        if x is not None and len(x_shape) != 2:
            x = x.reshape(-1, n_in)
        gx, gw = linear_fused.backward(g2, x, ctx.saved(1) if needs[0] else None, needs[0], needs[1])
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
    return gx, gw, (g2.sum(0) if needs[2] else None)


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
