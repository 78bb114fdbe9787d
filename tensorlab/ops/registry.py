"""The op table: one OpDef per public op. Each family module (elementwise_unary.py, reduction.py, ...)
declares its rows and registers them at import; the backends implement `primitive` under the
same name on CPU and CUDA, and tests iterate this table (parity, sample inputs, gradients)."""
from __future__ import annotations

from dataclasses import dataclass, field

# promotion kinds, as torch's TensorIterator names them
DEFAULT = "default"            # result_type of the inputs
INT_TO_FLOAT = "int_to_float"  # integral/bool inputs give the default float dtype (div, exp, sqrt, ...)
ALWAYS_BOOL = "always_bool"    # comparisons, isnan, logical_*
KEEP = "keep"                  # the input's dtype (abs, neg, floor on ints, ...)
NONE = "none"                  # op-specific (indices, explicit dtype=)


@dataclass(frozen=True)
class OpDef:
    name: str
    family: str
    primitive: str
    promotion: str = DEFAULT
    differentiable: bool = True
    inplace: bool = False
    # functors a generic primitive (unary/binary/ternary) is asked to run for this op; both
    # backends must provide each one under the same name (tests/test_registry_parity.py)
    kernels: tuple = ()
    info: dict = field(default_factory=dict, compare=False, hash=False)


REGISTRY: dict[str, OpDef] = {}


def register(*defs):
    for d in defs:
        if d.name in REGISTRY and REGISTRY[d.name] != d:
            raise RuntimeError(f"op {d.name!r} registered twice with different definitions")
        REGISTRY[d.name] = d
    return defs


def primitives():
    """Every backend primitive name the registered ops need."""
    return {d.primitive for d in REGISTRY.values()}


def kernels():
    """{primitive: set of kernel names} the registered ops launch through generic primitives."""
    out = {}
    for d in REGISTRY.values():
        if d.kernels:
            out.setdefault(d.primitive, set()).update(d.kernels)
    return out
