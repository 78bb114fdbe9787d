"""torch.library: Python-defined operators, callable as torch.ops.<namespace>.<name>.

    @tl.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, k: float) -> Tensor:
        return x * k

    scale.register_autograd(lambda ctx, g: (g * ctx.k, None),
                            setup_context=lambda ctx, inputs, output: setattr(ctx, "k", inputs[1]))
    tl.ops.mylib.scale(x, 2.0)      # torch.ops.mylib.scale under tensorlab.compat

An operator is a record in one table (`_REGISTRY`, keyed "namespace::name"): its schema (parsed from
torch's schema string, or inferred from a custom_op's type hints), its kernels by device type ("cpu",
"cuda", or "default" for a composite that works everywhere), an optional fake (meta) function, and an
optional autograd formula (backward + setup_context), which runs through autograd.Function. A call
picks the kernel for the device of its first tensor argument. `Library(ns, "DEF"/"FRAGMENT"/"IMPL")`
with define()/impl(), and the function forms define/impl/register_kernel/register_fake/
register_autograd work on the same table. The fake functions are stored and returned by
`fake_impl(qualname)`; tensorlab has no meta tensors or tracing, so nothing calls them implicitly.

tensorlab cannot load C++ operator libraries built against libtorch: torch.ops.load_library raises
OSError (as torch does for a library it cannot load), which is how torchvision and other packages
detect that their compiled ops are absent."""
from __future__ import annotations

import inspect
import re
import typing
import threading

from .autograd.function import Function
from .tensor import Tensor

__all__ = ["Library", "custom_op", "define", "impl", "register_kernel", "register_fake", "register_autograd",
           "impl_abstract", "infer_schema", "CustomOpDef", "fake_impl"]

_lock = threading.RLock()
_REGISTRY = {}  # "ns::name" -> _Op
_PENDING_FAKES = {}  # "ns::name" -> fake function registered before the op is defined (as torch allows)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# dispatch keys -> the device type a kernel registered under them serves
_KEYS = {"CPU": "cpu", "CUDA": "cuda", "CompositeImplicitAutograd": "default", "CompositeExplicitAutograd": "default",
         "": "default", "Meta": "meta", "Autograd": "autograd", "AutogradCPU": "autograd", "AutogradCUDA": "autograd"}


class _Arg:
    __slots__ = ("name", "type", "default", "kwarg_only", "has_default")

    def __init__(self, name, type_, default, kwarg_only, has_default):
        self.name, self.type, self.default = name, type_, default
        self.kwarg_only, self.has_default = kwarg_only, has_default


