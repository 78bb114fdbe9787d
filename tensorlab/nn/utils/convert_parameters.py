"""tensorlab.nn.utils.convert_parameters: parameters as one flat vector and back (torch's
parameters_to_vector / vector_to_parameters)."""
from __future__ import annotations

from ...tensor import Tensor


def _same_device(param, first):
    """torch's rule: every parameter on the device of the first one (TypeError otherwise)."""
    if first is None:
        return param.device
    if param.device != first:
        raise TypeError(f"Found two parameters on different devices, this is currently not supported. (first on "
                        f"{first}, this one on {param.device}; move the module to one device with .to(device))")
    return first


def parameters_to_vector(parameters):
    """Flatten an iterable of parameters into one 1-D tensor (their .view(-1)s concatenated; the
    result is part of the autograd graph, as torch's is)."""
    import tensorlab as _tl
    first = None
    flat = []
    for p in parameters:
        first = _same_device(p, first)
        flat.append(p.view(-1))
    return _tl.cat(flat)


def vector_to_parameters(vec, parameters):
    """Make each parameter's .data the next numel() elements of `vec` (a view of it, as torch)."""
    if not isinstance(vec, Tensor):
        kind = type(vec)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"expected torch.Tensor, but got: {name}")
    first = None
    pointer = 0
    for p in parameters:
        first = _same_device(p, first)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
