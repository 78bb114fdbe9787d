"""tensorlab.nn.utils.parametrizations: torch's three ready-made parametrizations, registered with
nn.utils.parametrize:

weight_norm    weight = g * v / ||v|| (norm over every dim but `dim`): original0 = g, original1 = v
spectral_norm  weight / sigma, sigma estimated by power iteration on the weight as a matrix (dim first,
               the rest flattened); buffers _u, _v in the parametrization, updated in training mode
orthogonal     an orthogonal / unitary matrix (or batch) through matrix_exp, cayley or householder of
               the original; with use_trivialization the original starts at the point `base` (a buffer)
"""
from __future__ import annotations

import enum

import tensorlab as _tl

from ...tensor import Tensor
from .. import functional as F
from .._grad import no_grad
from ..module import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- orthogonal ----------------------------------------------------------------------------------------
def _is_orthogonal(Q, eps=None):
    n, k = Q.shape[-2], Q.shape[-1]
    eye = _tl.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * _tl.finfo(Q.dtype).eps
    return _tl.allclose(Q.mH @ Q, eye, atol=eps)


def _make_orthogonal(A):
    """The Q of A's QR factorization with R's diagonal made positive (Q unique, A's column space)."""
    X, tau = _tl.geqrf(A)
    Q = _tl.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        """The orthogonal matrix (or batch) that X parametrizes."""
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _tl.cat([X, X.new_zeros((n, n - k)).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-(Hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _tl.matrix_exp(A)
            else:
                eye = _tl.eye(n, dtype=A.dtype, device=A.device)
                Q = _tl.linalg.solve(_tl.add(eye, A, alpha=-0.5), _tl.add(eye, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _tl.linalg.householder_product(A, tau)
            # the diagonal of X (rounded toward zero to an integer) chooses the sign of each column
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        """The original that gives Q (Q must be orthogonal for an exact round trip)."""
        with no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = _tl.geqrf(Q)
                # diag(R) > 0 keeps the decomposition unique: store the signs on A's diagonal
                diag = A.diagonal(dim1=-2, dim2=-1).sign()
                diag = _tl.where(tau == 0.0, -diag, diag)
                A = A.clone()
                A.diagonal(dim1=-2, dim2=-1).copy_(diag)
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = _tl.randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_tl.cat([Q, N], dim=-1))
            self.base = Q
            neg_eye = _tl.zeros_like(Q_init)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain module.<name> (a matrix or batch of matrices) to be orthogonal (unitary), through
    `orthogonal_map` ("matrix_exp", "cayley", "householder"; default matrix_exp for square or
    complex matrices, householder otherwise). Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1] or weight.is_complex()
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module


# -- weight norm ---------------------------------------------------------------------------------------
def _norm_except_dim(v, dim):
    """||v|| over every dim but `dim` (kept with size 1), or over everything for dim == -1."""
    if dim == -1:
        return v.norm()
    d = dim % v.dim()
    others = [i for i in range(v.dim()) if i != d]
    if not others:
        return v.abs()
    return v.norm(2, dim=others, keepdim=True)


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        """g * v / ||v||."""
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        """(g, v) = (||weight||, weight)."""
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize module.<name> as g * v / ||v|| (original0 = g, the norms along `dim`;
    original1 = v); dim=None normalizes the whole tensor. Returns module."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _load_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    register = getattr(module, "_register_load_state_dict_pre_hook", None)
    if register is not None:  # checkpoints of the older nn.utils.weight_norm hook load into the new layout
        register(_load_hook)
    return module


# -- spectral norm -------------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # the buffers are updated in place (one estimate kept across calls), without autograd
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_tl.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_tl.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        """weight / sigma (sigma = u^H W v after the power iteration of this call, in training mode)."""
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _tl.vdot(u, _tl.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        """The weight itself (assigning a weight sets the original)."""
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize module.<name> as weight / sigma(weight) (its spectral norm by power iteration;
    dim defaults to 1 for transposed convolutions, else 0). Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d
        from ..conv3d_layers import ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
