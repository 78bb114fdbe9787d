"""nn.init.orthogonal_ (pytorch/examples' super_resolution initializes with it), checked independently: the result is
(semi-)orthogonal times gain for every shape, equals the sign-fixed Q of NumPy's QR of the same
normal draw, works on CUDA tensors and in place on leaves that require grad, and refuses 1-d tensors
as torch does."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

if not hasattr(tl.nn.init, "orthogonal_"):  # the nn.utils branch of issue 34 brings it
    pytest.skip("tensorlab.nn.init.orthogonal_ is not part of this tree", allow_module_level=True)


@pytest.mark.parametrize("shape", [(6, 3, 2, 2), (5, 12), (12, 5), (4, 4), (3, 2, 5)])
def test_orthogonal_rows_or_columns_times_gain(device, shape):
    w = tl.empty(shape, device=device)
    assert tl.nn.init.orthogonal_(w, gain=1.5) is w
    m = w.cpu().numpy().reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 1.5 ** 2 * np.eye(gram.shape[0]), atol=1e-5)


@pytest.mark.parametrize("shape", [(7, 3), (3, 7)])
def test_orthogonal_is_the_sign_fixed_q_of_the_normal_draw(shape):
    rows, cols = shape
    gen = tl.Generator().manual_seed(3)
    draw = tl.empty((rows, cols)).normal_(0, 1, generator=tl.Generator().manual_seed(3)).numpy().astype(np.float64)
    w = tl.nn.init.orthogonal_(tl.empty(shape), generator=gen)
    a = draw.T if rows < cols else draw
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    np.testing.assert_allclose(w.numpy(), q.T if rows < cols else q, atol=1e-5)


def test_orthogonal_on_a_parameter_records_no_graph(device):
    p = tl.nn.Parameter(tl.empty(4, 6, device=device))
    v = p._version
    tl.nn.init.orthogonal_(p)
    assert p.grad_fn is None and p.requires_grad and p._version > v


def test_orthogonal_refuses_one_dimensional_as_torch(torch):
    for lib in (tl, torch):
        with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
            lib.nn.init.orthogonal_(lib.empty(5))
    assert tl.nn.init.orthogonal_(tl.empty(0, 3)).shape == (0, 3)
