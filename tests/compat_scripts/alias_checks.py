"""Run under `python -m tensorlab.compat` by tests/test_compat_runner.py: what `import torch`
resolves to. Prints OK at the end; any failed check raises."""
import sys

import torch
import torch.nn as nn
import torch.nn.modules.activation
import torch.optim
import torch.cuda
import torch.autograd
from torch.nn import functional as F
from torch.nn.modules.container import Sequential
from torch.nn.modules.linear import Linear
from torch.autograd import Function

from torch.nn import *  # noqa: F401,F403  (old scripts do this)

import tensorlab

assert Sequential is tensorlab.nn.Sequential and ModuleDict is tensorlab.nn.ModuleDict  # noqa: F405
assert functional.__name__ == "torch.nn.functional" and "Linear" in dir(nn)  # noqa: F405

assert __name__ == "__main__", __name__
assert sys.argv[1:] == ["--flag", "value"], sys.argv
assert isinstance(torch, torch.__class__) and torch.__name__ == "torch"
assert nn.Module is tensorlab.nn.Module and Linear is tensorlab.nn.Linear and Sequential is tensorlab.nn.Sequential
assert torch.nn.modules.activation.ReLU is tensorlab.nn.ReLU
assert F.relu is tensorlab.nn.functional.relu and F.__name__ == "torch.nn.functional"
assert torch.optim.Adam is tensorlab.optim.Adam and torch.cuda.is_available is tensorlab.cuda.is_available
assert Function is tensorlab.autograd.Function and torch.autograd.grad is tensorlab.autograd.grad
assert torch.Tensor is tensorlab.Tensor and torch.float32 is tensorlab.float32
assert torch.nn is sys.modules["torch.nn"] and torch.nn.functional is F
assert torch.__version__.startswith("2.13.0+tensorlab") and torch.version.__version__ == torch.__version__
assert torch.__version__ >= "2.9" and torch.__version__ >= (2, 0) and torch.__version__ < "2.14"
assert torch.accelerator.is_available is tensorlab.accelerator.is_available

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = True
assert torch.backends.cudnn.benchmark is True and torch.backends.cudnn.deterministic is True
assert torch.backends.mps.is_available() is False
torch.set_float32_matmul_precision("high")
assert torch.get_float32_matmul_precision() == "high"

for probe, kind, text in [
        (lambda: torch.definitely_missing_fn, AttributeError, "tensorlab does not implement torch.definitely_missing_fn yet"),
        (lambda: nn.functional.definitely_missing_fn, AttributeError,
         "tensorlab does not implement torch.nn.functional.definitely_missing_fn yet"),
        (lambda: torch.sync, AttributeError, "tensorlab does not implement torch.sync yet")]:
    try:
        probe()
    except kind as e:
        assert str(e) == text, str(e)
    else:
        raise AssertionError(text)
assert not hasattr(torch, "definitely_missing_fn")
try:
    from torch import definitely_missing_fn  # noqa: F401
except ImportError as e:
    assert str(e) == "tensorlab does not implement torch.definitely_missing_fn yet", str(e)
else:
    raise AssertionError("from-import of a missing name")

import torch.utils.mobile_optimizer  # a placeholder: importing works, using it does not
try:
    torch.utils.mobile_optimizer.optimize_for_mobile
except AttributeError as e:
    assert str(e).startswith("tensorlab does not implement torch.utils.mobile_optimizer.optimize_for_mobile"), str(e)
else:
    raise AssertionError("placeholder attribute")
try:
    from torch.utils.mobile_optimizer import optimize_for_mobile  # noqa: F401
except ImportError as e:
    assert "torch.utils.mobile_optimizer.optimize_for_mobile" in str(e), str(e)
else:
    raise AssertionError("placeholder from-import")

x = torch.randn(3, 2, requires_grad=True)
(x * 2).sum().backward()
assert x.grad.tolist() == [[2.0, 2.0]] * 3
print("OK")
