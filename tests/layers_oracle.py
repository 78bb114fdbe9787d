"""Helpers the layer tests share: tensors on both libraries from one NumPy array, torch's module
weights copied into ours, and comparisons of outputs and gradients."""
from __future__ import annotations

import numpy as np

import tensorlab as tl

F32 = dict(rtol=1e-5, atol=1e-5)
F64 = dict(rtol=1e-10, atol=1e-10)


def np_of(t):
    if hasattr(t, "grad_fn") and type(t).__module__.startswith("torch"):
        return t.detach().float().numpy() if str(t.dtype) in ("torch.bfloat16",) else t.detach().numpy()
    return t.detach().cpu().float().numpy() if t.dtype is tl.bfloat16 else t.detach().cpu().numpy()


def pair(torch, device, arr, requires_grad=False):
    """(ours, torch's) leaf tensors holding arr."""
    ours = tl.tensor(arr, device=device, requires_grad=requires_grad)
    theirs = torch.tensor(arr, requires_grad=requires_grad)
    return ours, theirs


def close(ours, theirs, **tol):
    tol = tol or F32
    a, b = np_of(ours), np_of(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), **tol)


def copy_weights(torch_module, module, device):
    """Our module on `device` holding torch_module's parameters and buffers."""
    module.to(device)
    state = {k: tl.tensor(v.detach().numpy(), device=device) for k, v in torch_module.state_dict().items()}
    module.load_state_dict(state)
    return module


def close_grads(torch_module, module, **tol):
    theirs = dict(torch_module.named_parameters())
    for name, p in module.named_parameters():
        tp = theirs[name]
        if tp.grad is None:
            assert p.grad is None or not np_of(p.grad).any(), name
            continue
        assert p.grad is not None, name
        close(p.grad, tp.grad, **tol)


def randn(*shape, scale=1.0, seed=0, dtype="float32"):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def raises_like(ours, theirs):
    """`ours()` raises what `theirs()` (torch) raises: the same exception type, and a message that
    starts as torch's (ours may append a hint in parentheses)."""
    import pytest

    try:
        theirs()
    except Exception as e:  # noqa: BLE001
        expected = e
    else:
        raise AssertionError("torch did not raise")
    with pytest.raises(type(expected)) as got:
        ours()
    assert str(got.value).startswith(str(expected).split(" (")[0][:60]), (str(got.value), str(expected))


def rand(shape, seed=0, dtype="float64"):
    """A standard-normal NumPy array of `shape`, reproducible by seed."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def leaf(torch, device, arr, channels_last=False):
    """(ours, torch's) leaf tensors holding arr that require grad; ours channels-last if asked."""
    x = tl.tensor(arr, device=device)
    if channels_last:
        x = x.contiguous(memory_format=tl.channels_last)
    return x.requires_grad_(), torch.tensor(arr, requires_grad=True)
