"""The elementwise ops' derivatives: unary (ops/elementwise_unary.py), binary (ops/elementwise_binary.py),
ternary (ops/elementwise_ternary.py) and the ops that overwrite self (fill_/zero_ in ops/fill.py, the
random fills). Operands are tensors or Python numbers: ctx.operand(k), ctx.op_needs(k), ctx.to_inputs."""
from __future__ import annotations

import math

from .. import dtypes
from ..ops import elementwise as E
from ..ops.activation_backward import activation_backward
from ..tensor import Tensor
from .derivatives import (ALL, DERIVATIVES, Derivative, _IF_OTHER, _NEVER, _binary, _def, _grad_mode_on, _ops_save,
                          _unary, _x, zeros_like)

_SQRT_2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_2_SQRT_PI = 2.0 / math.sqrt(math.pi)


# -- elementwise: unary ----------------------------------------------------------------------------
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _fused(kernel, g, y, composite):
    """g times the derivative as one kernel (ops/activation_backward.py) outside create_graph and
    where the operands fit it; else composite(g, y), the differentiable formula in tensorlab ops."""
    if not _grad_mode_on():
        r = activation_backward(kernel, g, y)
        if r is not None:
            return r
    return composite(g, y)


def _tanh(g, y):
    return g * (1 - y * y)


def _sigmoid(g, y):  # torch's order: (g * (1 - y)) * y
    return g * (1 - y) * y


def _relu(g, y):  # threshold_backward, as torch: result <= 0 ? 0 : grad (a NaN result passes the gradient on)
    return E.where(y <= 0, 0.0, g)

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
    "tanh": _unary(lambda c, g: _fused("tanh_backward", g, c.result(), _tanh), result=True),
    "sigmoid": _unary(lambda c, g: _fused("sigmoid_backward", g, c.result(), _sigmoid), result=True),
    "erf": _unary(lambda c, g: g * _2_SQRT_PI * (-_x(c) * _x(c)).exp(), save_x=True),
    "relu": _unary(lambda c, g: _fused("threshold_backward", g, c.result(), _relu), result=True),
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


def _silu_composite(g, x):
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


def _silu(c, g):
    return _fused("silu_backward", g, _x(c), _silu_composite)


def _gelu_keeps_result(ctx):
    """The CPU keeps exact gelu's float32/float64 result too: its backward reads Phi(x) = gelu(x) / x
    off it (ops/activation_backward.py). A result changed in place later is simply not used."""
    _, dt, dev = ctx._metas[0]
    return dev.type == "cpu" and dt in _GELU_KEEPS and ctx.info.get("approximate", "none") == "none"


_GELU_KEEPS = (dtypes.float32, dtypes.float64)
DERIVATIVES["gelu"] = _unary(_gelu, save_x=True, result=_gelu_keeps_result)
DERIVATIVES["silu"] = _unary(_silu, save_x=True)


# -- elementwise: binary (operands a, b: tensors or numbers) ---------------------------------------


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