def _split_top(text):
    """Split at commas outside brackets/parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


_DEFAULTS = {"None": None, "True": True, "False": False}


def _default(text):
    if text in _DEFAULTS:
        return _DEFAULTS[text]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith("[") and text.endswith("]"):
        return [_default(t) for t in _split_top(text[1:-1])]
    return text.strip("\"'")


def parse_schema(schema, qualname=None):
    """(name, [args], returns) of a torch schema string "name(Type a, Type b=1, *, Type c) -> Ret" (the
    name may be left out when qualname gives it)."""
    s = schema.strip()
    m = re.match(r"^\s*([A-Za-z_][\w.]*)?\s*\((.*)\)\s*->\s*(.+)$", s, re.S)
    if m is None:
        raise RuntimeError(f"torch.library: cannot parse the schema {schema!r}: expected 'name(Type arg, ...) -> Ret'")
    name = m.group(1) or (qualname.split("::")[-1] if qualname else None)
    if not name:
        raise RuntimeError(f"torch.library: the schema {schema!r} has no operator name")
    args, kwarg_only = [], False
    for part in _split_top(m.group(2)):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, dflt = part.partition("=")
        bits = decl.split()
        if len(bits) < 2:
            raise RuntimeError(f"torch.library: argument {part!r} of schema {schema!r} needs a type and a name")
        args.append(_Arg(bits[-1], " ".join(bits[:-1]), _default(dflt.strip()) if eq else None, kwarg_only,
                         bool(eq)))
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise RuntimeError(f"torch.library: schema {schema!r} repeats an argument name")
    return name.split(".")[0], args, m.group(3).strip()


class _Op:
    """One operator: schema, kernels by device type, fake function, autograd formula."""

    def __init__(self, ns, name, args, returns, schema):
        self.ns, self.name, self.args, self.returns, self.schema = ns, name, args, returns, schema
        self.kernels = {}
        self.fake = None
        self.backward = None
        self.setup_context = None

    @property
    def qualname(self):
        return f"{self.ns}::{self.name}"

    def bind(self, args, kwargs):
        """The positional argument list in schema order (defaults filled), with torch's TypeErrors."""
        out = []
        pos = [a for a in self.args if not a.kwarg_only]
        if len(args) > len(pos):
            raise TypeError(f"{self.qualname}() takes {len(pos)} positional arguments but {len(args)} were given")
        kwargs = dict(kwargs)
        for i, a in enumerate(self.args):
            if i < len(args) and not a.kwarg_only:
                if a.name in kwargs:
                    raise TypeError(f"{self.qualname}() got multiple values for argument '{a.name}'")
                out.append(args[i])
            elif a.name in kwargs:
                out.append(kwargs.pop(a.name))
            elif a.has_default:
                out.append(a.default)
            else:
                raise TypeError(f"{self.qualname}() missing required argument '{a.name}'")
        if kwargs:
            raise TypeError(f"{self.qualname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        return out

    def kernel_for(self, args):
        dev = None
        for a in args:
            t = a if isinstance(a, Tensor) else (a[0] if isinstance(a, (list, tuple)) and a and
                                                  isinstance(a[0], Tensor) else None)
            if t is not None:
                dev = t.device.type
                break
        fn = self.kernels.get(dev) or self.kernels.get("default")
        if fn is None:
            have = sorted(k for k in self.kernels) or ["none"]
            raise NotImplementedError(
                f"Could not run '{self.qualname}' with arguments from the '{(dev or 'cpu').upper()}' backend: it has "
                f"kernels for {have}. Register one with torch.library.register_kernel('{self.qualname}', "
                f"'{dev or 'cpu'}', fn) or impl(..., 'CompositeExplicitAutograd').")
        return fn

    _export_leaf = None  # set while onnx.export writes this op's registered symbolic (onnx/custom_symbolics.py)

    def __call__(self, *args, **kwargs):
        leaf = self._export_leaf
        if leaf is not None:
            return leaf(*args, **kwargs)
        return self.call_kernel(*args, **kwargs)

    def call_kernel(self, *args, **kwargs):
        bound = self.bind(args, kwargs)
        fn = self.kernel_for(bound)
        if self.backward is None:
            return fn(*bound)
        return _autograd_function(self).apply(fn, *bound)


def _autograd_function(op):
    """An autograd.Function running op's kernel forward and its registered backward."""
    cached = getattr(op, "_function", None)
    if cached is not None and cached[0] is op.backward and cached[1] is op.setup_context:
        return cached[2]

    class _Custom(Function):
        @staticmethod
        def forward(ctx, fn, *args):
            out = fn(*args)
            if op.setup_context is not None:
                op.setup_context(ctx, tuple(args), out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            res = op.backward(ctx, *grads)
            res = res if isinstance(res, tuple) else (res,)
            if len(res) != len(op.args):
                raise RuntimeError(f"{op.qualname}: its backward returned {len(res)} gradients, expected "
                                   f"{len(op.args)} (one per argument of the schema, None for non-tensors)")
            return (None,) + tuple(res)

    _Custom.__name__ = _Custom.__qualname__ = f"{op.name}_backward"
    op._function = (op.backward, op.setup_context, _Custom)
    return _Custom


def _qual(qualname):
    if not isinstance(qualname, str):
        qualname = getattr(qualname, "_qualname", None) or getattr(qualname, "qualname", None)
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"torch.library: expected a qualified name 'namespace::name', got {qualname!r}")
    ns, _, name = qualname.partition("::")
    name = name.split(".")[0]  # an overload name is not kept apart
    if not _NAME.match(ns) or not _NAME.match(name):
        raise ValueError(f"torch.library: {qualname!r} is not 'namespace::name' with identifier parts")
    return ns, name


def _lookup(qualname):
    ns, name = _qual(qualname)
    op = _REGISTRY.get(f"{ns}::{name}")
    if op is None:
        raise RuntimeError(f"torch.library: operator {ns}::{name} does not exist (define it first: "
                           f"torch.library.define / Library.define / custom_op)")
    return op


def define(qualname, schema, *, lib=None, tags=()):
    """Define operator `qualname` ("ns::name") with `schema` (its argument list "(Tensor x, float k) ->
    Tensor", or a full schema whose name must match)."""
    ns, name = _qual(qualname)
    sname, args, returns = parse_schema(schema, qualname)
    if sname != name:
        raise RuntimeError(f"torch.library.define: the schema names {sname!r}, the qualname {qualname!r}")
    with _lock:
        key = f"{ns}::{name}"
        if key in _REGISTRY:
            raise RuntimeError(f"Tried to register an operator ({key}) with the same name and overload name multiple "
                               f"times.")
        _REGISTRY[key] = _Op(ns, name, args, returns, schema)
        _REGISTRY[key].fake = _PENDING_FAKES.pop(key, None)
        if lib is not None:
            lib._defined.add(key)
    return _REGISTRY[key]


def _register(op, device_types, fn):
    kinds = ["default"] if device_types is None else ([device_types] if isinstance(device_types, str)
                                                       else list(device_types))
    for d in kinds:
        d = {"cpu": "cpu", "cuda": "cuda", "default": "default"}.get(d)
        if d is None:
            raise ValueError(f"torch.library: device type {device_types!r} is not 'cpu', 'cuda' or None")
        op.kernels[d] = fn


def register_kernel(op, device_types, func=None, *, lib=None):
    """Register func as op's kernel for device_types ("cpu", "cuda", a sequence of them, or None for all)."""
    def reg(fn):
        _register(_lookup(op), device_types, fn)
        return fn
    return reg if func is None else reg(func)


def impl(qualname, types, func=None, *, lib=None):
    """Register func for qualname under device types or dispatch keys ("cpu", "CUDA",
    "CompositeExplicitAutograd", ...)."""
    def reg(fn):
        kinds = [types] if isinstance(types, str) else list(types)
        for k in kinds:
            _impl_key(_lookup(qualname), k, fn)
        return fn
    return reg if func is None else reg(func)


def _impl_key(op, key, fn):
    target = _KEYS.get(key, key.lower() if key.lower() in ("cpu", "cuda") else None)
    if target is None:
        raise ValueError(f"torch.library.impl: unknown dispatch key or device type {key!r}")
    if target == "meta":
        op.fake = fn
    elif target == "autograd":
        op.kernels["default"] = fn  # an autograd kernel computes through differentiable ops itself
    else:
        op.kernels[target] = fn


def register_fake(op, func=None, *, lib=None, _stacklevel=1):
    """Store op's fake (meta) function: what shape/dtype its output has, computed without data. As in
    torch, the operator may be defined later (a package registers fakes for C++ ops it may not have)."""
    def reg(fn):
        ns, name = _qual(op)
        with _lock:
            rec = _REGISTRY.get(f"{ns}::{name}")
            if rec is None:
                _PENDING_FAKES[f"{ns}::{name}"] = fn
            else:
                rec.fake = fn
        return fn
    return reg if func is None else reg(func)


impl_abstract = register_fake


def fake_impl(qualname):
    """The fake function registered for qualname (None when there is none)."""
    return _lookup(qualname).fake


def register_autograd(op, backward, *, setup_context=None, lib=None):
    """op's derivative: backward(ctx, *grad_outputs) returns one gradient per schema argument (None for
    non-tensors); setup_context(ctx, inputs, output) saves what backward needs."""
    rec = _lookup(op)
    if not callable(backward):
        raise TypeError(f"torch.library.register_autograd: backward must be callable, got {type(backward).__name__}")
    rec.backward, rec.setup_context = backward, setup_context


class Library:
    """torch.library.Library(ns, kind): "DEF" (this namespace is defined here: it must be new), "FRAGMENT"
    (defines more ops in it), "IMPL" (registers kernels for ops defined elsewhere), with an optional
    default dispatch key for impl()."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if not _NAME.match(ns):
            raise ValueError(f"torch.library.Library: namespace {ns!r} is not an identifier")
        if kind == "DEF" and any(k.startswith(ns + "::") for k in _REGISTRY):
            raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; use "
                               f"Library({ns!r}, 'FRAGMENT') to add operators to it")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined = set()

    def define(self, schema, alias_analysis="", *, tags=()):
        if self.kind == "IMPL":
            raise RuntimeError("torch.library.Library: define() needs a 'DEF' or 'FRAGMENT' library")
        name = parse_schema(schema)[0]
        define(f"{self.ns}::{name}", schema, lib=self)
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        if isinstance(op_name, str):
            qual = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        else:
            qual = getattr(op_name, "_qualname", None)
        _impl_key(_lookup(qual), dispatch_key or self.dispatch_key, fn)

    def _destroy(self):
        with _lock:
            for key in self._defined:
                _REGISTRY.pop(key, None)
            self._defined.clear()


_HINTS = {Tensor: "Tensor", float: "float", int: "SymInt", bool: "bool", str: "str"}


def infer_schema(fn, *, op_name=None, mutates_args=()):
    """torch's schema string for a function with type hints (Tensor, float, int, bool, str, their
    Optional/list forms)."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)  # string annotations (from __future__ import annotations) resolved
    except Exception:  # noqa: BLE001 - a hint that does not resolve: its text is parsed below
        hints = getattr(fn, "__annotations__", {})
    parts = []
    for p in sig.parameters.values():
        t = hints.get(p.name, p.annotation)
        if t is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation.")
        name = _hint_name(t, p.name)
        if p.name in (mutates_args or ()) and name.startswith("Tensor"):
            name = name.replace("Tensor", "Tensor(a!)", 1)
        parts.append(f"{name} {p.name}" + ("" if p.default is inspect.Parameter.empty else f"={p.default!r}"))
    ret = hints.get("return", sig.return_annotation)
    rname = "()" if ret in (None, type(None)) else _hint_name(ret, "return")
    return f"{op_name or ''}({', '.join(parts)}) -> {rname}"


