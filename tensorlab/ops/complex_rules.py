"""Which elementwise ops take complex operands, and torch's errors for those that do not. Read by
ops/elementwise.py's generic paths (one lookup per new (op, dtype) pair: the result is memoized)."""
from __future__ import annotations

# elementwise rows that compute on complex values (NumPy's complex ufuncs on the CPU, complex.cu's
# functors on CUDA); every other row refuses a complex common dtype with torch's error
COMPLEX_OK = frozenset((
    "neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "reciprocal",
    "sin", "cos", "tan", "tanh", "sigmoid", "isnan", "isinf", "isfinite", "logical_not", "nan_to_num",
    "add", "sub", "rsub", "mul", "div", "true_divide", "pow", "eq", "ne", "logical_and", "logical_or", "logical_xor",
    "where", "addcmul", "addcdiv", "masked_fill", "lerp",
))
# ops whose result is real for a complex input (torch: abs(complex64) is float32)
REAL_RESULT = frozenset(("abs",))

_MESSAGES = {
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
    "clamp": "clamp is not supported for complex types",
    "clip": "clamp is not supported for complex types",
    "maximum": "maximum not implemented for complex tensors.",
    "minimum": "minimum not implemented for complex tensors.",
    "relu": "clamp is not supported for complex types",
}
_ROUNDING = ("floor", "ceil", "round", "trunc")


def refuse(name, dt):
    """Raise torch's RuntimeError for elementwise op `name` over complex dtype `dt`."""
    cls = NotImplementedError  # torch's dispatch refusal ("... not implemented for 'ComplexFloat'")
    if name in ("maximum", "minimum"):
        cls = RuntimeError
    if name in _MESSAGES:
        msg = _MESSAGES[name]
    elif name in _ROUNDING:
        msg = f"{name} is not supported for complex inputs"
    else:
        msg = f'"{name}_cpu" not implemented for \'{dt.torch_name}\''
    raise cls(f"{msg} (tensorlab.{name} got a tensorlab.{dt.name} operand; take .real, .imag or .abs() "
                       "first if a real-valued result is meant)")


def check(name, dt):
    if dt.category == 3 and name not in COMPLEX_OK:
        refuse(name, dt)
