"""nn.utils.prune against torch: the masks of the deterministic methods (L1Unstructured, LnStructured,
CustomFromMask, global_unstructured, Identity, and their combination in a PruningContainer), the
weight_orig / weight_mask layout and forward pre-hook, remove, is_pruned; the random methods by the
number (and shape) of what they prune; the errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn
from tensorlab.nn.utils import prune
from layers_oracle import close, close_grads, copy_weights, np_of, raises_like


def _tp():
    """torch.nn.utils.prune (a submodule torch does not import by itself)."""
    import importlib
    return importlib.import_module("torch.nn.utils.prune")


def _distinct(*shape, seed=0):
    """Values with distinct magnitudes (no ties for the methods to break)."""
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    vals = (np.arange(1, n + 1) / n) * rng.choice([-1.0, 1.0], size=n)
    return rng.permutation(vals).reshape(shape)


def _pair(torch, device, shape=(4, 6)):
    tm = torch.nn.Linear(shape[1], shape[0]).double()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(_distinct(*shape)))
    return copy_weights(tm, nn.Linear(shape[1], shape[0]).double(), device), tm


def _same_pruning(torch, device, m, tm):
    assert list(m.state_dict()) == list(tm.state_dict())
    close(m.weight_mask, tm.weight_mask, rtol=0, atol=0)
    close(m.weight, tm.weight, rtol=0, atol=0)
    x = np.random.default_rng(1).standard_normal((3, tm.in_features))
    y, ty = m(tl.tensor(x, device=device)), tm(torch.tensor(x))
    close(y, ty, rtol=1e-12, atol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    close_grads(tm, m, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("amount", [0.3, 5, 0, 1.0])
def test_l1_unstructured_matches_torch(torch, device, amount):
    m, tm = _pair(torch, device)
    prune.l1_unstructured(m, "weight", amount=amount)
    _tp().l1_unstructured(tm, "weight", amount=amount)
    _same_pruning(torch, device, m, tm)


@pytest.mark.parametrize("n,dim,amount", [(2, 0, 0.5), (1, 1, 2), (float("inf"), -1, 0.34), ("fro", 0, 1)])
def test_ln_structured_matches_torch(torch, device, n, dim, amount):
    m, tm = _pair(torch, device)
    prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
    _tp().ln_structured(tm, "weight", amount=amount, n=n, dim=dim)
    _same_pruning(torch, device, m, tm)


def test_container_and_importance_scores_match_torch(torch, device):
    m, tm = _pair(torch, device)
    scores = _distinct(4, 6, seed=5)
    prune.l1_unstructured(m, "weight", amount=4, importance_scores=tl.tensor(scores, device=device))
    _tp().l1_unstructured(tm, "weight", amount=4, importance_scores=torch.tensor(scores))
    prune.ln_structured(m, "weight", amount=1, n=1, dim=0)
    _tp().ln_structured(tm, "weight", amount=1, n=1, dim=0)
    prune.l1_unstructured(m, "weight", amount=0.2)
    _tp().l1_unstructured(tm, "weight", amount=0.2)
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 3
    _same_pruning(torch, device, m, tm)
    mask = np.zeros((4, 6))
    mask[:, ::2] = 1
    prune.custom_from_mask(m, "weight", tl.tensor(mask, device=device))
    _tp().custom_from_mask(tm, "weight", torch.tensor(mask))
    _same_pruning(torch, device, m, tm)


def test_global_unstructured_and_identity_match_torch(torch, device):
    m1, t1 = _pair(torch, device, (3, 4))
    torch.manual_seed(1)
    t2 = torch.nn.Linear(3, 5).double()
    with torch.no_grad():
        t2.weight.copy_(torch.tensor(_distinct(5, 3, seed=2) * 0.9))
    m2 = copy_weights(t2, nn.Linear(3, 5).double(), device)
    prune.identity(m2, "bias")
    _tp().identity(t2, "bias")
    prune.global_unstructured([(m1, "weight"), (m2, "weight")], pruning_method=prune.L1Unstructured, amount=10)
    _tp().global_unstructured([(t1, "weight"), (t2, "weight")],
                                             pruning_method=_tp().L1Unstructured, amount=10)
    for a, b in ((m1, t1), (m2, t2)):
        assert list(a.state_dict()) == list(b.state_dict())
        close(a.weight_mask, b.weight_mask, rtol=0, atol=0)
    close(m2.bias_mask, t2.bias_mask, rtol=0, atol=0)
    assert int(np_of(m1.weight_mask).sum() + np_of(m2.weight_mask).sum()) == 12 + 15 - 10
    with pytest.raises(TypeError, match="Only \"unstructured\""):
        prune.global_unstructured([(m1, "weight")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(m1, "weight")], pruning_method=prune.L1Unstructured, importance_scores=[1],
                                  amount=1)


def test_random_methods_prune_the_requested_amount(device):
    m = nn.Linear(10, 8).to(device)
    prune.random_unstructured(m, "weight", amount=0.25)
    mask = np_of(m.weight_mask)
    assert mask.sum() == 80 - 20 and set(np.unique(mask)) <= {0.0, 1.0}
    np.testing.assert_array_equal(np_of(m.weight), np_of(m.weight_orig) * mask)
    c = nn.Conv2d(3, 6, 3).to(device)
    prune.random_structured(c, "weight", amount=2, dim=0)
    cm = np_of(c.weight_mask)
    kept = cm.reshape(6, -1).all(axis=1)
    assert kept.sum() == 4 and not cm.reshape(6, -1)[~kept].any()
    t = tl.ones(4, 4, device=device)
    pruned = prune.RandomUnstructured(amount=3).prune(t)
    assert int(np_of(pruned).sum()) == 13


def test_layout_hook_remove_and_errors(torch, device):
    m, _ = _pair(torch, device)
    orig = m.weight
    assert not prune.is_pruned(m)
    prune.l1_unstructured(m, "weight", amount=3)
    assert prune.is_pruned(nn.Sequential(m)) and m.weight_orig is orig
    assert "weight" not in dict(m.named_parameters()) and "weight_mask" in dict(m.named_buffers())
    with tl.no_grad():  # the forward pre-hook recomputes weight from weight_orig
        m.weight_orig.mul_(2)
    m(tl.zeros(1, 6, dtype=tl.float64, device=device))
    np.testing.assert_allclose(np_of(m.weight), np_of(m.weight_orig) * np_of(m.weight_mask))
    prune.remove(m, "weight")
    assert m.weight is orig and list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    assert int((np_of(m.weight) == 0).sum()) == 3
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")
    tm = torch.nn.Linear(6, 4)
    raises_like(lambda: prune.l1_unstructured(m, "weight", amount=1.5),
                lambda: _tp().l1_unstructured(tm, "weight", amount=1.5))
    raises_like(lambda: prune.l1_unstructured(m, "weight", amount=-1),
                lambda: _tp().l1_unstructured(tm, "weight", amount=-1))
    raises_like(lambda: prune.l1_unstructured(m, "weight", amount="a"),
                lambda: _tp().l1_unstructured(tm, "weight", amount="a"))
    raises_like(lambda: prune.l1_unstructured(m, "weight", amount=25),
                lambda: _tp().l1_unstructured(tm, "weight", amount=25))
    raises_like(lambda: prune.ln_structured(m, "bias", amount=1, n=2, dim=0),
                lambda: _tp().ln_structured(tm, "bias", amount=1, n=2, dim=0))
    raises_like(lambda: prune.ln_structured(m, "weight", amount=1, n=2, dim=2),
                lambda: _tp().ln_structured(tm, "weight", amount=1, n=2, dim=2))
    # a failed pruning leaves the module as it was
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