def _hint_name(t, what):
    if isinstance(t, str):
        return {"Tensor": "Tensor", "tl.Tensor": "Tensor", "torch.Tensor": "Tensor"}.get(t, t)
    if t in _HINTS:
        return _HINTS[t]
    origin = getattr(t, "__origin__", None)
    args = getattr(t, "__args__", ())
    if origin in (list, tuple) and args and args[0] in _HINTS:
        return _HINTS[args[0]] + "[]"
    if args and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _hint_name(inner[0], what) + "?"
    raise ValueError(f"infer_schema(func): unsupported type annotation {t!r} for {what}")


class CustomOpDef:
    """What custom_op returns: callable (as the operator), with register_kernel/register_fake/
    register_autograd bound to it."""

    def __init__(self, op, fn):
        self._op, self._init_fn = op, fn
        self._qualname = op.qualname
        self.__name__ = op.name
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def register_kernel(self, device_types, fn=None):
        return register_kernel(self._qualname, device_types, fn)

    def register_fake(self, fn=None):
        return register_fake(self._qualname, fn)

    def register_autograd(self, backward, *, setup_context=None):
        register_autograd(self._qualname, backward, setup_context=setup_context)

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Define operator `name` ("ns::opname") from a Python function: its schema inferred from the type
    hints (or given), the function its kernel for device_types (None: every device)."""
    if mutates_args != "unknown" and not isinstance(mutates_args, (tuple, list, set, frozenset, str)):
        raise TypeError("custom_op: mutates_args must be 'unknown' or an iterable of argument names")

    def make(f):
        s = schema if schema is not None else infer_schema(
            f, mutates_args=() if mutates_args == "unknown" else mutates_args)
        op = define(name, s)
        _register(op, device_types, f)
        return CustomOpDef(op, f)
    return make if fn is None else make(fn)
