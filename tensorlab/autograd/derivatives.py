"""The derivative table: op name (as the ops pass it to autograd_hooks.record) -> Derivative, and the
helpers every family's rows use. The rows live beside their ops' families, one file each, registered
into DERIVATIVES when tensorlab.autograd imports them:

- derivatives_elementwise.py: unary, binary and ternary elementwise ops, fills (ops/elementwise_*.py, ops/fill.py)
- derivatives_reduction.py: reductions, scans, softmax (ops/reduction.py)
- derivatives_shape.py: cat/stack/flip/roll/gather/scatter/index_select/sort/topk/tril/triu (ops/shape.py)
- derivatives_linalg.py: matmul/mm/bmm/mv/dot/outer (ops/linalg.py)
- derivatives_views.py: views (ops/views.py); derivatives_indexing.py: tensor[index] reads and
  writes (ops/indexing.py); derivatives_copy.py: clone/to/copy_/pin_memory (ops/copy.py, ops/transfer.py)
- derivatives_nn.py: conv/pool primitives (ops/conv.py, ops/pool.py) and the fused nn ops (ops/*_fused.py,
  ops/attention.py)
- derivatives_special.py: the special functions (ops/special_functions.py)

A Derivative's `backward(ctx, grad)` returns one gradient per recorded input (None where there
is none), written with tensorlab ops so it runs on every device and, under create_graph, is
itself recorded. `ctx` is the graph node: ctx.saved(i) / ctx.result() give what `save` /
`result` asked to keep (version-checked), ctx.shape(i) / dtype(i) / device(i) / layout(i) the
inputs' metadata, ctx.needs(i) whether input i wants a gradient, ctx.info the op's keyword info.
Elementwise ops record their operands (tensors and Python numbers): ctx.operand(k),
ctx.op_needs(k), and ctx.to_inputs(per-operand grads). Gradients may have the broadcast shape:
the engine sums them back to each input's shape and casts them to its dtype and device."""
from __future__ import annotations

from .. import dtypes, layout as L

ALL = "all"


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


def _grad_mode_on():
    from .grad_mode import is_grad_enabled
    return is_grad_enabled()


def _binary(f, save=(), result=False, **kw):
    """f(ctx, g, need_a, need_b) -> (grad a, grad b) over the two operands."""
    def bw(ctx, g):
        return ctx.to_inputs(f(ctx, g, ctx.op_needs(0), ctx.op_needs(1)))
    return Derivative(bw, save=save, result=result, **kw)


# in-place forms: whether the derivative reads self's value from before the write (Derivative.self_saved)
_IF_OTHER = (lambda s, o: o)
_NEVER = (lambda s, o: False)
