"""Shared by the public-kind programs: fill a model's parameters from a NumPy generator, so torch and
tensorlab (whose random generators differ) start from the same weights. Plain torch code."""
import numpy as np
import torch


def init_from_numpy(model, rng, scale=1.0):
    """Every parameter of dim >= 2 gets N(0, scale^2 / fan_in); biases get N(0, 0.01^2); other 1-d
    parameters (norm weights) keep their deterministic defaults."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = int(np.prod(p.shape[1:]))
                v = rng.standard_normal(tuple(p.shape)) * scale / np.sqrt(fan_in)
            elif "bias" in name.rsplit(".", 1)[-1]:
                v = 0.01 * rng.standard_normal(tuple(p.shape))
            else:
                continue
            p.copy_(torch.from_numpy(v.astype(np.float32)).to(p.dtype))
    return model


def randn(rng, *shape, dtype=np.float32):
    """A standard normal float32 tensor from the NumPy generator."""
    return torch.from_numpy(rng.standard_normal(shape).astype(dtype))
