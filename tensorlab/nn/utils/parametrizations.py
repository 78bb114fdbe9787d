"""tensorlab.nn.utils.parametrizations: torch's three ready-made parametrizations, registered with
nn.utils.parametrize:

weight_norm    weight = g * v / ||v|| (norm over every dim but `dim`): original0 = g, original1 = v
spectral_norm  weight / sigma, sigma estimated by power iteration on the weight as a matrix (dim first,
               the rest flattened); buffers _u, _v in the parametrization, updated in training mode
orthogonal     an orthogonal / unitary matrix (or batch) through matrix_exp, cayley or householder of
               the original; with use_trivialization the original starts at the point `base` (a buffer)
"""
from __future__ import annotations

import tensorlab as _tl

from ...tensor import Tensor
from .. import functional as F
from .._grad import no_grad
from ..module import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _tensor_attr(module, name):
    found = getattr(module, name, None)
    if not isinstance(found, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return found


def _last_two(x):
    return x.shape[-2], x.shape[-1]


def _diag(x):
    return x.diagonal(dim1=-2, dim2=-1)


# -- orthogonal ----------------------------------------------------------------------------------------
def _columns_orthonormal(mat):
    """Whether mat^H mat is the identity (to a size-scaled tolerance)."""
    rows, cols = _last_two(mat)
    tol = 10.0 * rows * _tl.finfo(mat.dtype).eps
    return _tl.allclose(mat.mH @ mat, _tl.eye(cols, dtype=mat.dtype, device=mat.device), atol=tol)


def _qr_q_positive(mat):
    """The Q of mat's QR factorization with R's diagonal made positive (Q unique, mat's column space)."""
    reflectors, scales = _tl.geqrf(mat)
    q = _tl.linalg.householder_product(reflectors, scales)
    return q * _diag(reflectors).sgn().unsqueeze(-2)


def _skew_map(lower, tall, wide, use_exp):
    """The orthogonal matrix of the skew(-Hermitian) part of `lower` (padded square), cut to `wide` columns."""
    if tall != wide:
        pad = lower.new_zeros((tall, tall - wide)).expand(*lower.shape[:-2], -1, -1)
        lower = _tl.cat([lower, pad], dim=-1)
    skew = lower - lower.mH
    if use_exp:
        out = _tl.matrix_exp(skew)
    else:
        ident = _tl.eye(tall, dtype=skew.dtype, device=skew.device)
        out = _tl.linalg.solve(ident - 0.5 * skew, ident + 0.5 * skew)
    return out if tall == wide else out[..., :wide]


def _reflector_map(x):
    """householder: the product of the reflectors below x's diagonal; x's diagonal (rounded toward zero
    to an integer) gives each column's sign."""
    below = x.tril(diagonal=-1)
    scales = 2.0 / (1.0 + below.pow(2).sum(dim=-2))
    return _tl.linalg.householder_product(below, scales) * _diag(x).int().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if orthogonal_map == "householder" and weight.is_complex():
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    @property
    def _trivialized(self):
        return "base" in self._buffers

    def forward(self, X):
        """The orthogonal matrix (or batch) that X parametrizes."""
        flip = X.shape[-2] < X.shape[-1]
        work = X.mT if flip else X
        tall, wide = _last_two(work)
        if self.orthogonal_map == "householder":
            result = _reflector_map(work)
        else:
            result = _skew_map(work.tril(), tall, wide, self.orthogonal_map == "matrix_exp")
        if self._trivialized:
            result = self.base @ result
        return result.mT if flip else result

    def _packed_reflectors(self, q):
        """householder without trivialization: q's QR reflectors, with R's signs on the diagonal."""
        packed, scales = _tl.geqrf(q)
        signs = _diag(packed).sign()
        signs = _tl.where(scales == 0.0, -signs, signs)  # diag(R) > 0 keeps the decomposition unique
        packed = packed.clone()
        _diag(packed).copy_(signs)
        return packed

    def right_inverse(self, Q):
        """The original that gives Q (Q must be orthogonal for an exact round trip)."""
        with no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {Q.shape}.")
            flip = Q.shape[-2] < Q.shape[-1]
            work = Q.mT if flip else Q
            tall, wide = _last_two(work)
            if not self._trivialized:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                packed = self._packed_reflectors(work)
                return packed.mT if flip else packed
            if tall != wide:
                filler = _tl.randn(tuple(work.shape[:-2]) + (tall, tall - wide), dtype=work.dtype, device=work.device)
                self.base = _qr_q_positive(_tl.cat([work, filler], dim=-1))
            elif _columns_orthonormal(work):
                self.base = work.clone()
            else:
                self.base = _qr_q_positive(work)
            # the original that maps to the identity point: -1 on the diagonal (in Q's own layout)
            start = _tl.zeros_like(Q)
            _diag(start).fill_(-1.0)
            return start


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain module.<name> (a matrix or batch of matrices) to be orthogonal (unitary), through
    `orthogonal_map` ("matrix_exp", "cayley", "householder"; default matrix_exp for square or
    complex matrices, householder otherwise). Returns module."""
    target = _tensor_attr(module, name)
    if target.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {target.dim()} dimensions.")
    if orthogonal_map is None:
        rows, cols = _last_two(target)
        orthogonal_map = "matrix_exp" if rows == cols or target.is_complex() else "householder"
    if not isinstance(orthogonal_map, str) or orthogonal_map not in _MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    register_parametrization(module, name, _Orthogonal(target, orthogonal_map, use_trivialization=use_trivialization),
                             unsafe=True)
    return module


# -- weight norm ---------------------------------------------------------------------------------------
def _magnitudes(t, dim):
    """||t|| over every axis except `dim` (kept with size 1), or over the whole tensor for dim == -1."""
    if dim == -1:
        return t.norm()
    keep = dim % t.dim()
    reduce_over = [axis for axis in range(t.dim()) if axis != keep]
    return t.norm(2, dim=reduce_over, keepdim=True) if reduce_over else t.abs()


def _rescaled(direction, magnitude, dim):
    """direction scaled to have the norms `magnitude` (along `dim`)."""
    return direction * (magnitude / _magnitudes(direction, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        """g * v / ||v||."""
        return _rescaled(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        """(g, v) = (||weight||, weight)."""
        return _magnitudes(weight, self.dim), weight


def _legacy_weight_norm_keys(name):
    """A load pre-hook that renames the older hook's name_g / name_v keys to original0 / original1."""

    def rename(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        old = [f"{prefix}{name}{suffix}" for suffix in ("_g", "_v")]
        if all(k in state_dict for k in old):
            for index, key in enumerate(old):
                state_dict[f"{prefix}parametrizations.{name}.original{index}"] = state_dict.pop(key)
    return rename


def weight_norm(module, name="weight", dim=0):
    """Reparametrize module.<name> as g * v / ||v|| (original0 = g, the norms along `dim`;
    original1 = v); dim=None normalizes the whole tensor. Returns module."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    add_hook = getattr(module, "_register_load_state_dict_pre_hook", None)
    if add_hook is not None:  # checkpoints of the older nn.utils.weight_norm hook load into the new layout
        add_hook(_legacy_weight_norm_keys(name))
    return module


# -- spectral norm -------------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        rank = weight.dim()
        if not -rank <= dim < rank:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{rank}, {rank - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim % rank
        self.eps = eps
        if rank < 2:
            return  # a vector is just normalized: no power iteration state
        self.n_power_iterations = n_power_iterations
        mat = self._as_matrix(weight)
        left = F.normalize(mat.new_empty(mat.shape[0]).normal_(0, 1), dim=0, eps=eps)
        right = F.normalize(mat.new_empty(mat.shape[1]).normal_(0, 1), dim=0, eps=eps)
        self.register_buffer("_u", left)
        self.register_buffer("_v", right)
        self._refine(mat, 15)  # a good starting estimate

    def _as_matrix(self, weight):
        """weight with `dim` first and the remaining axes flattened."""
        lead = self.dim
        if lead:
            weight = weight.movedim(lead, 0)
        return weight.flatten(1)

    def _refine(self, mat, steps):
        """`steps` power-iteration steps, updating _u and _v in place (outside autograd)."""
        with no_grad():
            frozen = mat.detach()
            adjoint = frozen.mH
            for _step in range(steps):
                self._u.copy_(F.normalize(_tl.mv(frozen, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_tl.mv(adjoint, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        """weight / sigma (sigma = u^H W v after the power iteration of this call, in training mode)."""
        if weight.dim() < 2:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._as_matrix(weight)
        if self.training:
            self._refine(mat, self.n_power_iterations)
        # copies: backward must not see the next call's in-place updates
        sigma = _tl.vdot(self._u.clone(), _tl.mv(mat, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value):
        """The weight itself (assigning a weight sets the original)."""
        return value


def _transposed_conv(module):
    from ..conv import ConvTranspose1d, ConvTranspose2d
    from ..conv3d_layers import ConvTranspose3d
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize module.<name> as weight / sigma(weight) (its spectral norm by power iteration;
    dim defaults to 1 for transposed convolutions, else 0). Returns module."""
    target = _tensor_attr(module, name)
    if dim is None:
        dim = int(_transposed_conv(module))
    register_parametrization(module, name, _SpectralNorm(target, n_power_iterations, dim, eps))
    return module
