"""tensorlab.autograd: reverse-mode automatic differentiation with torch's semantics.

- graph.py: nodes (grad_fn), saved tensors with version checks, recording from every op
- derivatives.py: the derivative table (op name -> Derivative) and its helpers; the rows live in one
  file per op family, derivatives_<family>.py (elementwise, reduction, shape, linalg, views, indexing,
  copy, nn, special), each named for the ops/ front end it differentiates
- engine.py: backward / grad
- grad_mode.py: no_grad, enable_grad, set_grad_enabled, inference_mode (per thread)
- anomaly.py: detect_anomaly (NaN/Inf provenance in the forward and backward passes)
- gradcheck.py, function.py (custom Functions), tensor_methods.py (Tensor.backward, ...)
"""
from __future__ import annotations

from .. import autograd_hooks as _hooks
from ..tensor import Tensor as _Tensor
from . import derivatives as _derivatives

_derivatives.bind_ops()
from . import (derivatives_elementwise, derivatives_reduction, derivatives_shape, derivatives_linalg,  # noqa: E402
               derivatives_views, derivatives_indexing, derivatives_copy, derivatives_nn, derivatives_special)

# each family's rows, registered into derivatives.DERIVATIVES when its file is imported (no two files define a row)
_DERIVATIVE_FAMILIES = (derivatives_elementwise, derivatives_reduction, derivatives_shape, derivatives_linalg,
                        derivatives_views, derivatives_indexing, derivatives_copy, derivatives_nn, derivatives_special)

from . import graph  # noqa: E402
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly  # noqa: E402
from .engine import backward, grad  # noqa: E402
from .function import Function  # noqa: E402
from .gradcheck import GradcheckError, gradcheck  # noqa: E402
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,  # noqa: E402
                        set_grad_enabled)
from .tensor_methods import METHODS as _METHODS  # noqa: E402
from . import functional  # noqa: E402  (torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp)

for _name, _fn in _METHODS.items():
    setattr(_Tensor, _name, _fn)
del _name, _fn

_hooks._impl = graph

__all__ = ["backward", "grad", "gradcheck", "GradcheckError", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "Function", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled"]
