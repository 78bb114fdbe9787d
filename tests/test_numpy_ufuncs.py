"""NumPy ufuncs and operators on tensors return tensors, as torch's do (Tensor.__array_ufunc__): np.exp(t),
np.add(t, 1), t + ndarray, np.float64(2) * t (a NumPy scalar does not promote, as a Python number), reductions
and several-output ufuncs; a CUDA tensor is never copied to the host behind the user's back (torch's TypeError),
a tensor that requires grad gets torch's RuntimeError, an out= array keeps NumPy's answer."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

pytestmark = pytest.mark.torch_oracle

CASES = ["np.exp(t)", "np.add(t, 1)", "np.sqrt(i)", "np.maximum(t, 2)", "np.add.reduce(t)", "t + np.ones(6)",
         "t + np.arange(6)", "t - np.arange(6)", "np.float64(2) * t", "np.float64(2) - t", "t / np.float32(4)",
         "np.int64(2) ** t", "np.float32(1) < t", "t == np.arange(6.0)", "t @ np.ones(6)", "np.divmod(t, 4)[1]",
         "np.hypot(t, t)", "np.negative(i)"]


@pytest.mark.parametrize("expr", CASES)
def test_ufuncs_return_tensors_as_torch(expr, torch):
    t, i = tl.arange(6.0), tl.arange(6)
    ours = eval(expr)
    t, i = torch.arange(6.0), torch.arange(6)
    theirs = eval(expr)
    assert isinstance(ours, tl.Tensor), type(ours)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy())


def test_numpy_first_and_in_place_forms():
    t = tl.arange(6.0)
    r = np.ones(6) + t  # torch raises here (NumPy asks the tensor for a concatenation); a tensor is the useful answer
    assert isinstance(r, tl.Tensor) and r.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert np.isnan(t).dtype is tl.bool  # torch gives uint8 (a relic of its pre-bool days)
    out = np.zeros(6)
    assert np.add(t, 1, out=out) is out and out.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    with pytest.raises(TypeError, match="out="):
        np.add(t, 1, out=tl.zeros(6))
    q, r = np.divmod(t, 4)
    assert isinstance(q, tl.Tensor) and q.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    u = tl.zeros(3)
    u += np.ones(3)  # as torch: NumPy computes, so the name is rebound to a float64 result
    assert u.dtype is tl.float64


def test_refusals(device):
    t = tl.arange(3.0, device=device)
    if device != "cpu":
        with pytest.raises(TypeError, match="can't convert cuda"):
            np.exp(t)
        with pytest.raises(TypeError, match="can't convert cuda"):
            np.ones(3) + t
    g = tl.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.exp(g)
    with tl.no_grad():
        assert isinstance(np.exp(g), tl.Tensor)
