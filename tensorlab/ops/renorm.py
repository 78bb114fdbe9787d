"""torch.renorm: each slice along `dim` whose p-norm (over every other dim) exceeds maxnorm is scaled
to norm maxnorm (factor maxnorm / (norm + 1e-7), as torch's kernel), the others are kept. A
composite over linalg.vector_norm, where and mul: one body for every device, the gradient through
the norm included (torch's renorm_backward)."""
from __future__ import annotations

from ._composite import overwrite, tensor_arg, tl, to_out, wrap_dim


def renorm(input, p, dim, maxnorm, *, out=None):
    """torch.renorm(input, p, dim, maxnorm)."""
    t = tl()
    tensor_arg(input, "renorm")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if not p > 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (got p={p}); pass p > 0")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, input.dim())
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor as input (the norm needs one), got "
                           f"{input.dtype.torch_name}; convert it with .float()")
    others = tuple(i for i in range(input.dim()) if i != d)
    norm = t.linalg.vector_norm(input, p, others, True)
    factor = t.where(norm > maxnorm, maxnorm / (norm + 1e-7), t.ones((), dtype=norm.dtype, device=norm.device))
    return to_out(input * factor.to(input.dtype), out, "renorm")


def renorm_(self, p, dim, maxnorm):
    """Tensor.renorm_: renorm written into self (computed first, so a failure leaves self unchanged)."""
    return overwrite(self, renorm(self, p, dim, maxnorm), "renorm_")


FUNCTIONS = ("renorm",)
METHODS = {"renorm": renorm, "renorm_": renorm_}
