"""Custom differentiable operations, as torch.autograd.Function:

    class Exp(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

forward runs without recording; backward returns one gradient per forward argument (None for
non-tensors or inputs that need none). The ctx is the graph node (its grad_fn)."""
from __future__ import annotations

from ..tensor import Tensor
from .graph import FREED, Node, Saved, _alias, _seq, attach, edge_fn
from .grad_mode import STATE, no_grad


class BackwardCFunction(Node):
    """The grad_fn of a custom Function's outputs, and the `ctx` its forward/backward receive."""

    __slots__ = ("_cls", "_to_save", "_saved_vars", "needs_input_grad", "_non_diff", "_materialize", "_tensor_pos",
                 "_out_metas", "_outputs", "__dict__")

    def __init__(self, cls):
        self._cls = cls
        self._op, self._d, self.info = cls.__name__, None, {}
        self.next_functions, self._metas, self._needs = (), [], []
        self._out = None
        self._seq = next(_seq)
        self._pre_hooks = self._post_hooks = self._retain = self._trace = self._base_fn = None
        self._saved = self._result = None
        self._freed = False
        self._metadata = None
        self._to_save, self._saved_vars, self._non_diff = (), None, set()
        self._materialize = True
        self.needs_input_grad = ()
        self._tensor_pos, self._out_metas, self._outputs = [], [], ()

    # -- the ctx API -----------------------------------------------------------------------------
    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {len(self._to_save)} is "
                                f"not a Tensor or None (got {type(t).__name__})")
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(FREED)
        if self._saved_vars is None:
            return tuple(self._to_save)
        return tuple(None if s is None else s.unpack(self) for s in self._saved_vars)

    def name(self):
        return f"{self._cls.__name__}Backward"

    # -- the graph side ----------------------------------------------------------------------------
    def output_metas(self):
        return self._out_metas

    def _connect(self, args, outs):
        tensors = []
        for j, a in enumerate(args):
            if isinstance(a, Tensor):
                self._tensor_pos.append(j)
                tensors.append(a)
        self._metas = [(t._meta.layout, t._dtype, t._meta.storage.device) for t in tensors]
        self._needs = [t._requires_grad for t in tensors]
        self.next_functions = tuple((edge_fn(t), t._output_nr) if t._requires_grad else (None, 0) for t in tensors)
        self.n_outputs = len(outs)
        inputs = {id(t) for t in tensors}
        new = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                if id(o) in inputs:  # an input returned as is: its alias becomes the output
                    o = _alias(o)
                self._out_metas.append((o._meta.layout, o._dtype, o._meta.storage.device))
                if (o._dtype.is_floating_point or o._dtype.category == 3) and id(outs[i]) not in self._non_diff:
                    attach(o, self)
                    if i:
                        o._output_nr = i
            else:
                self._out_metas.append(None)
            new.append(o)
        self._outputs = {id(o): i for i, o in enumerate(new) if isinstance(o, Tensor)}
        saved = []
        for t in self._to_save:
            if t is None:
                saved.append(None)
            elif id(t) in self._outputs or any(t is o for o in outs):
                a = _alias(t)
                a._output_nr = self._outputs.get(id(t), 0)
                saved.append(Saved(a, None, True))
            else:
                saved.append(Saved(t, t._grad_fn, False))
        self._saved_vars = saved
        self._outputs = ()
        return new

    def apply(self, grads):
        if not self._materialize:
            grads = list(grads)
        res = self._cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n_args = self._n_args
        if len(res) < n_args or any(r is not None for r in res[n_args:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                               f"{n_args}, got {len(res)})")
        out = []
        for j in self._tensor_pos:
            g = res[j]
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"function {self.name()} returned a gradient of type {type(g).__name__} for "
                                f"argument {j}; expected a Tensor or None")
            out.append(g)
        return out

    def release(self):
        self._saved_vars = None
        self._freed = True


class Function:
    """Subclass with static forward(ctx, *args) and backward(ctx, *grad_outputs) (or forward(*args)
    plus setup_context(ctx, inputs, output)); call it as MyFunction.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise RuntimeError("You must implement the forward function for a custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError("You must implement either the backward or vjp method for your custom autograd.Function "
                           "to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise RuntimeError("setup_context is not overridden")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = BackwardCFunction(cls)
        ctx._n_args = len(args)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        separate = cls.setup_context is not Function.setup_context
        with no_grad():
            if separate:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        many = isinstance(out, tuple)
        outs = out if many else (out,)
        if STATE.grad and any(ctx.needs_input_grad):
            outs = ctx._connect(args, outs)
        return tuple(outs) if many else outs[0]
